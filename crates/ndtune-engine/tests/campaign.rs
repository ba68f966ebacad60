//! Campaigns through the engine's API on PoCL: every outcome recorded, a kernel that hangs and
//! one that kills its process among them, and what strategy `auto` chooses for a space of
//! millions and for a quick space of hundreds.

mod common;
use common::*;
use ndtune_engine::{Event, RequestEvent, TuneRequest};
use ndtune_search::{AUTO_BUDGET, AUTO_EXHAUSTIVE_UP_TO, AUTO_STRATEGY};
use std::time::Duration;

/// Runs `request` and gives its report as `ndtune tune --json` prints it, with what it said
/// (warnings and notes, one a line) as `ndtune tune` shows them on standard error.
fn tune_saying(request: &TuneRequest) -> (serde_json::Value, String) {
    let mut said = String::new();
    let mut observer = |event: RequestEvent<'_>| match event {
        RequestEvent::Event {
            event: Event::Warning(line),
            ..
        }
        | RequestEvent::Note(line) => said += &format!("{line}\n"),
        _ => {}
    };
    let ran = ndtune_engine::request::run(request, &mut observer, None).unwrap();
    (serde_json::json!({ "devices": ran.reports }), said)
}

#[test]
fn every_outcome_is_recorded_and_a_hang_or_crash_does_not_stop_the_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let spec = faulty_spec(
        dir.path(),
        "[0, 1, 2, 3, 4, 5]",
        "[1]",
        "{ config = { MODE = 0, SLOW = 1 } }",
        "faulty",
        XY_ARGS,
    );
    let db = dir.path().join("t.db");
    let faulty = |keep_timed_out: bool| {
        let mut request = request(&spec, &db, &[]);
        request.timeout = Some(Duration::from_secs(5));
        request.search.keep_timed_out = keep_timed_out;
        tune(&request)
    };
    let v = faulty(false);
    let d = &v["devices"][0];
    let o = &d["outcomes"];
    assert_eq!(
        (
            o["measured"].as_u64(),
            o["build_failed"].as_u64(),
            o["wrong_result"].as_u64()
        ),
        (Some(2), Some(1), Some(1)),
        "{v}"
    );
    assert_eq!(
        (
            o["timed_out"].as_u64(),
            o["crashed"].as_u64(),
            o["refused"].as_u64()
        ),
        (Some(1), Some(1), Some(0)),
        "{v}"
    );
    assert_eq!(d["evaluated"], 6);
    // A crash convicts its configuration only after a fresh worker died of it too.
    let crash = d["failures"]["crashed"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(crash.contains("in another worker"), "{v}");
    let best = d["best"]["config"]["MODE"].as_i64().unwrap();
    assert!(
        best == 0 || best == 5,
        "only verified configurations can be best: {best}"
    );

    // Everything is in the store: a second run measures only the timeout again (it may have
    // come from the machine's load), unless told to keep it.
    let rerun = |keep_timed_out: bool| {
        let again = faulty(keep_timed_out);
        let d = again["devices"][0].clone();
        assert_eq!(d["outcomes"], *o, "{again}");
        (d["evaluated"].as_u64(), d["reused"].as_u64())
    };
    assert_eq!(rerun(false), (Some(1), Some(5)));
    assert_eq!(rerun(true), (Some(0), Some(6)));
}

#[test]
fn tune_without_a_strategy_searches_millions_of_configurations_within_its_default_budget() {
    // 6 work-groups x 200 x 200 x 20 values of parameters the kernel never reads (no define,
    // so they share a build) x 2 loop lengths: 9.6 million valid configurations.
    let dir = tempfile::tempdir().unwrap();
    let spec = one_launch_spec(
        dir.path(),
        "many.toml",
        "A = { range = [1, 200] }\nB = { range = [1, 200] }\nC = { range = [1, 20] }\nSLOW = [1, 2]",
    );
    let db = dir.path().join("many.db");
    let (report, stderr) = tune_saying(&request(&spec, &db, &[]));
    assert!(
        stderr.contains(&format!(
            "strategy auto: {AUTO_STRATEGY}, at most {AUTO_BUDGET} evaluations: 9600000 configurations are too many to measure all (more than {AUTO_EXHAUSTIVE_UP_TO})"
        )) && stderr.contains("--strategy NAME") && stderr.contains("--budget N"),
        "{stderr}"
    );
    let d = &report["devices"][0];
    assert_eq!(d["strategy"], AUTO_STRATEGY);
    assert_eq!(d["pruned"].as_u64(), Some(9_600_000));
    assert_eq!(d["evaluated"].as_u64(), Some(AUTO_BUDGET as u64), "{d}");
    assert_eq!(stored(&db), AUTO_BUDGET, "each evaluation stored once");
}

#[test]
fn tune_without_a_strategy_measures_a_quick_space_of_hundreds_whole_after_probing_it() {
    // 6 work-groups x 35 values of a parameter the kernel never reads (one build per work-group):
    // 210 configurations, more than auto measures whole untried, each a single short launch. Few
    // over the limit, so that even a slow machine's probe (its 10 evaluations build 6 programs)
    // sees the 200 left within auto's time.
    let dir = tempfile::tempdir().unwrap();
    let spec = one_launch_spec(
        dir.path(),
        "quick.toml",
        "A = { range = [1, 35] }\nSLOW = [1]",
    );
    let db = dir.path().join("quick.db");
    let tune = || {
        let (report, stderr) = tune_saying(&request(&spec, &db, &[]));
        (report["devices"][0].clone(), stderr)
    };
    let (d, stderr) = tune();
    assert!(
        stderr.contains(&format!(
            "strategy auto: {AUTO_STRATEGY}, at most {AUTO_BUDGET} evaluations, unless its first"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("strategy auto: exhaustive: its first 10 evaluations took")
            && stderr.contains("all 210 are measured"),
        "{stderr}"
    );
    assert_eq!(d["strategy"], "exhaustive");
    assert_eq!(d["evaluated"].as_u64(), Some(210), "{d}");
    assert_eq!(stored(&db), 210, "each configuration stored once");
    // Run again: the store holds them all, and auto knows it.
    let (d, stderr) = tune();
    assert!(
        stderr.contains("exhaustive: the store holds each of the 210 configurations"),
        "{stderr}"
    );
    assert_eq!(
        (d["evaluated"].as_u64(), d["reused"].as_u64()),
        (Some(0), Some(210))
    );
}
