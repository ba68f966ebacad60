//! Helpers shared by the CLI tests: run the real `ndtune` binary, write spec files.

#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Held by a test that compares timings, so that the tests of its file run one at a time: the
/// others' builds and kernels would share the CPU it times on (a test file's tests run in
/// parallel threads of one process).
pub fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The `ndtune` binary, keeping program binaries in a folder of this test run's own (not the
/// user's cache: a test then sees what a first campaign on a fresh machine sees).
pub fn ndtune() -> Command {
    Command::from_std(ndtune_process())
}

/// [`ndtune`] as a plain process, to start and leave running.
pub fn ndtune_process() -> std::process::Command {
    static CACHE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(|| tempfile::tempdir().expect("a temporary folder"));
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ndtune"));
    cmd.env("NDTUNE_CACHE_DIR", cache.path());
    cmd
}

/// The repository's `examples/` folder.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Runs ndtune, expects success, parses stdout as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    json_of(ndtune(), args)
}

/// [`json`] with a command prepared by the caller (an environment of its own, say).
pub fn json_of(mut cmd: Command, args: &[&str]) -> serde_json::Value {
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ndtune {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs ndtune, expects success, returns stdout.
pub fn succeeds(args: &[&str]) -> String {
    let out = ndtune().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ndtune {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs ndtune, expects failure, returns stderr.
pub fn fails(args: &[&str]) -> String {
    let out = ndtune().args(args).output().unwrap();
    assert!(!out.status.success(), "ndtune {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

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
