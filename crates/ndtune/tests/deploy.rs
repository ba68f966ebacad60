//! The run-time loop on PoCL: tune at two sizes, export the wisdom and a C header, pick for a
//! tuned size (the stored best), an untuned one (the nearest tuned size) and a device never
//! tuned (a prediction valid on it); wisdom that cannot be used is refused with the file named.

mod common;

use common::{fails, json, ndtune, succeeds, write, XY_ARGS};
use std::path::Path;

/// A kernel whose work-group size is compiled in (`reqd_work_group_size`), over `N` floats.
fn spec(dir: &Path, body: &str) -> String {
    write(
        dir,
        "scale.cl",
        &format!(
            "__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))\n\
             void scale(__global const float *x, __global float *y) {{\n    {body}\n}}\n"
        ),
    );
    write(
        dir,
        "scale.toml",
        &format!(
            r#"
[kernel]
name = "scale"
source = "scale.cl"
[constants]
N = 4096
[params]
WG = [8, 16, 32, 64, 128]
[launch]
global = ["N"]
local = ["WG"]
[space]
constraints = ["N % WG == 0"]
{XY_ARGS}
[verify]
outputs = ["y"]
reference = {{ config = {{ WG = 8 }} }}
[measure]
runs = 3
"#
        ),
    )
}

const BODY: &str = "size_t i = get_global_id(0); y[i] = 3.0f * x[i];";

#[test]
fn picks_the_tuned_best_the_nearest_size_or_a_prediction_and_refuses_bad_wisdom() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), BODY);
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    let tuned = json(&["tune", &spec, "--db", db, "--set", "N=4096,65536", "--json"]);
    let best_of = |n: i64| {
        tuned["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["constants"]["N"] == n)
            .map(|d| d["best"]["config"].clone())
            .unwrap()
    };
    let w = dir.path().join("w.json");
    let w = w.to_str().unwrap();
    succeeds(&[
        "export", "--db", db, "--format", "wisdom", "--spec", &spec, "--out", w,
    ]);

    // A tuned size: the stored best, with its build options and launch sizes.
    let p = json(&["pick", "--wisdom", w, "--set", "N=65536", "--json"]);
    assert_eq!(p["pick"]["how"], "exact", "{p}");
    assert_eq!(p["pick"]["config"], best_of(65536));
    let wg = best_of(65536)["WG"].as_i64().unwrap();
    // N is no define: the source does not mention it.
    assert_eq!(p["pick"]["build_options"], format!("-D WG={wg}"));
    assert_eq!(p["pick"]["global"], serde_json::json!([65536]));
    assert_eq!(p["pick"]["local"], serde_json::json!([wg]));

    // An untuned size between two tuned ones: what does best at both (valid at 8192).
    let p = json(&["pick", "--wisdom", w, "--set", "N=8192", "--json"]);
    assert_eq!(p["pick"]["how"], "nearest", "{p}");
    let reason = p["pick"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("between the tuned sizes N=4096 (distance 1.00) and N=65536"),
        "{reason}"
    );
    assert_eq!(8192 % p["pick"]["config"]["WG"].as_i64().unwrap(), 0);
    assert_eq!(p["pick"]["tuned_constants"]["N"], 4096);
    // Beyond every tuned size: the nearest one's best.
    let p = json(&["pick", "--wisdom", w, "--set", "N=262144", "--json"]);
    assert_eq!(p["pick"]["how"], "nearest", "{p}");
    assert_eq!(p["pick"]["config"], best_of(65536));
    assert!(
        p["pick"]["reason"].as_str().unwrap().contains("its best"),
        "{p}"
    );
    let text = succeeds(&["pick", "--wisdom", w, "--set", "N=8192"]);
    assert!(text.contains(": nearest\n"), "{text}");

    // A device never tuned: a prediction that passes its constraints (HD 4600: N=200 leaves WG
    // 8 alone: 16 does not divide 200, and eq. 3 wants 20 work-groups for its 20 units).
    let p = json(&[
        "pick",
        "--wisdom",
        w,
        "--profile",
        "hd4600",
        "--set",
        "N=200",
        "--json",
    ]);
    assert_eq!(p["pick"]["how"], "predicted", "{p}");
    assert_eq!(p["pick"]["config"]["WG"], 8, "{p}");

    // A header for programs without the library: it compiles and holds both sizes.
    let h = dir.path().join("scale_wisdom.h");
    succeeds(&[
        "export",
        "--db",
        db,
        "--format",
        "header",
        "--spec",
        &spec,
        "--out",
        h.to_str().unwrap(),
    ]);
    let header = std::fs::read_to_string(&h).unwrap();
    assert!(
        header.contains(&format!(
            "\"N=65536\", \"-D WG={wg}\", 1, {{65536, 1, 1}}, {{{wg}, 1, 1}}"
        )),
        "{header}"
    );
    write(dir.path(), "main.c", "#include \"scale_wisdom.h\"\nint main(void) { return ndtune_scale_configs[0].dims == 1 ? 0 : 1; }\n");
    let cc = std::process::Command::new("cc")
        .current_dir(dir.path())
        .args(["-std=c99", "-Wall", "-Werror", "-o", "main", "main.c"])
        .status()
        .unwrap();
    assert!(cc.success());

    // Wisdom that cannot be used: each error names the file and the reason.
    let text = std::fs::read_to_string(w).unwrap();
    let bad = write(dir.path(), "bad.json", &text[..text.len() / 3]);
    let e = fails(&["pick", "--wisdom", &bad, "--set", "N=8192"]);
    assert!(
        e.contains("bad.json:") && e.contains("not a wisdom file"),
        "{e}"
    );
    let newer = write(
        dir.path(),
        "newer.json",
        &text.replacen("\"schema\": 1", "\"schema\": 2", 1),
    );
    let e = fails(&["pick", "--wisdom", &newer]);
    assert!(e.contains("newer.json: wisdom schema 2 is newer"), "{e}");
    let e = fails(&["pick", "--wisdom", w, "--kernel", "sgemm"]);
    assert!(
        e.contains("no kernel `sgemm`") && e.contains("`scale`"),
        "{e}"
    );
    let e = fails(&["pick", "--wisdom", w, "--set", "M=3"]);
    assert!(e.contains('M'), "{e}");
}

