//! Spec files the campaign tests of the engine and of the CLI both write: a kernel of growing
//! work over `x` and `y` and its specs, a kernel of every fault and its spec, and how many
//! results a store holds. (The CLI's tests include this file: crates/ndtune/tests/
//! common/mod.rs.)

use std::path::Path;

/// Writes `text` as `name` in `dir` and returns its path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// The `[[args]]` of a kernel `(__global const float *x, __global float *y)` over `N` floats:
/// `x` random input, `y` the output.
pub const XY_ARGS: &str = r#"
[[args]]
name = "x"
kind = "buffer"
type = "float"
len = "N"
init = "random"
access = "read"
[[args]]
name = "y"
kind = "buffer"
type = "float"
len = "N"
access = "write"
"#;

/// Work that grows with SLOW (SLOW = 16 takes about nine times SLOW = 1 on a Xeon with PoCL);
/// the output does not depend on it.
pub const KERNEL: &str = r#"
__kernel void work(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
    float acc = 0.0f;
    for (int k = 0; k < SLOW; ++k) acc += x[i] * (float)k;
    y[i] = 2.0f * x[i] + (acc < -1e30f ? 1.0f : 0.0f);
}
"#;

/// A spec of [`KERNEL`] in `dir`: 4 work-group sizes x 6 loop lengths, [`CONFIGURATIONS`]
/// valid configurations; `N` sets how long each takes.
pub fn work_spec(dir: &Path) -> String {
    write(dir, "work.cl", KERNEL);
    write(
        dir,
        "work.toml",
        &format!(
            r#"
[kernel]
name = "work"
source = "work.cl"
[constants]
N = 65536
[params]
WG = [4, 8, 16, 32]
SLOW = [1, 50, 100, 200, 400, 800]
[launch]
global = ["N"]
local = ["WG"]
{XY_ARGS}
[verify]
outputs = ["y"]
reference = {{ config = {{ WG = 4, SLOW = 1 }} }}
[measure]
warmup = 0
runs = 3
"#
        ),
    )
}

/// The valid configurations of [`work_spec`].
pub const CONFIGURATIONS: u64 = 24;

/// MODE 1 does not build, 2 computes a wrong result, 3 never finishes, 4 writes through a null
/// pointer; 0 and 5 are right. `SLOW` only makes the kernel take longer.
pub const FAULTY: &str = r#"
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
pub fn stored(db: &Path) -> usize {
    let Ok(store) = ndtune_store::Store::open(db) else {
        return 0;
    };
    let groups = store.groups().unwrap_or_default();
    groups.iter().map(|g| store.records(g).unwrap().len()).sum()
}

pub fn faulty_spec(
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

/// A spec of [`KERNEL`] in `dir` over `WG` (6 work-groups) and the parameters `params` (TOML
/// lines), each configuration timed by a single launch.
pub fn one_launch_spec(dir: &Path, name: &str, params: &str) -> String {
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
