//! `ndtune bench-strategies` on real Kernel Tuner caches: the table, the JSON, the figure, the
//! warm start and Kernel Tuner's results beside ndtune's.

mod common;

use common::{fails, ndtune};
use std::path::{Path, PathBuf};

fn cache(gpu: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/kt-benchmark-hub/cachefiles/convolution_milo")
        .join(format!("{gpu}.json.gz"))
        .to_string_lossy()
        .into_owned()
}

#[test]
fn compares_strategies_with_a_warm_start_and_kernel_tuners_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| -> PathBuf { dir.path().join(name) };
    let kt = serde_json::json!([{
        "dataset": "convolution_milo/A100",
        "strategy": "kt:genetic_algorithm",
        "mean": {"10": 0.5, "30": 0.75},
        "evals_90": null,
        "evals_95": null,
        "seeds": 4
    }]);
    std::fs::write(out("kt.json"), kt.to_string()).unwrap();
    let run = ndtune()
        .args([
            "bench-strategies",
            &cache("A100"),
            &cache("A4000"),
            &cache("MI250X"),
        ])
        .args([
            "--strategies",
            "random,ga",
            "--budgets",
            "30,10",
            "--seeds",
            "3",
        ])
        .args(["--warm-start", "--warm", "5"])
        .arg("--kt")
        .arg(out("kt.json"))
        .arg("--json")
        .arg(out("r.json"))
        .arg("--svg")
        .arg(out("r.svg"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let table = String::from_utf8(run.stdout).unwrap();
    assert!(
        table.contains("convolution_milo/A100 (4362 configurations, optimum 0.5536 ms, warm start from 5 configurations)"),
        "{table}"
    );
    assert!(table.contains("kt:genetic_algorithm"), "{table}");
    assert!(table.contains("best at 10: "), "{table}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out("r.json")).unwrap()).unwrap();
    assert_eq!(report["budgets"], serde_json::json!([10, 30]));
    let results = report["results"].as_array().unwrap();
    // Two strategies on three datasets, plus Kernel Tuner's one result on A100.
    assert_eq!(results.len(), 7);
    for r in results {
        let (m10, m30) = (
            r["mean"]["10"].as_f64().unwrap(),
            r["mean"]["30"].as_f64().unwrap(),
        );
        assert!(0.0 < m10 && m10 <= m30 && m30 <= 1.0, "{r}");
    }
    let svg = std::fs::read_to_string(out("r.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("convolution_milo/MI250X"));
    assert!(svg.contains("kt:genetic_algorithm"));
}

#[test]
fn an_unknown_strategy_or_no_budget_is_an_error() {
    let err = fails(&["bench-strategies", &cache("A100"), "--strategies", "tabu"]);
    assert!(err.contains("unknown strategy `tabu`"), "{err}");
    let err = fails(&["bench-strategies", &cache("A100"), "--budgets", ""]);
    assert!(!err.is_empty());
}

#[test]
fn reads_a_cltune_csv_as_one_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("mini");
    std::fs::create_dir(&folder).unwrap();
    let mut csv = String::from("A,B,Run1 (ms),Run2 (ms)\n");
    for a in 1..=4 {
        for b in 1..=3 {
            let ms = (a * b) as f64 + 0.5;
            csv.push_str(&format!("{a},{b},{ms},{}\n", ms + 1.0));
        }
    }
    let path = folder.join("space.csv");
    std::fs::write(&path, csv).unwrap();
    let json = dir.path().join("r.json");
    let out = ndtune()
        .args(["bench-strategies", path.to_str().unwrap()])
        .args([
            "--strategies",
            "random,forest",
            "--budgets",
            "4,12",
            "--seeds",
            "3",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let d = &v["datasets"][0];
    assert_eq!(d["id"], "cltune/mini");
    assert_eq!(d["configurations"], 12);
    // The mean of the runs of A=1, B=1: (1.5 + 2.5) / 2.
    assert_eq!(d["optimum_ms"], 2.0);
    // With the whole space as budget every strategy finds the optimum.
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["mean"]["12"], 1.0, "{r}");
    }
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "A,Run1 (ms)\n1,fast\n").unwrap();
    let err = fails(&["bench-strategies", bad.to_str().unwrap()]);
    assert!(
        err.contains("bad.csv: line 2: `fast` is not a time"),
        "{err}"
    );
}
