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

#[path = "../../../ndtune-engine/tests/common/specs.rs"]
mod specs;
#[allow(unused_imports)] // not every test file uses them all
pub use specs::*;
