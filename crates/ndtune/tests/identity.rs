//! A result's identity on PoCL, end to end: a stored result is reused only by a campaign of the
//! same setup. Each change that can change a result (build options, `[measure]`, an argument's
//! data, the seed, a `[verify]` reference, a header's content) makes the next campaign measure
//! again, and an unchanged rerun reuses everything; earlier campaigns stay in the store, where
//! `status` shows them and `export` tells them apart. Also: a sweep over `--set` values, and the
//! commands that take `--set`.

mod common;
use common::*;
use std::path::Path;

/// `y = FACTOR * x`, `FACTOR` from a header of an include directory.
const SCALE: &str = r#"#include "factor.h"
__kernel void scale(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
    y[i] = FACTOR * x[i];
}
"#;

/// A reference kernel that computes `K * x`.
fn reference(k: i64) -> String {
    format!(
        "__kernel void ref(__global const float *x, __global float *y) {{\n    size_t i = get_global_id(0);\n    y[i] = {k}.0f * x[i];\n}}\n"
    )
}

/// The spec, with `extra` build options, `runs`, `x`'s `init` and an optional `[verify]`.
fn spec(options: &str, runs: u32, init: &str, verify: &str) -> String {
    format!(
        r#"[kernel]
name = "scale"
source = "scale.cl"
include_dirs = ["inc"]
build_options = [{options}]
[constants]
N = 64
[params]
WG = [1, 2, 4]
[launch]
global = ["N"]
local = ["WG"]
[[args]]
name = "x"
kind = "buffer"
type = "float"
len = "N"
init = "{init}"
access = "read"
[[args]]
name = "y"
kind = "buffer"
type = "float"
len = "N"
access = "write"
{verify}
[measure]
warmup = 0
runs = {runs}
best_of = 1
"#
    )
}

const VERIFY: &str =
    "[verify]\noutputs = [\"y\"]\nreference = { kernel = \"ref.cl\", name = \"ref\" }";

/// Tunes `spec.toml` of `dir` into its store with `seed` (build workers, so program binaries
/// are kept and looked up); the device's report.
fn tune(dir: &Path, seed: &str) -> serde_json::Value {
    let spec = dir.join("spec.toml");
    let db = dir.join("t.db");
    let v = json(&[
        "tune",
        spec.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--seed",
        seed,
        "--build-jobs",
        "2",
        "--json",
    ]);
    v["devices"][0].clone()
}

fn counts(d: &serde_json::Value) -> (u64, u64, u64, u64) {
    (
        d["evaluated"].as_u64().unwrap(),
        d["reused"].as_u64().unwrap(),
        d["outcomes"]["measured"].as_u64().unwrap(),
        d["outcomes"]["wrong_result"].as_u64().unwrap(),
    )
}

#[test]
fn each_change_that_can_change_a_result_measures_again_and_an_unchanged_rerun_reuses_all() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("inc")).unwrap();
    std::fs::write(d.join("scale.cl"), SCALE).unwrap();
    std::fs::write(d.join("inc/factor.h"), "#define FACTOR 2.0f\n").unwrap();
    std::fs::write(d.join("ref.cl"), reference(2)).unwrap();
    let write = |text: String| std::fs::write(d.join("spec.toml"), text).unwrap();

    write(spec("", 2, "random", ""));
    let first = tune(d, "1");
    assert_eq!(counts(&first), (3, 0, 3, 0), "{first}");
    let again = tune(d, "1");
    assert_eq!(
        counts(&again),
        (0, 3, 3, 0),
        "an unchanged rerun reuses all: {again}"
    );
    assert_eq!(again["setup"], first["setup"]);
    assert_eq!(again["not_reused"], serde_json::json!([]));

    // (what changes, the spec, the seed, what the next campaign must find)
    let steps: [(&str, String, &str, (u64, u64, u64, u64)); 7] = [
        (
            "build options",
            spec("\"-cl-fast-relaxed-math\"", 2, "random", ""),
            "1",
            (3, 0, 3, 0),
        ),
        (
            "[measure] runs",
            spec("\"-cl-fast-relaxed-math\"", 3, "random", ""),
            "1",
            (3, 0, 3, 0),
        ),
        (
            "the seed of random data",
            spec("\"-cl-fast-relaxed-math\"", 3, "random", ""),
            "2",
            (3, 0, 3, 0),
        ),
        (
            "an argument's init",
            spec("\"-cl-fast-relaxed-math\"", 3, "iota", ""),
            "2",
            (3, 0, 3, 0),
        ),
        (
            "a wrong [verify] reference added",
            spec("\"-cl-fast-relaxed-math\"", 3, "iota", VERIFY),
            "2",
            (3, 0, 0, 3),
        ),
        (
            "the reference file fixed",
            spec("\"-cl-fast-relaxed-math\"", 3, "iota", VERIFY),
            "2",
            (3, 0, 3, 0),
        ),
        (
            "a header's content",
            spec("\"-cl-fast-relaxed-math\"", 3, "iota", VERIFY),
            "2",
            (3, 0, 0, 3),
        ),
    ];
    let mut setups = vec![first["setup"].as_str().unwrap().to_string()];
    for (i, (what, text, seed, expected)) in steps.into_iter().enumerate() {
        write(text);
        match i {
            // The reference computes 5 * x: wrong for every configuration.
            4 => std::fs::write(d.join("ref.cl"), reference(5)).unwrap(),
            5 => std::fs::write(d.join("ref.cl"), reference(2)).unwrap(),
            // The kernel now computes 3 * x: a build from the old header would pass.
            6 => std::fs::write(d.join("inc/factor.h"), "#define FACTOR 3.0f\n").unwrap(),
            _ => {}
        }
        let r = tune(d, seed);
        assert_eq!(counts(&r), expected, "after {what}: {r}");
        let setup = r["setup"].as_str().unwrap().to_string();
        assert!(!setups.contains(&setup), "after {what}: a new setup");
        // Every earlier setup is named as not reused, with what differs.
        let others = r["not_reused"].as_array().unwrap();
        assert_eq!(others.len(), setups.len(), "after {what}: {r}");
        assert!(others.iter().all(|o| o["results"] == 3), "{r}");
        let latest = others
            .iter()
            .find(|o| o["setup"] == setups.last().unwrap().as_str())
            .unwrap();
        let differences = latest["differences"].to_string();
        let names = [
            "kernel.build_options",
            "measure.runs",
            "seed: 1 -> 2",
            "args[0].init",
            "verify: null",
            "files.ref.cl",
            "files.inc/factor.h",
        ];
        assert!(
            differences.contains(names[i]),
            "after {what}: {differences}"
        );
        setups.push(setup);
    }
    let unchanged = tune(d, "2");
    assert_eq!(counts(&unchanged), (0, 3, 0, 3), "{unchanged}");

    // The text summary says what was not reused.
    let out = ndtune()
        .args(["tune", d.join("spec.toml").to_str().unwrap(), "--db"])
        .arg(d.join("t.db"))
        .args(["--seed", "2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "reused from {} (setup {})",
            d.join("t.db").display(),
            setups[7]
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "not reused 3 results of this kernel, constants and device under setup {}: files.inc/factor.h: ",
            setups[6]
        )),
        "{text}"
    );

    // Every campaign stays in the store: status lists the newest first, the earlier ones after.
    let db = d.join("t.db");
    let status = json(&["status", "--db", db.to_str().unwrap(), "--json"]);
    let campaigns = status["campaigns"].as_array().unwrap();
    assert_eq!(campaigns.len(), 8);
    assert_eq!(campaigns[0]["group"]["setup"], setups[7].as_str());
    assert_eq!(campaigns[0]["earlier_than"], serde_json::Value::Null);
    assert!(campaigns[1..]
        .iter()
        .all(|c| c["earlier_than"] == setups[7].as_str() && c["results"] == 3));

    // Export cannot guess which: it lists them and names --setup, which selects one.
    let out = dir.path().join("kt.json");
    let err = fails(&[
        "export",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "kt",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains("8 recorded campaigns match; --setup DIGEST tells them apart"),
        "{err}"
    );
    assert!(
        err.contains(&format!("setup {} (newest): 3 results", setups[7])),
        "{err}"
    );
    json_of_export(&db, &out, &["--setup", &setups[7][..8]]);
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(cache["cache"].as_object().unwrap().len(), 3);
}

