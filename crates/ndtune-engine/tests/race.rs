//! Racing on PoCL, through the engine's API: a launch-bound campaign tuned with racing spares
//! timed runs and finds the best configuration and score that timing everything in full finds;
//! scouts find a fast configuration first, so racing stops a walk that starts with the slowest.

mod common;
use common::*;
use ndtune_core::{Outcome, Timing};
use ndtune_engine::TuneRequest;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Work grows with W: W = 1 is the best by far, W = 2 takes twice as long, and most of the space
/// tens of times longer. Launch-bound: the launches are nearly all of a campaign's time.
/// ([`spec`] gives each work-item 1024 W steps: at 64, W = 1 and W = 2 both took about the launch's
/// own 0.25 ms on PoCL, and W = 2 came out best on CI's machine.)
const KERNEL: &str = r#"
__kernel void work(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
    float acc = x[i];
    for (int k = 0; k < 64 * W; ++k) acc = acc * 0.999f + 0.001f * x[(i + k) % N];
    y[i] = 2.0f * x[i] + (acc < -1e30f ? 1.0f : 0.0f);
}
"#;

fn spec(dir: &Path) -> String {
    spec_with(dir, "1024 * W")
}

/// The spec of [`KERNEL`] with its loop's trip count `work`, an expression of W.
fn spec_with(dir: &Path, work: &str) -> String {
    std::fs::write(dir.join("work.cl"), KERNEL.replace("64 * W", work)).unwrap();
    work_spec(dir, 30, "")
}

/// The spec of kernel `work` in `work.cl`, W from 1 to `up_to`, arguments x and y and then
/// `more_args`, verified against W = 1.
fn work_spec(dir: &Path, up_to: i64, more_args: &str) -> String {
    write(
        dir,
        "work.toml",
        &format!(
            r#"
[kernel]
name = "work"
source = "work.cl"
[constants]
N = 4096
[params]
W = {{ range = [1, {up_to}] }}
[launch]
global = ["N"]
local = ["64"]
{XY_ARGS}
{more_args}
[verify]
outputs = ["y"]
reference = {{ config = {{ W = 1 }} }}
# A metric recorded besides the time: the objective is still the time, so racing applies.
[measure]
flops = "2 * 64 * W * N"
"#
        ),
    )
}

/// Every stored timing of the store's one campaign, by W.
fn timings(db: &Path) -> BTreeMap<i64, Timing> {
    let store = ndtune_store::Store::open(db).unwrap();
    let g = &store.groups().unwrap()[0];
    store
        .records(g)
        .unwrap()
        .into_iter()
        .map(|r| match r.outcome {
            Outcome::Measured(t) => (r.key.config["W"].as_int().unwrap(), t),
            other => panic!("W = {}: {other:?}", r.key.config["W"]),
        })
        .collect()
}

/// Tunes with the builds in the measurement worker unless `how` sets build workers: the tests
/// compare bests 2x apart at about PoCL's launch time, which build workers sharing a 2-core
/// machine's cores blur (the scouts' test names its pool).
fn race(spec: &str, db: &Path, how: impl FnOnce(&mut TuneRequest)) -> Value {
    let mut request = request(spec, db, &[]);
    request.search.build_jobs = Some(1);
    how(&mut request);
    tune(&request)
}

#[test]
fn racing_spares_runs_and_finds_the_best_configuration_and_score_of_full_timing() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("race.db");

    // With racing (on by default).
    let raced = race(&spec, &db, |_| {});
    let d = &raced["devices"][0];
    assert_eq!(d["outcomes"]["measured"], 30, "{d}");
    let stopped: Vec<i64> = timings(&db)
        .into_iter()
        .filter(|(_, t)| t.raced.is_some())
        .map(|(w, t)| {
            let r = t.raced.unwrap();
            assert!(t.times_ms.len() < 10 && r.planned == 10, "W = {w}: {t:?}");
            assert!(
                t.min_ms() > r.limit_ms && r.limit_ms > r.best_ms,
                "W = {w}: {t:?}"
            );
            assert_eq!((r.margin, r.confidence), (0.5, 0.99));
            w
        })
        .collect();
    assert!(
        stopped.len() >= 10,
        "racing stopped only {stopped:?}: {}",
        d["time"]
    );
    assert_eq!(d["time"]["raced"], stopped.len());
    assert!(d["time"]["runs_spared"].as_u64().unwrap() >= 10 * stopped.len() as u64 / 2);
    // What could be the best got every run.
    let best_w = d["best"]["config"]["W"].as_i64().unwrap();
    assert_eq!(best_w, 1, "{d}");
    assert_eq!(timings(&db)[&1].times_ms.len(), 10);

    // Without racing on the same store: only what racing stopped is measured again, in full,
    // and none of it beats the best; the best configuration and its score are the same.
    let full = race(&spec, &db, |r| r.race.on = Some(false));
    let f = &full["devices"][0];
    assert_eq!(f["evaluated"], stopped.len(), "{f}");
    assert_eq!(f["reused"], 30 - stopped.len(), "{f}");
    assert_eq!(f["time"]["raced"], 0);
    assert_eq!(
        f["best"], d["best"],
        "the same best configuration and score"
    );
    assert!(timings(&db)
        .values()
        .all(|t| t.raced.is_none() && t.times_ms.len() == 10));

    // And a fresh campaign timing everything in full finds the same best configuration.
    let fresh = race(&spec, &dir.path().join("full.db"), |r| {
        r.race.on = Some(false)
    });
    assert_eq!(fresh["devices"][0]["best"]["config"], d["best"]["config"]);
    assert_eq!(fresh["devices"][0]["time"]["raced"], 0);
}

