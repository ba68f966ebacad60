//! What `ndtune tune` verifies and says, end to end on PoCL: the platform model as a choice (a
//! reduction's single work-group), a host check that finds wrong partial sums, inputs from a
//! NumPy file, failures listed with their first line, `ndtune show`, and the exit status when
//! nothing could be measured.

mod common;
use common::*;
use std::path::Path;

/// `reduction-final.toml` copied into `dir` (its kernel and check beside it) with `platform`.
fn final_stage(dir: &Path, platform: &str) -> String {
    for f in ["reduction.cl", "reduction_check.c"] {
        std::fs::copy(examples().join(f), dir.join(f)).unwrap();
    }
    let text = std::fs::read_to_string(examples().join("reduction-final.toml"))
        .unwrap()
        .replace(
            "platform = \"legal\"",
            &format!("platform = \"{platform}\""),
        );
    write(dir, &format!("final-{platform}.toml"), &text)
}

#[test]
fn a_single_work_group_is_empty_under_erdem_with_the_hint_and_tuned_under_legal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let legal = json(&[
        "tune",
        &final_stage(dir.path(), "legal"),
        "--db",
        db,
        "--json",
    ]);
    let d = &legal["devices"][0];
    assert_eq!(d["outcomes"]["measured"], 9, "{d}");
    assert_eq!(d["hints"], serde_json::json!([]));

    let erdem = final_stage(dir.path(), "erdem");
    let out = ndtune()
        .args(["tune", &erdem, "--db", db])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an empty space exits non-zero");
    assert!(
        stderr.contains("the space of `reduce` is empty on")
            && stderr.contains("eq. 3 removed 9 configurations")
            && stderr.contains("[space] platform = \"legal\" keeps them"),
        "{stderr}"
    );
}

#[test]
fn a_host_check_flags_wrong_partial_sums_and_the_summary_says_why() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        examples().join("reduction_check.c"),
        dir.path().join("reduction_check.c"),
    )
    .unwrap();
    // The partial sum of work-group 1 is lost: right only with a single work-group.
    let kernel = std::fs::read_to_string(examples().join("reduction.cl"))
        .unwrap()
        .replace(
            "partial[get_group_id(0)] = scratch[0];",
            "partial[get_group_id(0)] = get_group_id(0) == 1 ? 0.0f : scratch[0];",
        );
    std::fs::write(dir.path().join("reduction.cl"), kernel).unwrap();
    let spec = std::fs::read_to_string(examples().join("reduction.toml"))
        .unwrap()
        .replace("N = 1048576", "N = 4096")
        .replace("WG = { pow2 = [1, 256] }", "WG = [16]")
        .replace("GROUPS = { pow2 = [1, 64] }", "GROUPS = [1, 2, 4]")
        + "[space]\nplatform = \"legal\"\n";
    let spec = write(dir.path(), "broken.toml", &spec);
    let db = dir.path().join("b.db");
    let db = db.to_str().unwrap();
    let out = ndtune().args(["tune", &spec, "--db", db]).output().unwrap();
    assert!(out.status.success(), "one configuration was measured");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("measured 1, pruned 0, build_failed 0, refused 0, wrong_result 2"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  wrong_result WG=16 GROUPS=2: check `partial_sums`: the 2 sums in `partial` add up to"),
        "{stdout}"
    );
    let v = json(&["tune", &spec, "--db", db, "--json"]);
    let failures = &v["devices"][0]["failures"]["wrong_result"];
    assert_eq!(failures.as_array().unwrap().len(), 2, "{v}");
    assert_eq!(failures[1]["config"]["GROUPS"], 4);
    assert!(failures[1]["reason"]
        .as_str()
        .unwrap()
        .starts_with("check `partial_sums`: the 4 sums in `partial` add up to"));
}

/// `y = 2 x` over N floats, work-groups of `WG`; MODE 1 does not build.
const TWICE: &str = r#"
__kernel void twice(__global const float *x, __global float *y) {
#if MODE == 1
#error this mode does not build
#endif
    size_t i = get_global_id(0);
    y[i] = 2.0f * x[i];
}
"#;

/// A host check that `x` holds 0, 0.25, 0.5, ... (the .npy file) and `y` twice that.
const NPY_CHECK: &str = r#"#include <stdio.h>
int from_file(const ndtune_args *a, char *message, size_t size) {
    const float *x = ndtune_buffer_named(a, "x")->initial, *y = ndtune_buffer_named(a, "y")->data;
    for (size_t i = 0; i < a->buffers[0].len; ++i)
        if (x[i] != 0.25f * (float)i || y[i] != 2.0f * x[i]) {
            snprintf(message, size, "x[%zu] = %g, y[%zu] = %g", i, x[i], i, y[i]);
            return 1;
        }
    return 0;
}
"#;

fn twice_spec(dir: &Path, modes: &str, extra: &str, init: &str, verify: &str) -> String {
    std::fs::write(dir.join("twice.cl"), TWICE).unwrap();
    let args = XY_ARGS.replace("init = \"random\"", &format!("init = {init}"));
    write(
        dir,
        "twice.toml",
        &format!(
            "[kernel]\nname = \"twice\"\nsource = \"twice.cl\"\n[constants]\nN = 64\n[params]\nMODE = {modes}\nWG = [8, 16]\n[launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n{extra}{args}{verify}[measure]\nwarmup = 0\nruns = 2\nbest_of = 1\n"
        ),
    )
}

