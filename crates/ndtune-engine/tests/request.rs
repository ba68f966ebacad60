//! Tuning requests through the engine's API on PoCL, as every front end makes them: a campaign
//! and the same request again (everything reused), a sweep whose campaigns warm-start each other
//! and end with each one's best, a sweep's campaigns handing their worker processes on (each
//! campaign still builds and checks its own constants), and the requests that are refused before
//! anything runs.

mod common;
use common::*;
use ndtune_core::{Constants, Value};
use ndtune_engine::{DeviceChoice, Mode, RequestError, Search, TuneRequest};
use std::path::Path;

/// A request of `budget` random configurations of saxpy on device 0.
fn saxpy(db: &Path, budget: usize) -> TuneRequest {
    let saxpy = examples().join("saxpy.toml");
    let mut request = request(saxpy.to_str().unwrap(), db, &[]);
    request.search = Search {
        strategy: "random".into(),
        budget: Some(budget),
        build_jobs: Some(1),
        ..Search::default()
    };
    request
}

fn run(request: &TuneRequest) -> Result<ndtune_engine::Ran, RequestError> {
    ndtune_engine::request::run(request, &mut |_| {}, None)
}

#[test]
fn a_request_tunes_and_the_same_request_again_reuses_everything() {
    let dir = tempfile::tempdir().unwrap();
    let request = saxpy(&dir.path().join("a.db"), 3);
    let first = run(&request).unwrap();
    assert_eq!(first.reports.len(), 1);
    let r = &first.reports[0];
    assert_eq!((r.evaluated, r.reused), (3, 0), "{r:?}");
    assert!(r.best.is_some() && first.failure.is_none());
    let again = run(&request).unwrap();
    let r = &again.reports[0];
    assert_eq!((r.evaluated, r.reused), (0, 3), "{r:?}");
    assert_eq!(
        r.best.as_ref().map(|b| &b.config),
        first.reports[0].best.as_ref().map(|b| &b.config)
    );
}

#[test]
fn a_sweep_runs_a_campaign_per_set_of_constants_and_ends_with_their_bests() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = saxpy(&dir.path().join("sweep.db"), 2);
    let n = |v: i64| Constants::from([("N".to_string(), Value::Int(v))]);
    request.sweep = vec![n(1 << 16), n(1 << 17)];
    let ran = run(&request).unwrap();
    let swept = ran.sweep.expect("a sweep's table");
    let sizes: Vec<_> = swept.iter().map(|s| s.constants["N"].clone()).collect();
    assert_eq!(sizes, [Value::Int(1 << 16), Value::Int(1 << 17)]);
    assert!(swept.iter().all(|s| s.best.is_some()), "{swept:?}");
    assert_eq!(ran.reports.len(), 2);
}

/// A kernel that bakes its constant `VAL` in (a define) and a host reference that reads it from
/// the constants: a build of another campaign's `VAL` gives a wrong result.
const STAMP: &str = r#"
[kernel]
name = "stamp"
source = "stamp.cl"
[constants]
N = 1024
VAL = 1
[params]
WG = [16, 32, 64]
[launch]
global = ["N"]
local = ["WG"]
[[args]]
name = "out"
kind = "buffer"
type = "int"
len = "N"
init = "zeros"
access = "write"
[verify]
outputs = ["out"]
reference = { host = "stamp.c", function = "stamp" }
"#;

const STAMP_C: &str = r#"
void stamp(const ndtune_args *args) {
    ndtune_buffer *out = ndtune_buffer_named(args, "out");
    long long val = ndtune_value_named(args, "VAL")->i;
    for (size_t i = 0; i < out->len; ++i) ((int *)out->data)[i] = (int)(val * 100000 + i);
}
"#;

/// An exhaustive request of [`STAMP`] in `dir` (2 build workers), its store `dir/db`.
fn stamp_request(dir: &Path, db: &str) -> TuneRequest {
    // The path in a comment makes the source new to every cache (the program cache, PoCL's).
    let kernel = format!(
        "// {}\n__kernel void stamp(__global int *out) {{ int i = get_global_id(0); out[i] = VAL * 100000 + i; }}\n",
        dir.display()
    );
    std::fs::write(dir.join("stamp.cl"), kernel).unwrap();
    std::fs::write(dir.join("stamp.c"), STAMP_C).unwrap();
    let spec = dir.join("stamp.toml");
    std::fs::write(&spec, STAMP).unwrap();
    // Without PoCL's cache of builds, build workers hand the measurement program binaries (as
    // on a GPU), so a build worker still on the campaign before's constants would be caught.
    let pocl_builds_uncached = [("POCL_KERNEL_CACHE", Path::new("0"))];
    let mut request = request(spec.to_str().unwrap(), &dir.join(db), &pocl_builds_uncached);
    request.search = Search {
        strategy: "exhaustive".into(),
        build_jobs: Some(2),
        ..Search::default()
    };
    request
}

