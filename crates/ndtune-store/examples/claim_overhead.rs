//! What sharing a campaign costs per configuration: W worker threads (a connection each) claim
//! and complete every configuration of one campaign, as `ndtune tune --worker` does (a claim
//! over the next 256 configurations of the shared order, then the result and the claim's end
//! in one transaction), with no evaluation in between, so that they contend as hard as they
//! can. On a throwaway PostgreSQL server (Debian's binaries) and on an SQLite file.
//!
//! ```sh
//! cargo run --release -p ndtune-store --example claim_overhead -- [WORKERS [CONFIGURATIONS]]
//! ```

use ndtune_core::{Config, Outcome, Timing};
use ndtune_store::testing::PgServer;
use ndtune_store::{Group, Record, ResultKey, Store};
use std::time::{Duration, Instant};

/// How far ahead of the one it measures a worker claims (`ndtune_engine::share`'s window).
const WINDOW: usize = 256;

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("a number"));
    let workers = args.next().unwrap_or(8);
    let configs = args.next().unwrap_or(2000);
    println!("{workers} workers, {configs} configurations, no evaluation between claims");
    println!(
        "{:<12} {:>10} {:>12} {:>12} {:>12} {:>12}",
        "store", "wall s", "claim ms", "complete ms", "p95 ms", "per config"
    );
    let server = PgServer::shared().expect("PostgreSQL server binaries");
    let url = server.create_database("claim_overhead").unwrap();
    run("PostgreSQL", &url, workers, configs);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("claims.db");
    run("SQLite", file.to_str().unwrap(), workers, configs);
}

fn run(name: &str, location: &str, workers: usize, configs: usize) {
    let store = Store::open(location).unwrap();
    let group = Group {
        device: store
            .put_device(&ndtune_device::builtin::find("gt550m").unwrap())
            .unwrap(),
        kernel: "bench".into(),
        source_hash: "0123456789abcdef".into(),
        setup: "fedcba9876543210".into(),
        constants: ndtune_core::int_config([("N", 1024)]),
    };
    drop(store);
    let order: Vec<Config> = (0..configs as i64)
        .map(|x| ndtune_core::int_config([("X", x), ("Y", x % 7)]))
        .collect();
    let started = Instant::now();
    // Per worker: (claim time, complete time) of each configuration it took.
    let samples: Vec<Vec<(Duration, Duration)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (order, group) = (&order, &group);
                scope.spawn(move || work(location, group, order, &format!("w{w}")))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = started.elapsed();
    let all: Vec<(Duration, Duration)> = samples.into_iter().flatten().collect();
    assert_eq!(all.len(), configs, "every configuration exactly once");
    let status = Store::open(location)
        .unwrap()
        .campaign_status(&group)
        .unwrap();
    assert_eq!(status.results as usize, configs);
    assert_eq!(status.measured_twice, 0);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = |f: fn(&(Duration, Duration)) -> Duration| {
        all.iter().map(|s| ms(f(s))).sum::<f64>() / all.len() as f64
    };
    let mut per_config: Vec<f64> = all.iter().map(|(c, d)| ms(*c) + ms(*d)).collect();
    per_config.sort_by(f64::total_cmp);
    let p95 = per_config[per_config.len() * 95 / 100];
    println!(
        "{name:<12} {:>10.2} {:>12.3} {:>12.3} {:>12.3} {:>12.3}",
        wall.as_secs_f64(),
        mean(|s| s.0),
        mean(|s| s.1),
        p95,
        per_config.iter().sum::<f64>() / per_config.len() as f64
    );
}

/// One worker: claims and completes until nothing is left; the time of each claim and
/// completion.
fn work(location: &str, group: &Group, order: &[Config], me: &str) -> Vec<(Duration, Duration)> {
    let store = Store::open(location).unwrap();
    let lease = Duration::from_secs(60);
    let mut mine = std::collections::HashSet::new();
    let mut samples = Vec::new();
    loop {
        let window: Vec<Config> = order
            .iter()
            .filter(|c| !mine.contains(*c))
            .take(WINDOW)
            .cloned()
            .collect();
        let t = Instant::now();
        let claimed = store.claim(group, me, &window, lease).unwrap();
        let claim = t.elapsed();
        let Some(config) = claimed else {
            // Every configuration is done or held by a worker that is completing it.
            if window.is_empty()
                || store.campaign_status(group).unwrap().results as usize == order.len()
            {
                return samples;
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let record = Record {
            key: ResultKey::new(group, config.clone()),
            outcome: Outcome::Measured(Timing::new(vec![1.0, 1.1, 0.9], 1)),
            ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
            started_at: 0,
            finished_at: 0,
        };
        let t = Instant::now();
        assert!(store.complete(me, &record).unwrap(), "held until completed");
        samples.push((claim, t.elapsed()));
        mine.insert(config);
    }
}
