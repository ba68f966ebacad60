//! Where the wall time of `ndtune tune` goes: the JSON report's `time` objects account for the
//! whole command, from the process's start, and for each campaign, part by part.

mod common;
use common::*;
use serde_json::Value;
use std::time::Instant;

fn seconds(t: &Value, key: &str) -> f64 {
    t[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no `{key}` in {t}"))
}

#[test]
fn the_parts_of_the_command_and_of_each_campaign_add_up_to_their_wall_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let spec = examples().join("conv1d.toml");
    let started = Instant::now();
    let report = json(&[
        "tune",
        spec.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--json",
        "--set",
        "N=4096",
    ]);
    let outside_s = started.elapsed().as_secs_f64();
    let wall = &report["time"];
    let parts: f64 = [
        "start_s",
        "spec_s",
        "discovery_s",
        "store_s",
        "prune_s",
        "campaigns_s",
        "other_s",
    ]
    .iter()
    .map(|k| seconds(wall, k))
    .sum();
    assert!((parts - seconds(wall, "wall_s")).abs() < 1e-6, "{wall}");
    // The account ends before the process does, and starts no later than it: within one clock
    // tick, the resolution of the process's start time that `start_s` is read from.
    // SAFETY: sysconf(3) has no preconditions.
    let tick_s = 1.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    assert!(
        seconds(wall, "wall_s") <= outside_s + tick_s,
        "{wall} against {outside_s} s"
    );
    assert!(seconds(wall, "discovery_s") > 0.0 && seconds(wall, "campaigns_s") > 0.0);

    let t = &report["devices"][0]["time"];
    let parts: f64 = [
        "setup_s",
        "startup_waited_s",
        "total_s",
        "lost_s",
        "store_s",
        "search_s",
        "shutdown_s",
    ]
    .iter()
    .map(|k| seconds(t, k))
    .sum();
    assert!((parts - seconds(t, "campaign_s")).abs() < 1e-6, "{t}");
    assert_eq!(seconds(t, "campaign_s"), seconds(wall, "campaigns_s"));
    // The worker starts while the tuner opens the device and prunes: the campaign waits for at
    // most what its start took.
    assert!(seconds(t, "startup_s") > 0.0, "{t}");
    assert!(
        seconds(t, "startup_waited_s") <= seconds(t, "startup_s"),
        "{t}"
    );
    assert!(
        seconds(t, "store_s") > 0.0,
        "every outcome was committed: {t}"
    );
    // The inputs (no length of which names a parameter) were generated and put on the device
    // once, as the worker started (part of its start-up): no evaluation put any there again.
    assert_eq!(seconds(t, "data_s"), 0.0, "{t}");
    let evaluations = seconds(t, "build_s")
        + seconds(t, "launch_s")
        + seconds(t, "reference_s")
        + seconds(t, "data_s");
    assert!(evaluations <= seconds(t, "total_s"), "{t}");
}
