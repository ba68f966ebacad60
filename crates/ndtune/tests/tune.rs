//! `ndtune tune` end to end on PoCL: SIGKILL in the middle of a campaign, then resume; bad
//! stores and specs; sub-devices; export and replay; `--config`. (Every outcome of a campaign
//! and strategy `auto`'s choices are the engine's tests: crates/ndtune-engine/tests/campaign.rs.)

mod common;
use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

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
