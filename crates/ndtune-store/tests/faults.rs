//! What the store does when things go wrong around it: a PostgreSQL server restarted under an
//! open store (a real server started by the test), a server that stays away, libpq key/value
//! connection strings and the passwords in them, a store missing or of another age opened only
//! for reading, a second store of one file in a process (as a heartbeat's) while another process
//! opens and closes it, and several configurations claimed in one go.

use ndtune_core::{Config, Outcome, Timing};
use ndtune_store::testing::{binaries, PgServer, PASSWORD, USER};
use ndtune_store::{Group, Record, ResultKey, Store, StoreError, SCHEMA_VERSION};
use std::time::{Duration, Instant};

fn group() -> Group {
    Group {
        device: "0123456789abcdef".into(),
        kernel: "gemm".into(),
        source_hash: "aaaabbbbccccdddd".into(),
        setup: "5e7b5e7b5e7b5e7b".into(),
        constants: ndtune_core::int_config([("N", 64)]),
    }
}

fn config(x: i64) -> Config {
    ndtune_core::int_config([("X", x)])
}

fn record(x: i64) -> Record {
    Record {
        key: ResultKey::new(&group(), config(x)),
        outcome: Outcome::Measured(Timing::new(vec![1.0 + x as f64], 1)),
        ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
        started_at: 1,
        finished_at: 2,
    }
}

fn stored(store: &Store) -> usize {
    let g = group();
    store.records(&g).unwrap().len()
}

/// A server of the test's own, which it may restart; `None` without the binaries.
fn own_server() -> Option<PgServer> {
    let Some(bin) = binaries() else {
        eprintln!("skipped: no PostgreSQL server binaries");
        return None;
    };
    Some(PgServer::start(&bin).unwrap())
}

#[test]
fn a_store_carries_on_across_a_postgres_restart_and_gives_up_after_its_limit() {
    let Some(mut server) = own_server() else {
        return;
    };
    let url = server.create_database("restarted").unwrap();
    let store = Store::open(&url).unwrap();
    let g = group();
    let lease = Duration::from_secs(600);
    let first = store.claim(&g, "w", &[config(0)], lease).unwrap().unwrap();
    store.complete("w", &record(0)).unwrap();
    assert_eq!(first, config(0));

    // Down for 2 s while the store writes: every write waits for the server and lands once.
    std::thread::scope(|s| {
        let restart = s.spawn(|| server.restart_after(Duration::from_secs(2)));
        let until = Instant::now() + Duration::from_secs(4);
        let mut x = 1;
        while Instant::now() < until {
            let claimed = store.claim(&g, "w", &[config(x)], lease).unwrap();
            assert_eq!(claimed, Some(config(x)));
            assert!(store.complete("w", &record(x)).unwrap());
            x += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        restart.join().unwrap().unwrap();
    });
    let n = stored(&store);
    assert!(n > 2, "{n}");
    let status = store.campaign_status(&g).unwrap();
    assert_eq!(status.results, n as u64);
    assert_eq!(status.measured_twice, 0, "{status:?}");
    assert_eq!(status.workers[0].done, n as u64, "{status:?}");

    // A server that stays away longer than the limit: a clear error, in about the limit.
    let impatient = Store::open(&url)
        .unwrap()
        .reconnect_for(Duration::from_millis(500));
    let err = std::thread::scope(|s| {
        let restart = s.spawn(|| server.restart_after(Duration::from_secs(3)));
        std::thread::sleep(Duration::from_millis(500));
        let started = Instant::now();
        let err = impatient.insert(&record(1000)).err().unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(3), "{took:?}");
        restart.join().unwrap().unwrap();
        err
    });
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Lost { .. }), "{msg}");
    assert!(
        msg.contains("the connection was lost and could not be made again in 0.5 s"),
        "{msg}"
    );
    assert!(msg.contains("postgres://ndtune:***@"), "{msg}");
    assert!(!msg.contains(PASSWORD), "{msg}");
    assert!(!msg.contains("db error"), "{msg}");
    // Back up: the same store works again.
    impatient.insert(&record(1000)).unwrap();
    assert_eq!(stored(&impatient), n + 1);
}

