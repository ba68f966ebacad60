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

/// A reference kernel that computes `k * x`.
fn reference(k: i64) -> String {
    format!(
        "__kernel void ref(__global const float *x, __global float *y) {{\n    size_t i = get_global_id(0);\n    y[i] = {k}.0f * x[i];\n}}\n"
    )
}

/// What the spec may vary.
#[derive(Clone)]
struct Variant {
    options: &'static str,
    runs: u32,
    init: &'static str,
    verify: &'static str,
}

const BASE: Variant = Variant {
    options: "",
    runs: 2,
    init: "random",
    verify: "",
};

const VERIFY: &str =
    "[verify]\noutputs = [\"y\"]\nreference = { kernel = \"ref.cl\", name = \"ref\" }";

fn spec(v: &Variant) -> String {
    let args = XY_ARGS.replace("init = \"random\"", &format!("init = \"{}\"", v.init));
    format!(
        r#"[kernel]
name = "scale"
source = "scale.cl"
include_dirs = ["inc"]
build_options = [{}]
[constants]
N = 64
[params]
WG = [1, 2, 4]
[launch]
global = ["N"]
local = ["WG"]
{args}
{}
[measure]
warmup = 0
runs = {}
best_of = 1
"#,
        v.options, v.verify, v.runs
    )
}

/// A folder with the kernel, its header (`FACTOR` 2), the reference kernel (`2 * x`) and
/// `spec.toml` of `v`.
fn scale_dir(v: &Variant) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("inc")).unwrap();
    std::fs::write(d.join("scale.cl"), SCALE).unwrap();
    std::fs::write(d.join("inc/factor.h"), "#define FACTOR 2.0f\n").unwrap();
    std::fs::write(d.join("ref.cl"), reference(2)).unwrap();
    std::fs::write(d.join("spec.toml"), spec(v)).unwrap();
    dir
}

