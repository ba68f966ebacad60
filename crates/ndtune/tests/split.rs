//! `ndtune split` end to end on real OpenCL: the two halves of the PoCL CPU (sub-devices 0:0/2
//! and 0:1/2) co-execute the shipped matmul and conv1d, each with its best configuration from the
//! store (tuned first), and the gathered output is verified; bad input is refused clearly.

mod common;

use common::{examples, fails, json, ndtune, write};
use serde_json::Value;

const HALVES: &str = "0:0/2,0:1/2";

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// What a successful run prints.
fn text_of(args: &[&str]) -> String {
    let out = ndtune().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks every figure of a co-execution report against the others.
fn check_report(v: &Value) {
    assert_eq!(v["verified"], true, "{v}");
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    let global = v["global"].as_u64().unwrap();
    let plan = v["plan"].as_array().unwrap();
    let mut covered = 0;
    for p in plan {
        let wg = devices[p["device"].as_u64().unwrap() as usize]["wg"]
            .as_u64()
            .unwrap();
        let size = p["size"].as_u64().unwrap();
        assert_eq!(size, p["work_groups"].as_u64().unwrap() * wg, "{p}");
        assert!(p["offset"].as_u64().unwrap() + size <= global);
        covered += size;
    }
    assert_eq!(covered, global + v["overlap"].as_u64().unwrap());
    let single: Vec<f64> = v["single_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    let best = single.iter().cloned().fold(f64::INFINITY, f64::min);
    let speeds: f64 = single.iter().map(|t| 1.0 / t).sum();
    assert!((f(v, "ideal_speedup") - speeds * best).abs() < 1e-9);
    let speedup = best / f(v, "coexec_ms");
    assert!((f(v, "efficiency") - speedup / f(v, "ideal_speedup")).abs() < 1e-9);
    assert!((f(v, "overhead") - (f(v, "coexec_ms") / f(v, "theoretical_ms") - 1.0)).abs() < 1e-9);
    let balance = f(v, "balance");
    assert!(balance > 0.0 && balance <= 1.0, "{balance}");
    // Whatever was decided, it never runs slower than the best device alone.
    assert!(f(&v["decision"], "ms") <= best);
    for d in devices {
        assert!(
            d["config"].as_object().is_some_and(|c| !c.is_empty()),
            "{d}"
        );
        assert!(f(d, "tuned_ms") > 0.0 && f(d, "single_ms") > 0.0);
    }
}

#[test]
fn matmul_and_conv1d_co_execute_on_the_two_halves_of_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("split.db");
    let db = db.to_str().unwrap();
    for (spec, n) in [("matmul.toml", "N=64"), ("conv1d.toml", "N=4096")] {
        let spec = examples().join(spec);
        let spec = spec.to_str().unwrap();
        let args = ["split", spec, "--set", n, "--devices", HALVES, "--db", db];
        let v = json(&[&args[..], &["--json", "--sweep", "0.5"]].concat());
        check_report(&v);
        let sweep = v["sweep"].as_array().unwrap();
        let factors: Vec<f64> = sweep
            .iter()
            .filter(|p| p["planner"] == false)
            .map(|p| f(p, "factor"))
            .collect();
        assert_eq!(factors, vec![0.0, 0.5, 1.0]);
        assert!(sweep.iter().all(|p| p["verified"] == true));
        // The sweep's ends are one device alone: device 0 gets nothing, then everything.
        assert_eq!(sweep[0]["factors"][0], 0.0);
        assert_eq!(sweep.last().unwrap()["factors"][1], 0.0);
        // The text report, now from the stored best configurations.
        let text = text_of(&args);
        for want in [
            "plan (Table 3), residue rule `finish`",
            "paper rule (not run): sizes ",
            "theoretical",
            "efficiency",
            "balance",
            "verified:",
            "decision:",
            "fixed costs per device",
            "predicted before running",
        ] {
            assert!(text.contains(want), "{want} missing in\n{text}");
        }
    }
}

#[test]
fn auto_shows_every_scheduler_its_timeline_and_the_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("split.db");
    let spec = examples().join("conv1d.toml");
    let args = [
        "split",
        spec.to_str().unwrap(),
        "--set",
        "N=8192",
        "--devices",
        HALVES,
        "--db",
        db.to_str().unwrap(),
        "--schedule",
        "auto",
        "--chunks",
        "6",
    ];
    let v = json(&[&args[..], &["--json"]].concat());
    check_report(&v);
    let runs = v["schedules"].as_array().unwrap();
    let names: Vec<&str> = runs
        .iter()
        .map(|r| r["scheduler"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["static", "dynamic", "hguided"]);
    let best = v["single_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    for r in runs {
        assert_eq!(r["verified"], true, "{r}");
        let items: u64 = r["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["size"].as_u64().unwrap())
            .sum();
        assert_eq!(items, v["global"].as_u64().unwrap(), "{r}");
        assert!((f(r, "speedup") - best / f(r, "ms")).abs() < 1e-9);
    }
    assert_eq!(runs[1]["timeline"].as_array().unwrap().len(), 6);
    assert!(f(&v["prediction"], "ms") > 0.0);
    assert_eq!(v["fixed"].as_array().unwrap().len(), 2);
    // The decision is the fastest verified scheduler, or the best device alone.
    let fastest = runs
        .iter()
        .map(|r| f(r, "ms"))
        .fold(f64::INFINITY, f64::min);
    assert!(
        (f(&v["decision"], "ms") - fastest.min(best)).abs() < 1e-9,
        "{v}"
    );
    let text = text_of(&args);
    for want in [
        "schedule          ms  speedup efficiency  balance  chunks  verified",
        "   dynamic",
        "   hguided",
        "timeline of `dynamic`",
        "predicted before running",
        "decision:",
    ] {
        assert!(text.contains(want), "{want} missing in\n{text}");
    }
}

#[test]
fn bad_devices_dimensions_and_specs_are_refused_before_anything_runs() {
    let conv = examples().join("conv1d.toml");
    let conv = conv.to_str().unwrap();
    for (devices, why) in [
        ("0:1/2,0:1/2", "0:1/2 is named twice"),
        ("0,0:1/2", "a sub-device of it share compute units"),
        ("0", "at least two devices"),
        ("0:0/2,7", "no device matches `7`"),
    ] {
        let err = fails(&[
            "split",
            conv,
            "--devices",
            devices,
            "--db",
            "/nonexistent/x.db",
        ]);
        assert!(err.contains(why), "{devices}: {err}");
    }
    let err = fails(&["split", conv, "--devices", HALVES, "--dim", "1"]);
    assert!(
        err.contains("--dim 1: the launch of") && err.contains("1 dimension(s)"),
        "{err}"
    );
    let err = fails(&["split", conv, "--devices", HALVES, "--schedule", "fastest"]);
    assert!(
        err.contains("`fastest`") && err.contains("hguided"),
        "{err}"
    );
    let err = fails(&[
        "split",
        conv,
        "--devices",
        HALVES,
        "--schedule",
        "dynamic",
        "--chunks",
        "0",
    ]);
    assert!(err.contains("--chunks 0"), "{err}");
    let err = fails(&["split", conv, "--devices", HALVES, "--sweep", "0"]);
    assert!(err.contains("0 is not in (0, 1]"), "{err}");
    let cnn = examples().join("cnn.toml");
    let err = fails(&["split", cnn.to_str().unwrap(), "--devices", HALVES]);
    assert!(
        err.contains("cnn.toml") && err.contains("no [split] section"),
        "{err}"
    );
    let err = fails(&["split", "--devices", HALVES]);
    assert!(err.contains("<SPEC>"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(examples().join("conv1d.cl"), dir.path().join("conv1d.cl")).unwrap();
    let text = std::fs::read_to_string(examples().join("conv1d.toml")).unwrap();
    let typo = write(
        dir.path(),
        "typo.toml",
        &text.replace("out = { stride = 1 }", "outt = { stride = 1 }"),
    );
    let err = fails(&["split", &typo, "--devices", HALVES]);
    assert!(
        err.contains("typo.toml:") && err.contains("no buffer argument `outt`"),
        "{err}"
    );
}

#[test]
fn a_split_declaration_that_contradicts_the_kernel_is_reported_and_not_used() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(examples().join("conv1d.cl"), dir.path().join("conv1d.cl")).unwrap();
    let text = std::fs::read_to_string(examples().join("conv1d.toml")).unwrap();
    // Without the halo each part reads past its slice of `in`.
    let spec = write(
        dir.path(),
        "nohalo.toml",
        &text.replace("after = \"MASK - 1\"", "after = 0"),
    );
    let db = dir.path().join("s.db");
    let out = ndtune()
        .args([
            "split",
            &spec,
            "--set",
            "N=2048",
            "--devices",
            HALVES,
            "--json",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verified"], false);
    assert_eq!(v["decision"]["mode"], "single");
    assert!(v["mismatch"].as_str().unwrap().starts_with("out:"), "{v}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("co-executed output of `conv1d` does not match"),
        "{err}"
    );
}

#[test]
fn a_device_that_cannot_run_the_kernel_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(examples().join("conv1d.cl"), dir.path().join("conv1d.cl")).unwrap();
    let text = std::fs::read_to_string(examples().join("conv1d.toml")).unwrap();
    // Only work-groups larger than any device allows.
    let spec = write(
        dir.path(),
        "big.toml",
        &text.replace("WG = { range = [1, 65536] }", "WG = [65536]"),
    );
    let db = dir.path().join("s.db");
    let out = ndtune()
        .args(["split", &spec, "--devices", HALVES, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0:0/2"), "{err}");
}
