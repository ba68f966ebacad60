//! `ndtune tune` end to end on PoCL: every outcome, including a kernel that hangs and one that
//! kills its process; SIGKILL in the middle of a campaign, then resume; bad stores and specs.

mod common;
use common::*;
use ndtune_search::{AUTO_BUDGET, AUTO_EXHAUSTIVE_UP_TO, AUTO_STRATEGY};
use std::path::Path;
use std::time::{Duration, Instant};

/// MODE 1 does not build, 2 computes a wrong result, 3 never finishes, 4 writes through a null
/// pointer; 0 and 5 are right. `SLOW` only makes the kernel take longer.
const FAULTY: &str = r#"
__kernel void faulty(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
#if MODE == 1
#error this mode does not build
#endif
    float v = 2.0f * x[i];
    float acc = 0.0f;
    for (int k = 0; k < SLOW; ++k) acc += x[i] * (float)k;
    if (acc < -1e30f) v = 0.0f; // never true, but the compiler cannot drop the loop
#if MODE == 2
    v = -v;
#endif
#if MODE == 3
    volatile __global const float *vx = x;
    while (vx[0] < 10.0f) { }
#endif
#if MODE == 4
    // A null pointer the compiler cannot see: x holds values in [-1, 1).
    __global float *p = (__global float *)((ulong)y * (ulong)(x[0] > 100.0f));
    p[i] = v;
#endif
    y[i] = v;
}
"#;

/// How many results a store holds (0 while it cannot be opened yet).
fn stored(db: &Path) -> usize {
    let Ok(store) = ndtune_store::Store::open(db) else {
        return 0;
    };
    let groups = store.groups().unwrap_or_default();
    groups.iter().map(|g| store.records(g).unwrap().len()).sum()
}

fn faulty_spec(
    dir: &Path,
    modes: &str,
    slow: &str,
    reference: &str,
    kernel: &str,
    args: &str,
) -> String {
    std::fs::write(dir.join("faulty.cl"), FAULTY).unwrap();
    let text = format!(
        r#"
[kernel]
name = "{kernel}"
source = "faulty.cl"
[constants]
N = 1024
[params]
MODE = {modes}
SLOW = {slow}
[launch]
global = ["N"]
local = [16]
{args}
[verify]
outputs = ["y"]
reference = {reference}
[measure]
warmup = 0
runs = 3
best_of = 2
"#
    );
    write(dir, "faulty.toml", &text)
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
    let v = json(&[
        "tune",
        &spec,
        "--db",
        db.to_str().unwrap(),
        "--timeout",
        "5",
        "--json",
    ]);
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
    let rerun = |extra: &[&str]| {
        let mut args = vec![
            "tune",
            &spec,
            "--db",
            db.to_str().unwrap(),
            "--timeout",
            "5",
            "--json",
        ];
        args.extend_from_slice(extra);
        let again = json(&args);
        let d = again["devices"][0].clone();
        assert_eq!(d["outcomes"], *o, "{again}");
        (d["evaluated"].as_u64(), d["reused"].as_u64())
    };
    assert_eq!(rerun(&[]), (Some(1), Some(5)));
    assert_eq!(rerun(&["--keep-timed-out"]), (Some(0), Some(6)));
}

