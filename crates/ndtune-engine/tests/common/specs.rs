//! Spec files the campaign tests of the engine and of the CLI both write: a kernel of growing
//! work over `x` and `y` and its spec. (The CLI's tests include this file: crates/ndtune/tests/
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