#[test]
fn an_npy_input_reaches_the_kernel_and_a_wrong_dtype_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let x: Vec<f32> = (0..64).map(|i| 0.25 * i as f32).collect();
    npyz::to_file_1d(dir.path().join("x.npy"), x.iter().copied()).unwrap();
    std::fs::write(dir.path().join("check.c"), NPY_CHECK).unwrap();
    let verify =
        "[verify]\noutputs = [\"y\"]\ncheck = { host = \"check.c\", function = \"from_file\" }\n";
    let spec = twice_spec(dir.path(), "[0]", "", "{ npy = \"x.npy\" }", verify);
    let db = dir.path().join("n.db");
    let db = db.to_str().unwrap();
    let v = json(&["tune", &spec, "--db", db, "--json"]);
    assert_eq!(v["devices"][0]["outcomes"]["measured"], 2, "{v}");

    let doubles: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    npyz::to_file_1d(dir.path().join("x64.npy"), doubles).unwrap();
    let spec = twice_spec(dir.path(), "[0]", "", "{ npy = \"x64.npy\" }", verify);
    let fresh = dir.path().join("fresh.db");
    let e = fails(&["tune", &spec, "--db", fresh.to_str().unwrap()]);
    assert!(
        e.contains("[[args]] x: init.npy ")
            && e.contains("x64.npy: holds dtype '<f8', not the argument's type float (float32)"),
        "{e}"
    );
}

#[test]
fn failures_show_their_first_line_and_nothing_measured_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let db = db.to_str().unwrap();
    // No [verify]: tuned, and said to be unverified; MODE 1 fails to build.
    let spec = twice_spec(dir.path(), "[0, 1]", "", "\"random\"", "");
    let out = ndtune().args(["tune", &spec, "--db", db]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "a partly failed campaign exits 0");
    let first_error = stdout
        .lines()
        .find(|l| l.starts_with("  build_failed MODE=1 WG=8: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        first_error.contains("error") && first_error.ends_with("this mode does not build"),
        "{first_error}"
    );
    assert!(
        stdout.contains("  verified   nothing: the spec has no [verify]"),
        "{stdout}"
    );

    // `ndtune show` prints the stored failure whole: the full build log.
    let show = ndtune()
        .args(["show", &spec, "--db", db, "--config", "MODE=1,WG=16"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success());
    assert!(
        shown.starts_with("`twice` MODE=1 WG=16 on ")
            && shown.contains("  outcome     build_failed\n  build log\n")
            && shown.contains("this mode does not build")
            && shown.contains("  by          ndtune "),
        "{shown}"
    );
    let records = json(&["show", &spec, "--db", db, "--config", "MODE=0", "--json"]);
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["outcome"]["outcome"], "measured");
    assert_eq!(
        records[0]["outcome"]["times_ms"].as_array().unwrap().len(),
        2
    );
    assert!(records[0]["started_at"].as_str().unwrap().ends_with('Z'));
    let e = fails(&["show", &spec, "--db", db, "--config", "MODE=7"]);
    assert!(
        e.contains("no result in") && e.contains("`twice` N=64 on "),
        "{e}"
    );

    // Every configuration fails: non-zero, saying why.
    let spec = twice_spec(dir.path(), "[1]", "", "\"random\"", "");
    let out = ndtune().args(["tune", &spec, "--db", db]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "nothing measured exits non-zero");
    assert!(
        stderr.contains("nothing could be measured on")
            && stderr.contains(
                "all 2 configurations evaluated failed (measured 0, pruned 0, build_failed 2"
            ),
        "{stderr}"
    );

    // An empty space: non-zero, naming the constraint that emptied it.
    let spec = twice_spec(
        dir.path(),
        "[0]",
        "[space]\nconstraints = [\"WG > 64\"]\n",
        "\"random\"",
        "",
    );
    let e = fails(&["tune", &spec, "--db", db]);
    assert!(
        e.contains("the space of `twice` is empty") && e.contains("WG > 64"),
        "{e}"
    );
}

/// A host check that starts a daemon (`fork(); setsid(); fork()`) which outlives it, then passes.
const DAEMON_CHECK: &str = r#"#include <unistd.h>
#include <stdio.h>
int daemonises(const ndtune_args *a, char *message, size_t size) {
    (void)a; (void)message; (void)size;
    if (fork() == 0) {
        setsid();
        if (fork() == 0) { sleep(120); _exit(0); }
        _exit(0);
    }
    return 0;
}
"#;

#[test]
fn a_check_that_leaves_a_daemon_is_measured_the_daemon_ended_and_no_folder_is_left() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("check.c"), DAEMON_CHECK).unwrap();
    let verify =
        "[verify]\noutputs = [\"y\"]\ncheck = { host = \"check.c\", function = \"daemonises\" }\n";
    let spec = twice_spec(dir.path(), "[0]", "", "\"random\"", verify);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mark = format!("daemon-{}", std::process::id());
    let out = ndtune()
        .args([
            "tune",
            &spec,
            "--db",
            dir.path().join("d.db").to_str().unwrap(),
        ])
        .args(["--json", "--timeout", "60"])
        .env("NDTUNE_CACHE_DIR", "off")
        .env("TMPDIR", &tmp)
        .env("NDTUNE_TEST_DAEMON", &mark)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["devices"][0]["outcomes"]["measured"], 2, "{v}");
    // No process of the run is left: the daemons were ended with their check.
    let needle = format!("NDTUNE_TEST_DAEMON={mark}");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "processes left: {left:?}");
    // With the cache off, the host functions were built in a private folder, removed at exit;
    // no build folder is left either.
    let files: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(files.is_empty(), "left in TMPDIR: {files:?}");
}
