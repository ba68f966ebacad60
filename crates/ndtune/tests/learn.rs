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