#[test]
fn a_sweep_hands_its_workers_on_and_each_campaign_builds_its_own_constants() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = stamp_request(dir.path(), "stamp.db");
    let set = |n: i64, val: i64| {
        Constants::from([
            ("N".to_string(), Value::Int(n)),
            ("VAL".to_string(), Value::Int(val)),
        ])
    };
    // The first campaign alone first: in the sweep it then measures nothing, and its worker,
    // started ahead and never asked, takes the second up while still starting.
    request.sweep = vec![set(1024, 1)];
    let first = run(&request).unwrap();
    assert_eq!(first.reports[0].evaluated, 3);
    request.sweep = vec![set(1024, 1), set(2048, 2), set(1024, 3)];
    let ran = run(&request).unwrap();
    assert!(ran.failure.is_none(), "{:?}", ran.failure);
    assert_eq!(ran.reports.len(), 3);
    for (k, r) in ran.reports.iter().enumerate() {
        let measured = r.outcomes.get("measured").copied().unwrap_or(0);
        let evaluated = if k == 0 { 0 } else { 3 };
        assert_eq!(
            (measured, r.evaluated),
            (3, evaluated),
            "campaign {k}: {:?}",
            r.outcomes
        );
        let t = &r.time;
        if k == 0 {
            assert_eq!(t.workers_started, 1, "{t:?}");
        } else {
            // The measurement worker the campaign before left took the new constants up, and
            // the build workers did (the first campaign built nothing: the second starts them).
            assert_eq!(t.workers_started, 0, "campaign {k}: {t:?}");
            assert!(t.build_workers_s > 0.0, "campaign {k} built nothing: {t:?}");
        }
    }
    let builders: usize = ran.reports.iter().map(|r| r.time.builders_started).sum();
    assert!(
        (1..=2).contains(&builders),
        "{builders} build workers started for 2 slots"
    );
}

/// A front end that lives on (a Python session) keeps its workers from one request to the
/// next: the next request on the device takes them up (each still builds and checks its own
/// constants); one whose workers would start otherwise (another fixed deadline, another
/// environment) starts its own.
#[test]
fn a_request_takes_up_the_workers_the_request_before_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = stamp_request(dir.path(), "kept.db");
    let mut kept = ndtune_engine::request::KeptWorkers::default();
    let mut run_with = |request: &TuneRequest, val: i64| {
        let mut request = request.clone();
        request.sweep = vec![Constants::from([("VAL".to_string(), Value::Int(val))])];
        let ran = ndtune_engine::request::run_keeping(&request, Some(&mut kept), &mut |_| {}, None)
            .unwrap();
        assert!(ran.failure.is_none(), "{:?}", ran.failure);
        let r = ran.reports.into_iter().next().unwrap();
        // Each of VAL's builds checked against its own reference.
        assert_eq!(
            r.outcomes.get("measured"),
            Some(&3),
            "VAL {val}: {:?}",
            r.outcomes
        );
        r.time
    };
    let first = run_with(&request, 1);
    assert_eq!(first.workers_started, 1, "{first:?}");
    assert!(first.builders_started >= 1, "{first:?}");
    let next = run_with(&request, 2);
    assert_eq!(
        (next.workers_started, next.builders_started),
        (0, 0),
        "{next:?}"
    );
    assert!(next.build_workers_s > 0.0, "VAL 2 built nothing: {next:?}");
    request.timeout = Some(std::time::Duration::from_secs(30));
    let other = run_with(&request, 3);
    assert_eq!(other.workers_started, 1, "{other:?}");
    assert!(other.builders_started >= 1, "{other:?}");
    // An environment that changed since (a session that set NDTUNE_CACHE_DIR, say) gets
    // workers that see it.
    std::env::set_var("NDTUNE_TEST_KEPT_WORKERS", "changed");
    let changed = run_with(&request, 4);
    assert_eq!(changed.workers_started, 1, "{changed:?}");
    assert!(!kept.is_empty());
}

#[test]
fn requests_that_cannot_run_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("refused.db");
    let refused = |request: &TuneRequest| match run(request) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{request:?} ran"),
    };
    let mut r = saxpy(&db, 1);
    r.devices = DeviceChoice::Selector(Some("0,0:0/2".into()));
    let e = refused(&r);
    assert!(e.contains("share compute units"), "{e}");
    let mut r = saxpy(&db, 1);
    r.devices = DeviceChoice::Selector(Some("0:0/2,0:1/2".into()));
    r.mode = Mode::Worker { id: None };
    let e = refused(&r);
    assert!(e.contains("--worker measures on one device"), "{e}");
    let mut r = saxpy(&db, 1);
    r.mode = Mode::Pool;
    r.sweep = vec![Constants::new(), Constants::new()];
    let e = refused(&r);
    assert!(e.contains("--pool runs one campaign"), "{e}");
    let mut r = saxpy(&db, 1);
    r.search.strategy = "no-such-strategy".into();
    let e = refused(&r);
    assert!(e.contains("no-such-strategy"), "{e}");
    assert!(!db.exists(), "a refused request opened the store");
}
