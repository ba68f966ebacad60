//! A warm start through the engine's API, on PoCL: a campaign of another problem size measures
//! first what did best for the same kernel before.

mod common;
use common::*;
use ndtune_core::{Config, Constants, Value};

/// The configurations of a report's `top`, best first.
fn ranked(report: &ndtune_engine::DeviceReport) -> Vec<Config> {
    report.top.iter().map(|r| r.config.clone()).collect()
}

#[test]
fn a_warm_start_measures_first_what_did_best_for_the_same_kernel_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let db = dir.path().join("warm.db");
    let n = |v: i64| Constants::from([("N".to_string(), Value::Int(v))]);
    let run = |request: &ndtune_engine::TuneRequest| {
        let ran = ndtune_engine::request::run(request, &mut |_| {}, None).unwrap();
        ranked(&ran.reports[0])
    };
    let mut first = request(&spec, &db, &[]);
    first.sweep = vec![n(32768)];
    let fastest = run(&first);
    // Another problem size: random search with a budget of 3, warm-started.
    let mut warm = request(&spec, &db, &[]);
    warm.sweep = vec![n(16384)];
    warm.search.strategy = "random".into();
    warm.search.budget = Some(3);
    warm.search.warm_start = true;
    let mut measured = run(&warm);
    measured.sort();
    let mut expected = fastest[..3].to_vec();
    expected.sort();
    assert_eq!(measured, expected);
}