#[test]
fn results_of_a_changed_kernel_are_never_exported() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), BODY);
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    json(&["tune", &spec, "--db", db, "--json"]);
    // The kernel changes after tuning: its results say nothing of the new one.
    self::spec(
        dir.path(),
        "size_t i = get_global_id(0); y[i] = 3.0f * x[i] + 0.0f;",
    );
    let w = dir.path().join("w.json");
    let out = ndtune()
        .args([
            "export", "--db", db, "--format", "wisdom", "--spec", &spec, "--out",
        ])
        .arg(&w)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains("1 campaigns of `scale` were of another source"),
        "{e}"
    );
    assert!(
        e.contains("holds no measured configuration of kernel `scale`"),
        "{e}"
    );
    assert!(!w.exists());
}

/// Where cargo put `libndtune_capi.so`: the workspace's `deps` folder of this profile, where the
/// workspace's tests build it, or the profile's folder (`cargo build -p ndtune-capi`).
fn capi_dir() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    let candidates = [deps.clone(), deps.parent().unwrap().to_path_buf()];
    match candidates
        .into_iter()
        .find(|d| d.join("libndtune_capi.so").is_file())
    {
        Some(dir) => dir,
        None => panic!(
            "no libndtune_capi.so in {} or its parent: build it with `cargo build -p ndtune-capi` (the workspace's tests do)",
            deps.display()
        ),
    }
}

/// examples/c/saxpy: run with NDTUNE_CAPTURE at two sizes (no wisdom yet: its own defaults),
/// tuned with `--captured`, exported, run again: each tuned size runs the stored best, an
/// untuned one between them the configuration best across both, a corrupt wisdom falls back to
/// the defaults.
#[test]
fn the_c_example_captures_is_tuned_and_runs_with_its_tuned_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let examples = common::examples();
    let program = dir.path().join("saxpy");
    let built = std::process::Command::new("make")
        .arg("-C")
        .arg(examples.join("c"))
        .arg(format!("LIBDIR={}", capi_dir().display()))
        .arg(format!("OUT={}", dir.path().join("blur").display()))
        .arg(format!("SAXPY={}", program.display()))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let captured = dir.path().join("captured");
    let wisdom = dir.path().join("saxpy.wisdom.json");
    let run = |n: u64, capture: bool| {
        let mut cmd = std::process::Command::new(&program);
        cmd.arg("--wisdom")
            .arg(&wisdom)
            .args(["--n", &n.to_string()]);
        if capture {
            cmd.env("NDTUNE_CAPTURE", &captured);
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(stdout.ends_with(", correct\n"), "{stdout}");
        (stdout, stderr)
    };
    for n in [65536, 262144] {
        let (out, err) = run(n, true);
        assert!(out.contains("WG=64 ITEMS=1 (defaults)"), "{out}");
        assert!(err.contains("saxpy.wisdom.json: cannot read"), "{err}");
    }
    let spec = examples.join("saxpy.toml");
    let spec = spec.to_str().unwrap();
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    let tuned = json(&[
        "tune",
        spec,
        "--db",
        db,
        "--captured",
        captured.to_str().unwrap(),
        "--json",
    ]);
    let bests: Vec<(i64, String)> = tuned["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let c = &d["best"]["config"];
            (
                d["constants"]["N"].as_i64().unwrap(),
                format!("ITEMS={} WG={}", c["ITEMS"], c["WG"]),
            )
        })
        .collect();
    assert_eq!(
        bests.iter().map(|b| b.0).collect::<Vec<_>>(),
        [65536, 262144]
    );
    succeeds(&[
        "export",
        "--db",
        db,
        "--format",
        "wisdom",
        "--spec",
        spec,
        "--out",
        wisdom.to_str().unwrap(),
    ]);
    for (n, best) in &bests {
        let (out, _) = run(*n as u64, false);
        assert!(out.contains(&format!("{best} (exact)")), "{out}");
    }
    // 131072 lies between the tuned sizes, as near one as the other: the pick is the
    // configuration ranked at both whose fractions of the two bests have the largest product.
    let (out, _) = run(131072, false);
    assert!(out.contains("(nearest)"), "{out}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&wisdom).unwrap()).unwrap();
    let entries = written["kernels"][0]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{written}");
    let ranked = |e: &serde_json::Value| -> Vec<(String, f64)> {
        let best = e["objective"].as_f64().unwrap();
        e["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let c = &r["config"];
                let label = format!("ITEMS={} WG={}", c["ITEMS"], c["WG"]);
                (label, best / r["objective"].as_f64().unwrap())
            })
            .collect()
    };
    let (at_a, at_b) = (ranked(&entries[0]), ranked(&entries[1]));
    let expected = at_a
        .iter()
        .filter_map(|(c, fa)| {
            let fb = at_b.iter().find(|(d, _)| d == c)?.1;
            Some((c, fa * fb))
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .unwrap()
        .0;
    assert!(out.contains(&format!("{expected} (nearest)")), "{out}");
    std::fs::write(&wisdom, "{\"schema\": 1, \"kernels\": [").unwrap();
    let (out, err) = run(65536, false);
    assert!(out.contains("(defaults)"), "{out}");
    assert!(err.contains("not a wisdom file"), "{err}");
}