#[test]
fn sigkill_in_the_middle_then_resume_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let slow: Vec<String> = (1..=24).map(|k| (k * 20000).to_string()).collect();
    let spec = faulty_spec(
        dir.path(),
        "[0]",
        &format!("[{}]", slow.join(", ")),
        "{ config = { MODE = 0, SLOW = 20000 } }",
        "faulty",
        XY_ARGS,
    );
    let db = dir.path().join("k.db");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ndtune"))
        .args(["tune", &spec, "--db", db.to_str().unwrap(), "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once a few results are in, mid-campaign.
    let deadline = Instant::now() + Duration::from_secs(60);
    while stored(&db) < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = stored(&db);
    assert!(
        (3..24).contains(&before),
        "killed after {before} of 24 results"
    );
    let v = json(&["tune", &spec, "--db", db.to_str().unwrap(), "--json"]);
    let d = &v["devices"][0];
    assert_eq!(
        d["reused"].as_u64().unwrap() as usize,
        before,
        "every stored result is reused"
    );
    assert_eq!(
        d["evaluated"].as_u64().unwrap() as usize,
        24 - before,
        "nothing stored is measured again"
    );
    assert_eq!(d["outcomes"]["measured"], 24);
    assert_eq!(stored(&db), 24);
}

#[test]
fn a_foreign_or_corrupted_store_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let spec = faulty_spec(
        dir.path(),
        "[0]",
        "[1]",
        "{ config = { MODE = 0, SLOW = 1 } }",
        "faulty",
        XY_ARGS,
    );
    let bad = dir.path().join("notes.db");
    std::fs::write(&bad, "these are my notes, not a database\n").unwrap();
    let err = fails(&["tune", &spec, "--db", bad.to_str().unwrap()]);
    assert!(
        err.contains("notes.db")
            && err.contains("ndtune results store")
            && err.contains("not modified"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&bad).unwrap(),
        "these are my notes, not a database\n"
    );
}

#[test]
fn spec_errors_stop_before_anything_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    let spec = faulty_spec(
        dir.path(),
        "[0, 5]",
        "[1]",
        "{ config = { MODE = 1, SLOW = 1 } }",
        "faulty",
        XY_ARGS,
    );
    let err = fails(&["tune", &spec, "--db", db]);
    assert!(
        err.contains("the reference configuration") && err.contains("this mode does not build"),
        "{err}"
    );

    let spec = faulty_spec(
        dir.path(),
        "[0, 5]",
        "[1]",
        "{ config = { MODE = 0, SLOW = 1 } }",
        "fautly",
        XY_ARGS,
    );
    let err = fails(&["tune", &spec, "--db", db]);
    assert!(
        err.contains("no kernel `fautly`") && err.contains("faulty"),
        "{err}"
    );

    // Three arguments for a kernel that takes two.
    let one_arg = XY_ARGS.replacen("[[args]]\nname = \"x\"", "[[args]]\nname = \"unused\"", 1);
    let three = format!(
        "{one_arg}[[args]]\nname = \"n\"\nkind = \"scalar\"\ntype = \"int\"\nvalue = \"N\"\n"
    );
    let spec = faulty_spec(
        dir.path(),
        "[0, 5]",
        "[1]",
        "{ config = { MODE = 0, SLOW = 1 } }",
        "faulty",
        &three,
    );
    let err = fails(&["tune", &spec, "--db", db]);
    assert!(
        err.contains("do not match kernel `faulty`")
            && err.contains("takes 2 arguments, but 3 are given"),
        "{err}"
    );

    let n = stored(Path::new(db));
    assert_eq!(n, 0, "nothing was measured in vain");
}

#[test]
fn results_are_reused_when_the_device_reports_other_free_memory() {
    // PoCL derives global_mem_size from the memory free at start; the store must still know
    // the device. Simulate a restart with less free memory through a saved store profile.
    let dir = tempfile::tempdir().unwrap();
    let spec = faulty_spec(
        dir.path(),
        "[0, 5]",
        "[1]",
        "{ config = { MODE = 0, SLOW = 1 } }",
        "faulty",
        XY_ARGS,
    );
    let db = dir.path().join("m.db");
    json(&["tune", &spec, "--db", db.to_str().unwrap(), "--json"]);
    let store = ndtune_store::Store::open(&db).unwrap();
    let (fp, mut profile) = store.devices().unwrap().remove(0);
    profile.global_mem_size /= 3;
    assert_eq!(ndtune_store::fingerprint(&profile), fp);
}

