//! Helpers shared by the engine's campaign tests: requests through the engine's API whose
//! workers are `ndtune-worker` (this crate's program of the worker loops), each test run's
//! program binaries in a folder of its own, and the report as `ndtune tune --json` prints it.

#![allow(dead_code)]

use ndtune_engine::{Processes, TuneRequest};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

mod specs;
#[allow(unused_imports)] // not every test file uses them all
pub use specs::*;

/// Held by a test that compares timings, so that the tests of its file run one at a time: the
/// others' builds and kernels would share the CPU it times on (a test file's tests run in
/// parallel threads of one process).
pub fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// This test run's own cache folder: program binaries are kept there, not in the user's (a test
/// then sees what a first campaign on a fresh machine sees).
pub fn own_cache() -> &'static Path {
    static CACHE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    CACHE
        .get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
        .path()
}

/// A request to tune `spec` into the store `db` on device 0, its workers `ndtune-worker` with
/// `env` (NAME=VALUE) set in them. Its cache folder, the workers' too, is the one `env` names as
/// `NDTUNE_CACHE_DIR`, else [`own_cache`].
pub fn request(spec: &str, db: &Path, env: &[(&str, &Path)]) -> TuneRequest {
    let named = env.iter().find(|(n, _)| *n == "NDTUNE_CACHE_DIR");
    let cache = named.map_or(own_cache(), |(_, dir)| dir);
    let mut args = Vec::new();
    let own = [("NDTUNE_CACHE_DIR", cache)];
    for (name, value) in env.iter().chain(own.iter().filter(|_| named.is_none())) {
        args.push("--env".into());
        args.push(format!("{name}={}", value.display()).into());
    }
    let workers = Processes::with_args(env!("CARGO_BIN_EXE_ndtune-worker").into(), args);
    let mut request = TuneRequest::new(spec.into(), db.to_path_buf(), workers);
    request.cache_dir = Some(cache.to_path_buf());
    request
}

/// Runs `request`, expects it to finish, and gives its report as `ndtune tune --json` prints
/// it: `{"devices": [each campaign's report]}`.
pub fn tune(request: &TuneRequest) -> Value {
    let ran = ndtune_engine::request::run(request, &mut |_| {}, None)
        .unwrap_or_else(|e| panic!("the request failed: {e}"));
    assert!(
        ran.failure.is_none(),
        "a campaign stopped: {:?}",
        ran.failure
    );
    serde_json::json!({ "devices": ran.reports })
}

/// Each configuration's stored outcome (as JSON) in the store at `db`, by `name` of its
/// configuration.
pub fn outcomes(db: &Path, name: impl Fn(&ndtune_core::Config) -> String) -> Vec<(String, Value)> {
    let store = ndtune_store::Store::open(db.to_str().unwrap()).unwrap();
    let mut all = Vec::new();
    for group in store.groups().unwrap() {
        for record in store.records(&group).unwrap() {
            all.push((
                name(&record.key.config),
                serde_json::to_value(&record.outcome).unwrap(),
            ));
        }
    }
    all
}

/// The repository's `examples/` folder.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}
