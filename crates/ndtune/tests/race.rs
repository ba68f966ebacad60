//! Racing's settings on the command line: each wrong one is refused where it is given, before
//! anything runs. (What racing does is tested through the engine's API:
//! crates/ndtune-engine/tests/race.rs.)

mod common;
use common::*;

#[test]
fn racing_settings_are_checked_where_they_are_given() {
    let dir = tempfile::tempdir().unwrap();
    let spec = examples().join("saxpy.toml");
    let spec = spec.to_str().unwrap();
    let db = dir.path().join("x.db");
    let db = db.to_str().unwrap();
    let err = fails(&["tune", spec, "--db", db, "--race-confidence", "1"]);
    assert!(
        err.contains("--race-confidence must be between 0 and 1"),
        "{err}"
    );
    let err = fails(&[
        "tune",
        spec,
        "--db",
        db,
        "--race",
        "off",
        "--race-margin",
        "1",
    ]);
    assert!(err.contains("nothing to set"), "{err}");
    let err = fails(&["tune", spec, "--db", db, "--race", "maybe"]);
    assert!(err.contains("say `on` or `off`"), "{err}");
}
