//! A writer killed with SIGKILL mid-campaign leaves a valid store holding a consecutive prefix
//! of what it inserted. The writer is this test binary itself, re-run with [`WRITER`] set.

use ndtune_core::{Outcome, Timing};
use ndtune_store::{Record, ResultKey, Store};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set to a store path, the test binary becomes the writer.
const WRITER: &str = "NDTUNE_STORE_DURABILITY_WRITER";
const READY: &str = "ndtune-store-writer-ready";

fn key(i: i64) -> ResultKey {
    ResultKey {
        device: "0123456789abcdef".into(),
        kernel: "gemm".into(),
        source_hash: "aaaabbbbccccdddd".into(),
        setup: "1111222233334444".into(),
        constants: ndtune_core::int_config([("N", 1024)]),
        config: ndtune_core::int_config([("I", i), ("TX", i % 7)]),
    }
}

/// The record the writer inserts as its `i`th.
fn record(i: i64) -> Record {
    let outcome = if i % 5 == 3 {
        Outcome::BuildFailed {
            log: format!(
                "error in configuration {i}: {}",
                "x".repeat(i as usize % 300)
            ),
        }
    } else {
        let times = (0..10)
            .map(|r| 1.0 + i as f64 * 1e-3 + r as f64 / 7.0)
            .collect();
        Outcome::Measured(Timing::new(times, 5))
    };
    Record {
        key: key(i),
        outcome,
        ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
        started_at: 1_700_000_000_000 + i,
        finished_at: 1_700_000_000_500 + i,
    }
}

/// Resumes where the store stops and inserts records until killed (or 20 s pass).
fn write_until_killed(path: &Path) {
    let store = Store::open(path).unwrap();
    let first = stored(&store).len() as i64;
    println!("{READY}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut i = first;
    while Instant::now() < deadline {
        store.insert(&record(i)).unwrap();
        i += 1;
    }
}

fn stored(store: &Store) -> Vec<Record> {
    store.records(&key(0).group()).unwrap()
}

/// Starts the writer and kills it with SIGKILL about 200 ms after it is ready.
fn run_and_kill_writer(path: &Path) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "killed_writers_leave_a_consecutive_prefix",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WRITER, path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // libtest may print "test NAME ... " on the same line first.
    let ready = lines.any(|l| l.is_ok_and(|l| l.ends_with(READY)));
    assert!(ready, "the writer never became ready");
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the writer ended by itself: {status}");
}

#[test]
fn killed_writers_leave_a_consecutive_prefix() {
    if let Some(path) = std::env::var_os(WRITER) {
        write_until_killed(Path::new(&path));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("campaign.ndtune");
    let mut counts = Vec::new();
    for _ in 0..3 {
        run_and_kill_writer(&path);
        let store = Store::open(&path).expect("a killed writer leaves a valid store");
        let records = stored(&store);
        let expected: Vec<Record> = (0..records.len() as i64).map(record).collect();
        assert!(
            records == expected,
            "not the consecutive prefix 0..{}",
            records.len()
        );
        counts.push(records.len());
    }
    println!("records after each kill: {counts:?}");
    assert!(counts[0] > 0, "nothing was committed in 200 ms");
    assert!(
        counts.windows(2).all(|w| w[0] < w[1]),
        "each resumed writer adds records: {counts:?}"
    );
}