/// Tunes `spec.toml` of `dir` into its store with `seed` (two build jobs, so program binaries
/// are kept and looked up); the device's report. The exit status says whether anything was
/// measured (a campaign whose every configuration is a `wrong_result` fails, its JSON printed).
fn tune(dir: &Path, seed: &str) -> serde_json::Value {
    let (spec, db) = (dir.join("spec.toml"), dir.join("t.db"));
    let out = ndtune()
        .arg("tune")
        .arg(&spec)
        .arg("--db")
        .arg(&db)
        .args(["--seed", seed, "--build-jobs", "2", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let d = v["devices"][0].clone();
    let measured = d["outcomes"]["measured"].as_u64().unwrap();
    assert_eq!(
        out.status.success(),
        measured > 0,
        "{d} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    d
}

/// `ndtune export` of the store `db` as a Kernel Tuner cache into `out`, with `extra`
/// arguments: the cache, or the error where it fails.
fn export(db: &str, out: &Path, extra: &[&str]) -> Result<serde_json::Value, String> {
    let o = ndtune()
        .args(["export", "--db", db, "--format", "kt", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    Ok(serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap())
}

/// (evaluated now, reused, measured, wrong_result)
fn counts(d: &serde_json::Value) -> (u64, u64, u64, u64) {
    (
        d["evaluated"].as_u64().unwrap(),
        d["reused"].as_u64().unwrap(),
        d["outcomes"]["measured"].as_u64().unwrap(),
        d["outcomes"]["wrong_result"].as_u64().unwrap(),
    )
}

/// One change: what it is, the spec after it, a file it rewrites, the seed, what the next
/// campaign finds, and the difference from the setup before that names it.
struct Step {
    what: &'static str,
    variant: Variant,
    file: Option<(&'static str, String)>,
    seed: &'static str,
    found: (u64, u64, u64, u64),
    difference: &'static str,
}

#[test]
fn each_change_that_can_change_a_result_measures_again_and_an_unchanged_rerun_reuses_all() {
    let dir = scale_dir(&BASE);
    let d = dir.path();
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

    let fast = Variant {
        // Not -cl-fast-relaxed-math: PoCL 3.1 aborts now and then on it (the measurement
        // worker died of SIGABRT twice in a row, in fresh workers, on a loaded 2-core machine).
        options: "\"-cl-mad-enable\"",
        ..BASE
    };
    let runs = Variant {
        runs: 3,
        ..fast.clone()
    };
    let iota = Variant {
        init: "iota",
        ..runs.clone()
    };
    let verified = Variant {
        verify: VERIFY,
        ..iota.clone()
    };
    let all_right = (3, 0, 3, 0);
    let all_wrong = (3, 0, 0, 3);
    let steps = [
        Step {
            what: "build options",
            variant: fast,
            file: None,
            seed: "1",
            found: all_right,
            difference: "kernel.build_options",
        },
        Step {
            what: "[measure] runs",
            variant: runs.clone(),
            file: None,
            seed: "1",
            found: all_right,
            difference: "measure.runs",
        },
        Step {
            what: "the seed of random data",
            variant: runs,
            file: None,
            seed: "2",
            found: all_right,
            difference: "seed: 1 -> 2",
        },
        Step {
            what: "an argument's init",
            variant: iota,
            file: None,
            seed: "2",
            found: all_right,
            difference: "args[0].init",
        },
        Step {
            // The reference computes 5 * x: wrong for every configuration.
            what: "a wrong [verify] reference added",
            variant: verified.clone(),
            file: Some(("ref.cl", reference(5))),
            seed: "2",
            found: all_wrong,
            difference: "verify: null",
        },
        Step {
            what: "the reference file fixed",
            variant: verified.clone(),
            file: Some(("ref.cl", reference(2))),
            seed: "2",
            found: all_right,
            difference: "files.ref.cl",
        },
        Step {
            // The kernel now computes 3 * x: a stale build from the old header would pass.
            what: "a header's content",
            variant: verified,
            file: Some(("inc/factor.h", "#define FACTOR 3.0f\n".into())),
            seed: "2",
            found: all_wrong,
            difference: "files.inc/factor.h",
        },
    ];
    let mut setups = vec![first["setup"].as_str().unwrap().to_string()];
    for step in steps {
        let what = step.what;
        std::fs::write(d.join("spec.toml"), spec(&step.variant)).unwrap();
        if let Some((name, text)) = &step.file {
            std::fs::write(d.join(name), text).unwrap();
        }
        let r = tune(d, step.seed);
        assert_eq!(counts(&r), step.found, "after {what}: {r}");
        let setup = r["setup"].as_str().unwrap().to_string();
        assert!(!setups.contains(&setup), "after {what}: a new setup");
        // Every earlier setup is named as not reused, with what differs.
        let others = r["not_reused"].as_array().unwrap();
        assert_eq!(others.len(), setups.len(), "after {what}: {r}");
        assert!(others.iter().all(|o| o["results"] == 3), "{r}");
        let before = setups.last().unwrap().as_str();
        let before = others.iter().find(|o| o["setup"] == before).unwrap();
        let differences = before["differences"].to_string();
        assert!(
            differences.contains(step.difference),
            "after {what}: {differences}"
        );
        setups.push(setup);
    }
    let unchanged = tune(d, "2");
    assert_eq!(counts(&unchanged), (0, 3, 0, 3), "{unchanged}");

    // The text summary says what was not reused.
    let db = d.join("t.db");
    let db = db.to_str().unwrap();
    let spec = d.join("spec.toml");
    // Every result is a wrong_result (the header says so): the summary, then a failing exit.
    let out = ndtune()
        .args(["tune", spec.to_str().unwrap(), "--db", db, "--seed", "2"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("reused from {db} (setup {})", setups[7])),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "not reused 3 results of this kernel source, constants and device under setup {}: files.inc/factor.h: ",
            setups[6]
        )),
        "{text}"
    );

    // Every campaign stays in the store: status lists the newest first, the earlier ones after.
    let status = json(&["status", "--db", db, "--json"]);
    let campaigns = status["campaigns"].as_array().unwrap();
    assert_eq!(campaigns.len(), 8);
    assert_eq!(campaigns[0]["group"]["setup"], setups[7].as_str());
    assert_eq!(campaigns[0]["earlier_than"], serde_json::Value::Null);
    assert!(campaigns[1..]
        .iter()
        .all(|c| c["earlier_than"] == setups[7].as_str() && c["results"] == 3));

    // Export cannot guess which: it lists them and names --setup, which selects one.
    let out = d.join("kt.json");
    let err = export(db, &out, &[]).unwrap_err();
    assert!(
        err.contains("8 recorded campaigns match; --setup DIGEST tells them apart"),
        "{err}"
    );
    assert!(
        err.contains(&format!("setup {} (newest): 3 results", setups[7])),
        "{err}"
    );
    let cache = export(db, &out, &["--setup", &setups[7][..8]]).unwrap();
    assert_eq!(cache["cache"].as_object().unwrap().len(), 3);
}

/// A folder for sweeps: one timed run per configuration, inputs of ones.
fn sweep_dir() -> tempfile::TempDir {
    scale_dir(&Variant {
        runs: 1,
        init: "ones",
        ..BASE
    })
}

#[test]
fn a_sweeps_campaigns_warm_start_each_other_and_patience_ends_them_saying_so() {
    let dir = sweep_dir();
    let d = dir.path();
    let spec = d.join("spec.toml");
    let db = d.join("t.db");
    let out = ndtune()
        .arg("tune")
        .arg(&spec)
        .arg("--db")
        .arg(&db)
        .args(["--set", "N=32,64,128", "--patience", "1"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    // The first size has nothing to start from; the two after it start from the sizes before.
    assert_eq!(text.matches("warm start: ").count(), 3, "{text}");
    assert_eq!(
        text.matches("warm start: 0 configurations").count(),
        1,
        "{text}"
    );
    // With a patience, `auto` climbs from a warm start, and measures whole what has none.
    assert_eq!(
        text.matches("strategy auto: ils-adjacent: a warm start with a patience")
            .count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.matches("strategy auto: exhaustive").count(),
        1,
        "{text}"
    );
    // Three configurations (WG 1, 2, 4) and patience 1: a campaign that measured fewer says why.
    let status = json(&["status", "--db", db.to_str().unwrap(), "--json"]);
    let campaigns = status["campaigns"].as_array().unwrap();
    assert_eq!(campaigns.len(), 3, "{status}");
    let short = campaigns
        .iter()
        .filter(|c| c["results"].as_u64().unwrap() < 3)
        .count();
    assert_eq!(
        text.matches("found nothing better (patience)").count(),
        short,
        "{text}"
    );
    let err = fails(&["tune", spec.to_str().unwrap(), "--patience", "0"]);
    assert!(err.contains("--patience"), "{err}");
}

#[test]
fn a_sweep_over_set_values_is_a_campaign_per_value_and_commands_select_by_constants() {
    let dir = sweep_dir();
    let d = dir.path();
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
    let text = succeeds(&["tune", spec, "--db", db, "--set", "N=32,64"]);
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
    let err = export(db, &out, &[]).unwrap_err();
    assert!(err.contains("--set N=VALUE tells them apart"), "{err}");
    let cache = export(db, &out, &["--set", "N=64"]).unwrap();
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
    succeeds(&[
        "report",
        "--db",
        db,
        "--set",
        "N=64",
        "--out",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("N=64") && !page.contains("N=32"),
        "report --set N=64"
    );
}

/// The kernel includes `factor.h` found only through an `-I` of `build_options`; a host check,
/// whose expected factor comes from a header it includes, verifies `y = FACTOR * x`.
fn header_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("other")).unwrap();
    std::fs::write(d.join("scale.cl"), SCALE).unwrap();
    std::fs::write(d.join("other/factor.h"), "#define FACTOR 2.0f\n").unwrap();
    std::fs::write(d.join("expect.h"), "#define EXPECTED 2.0f\n").unwrap();
    std::fs::write(
        d.join("check.c"),
        "#include \"expect.h\"\nint c(const ndtune_args *a, char *m, size_t n) {\n  const float *x = a->buffers[0].data, *y = a->buffers[1].data;\n  for (size_t i = 0; i < a->buffers[1].len; ++i)\n    if (y[i] != EXPECTED * x[i]) { snprintf(m, n, \"y[%zu] is %g\", i, y[i]); return 1; }\n  return 0;\n}\n",
    )
    .unwrap();
    let spec = spec(&Variant {
        options: "\"-I other\"",
        ..BASE
    })
    .replace("include_dirs = [\"inc\"]\n", "")
    .replace(
        "[measure]",
        "[verify]\noutputs = [\"y\"]\ncheck = { host = \"check.c\", function = \"c\" }\n[measure]",
    );
    std::fs::write(d.join("spec.toml"), spec).unwrap();
    dir
}

/// `cd dir && ndtune tune spec.toml --db db`: (evaluated now, reused, measured, wrong_result).
fn tune_from_inside(dir: &Path, db: &str) -> (u64, u64, u64, u64) {
    tune_in(dir, "spec.toml", db)
}

/// `cd dir && ndtune tune spec --db db`: (evaluated now, reused, measured, wrong_result).
fn tune_in(dir: &Path, spec: &str, db: &str) -> (u64, u64, u64, u64) {
    let out = ndtune()
        .current_dir(dir)
        .args(["tune", spec, "--db", db, "--build-jobs", "2", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    counts(&v["devices"][0])
}

#[test]
fn headers_behind_an_include_option_or_a_host_check_are_part_of_the_setup() {
    let dir = header_dir();
    let d = dir.path();
    // Run from the spec's folder with a relative path (the campaign's workers see another
    // form of the path: the setup must be the same).
    assert_eq!(tune_from_inside(d, "t.db"), (3, 0, 3, 0));
    assert_eq!(tune_from_inside(d, "t.db"), (0, 3, 3, 0));
    // The kernel's header behind `-I other` now gives 3 * x: every result is wrong, in the
    // same store and in a fresh one (no stale program from the cache).
    std::fs::write(d.join("other/factor.h"), "#define FACTOR 3.0f\n").unwrap();
    assert_eq!(tune_from_inside(d, "t.db"), (3, 0, 0, 3));
    assert_eq!(tune_from_inside(d, "fresh.db"), (3, 0, 0, 3));
    // The check's own header agrees again: measured, its program built anew.
    std::fs::write(d.join("expect.h"), "#define EXPECTED 3.0f\n").unwrap();
    assert_eq!(tune_from_inside(d, "t.db"), (3, 0, 3, 0));
    assert_eq!(tune_from_inside(d, "other.db"), (3, 0, 3, 0));
}

/// The kernel text reaches the compiler from memory, so PoCL looks for its quoted include in
/// the working directory first: a header found only there is part of the setup.
#[test]
fn a_header_found_in_the_working_directory_is_part_of_the_setup() {
    let dir = preprocessed_dir(SCALE, "");
    let d = dir.path();
    std::fs::create_dir(d.join("run")).unwrap();
    std::fs::rename(d.join("other/factor.h"), d.join("run/factor.h")).unwrap();
    let run = d.join("run");
    assert_eq!(tune_in(&run, "../spec.toml", "t.db"), (3, 0, 3, 0));
    assert_eq!(tune_in(&run, "../spec.toml", "t.db"), (0, 3, 3, 0));
    // The header now gives 3 * x: measured again, and every result is wrong, in the same
    // store and in a fresh one.
    std::fs::write(run.join("factor.h"), "#define FACTOR 3.0f\n").unwrap();
    assert_eq!(tune_in(&run, "../spec.toml", "t.db"), (3, 0, 0, 3));
    assert_eq!(tune_in(&run, "../spec.toml", "fresh.db"), (3, 0, 0, 3));
}

/// A spec of kernel `scale` (its text `kernel`) in a fresh folder whose `other/factor.h` gives
/// `FACTOR` 2, found only through `options`; verified against `2 * x` by a reference kernel.
fn preprocessed_dir(kernel: &str, options: &'static str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("other")).unwrap();
    std::fs::write(d.join("scale.cl"), kernel).unwrap();
    std::fs::write(d.join("other/factor.h"), "#define FACTOR 2.0f\n").unwrap();
    std::fs::write(d.join("ref.cl"), reference(2)).unwrap();
    let spec = spec(&Variant {
        options,
        verify: VERIFY,
        ..BASE
    })
    .replace("include_dirs = [\"inc\"]\n", "");
    std::fs::write(d.join("spec.toml"), spec).unwrap();
    dir
}

#[test]
fn headers_the_preprocessor_finds_through_split_options_or_a_macro_are_part_of_the_setup() {
    let by_macro = SCALE.replace(
        "#include \"factor.h\"",
        "#define HDR \"factor.h\"\n#include HDR",
    );
    for (kernel, options) in [
        // The option and its folder as two entries.
        (SCALE.to_string(), "\"-I\", \"other\""),
        // A header named by a macro.
        (by_macro, "\"-I other\""),
    ] {
        let dir = preprocessed_dir(&kernel, options);
        let d = dir.path();
        assert_eq!(tune_from_inside(d, "t.db"), (3, 0, 3, 0), "{options}");
        assert_eq!(tune_from_inside(d, "t.db"), (0, 3, 3, 0), "{options}");
        // The header now gives 3 * x: measured again, and every result is wrong.
        std::fs::write(d.join("other/factor.h"), "#define FACTOR 3.0f\n").unwrap();
        assert_eq!(tune_from_inside(d, "t.db"), (3, 0, 0, 3), "{options}");
    }
}