#[test]
fn scouts_find_a_fast_configuration_first_so_racing_stops_a_walk_that_starts_with_the_slowest() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    // Work falls as W grows, so the space's own order is slowest first: walked in that order,
    // every configuration after the ten racing needs in full would be faster than the best so
    // far, and none could be stopped. (Exhaustive search walks it scattered; the scouts come
    // first whatever the order.)
    let spec = spec_with(dir.path(), "64 * (31 - W)");
    let db = dir.path().join("scouts.db");
    // Two build workers: the scouts' builds go first, after the two already under way.
    let d = race(&spec, &db, |r| {
        r.search.strategy = "exhaustive".into();
        r.search.build_jobs = Some(2);
    })["devices"][0]
        .clone();
    assert_eq!(d["outcomes"]["measured"], 30, "{d}");
    // W = 30 has half the work of W = 29, but at this size both take about the launch's own
    // 0.3 ms on PoCL, closer than its noise: either may come out best.
    let best = d["best"]["config"]["W"].as_i64().unwrap();
    assert!(best >= 29, "{d}");
    // The first measured are the scouts, spread over the walk (and the two builds that were
    // under way when they were asked for): a fast one among them.
    let store = ndtune_store::Store::open(&db).unwrap();
    let g = &store.groups().unwrap()[0];
    let mut records = store.records(g).unwrap();
    records.sort_by_key(|r| r.started_at);
    let first: Vec<i64> = records[..14]
        .iter()
        .map(|r| r.key.config["W"].as_int().unwrap())
        .collect();
    assert!(first.iter().any(|&w| w >= 28), "first measured: {first:?}");
    // So racing stopped most of the slow ones (W <= 27 has four times W = 30's work or more).
    let stopped = timings(&db).values().filter(|t| t.raced.is_some()).count();
    assert!(stopped >= 8, "racing stopped {stopped}: {}", d["time"]);
}

/// A kernel whose work is a scalar argument: every configuration runs the one build.
const STEPS_KERNEL: &str = r#"
__kernel void work(__global const float *x, __global float *y, int steps) {
    size_t i = get_global_id(0);
    float acc = x[i];
    for (int k = 0; k < steps; ++k) acc = acc * 0.999f + 0.001f * x[(i + k) % N];
    y[i] = 2.0f * x[i] + (acc < -1e30f ? 1.0f : 0.0f);
}
"#;

#[test]
fn a_configuration_far_slower_than_the_best_is_stopped_on_its_first_run() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("work.cl"), STEPS_KERNEL).unwrap();
    // 300 configurations, one build: each tenth W (W // 10 - (W - 1) // 10 is 1) does 400
    // times the others' work, the rest about the launch's own time. Once 99 were timed in full,
    // racing knows how much slower a first run is, and stops the slow ones on it. Under load,
    // racing stops half the fast ones too (74 of CI's 150 once), which teach nothing about first
    // runs: the walk is long enough for 99 to be timed in full even so.
    let spec = work_spec(
        dir.path(),
        300,
        r#"
[[args]]
name = "steps"
kind = "scalar"
type = "int"
value = "16 * (1 + 399 * (W // 10 - (W - 1) // 10))"
"#,
    );
    let db = dir.path().join("cold.db");
    let d = race(&spec, &db, |r| r.search.strategy = "exhaustive".into())["devices"][0].clone();
    assert_eq!(d["outcomes"]["measured"], 300, "{d}");
    let timings = timings(&db);
    let cold: Vec<i64> = timings
        .iter()
        .filter(|(_, t)| t.raced.is_some_and(|r| r.cold))
        .map(|(&w, t)| {
            let r = t.raced.unwrap();
            // Its one time is its first run, above the limit; it spared every timed run.
            assert_eq!(t.times_ms, [t.cold_ms.unwrap()], "W = {w}: {t:?}");
            assert!(
                t.min_ms() > r.limit_ms && r.limit_ms > r.best_ms,
                "W = {w}: {t:?}"
            );
            assert_eq!(r.planned, 10);
            w
        })
        .collect();
    // Slow ones among them (a fast one may be too, under a burst of load: racing promises
    // only that the best is not, with its confidence).
    assert!(
        cold.iter().any(|w| w % 10 == 0),
        "no slow configuration stopped on its first run ({cold:?}): {}",
        d["time"]
    );
    // Every configuration timed in full kept its first run, which racing learnt from.
    assert!(timings.values().all(|t| t.cold_ms.is_some()));
    assert!(d["time"]["runs_spared"].as_u64().unwrap() >= 10 * cold.len() as u64);
    // The best is a fast one, and got every timed run.
    let best = d["best"]["config"]["W"].as_i64().unwrap();
    assert!(best % 10 != 0, "{d}");
    assert_eq!(timings[&best].times_ms.len(), 10, "{d}");
}