#[test]
fn key_value_connection_strings_open_postgres_and_never_show_the_password() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    server.create_database("key_values").unwrap();
    let kv = |password: &str| {
        format!(
            "host=127.0.0.1 port={} dbname=key_values user={USER} password='{password}'",
            server.port()
        )
    };
    let store = Store::open(kv(PASSWORD)).unwrap();
    store.insert(&record(1)).unwrap();
    assert_eq!(stored(&Store::open(server.url("key_values")).unwrap()), 1);
    let shown = store.path().to_str().unwrap().to_string();
    assert!(shown.ends_with("password=***"), "{shown}");
    assert!(!shown.contains(PASSWORD), "{shown}");
    // Taken as PostgreSQL, not as the name of a file to create.
    assert!(!std::path::Path::new(&kv(PASSWORD)).exists());

    let err = Store::open(kv("not the password")).err().unwrap();
    let msg = err.to_string();
    assert!(msg.contains("refused the credentials"), "{msg}");
    assert!(msg.contains("password=***"), "{msg}");
    assert!(!msg.contains("not the password"), "{msg}");
    assert!(!msg.contains("db error"), "{msg}");
    let err = Store::open(format!("{} dbname='unterminated", kv(PASSWORD)))
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(msg.contains("not a valid PostgreSQL URL"), "{msg}");
    assert!(!msg.contains(PASSWORD), "{msg}");
}

#[test]
fn reading_never_creates_a_store_and_migrates_an_older_one_first() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let err = Store::open_read_only(&missing).err().unwrap();
    assert!(matches!(err, StoreError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("no such store"), "{err}");
    assert!(!missing.exists());

    // An empty file is an empty store: set up (it can be written), then read.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let store = Store::open_read_only(&empty).unwrap();
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert!(store.groups().unwrap().is_empty());

    let path = dir.path().join("s.db");
    Store::open(&path).unwrap().insert(&record(3)).unwrap();
    let store = Store::open_read_only(&path).unwrap();
    assert_eq!(stored(&store), 1);
    // A read-only store refuses writes.
    let err = store.insert(&record(4)).err().unwrap();
    assert!(err.to_string().contains("readonly"), "{err}");
}

/// Set to a store's path, the test binary opens the store for writing and closes it, 20 times.
const TOUCH: &str = "NDTUNE_STORE_FAULTS_TOUCH";

#[test]
fn another_process_never_takes_the_log_from_under_a_process_with_two_stores_of_one_file() {
    if let Some(path) = std::env::var_os(TOUCH) {
        for _ in 0..20 {
            drop(Store::open(&path).unwrap());
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    store.insert(&record(1)).unwrap();
    // A second store of the same file in this process, as a heartbeat opens one.
    let beside = Store::open(&path).unwrap();
    let touched = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "another_process_never_takes_the_log_from_under_a_process_with_two_stores_of_one_file",
        ])
        .env(TOUCH, &path)
        .output()
        .unwrap();
    assert!(touched.status.success(), "{touched:?}");
    store.insert(&record(2)).unwrap();
    beside.insert(&record(3)).unwrap();
    // What this process wrote is in the store, for any other reader to see.
    assert_eq!(stored(&Store::open_read_only(&path).unwrap()), 3);
    drop((store, beside));
    assert_eq!(stored(&Store::open_read_only(&path).unwrap()), 3);
}

#[test]
fn claim_each_reserves_several_configurations_in_order_and_leaves_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("c.db")).unwrap();
    let g = group();
    let lease = Duration::from_secs(600);
    let order: Vec<Config> = (0..10).map(config).collect();
    store.complete("a", &record(1)).unwrap();
    let a = store.claim_each(&g, "a", &order, 4, lease).unwrap();
    assert_eq!(a, [0, 2, 3, 4].map(config), "1 has a result");
    let b = store.claim_each(&g, "b", &order, 100, lease).unwrap();
    assert_eq!(b, [5, 6, 7, 8, 9].map(config), "a's are held");
    assert!(store
        .claim_each(&g, "c", &order, 3, lease)
        .unwrap()
        .is_empty());
    // Asking again for what it holds gives it back.
    assert_eq!(
        store.claim_each(&g, "a", &order[..1], 1, lease).unwrap(),
        [config(0)]
    );
}
