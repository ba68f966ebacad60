//! `ndtune learn` end to end: features of a real kernel (clang), and the evaluation of
//! work-group size prediction on the project's own collected data.

mod common;

use common::{examples, fails, json, write};
use std::path::Path;

fn training_csv() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/stencils-2026-11-21/stencils-h100-xeon.csv.gz")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn eval_reports_every_model_and_fallback_under_a_protocol() {
    let v = json(&[
        "learn",
        "eval",
        "--data",
        &training_csv(),
        "--protocol",
        "loo-kernel",
        "--models",
        "tree,baseline",
        "--json",
    ]);
    assert_eq!(v["protocol"], "loo-kernel");
    assert_eq!(v["scenarios"], 140);
    let results = v["results"].as_array().unwrap();
    let names: Vec<(String, String)> = results
        .iter()
        .map(|r| {
            (
                r["model"].as_str().unwrap().into(),
                r["fallback"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("tree", "baseline"),
            ("tree", "random"),
            ("tree", "nearest"),
            ("baseline", "-")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    for r in results {
        let p = r["performance_geomean"].as_f64().unwrap();
        assert!(p > 0.0 && p <= 1.0, "{r}");
        assert!(r["accuracy"].as_f64().unwrap() <= r["validity"].as_f64().unwrap() + 1e-12);
        assert!(r["speedup_over_baseline_median"].as_f64().is_some());
    }
    let b = &v["baseline"];
    assert_eq!(b["size"].as_array().unwrap().len(), 2);
    assert!(b["performance_geomean"].as_f64().unwrap() <= 1.0);
}

#[test]
fn features_of_a_kernel_come_from_its_llvm_ir() {
    let conv = examples().join("conv1d.cl");
    let v = json(&[
        "learn",
        "features",
        conv.to_str().unwrap(),
        "--options",
        "-D N=1024 -D MASK=5 -D WG=8",
        "--json",
    ]);
    assert!(v["f_ker_total"].as_f64().unwrap() > 10.0, "{v}");
    assert!(v["f_ker_count_fmul"].as_f64().unwrap() >= 1.0, "{v}");
}

#[test]
fn bad_training_data_and_options_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(
        dir.path(),
        "bad.csv",
        "scenario,device,kernel,dataset,f_a,wg_c,wg_r,status\n",
    );
    let err = fails(&["learn", "eval", "--data", &csv]);
    assert!(err.contains("bad.csv: no column `runtime_ms`"), "{err}");
    let err = fails(&[
        "learn",
        "eval",
        "--data",
        &training_csv(),
        "--protocol",
        "loo",
    ]);
    assert!(err.contains("--protocol loo: one of cv10"), "{err}");
    let err = fails(&[
        "learn",
        "eval",
        "--data",
        &training_csv(),
        "--models",
        "j48",
    ]);
    assert!(err.contains("unknown model `j48`"), "{err}");
    let broken = write(
        dir.path(),
        "broken.cl",
        "__kernel void k(__global float *a) { a[0] = ; }\n",
    );
    let err = fails(&["learn", "features", &broken]);
    assert!(
        err.contains("broken.cl") && err.contains("expected expression"),
        "{err}"
    );
}

#[test]
fn a_trained_model_predicts_a_legal_size_and_other_versions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.json");
    let model = model.to_str().unwrap();
    let out = common::ndtune()
        .args([
            "learn",
            "train",
            "--data",
            &training_csv(),
            "--model",
            "tree",
            "--out",
            model,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The GT 550M (Cummins' devices are built in): at most 1024 work-items, 48 KiB local memory.
    let v = json(&[
        "learn",
        "predict",
        "--model",
        model,
        "--kernel",
        "gaussian-5",
        "--size",
        "1024x1024",
        "--profile",
        "gt550m",
        "--json",
    ]);
    let wg: Vec<u64> = v["wg"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert!(wg[0] * wg[1] <= 1024 && wg[0] >= 1 && wg[1] >= 1, "{v}");
    assert!(
        (wg[0] + 10) * (wg[1] + 10) * 4 <= 49152,
        "the tile fits local memory: {v}"
    );
    assert!(v["predict_us"].as_f64().unwrap() > 0.0);

    // A generated stencil, named by its OpenCL source next to its definition.
    let gen = dir.path().join("gen");
    let out = common::ndtune()
        .args(["stencil", "gen", "--seed", "5", "--count", "1", "--out"])
        .arg(&gen)
        .output()
        .unwrap();
    assert!(out.status.success());
    let cl = std::fs::read_dir(&gen)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cl"))
        .unwrap();
    let v = json(&[
        "learn",
        "predict",
        "--model",
        model,
        "--kernel",
        cl.to_str().unwrap(),
        "--size",
        "512x512",
        "--profile",
        "gtx-titan",
        "--json",
    ]);
    assert!(v["wg"].is_array(), "{v}");
    let lone = write(dir.path(), "lone.cl", "__kernel void k() {}\n");
    let err = fails(&[
        "learn",
        "predict",
        "--model",
        model,
        "--kernel",
        &lone,
        "--size",
        "64x64",
        "--profile",
        "gt550m",
    ]);
    assert!(err.contains("lone.stencil.toml"), "{err}");

    let text = std::fs::read_to_string(model).unwrap();
    let old = write(
        dir.path(),
        "old.json",
        &text.replacen("\"format\":2", "\"format\":0", 1),
    );
    let err = fails(&[
        "learn",
        "predict",
        "--model",
        &old,
        "--kernel",
        "gol",
        "--size",
        "64x64",
        "--profile",
        "gt550m",
    ]);
    assert!(
        err.contains("model format 0") && err.contains("train the model again"),
        "{err}"
    );
}

/// Four scenarios (two devices, two kernels) of three sizes each, in the collect format, with
/// `edit` applied to the rows (`(line number, row)`, the header being line 1).
fn small_csv(edit: impl Fn(usize, String) -> String) -> String {
    let mut text =
        String::from("scenario,device,kernel,dataset,f_a,f_b,wg_c,wg_r,runtime_ms,status\n");
    let mut line = 2;
    for s in 0..4 {
        for (i, (c, r)) in [(8, 8), (16, 4), (32, 8)].into_iter().enumerate() {
            let ms = 1.0 + ((s + i) % 3) as f64;
            let row = format!(
                "s{s},dev{},k{},64x64,{},{},{c},{r},{ms},measured",
                s % 2,
                s / 2,
                s as f64 * 1.5,
                (s % 2) * 10
            );
            text += &edit(line, row);
            text.push('\n');
            line += 1;
        }
    }
    text
}

/// Runs `learn eval` and `learn train` on `csv`: both must fail with `message`, no panic.
fn both_refuse(dir: &Path, csv: &str, message: &str) {
    let path = write(dir, "bad.csv", csv);
    let out = dir.join("m.json");
    for args in [
        vec![
            "learn",
            "eval",
            "--data",
            &path,
            "--models",
            "bayes,baseline",
        ],
        vec![
            "learn",
            "train",
            "--data",
            &path,
            "--model",
            "bayes",
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let err = fails(&args);
        assert!(err.contains(message), "{args:?}: `{err}` lacks `{message}`");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn bad_values_are_refused_with_file_line_and_column_by_eval_and_train() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let on_line = |n: usize, edit: &dyn Fn(&str) -> String| {
        small_csv(|line, row| if line == n { edit(&row) } else { row })
    };
    // Run times of zero or less, or beyond any measurement.
    for ms in ["0", "-1", "1e300"] {
        let csv = on_line(4, &|row| {
            row.replace(",3,measured", &format!(",{ms},measured"))
        });
        both_refuse(
            d,
            &csv,
            &format!("bad.csv:4:9: column `runtime_ms`: `{ms}` is not the run time"),
        );
    }
    // Work-group sizes of 0, -4, 32.5.
    for side in ["0", "-4", "32.5"] {
        let csv = on_line(5, &|row| row.replace(",8,8,", &format!(",{side},8,")));
        both_refuse(
            d,
            &csv,
            &format!("bad.csv:5:7: column `wg_c`: `{side}` is not a work-group size"),
        );
    }
    // NaN and infinities anywhere.
    for value in ["NaN", "inf", "-inf"] {
        let csv = on_line(3, &|row| row.replacen(",0,", &format!(",{value},"), 1));
        both_refuse(
            d,
            &csv,
            &format!("bad.csv:3:5: column `f_a`: `{value}` is not a finite number"),
        );
    }
}

#[test]
fn extreme_features_are_scaled_and_too_little_data_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A feature of 1e308 (naive Bayes once predicted NaN on it and panicked).
    let csv = write(
        d,
        "extreme.csv",
        &small_csv(|_, row| {
            row.replacen(",1.5,10,", ",1e308,10,", 1)
                .replacen(",3,0,", ",-1e308,0,", 1)
        }),
    );
    for protocol in ["cv10", "loo-device"] {
        let v = json(&[
            "learn",
            "eval",
            "--data",
            &csv,
            "--protocol",
            protocol,
            "--models",
            "bayes,logistic,svm,baseline",
            "--json",
        ]);
        for r in v["results"].as_array().unwrap() {
            let p = r["performance_geomean"].as_f64().unwrap();
            assert!(p > 0.0 && p <= 1.0, "{r}");
        }
    }
    let model = d.join("m.json");
    common::ndtune()
        .args([
            "learn", "train", "--model", "bayes", "--data", &csv, "--out",
        ])
        .arg(&model)
        .assert()
        .success();

    // One scenario, or one device for loo-device: no fold can train and test.
    let one = write(
        d,
        "one.csv",
        &small_csv(|line, row| if line <= 4 { row } else { String::new() }),
    );
    let one = one.as_str();
    let err = fails(&["learn", "eval", "--data", one]);
    assert!(
        err.contains("one.csv: cv10 has no fold with both training and test scenarios: it needs at least 2 scenarios; the data has 1"),
        "{err}"
    );
    let err = fails(&[
        "learn",
        "eval",
        "--data",
        &csv,
        "--protocol",
        "synthetic-real",
    ]);
    assert!(
        err.contains("the data has 0 scenarios of synthetic kernels and 4 of others"),
        "{err}"
    );
    let row = write(
        d,
        "row.csv",
        "scenario,device,kernel,dataset,f_a,wg_c,wg_r,runtime_ms,status\ns,d,k,x,1,8,8,1,measured\n",
    );
    let err = fails(&["learn", "eval", "--data", &row, "--protocol", "loo-device"]);
    assert!(err.contains("the data has 1 (`d`)"), "{err}");
}

#[test]
fn eval_shows_its_progress_per_fold_and_model_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "s.csv", &small_csv(|_, row| row));
    let out = common::ndtune()
        .args([
            "learn",
            "eval",
            "--data",
            &csv,
            "--protocol",
            "loo-kernel",
            "--models",
            "tree,baseline",
            "--jobs",
            "1",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("learn eval: "))
        .collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(
        lines[0].starts_with("learn eval: 0/4 steps done at ")
            && lines[0].ends_with("; starting fold 1/2: tree"),
        "{err}"
    );
    assert!(lines[3].ends_with("starting fold 2/2: baseline"), "{err}");
}
