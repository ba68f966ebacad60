//! Claims on both backends: workers (threads, and processes killed with SIGKILL) share one
//! campaign; every configuration is claimed once and evaluated once, an expired lease is taken
//! over, and nothing a worker completed is lost. The killed worker is this test binary itself,
//! re-run with [`WORKER`] set.

use ndtune_core::{Config, Outcome, Timing};
use ndtune_store::testing::PgServer;
use ndtune_store::{Group, Record, ResultKey, Store};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Set to a store location, the test binary becomes a worker that completes [`KILLED_DONE`]
/// configurations, claims one more, says so, and waits to be killed.
const WORKER: &str = "NDTUNE_STORE_CLAIMS_WORKER";
const KILLED_DONE: usize = 3;

fn group() -> Group {
    Group {
        device: "0123456789abcdef".into(),
        kernel: "gemm".into(),
        source_hash: "aaaabbbbccccdddd".into(),
        setup: "1111222233334444".into(),
        constants: ndtune_core::int_config([("N", 1024)]),
    }
}

/// The campaign's configurations in its (shared) order.
fn candidates(n: i64) -> Vec<Config> {
    (0..n)
        .map(|i| ndtune_core::int_config([("TX", i % 16), ("TY", i / 16)]))
        .collect()
}

fn record(config: &Config) -> Record {
    Record {
        key: ResultKey::new(&group(), config.clone()),
        outcome: Outcome::Measured(Timing::new(vec![1.0, config["TX"].as_f64().unwrap()], 1)),
        ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
        started_at: 1,
        finished_at: 2,
    }
}

/// Runs `test` on an SQLite file and, where the binaries are there, on a PostgreSQL database.
fn on_both_backends(name: &str, test: impl Fn(&str)) {
    let dir = tempfile::tempdir().unwrap();
    test(dir.path().join("campaign.ndtune").to_str().unwrap());
    if let Some(server) = PgServer::shared() {
        test(&server.create_database(name).unwrap());
    }
}

fn stored(store: &Store) -> Vec<Record> {
    store.records(&group()).unwrap()
}

#[test]
fn concurrent_workers_claim_every_configuration_exactly_once() {
    on_both_backends("claimed_once", |location| {
        let n = 120;
        let order = candidates(n);
        let workers = 6;
        let claimed: Arc<Mutex<Vec<(String, Config)>>> = Arc::default();
        drop(Store::open(location).unwrap());
        std::thread::scope(|s| {
            for w in 0..workers {
                let (claimed, order) = (claimed.clone(), &order);
                s.spawn(move || {
                    let store = Store::open(location).unwrap();
                    let me = format!("worker-{w}");
                    let lease = Duration::from_secs(60);
                    while let Some(c) = store.claim(&group(), &me, order, lease).unwrap() {
                        claimed.lock().unwrap().push((me.clone(), c.clone()));
                        std::thread::sleep(Duration::from_millis(2));
                        assert!(store.complete(&me, &record(&c)).unwrap());
                    }
                });
            }
        });
        let claimed = claimed.lock().unwrap();
        let mut configs: Vec<&Config> = claimed.iter().map(|(_, c)| c).collect();
        configs.sort();
        let mut expected: Vec<&Config> = order.iter().collect();
        expected.sort();
        assert_eq!(
            configs, expected,
            "{location}: each configuration claimed once"
        );

        let store = Store::open(location).unwrap();
        assert_eq!(stored(&store).len(), n as usize);
        let status = store.campaign_status(&group()).unwrap();
        assert_eq!(status.results, n as u64);
        let mut per_worker = BTreeMap::<String, u64>::new();
        for (w, _) in claimed.iter() {
            *per_worker.entry(w.clone()).or_default() += 1;
        }
        // Every worker that claimed something is shown (one that started late may have none).
        let shown: Vec<&String> = status.workers.iter().map(|w| &w.worker).collect();
        assert_eq!(shown, per_worker.keys().collect::<Vec<_>>());
        assert!(shown.len() > 1, "{location}: one worker took everything");
        for w in &status.workers {
            assert_eq!(w.done, per_worker[&w.worker], "{location}: {w:?}");
            assert_eq!((w.claimed, w.expired), (0, 0), "{location}: {w:?}");
            assert!(w.heartbeat.is_some());
        }
        assert_eq!(store.campaigns().unwrap(), vec![group()]);
        assert_eq!(
            store
                .claim(&group(), "late", &order, Duration::from_secs(1))
                .unwrap(),
            None
        );
    });
}

