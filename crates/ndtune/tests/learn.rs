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