/// Runs `export` with `extra` arguments and expects success.
fn json_of_export(db: &Path, out: &Path, extra: &[&str]) {
    let status = ndtune()
        .args(["export", "--format", "kt", "--db"])
        .arg(db)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[test]
fn a_sweep_over_set_values_is_a_campaign_per_value_and_commands_select_by_constants() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("inc")).unwrap();
    std::fs::write(d.join("scale.cl"), SCALE).unwrap();
    std::fs::write(d.join("inc/factor.h"), "#define FACTOR 2.0f\n").unwrap();
    std::fs::write(d.join("spec.toml"), spec("", 1, "ones", "")).unwrap();
    let spec = d.join("spec.toml");
    let spec = spec.to_str().unwrap();
    let db = d.join("t.db");
    let db = db.to_str().unwrap();
    let v = json(&["tune", spec, "--db", db, "--set", "N=32,64", "--json"]);
    let sweep = v["sweep"].as_array().unwrap();
    let sizes: Vec<i64> = sweep
        .iter()
        .map(|s| s["constants"]["N"].as_i64().unwrap())
        .collect();
    assert_eq!(sizes, [32, 64]);
    assert!(
        sweep
            .iter()
            .all(|s| s["best"]["time_ms"].as_f64().unwrap() > 0.0),
        "{v}"
    );
    assert_eq!(v["devices"].as_array().unwrap().len(), 2);
    assert_eq!(v["devices"][1]["constants"]["N"], 64);

    let out = ndtune()
        .args(["tune", spec, "--db", db, "--set", "N=32,64"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("sweep: the best of each of its 2 campaigns"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("N=64")),
        "{text}"
    );

    // Each value is its own campaign in the store; commands pick one with --set.
    let status = json(&["status", "--db", db, "--set", "N=32", "--json"]);
    assert_eq!(status["campaigns"].as_array().unwrap().len(), 1);
    let out = d.join("kt.json");
    let err = fails(&[
        "export",
        "--db",
        db,
        "--format",
        "kt",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(err.contains("--set N=VALUE tells them apart"), "{err}");
    json_of_export(Path::new(db), &out, &["--set", "N=64"]);
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(cache["problem_size"]["N"], 64);
    let space = json(&[
        "space",
        spec,
        "--set",
        "N=32",
        "--profile",
        "hd4600",
        "--json",
    ]);
    assert_eq!(space["constants"]["N"], 32, "{space}");
    let err = fails(&["space", spec, "--set", "N=32,64", "--profile", "hd4600"]);
    assert!(err.contains("only `tune` sweeps"), "{err}");
    let html = d.join("r.html");
    let report = ndtune()
        .args(["report", "--db", db, "--set", "N=64", "--out"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(report.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("N=64") && !page.contains("N=32"),
        "report --set N=64"
    );
}