#[test]
fn expired_leases_are_taken_over_and_heartbeats_keep_them() {
    on_both_backends("leases", |location| {
        let order = candidates(4);
        let a = Store::open(location).unwrap();
        let b = Store::open(location).unwrap();
        let (short, long) = (Duration::from_millis(300), Duration::from_secs(60));
        // A result stored without claims (a single-process tune) is never claimed.
        a.insert(&record(&order[3])).unwrap();

        assert_eq!(
            a.claim(&group(), "a", &order, short).unwrap().as_ref(),
            Some(&order[0])
        );
        assert_eq!(
            b.claim(&group(), "b", &order, long).unwrap().as_ref(),
            Some(&order[1])
        );
        // A asking again gets back what it holds.
        assert_eq!(
            a.claim(&group(), "a", &order, short).unwrap().as_ref(),
            Some(&order[0])
        );
        std::thread::sleep(Duration::from_millis(400));
        let status = b.campaign_status(&group()).unwrap();
        let expired: Vec<(&str, u64)> = status
            .workers
            .iter()
            .map(|w| (w.worker.as_str(), w.expired))
            .collect();
        assert_eq!(expired, [("a", 1), ("b", 0)], "{location}");

        // B takes A's expired claim over.
        assert_eq!(
            b.claim(&group(), "b", &order, long).unwrap().as_ref(),
            Some(&order[0])
        );
        // A finishes late: its result is kept, but the claim is B's now.
        assert!(!a.complete("a", &record(&order[0])).unwrap());
        assert!(b.complete("b", &record(&order[0])).unwrap());
        let status = b.campaign_status(&group()).unwrap();
        let counts: Vec<(&str, u64, u64, u64)> = status
            .workers
            .iter()
            .map(|w| (w.worker.as_str(), w.claimed, w.done, w.expired))
            .collect();
        assert_eq!(counts, [("a", 0, 0, 1), ("b", 1, 1, 0)], "{location}");
        // Both evaluated it: the store counts it measured twice.
        assert_eq!(status.measured_twice, 1, "{location}");
        assert!(b.complete("b", &record(&order[1])).unwrap());

        // A heartbeat moves A's deadline on: B cannot take its claim.
        assert_eq!(
            a.claim(&group(), "a", &order, short).unwrap().as_ref(),
            Some(&order[2])
        );
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(150));
            a.heartbeat("a").unwrap();
        }
        assert_eq!(b.claim(&group(), "b", &order, long).unwrap(), None);
        // Released, it is B's at once.
        assert!(a.release(&group(), "a", &order[2]).unwrap());
        assert!(!a.release(&group(), "a", &order[2]).unwrap());
        assert_eq!(
            b.claim(&group(), "b", &order, long).unwrap().as_ref(),
            Some(&order[2])
        );
    });
}

/// The worker process: completes [`KILLED_DONE`] configurations, claims one more with a short
/// lease, prints it, and waits to be killed.
fn work_until_killed(location: &str) {
    let store = Store::open(location).unwrap();
    let order = candidates(40);
    let lease = Duration::from_millis(800);
    for _ in 0..KILLED_DONE {
        let c = store
            .claim(&group(), "doomed", &order, lease)
            .unwrap()
            .unwrap();
        assert!(store.complete("doomed", &record(&c)).unwrap());
    }
    let held = store
        .claim(&group(), "doomed", &order, lease)
        .unwrap()
        .unwrap();
    println!("holding {}", ndtune_core::config_key(&held));
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_killed_worker_loses_only_its_claim() {
    if let Some(location) = std::env::var_os(WORKER) {
        work_until_killed(location.to_str().unwrap());
        return;
    }
    on_both_backends("killed_worker", |location| {
        drop(Store::open(location).unwrap());
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "a_killed_worker_loses_only_its_claim",
                "--exact",
                "--nocapture",
            ])
            .env(WORKER, location)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let held = lines
            .find_map(|l| l.ok()?.split_once("holding ").map(|(_, c)| c.to_string()))
            .expect("the worker never claimed");
        child.kill().unwrap();
        child.wait().unwrap();

        // Survivors finish the campaign; the killed worker's claim comes back after its lease.
        let order = candidates(40);
        let taken: Arc<Mutex<Vec<Config>>> = Arc::default();
        std::thread::scope(|s| {
            for w in 0..2 {
                let (taken, order) = (taken.clone(), &order);
                s.spawn(move || {
                    let store = Store::open(location).unwrap();
                    let me = format!("survivor-{w}");
                    let lease = Duration::from_secs(60);
                    loop {
                        match store.claim(&group(), &me, order, lease).unwrap() {
                            Some(c) => {
                                taken.lock().unwrap().push(c.clone());
                                assert!(store.complete(&me, &record(&c)).unwrap());
                            }
                            None if stored(&store).len() == order.len() => break,
                            None => std::thread::sleep(Duration::from_millis(50)),
                        }
                    }
                });
            }
        });
        let taken = taken.lock().unwrap();
        assert_eq!(taken.len(), order.len() - KILLED_DONE, "{location}");
        assert!(taken.iter().any(|c| ndtune_core::config_key(c) == held));

        let store = Store::open(location).unwrap();
        assert_eq!(
            stored(&store).len(),
            order.len(),
            "{location}: nothing lost"
        );
        let status = store.campaign_status(&group()).unwrap();
        let doomed = status
            .workers
            .iter()
            .find(|w| w.worker == "doomed")
            .unwrap();
        assert_eq!((doomed.done, doomed.claimed, doomed.expired), (3, 0, 1));
        let done: u64 = status.workers.iter().map(|w| w.done).sum();
        assert_eq!(done, order.len() as u64, "{location}: none evaluated twice");
        assert_eq!(status.measured_twice, 0, "{location}");
    });
}