#[test]
fn export_and_replay_round_trip_through_kernel_tuner_and_t4_files() {
    let dir = tempfile::tempdir().unwrap();
    let spec = faulty_spec(
        dir.path(),
        "[0, 1, 2, 5]",
        "[1, 2]",
        "{ config = { MODE = 0, SLOW = 1 } }",
        "faulty",
        XY_ARGS,
    );
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let tuned = json(&["tune", &spec, "--db", db, "--json"]);
    let best = tuned["devices"][0]["best"]["time_ms"].as_f64().unwrap();

    let kt = dir.path().join("kt.json");
    ndtune()
        .args([
            "export",
            "--db",
            db,
            "--format",
            "kt",
            "--out",
            kt.to_str().unwrap(),
        ])
        .assert()
        .success();
    let cache = ndtune_store::kt::read_kt_cache(&kt).unwrap();
    assert_eq!(cache.entries.len(), 8);

    for source in [kt.to_str().unwrap(), db] {
        let r = json(&[
            "tune",
            "--replay",
            source,
            "--strategy",
            "exhaustive",
            "--json",
        ]);
        assert_eq!(r["evaluations"], 8, "{source}");
        assert_eq!(r["optimum"]["time_ms"].as_f64().unwrap(), best, "{source}");
        assert_eq!(r["relative_performance"], 1.0);
        assert_eq!(
            (
                r["outcomes"]["build_failed"].as_u64(),
                r["outcomes"]["measured"].as_u64()
            ),
            (Some(2), Some(4))
        );
        let r = json(&[
            "tune",
            "--replay",
            source,
            "--strategy",
            "random",
            "--budget",
            "3",
            "--json",
        ]);
        assert_eq!(r["evaluations"], 3);
    }

    let t4 = dir.path().join("t4.json");
    ndtune()
        .args([
            "export",
            "--db",
            db,
            "--format",
            "t4",
            "--out",
            t4.to_str().unwrap(),
        ])
        .assert()
        .success();
    let t4: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&t4).unwrap()).unwrap();
    let results = t4["results"].as_array().unwrap();
    assert_eq!(results.len(), 8);
    let invalid: Vec<&str> = results
        .iter()
        .map(|r| r["invalidity"].as_str().unwrap())
        .collect();
    assert_eq!(invalid.iter().filter(|i| **i == "compile").count(), 2);
    assert_eq!(invalid.iter().filter(|i| **i == "correctness").count(), 2);
}

#[test]
fn sub_devices_are_tuned_each_in_its_own_worker() {
    let dir = tempfile::tempdir().unwrap();
    let spec = faulty_spec(
        dir.path(),
        "[0, 5]",
        "[1]",
        "{ config = { MODE = 0, SLOW = 1 } }",
        "faulty",
        XY_ARGS,
    );
    let db = dir.path().join("sub.db");
    let v = json(&[
        "tune",
        &spec,
        "--db",
        db.to_str().unwrap(),
        "--device",
        "0:0/2,0:1/2",
        "--json",
    ]);
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    for (d, part) in devices.iter().zip(["0:0/2", "0:1/2"]) {
        assert!(d["device"].as_str().unwrap().starts_with(part), "{d}");
        assert_eq!(d["outcomes"]["measured"], 2, "{d}");
    }
    let err = fails(&[
        "tune",
        &spec,
        "--db",
        db.to_str().unwrap(),
        "--device",
        "0:1/2,0:1/2",
    ]);
    assert!(err.contains("named twice"), "{err}");
}

