//! Typed values end to end on PoCL: a `float` argument computed in floating point, identifier
//! and real parameters passed to the compiler as they read in C, a Kernel Tuner restriction in
//! Python's meaning, and values that do not fit refused before anything is measured.

mod common;
use common::*;

/// `y = OP(alpha, x, y)` with `OP` an identifier parameter (`mad` or `fma`, both OpenCL
/// built-ins); `SCALE`, a real parameter, must compile as a real (`-D SCALE=2.5`) and cancels
/// out. `x` and `y` start at 1, so the right answer is `alpha + 1`.
const KERNEL: &str = r#"
__kernel void axpb(__global const float *x, __global float *y, const float alpha) {
    size_t i = get_global_id(0);
    y[i] = OP(alpha, x[i], y[i]) * (float)(SCALE / SCALE);
}
"#;

/// The reference: alpha = 0.5 written out, so an alpha that reached the kernel as 0 (the old
/// `1 / 2`) is a wrong result.
const REFERENCE: &str = r#"
__kernel void axpb(__global const float *x, __global float *y, const float alpha) {
    size_t i = get_global_id(0);
    y[i] = 0.5f * x[i] + y[i];
}
"#;

fn spec(dir: &std::path::Path, alpha: &str, extra: &str) -> String {
    write(dir, "axpb.cl", KERNEL);
    write(dir, "ref.cl", REFERENCE);
    write(
        dir,
        "axpb.toml",
        &format!(
            r#"
[kernel]
name = "axpb"
source = "axpb.cl"
[constants]
N = 256
[params]
WG = [4, 8, 16, 32]
OP = ["mad", "fma"]
SCALE = [1.0, 2.5]
[launch]
global = ["N"]
local = ["WG"]
[space]
restrictions = ["WG / 8 >= 0.5 and OP in ['mad', 'fma']"]
{extra}
[[args]]
name = "x"
kind = "buffer"
type = "float"
len = "N"
init = "ones"
access = "read"
[[args]]
name = "y"
kind = "buffer"
type = "float"
len = "N"
init = "ones"
access = "read_write"
[[args]]
name = "alpha"
kind = "scalar"
type = "float"
value = {alpha}
[verify]
outputs = ["y"]
reference = {{ kernel = "ref.cl" }}
"#
        ),
    )
}

#[test]
fn typed_values_reach_the_kernel_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), r#""1 / 2""#, "");
    let db = dir.path().join("t.db");
    let report = json(&[
        "tune",
        &spec,
        "--db",
        db.to_str().unwrap(),
        "--device",
        "0",
        "--build-jobs",
        "1",
        "--json",
    ]);
    let device = &report["devices"][0];
    // WG / 8 >= 0.5 in Python keeps WG = 4 (0.5): C's truncation would have dropped it.
    // 4 work-group sizes x 2 ops x 2 scales = 16, every one measured and verified.
    assert_eq!(device["pruned"], 16, "{device}");
    assert_eq!(device["outcomes"]["measured"], 16, "{device}");
    let best = &device["best"]["config"];
    assert!(best["OP"] == "mad" || best["OP"] == "fma", "{best}");
    assert!(best["SCALE"] == 1.0 || best["SCALE"] == 2.5, "{best}");
    let store = ndtune_store::Store::open(&db).unwrap();
    let group = &store.groups().unwrap()[0];
    let records = store.records(group).unwrap();
    let scales: std::collections::BTreeSet<String> = records
        .iter()
        .map(|r| ndtune_core::config_key(&r.key.config))
        .filter(|k| k.contains(r#""SCALE":2.5"#) && k.contains(r#""OP":"fma""#))
        .collect();
    assert_eq!(
        scales.len(),
        4,
        "stored configurations keep their values' kinds"
    );
}

#[test]
fn values_that_do_not_fit_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let args = |spec: &str| fails(&["tune", spec, "--db", db.to_str().unwrap(), "--device", "0"]);
    let e = args(&spec(dir.path(), "1e39", ""));
    assert!(
        e.contains("[[args]] alpha value") && e.contains("does not fit a float"),
        "{e}"
    );
    let e = args(&spec(dir.path(), r#""OOPS""#, ""));
    assert!(
        e.contains("unknown name `OOPS`") && e.contains("axpb.toml:"),
        "{e}"
    );
    let e = args(&spec(dir.path(), "0.5", "constraints = [\"OP == 'fmad'\"]"));
    assert!(
        e.contains("'fmad' is not one of `OP`'s values (mad, fma)"),
        "{e}"
    );
    assert!(
        !db.exists() || {
            let store = ndtune_store::Store::open(&db).unwrap();
            store.groups().unwrap().is_empty()
        }
    );
}

#[test]
fn a_buffer_the_device_cannot_hold_stops_the_campaign_before_memory_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "k.cl",
        "__kernel void k(__global float *y) { y[get_global_id(0)] = 1.0f; }\n",
    );
    let spec = write(
        dir.path(),
        "k.toml",
        r#"
[kernel]
name = "k"
source = "k.cl"
[constants]
N = 1_000_000_000_000
[params]
WG = [1, 2]
[launch]
global = [64]
local = ["WG"]
[[args]]
name = "y"
kind = "buffer"
type = "float"
len = "N"
access = "write"
"#,
    );
    let started = std::time::Instant::now();
    let db = dir.path().join("t.db");
    let e = fails(&["tune", &spec, "--db", db.to_str().unwrap(), "--device", "0"]);
    assert!(
        e.contains("[[args]] y: 1000000000000 elements of float are 4000000000000 bytes")
            && e.contains("CL_DEVICE_MAX_MEM_ALLOC_SIZE"),
        "{e}"
    );
    assert!(started.elapsed().as_secs() < 60, "refused up front");
}