/// A spec of [`KERNEL`] in `dir` over `WG` (6 work-groups) and the parameters `params` (TOML
/// lines), each configuration timed by a single launch.
fn one_launch_spec(dir: &Path, name: &str, params: &str) -> String {
    write(dir, "work.cl", KERNEL);
    write(
        dir,
        name,
        &format!(
            r#"
[kernel]
name = "work"
source = "work.cl"
[constants]
N = 4096
[params]
WG = [1, 2, 4, 8, 16, 32]
{params}
[launch]
global = ["N"]
local = ["WG"]
{XY_ARGS}
[measure]
warmup = 0
runs = 1
"#
        ),
    )
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
    let out = ndtune()
        .args(["tune", &spec, "--db", db.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "strategy auto: {AUTO_STRATEGY}, at most {AUTO_BUDGET} evaluations: 9600000 configurations are too many to measure all (more than {AUTO_EXHAUSTIVE_UP_TO})"
        )) && stderr.contains("--strategy NAME") && stderr.contains("--budget N"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
        let out = ndtune()
            .args(["tune", &spec, "--db", db.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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

#[test]
fn tune_with_configs_measures_those_alone_and_says_why_one_is_not_in_the_space() {
    let dir = tempfile::tempdir().unwrap();
    let spec = one_launch_spec(
        dir.path(),
        "listed.toml",
        "A = [1, 2, 3]\nSLOW = [1]\n[space]\nconstraints = [\"A * WG <= 32\"]",
    );
    let db = dir.path().join("listed.db");
    let db = db.to_str().unwrap();
    let listed = ["WG=8,A=2,SLOW=1", "WG=2,A=3,SLOW=1", "WG=32,A=1,SLOW=1"];
    let mut args = vec!["tune", &spec, "--db", db, "--json"];
    for config in listed {
        args.extend(["--config", config]);
    }
    let report = json(&args);
    let d = &report["devices"][0];
    assert_eq!(d["strategy"], "listed", "{d}");
    assert_eq!(
        (d["evaluated"].as_u64(), d["reused"].as_u64()),
        (Some(3), Some(0)),
        "{d}"
    );
    // Stored as measured, and nothing else.
    let shown = json(&["show", "--db", db, "--json"]);
    let mut measured: Vec<_> = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["config"]["WG"].as_i64(), r["config"]["A"].as_i64()))
        .collect();
    measured.sort();
    assert_eq!(
        measured,
        [(Some(2), Some(3)), (Some(8), Some(2)), (Some(32), Some(1))]
    );
    // Asked again, the stored results are reused.
    let d = &json(&args)["devices"][0];
    assert_eq!(
        (d["evaluated"].as_u64(), d["reused"].as_u64()),
        (Some(0), Some(3)),
        "{d}"
    );
    // In a sweep (whose campaigns warm-start each other) each size measures the same ones.
    let mut sweep = args.clone();
    sweep.extend(["--set", "N=2048,8192"]);
    let out = ndtune().args(&sweep).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warm start"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for d in report["devices"].as_array().unwrap() {
        assert_eq!(d["evaluated"].as_u64(), Some(3), "{d}");
    }
    assert_eq!(stored(Path::new(db)), 9);
    // A configuration outside the space is an error that says why, before anything is measured.
    let tune_one = |config: &str| fails(&["tune", &spec, "--db", db, "--config", config]);
    let err = tune_one("WG=16,A=3,SLOW=1");
    assert!(
        err.contains("--config A=3,SLOW=1,WG=16: not a configuration of the space on ")
            && err.contains("it breaks `A * WG <= 32`"),
        "{err}"
    );
    let err = tune_one("WG=5,A=1,SLOW=1");
    assert!(
        err.contains("`WG` takes none of its declared values"),
        "{err}"
    );
    let err = tune_one("WG=4,A=1");
    assert!(err.contains("lacks `SLOW`"), "{err}");
    let err = tune_one("WG=4,WG=8,A=1,SLOW=1");
    assert!(err.contains("`WG` is given twice"), "{err}");
    let err = fails(&[
        "tune",
        &spec,
        "--db",
        db,
        "--config",
        listed[0],
        "--strategy",
        "bo",
    ]);
    assert!(err.contains("cannot be used with"), "{err}");
    assert_eq!(stored(Path::new(db)), 9, "nothing more was measured");
}
