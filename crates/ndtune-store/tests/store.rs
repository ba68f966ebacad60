//! The store against real SQLite files in temporary directories.

use ndtune_core::{Outcome, OutcomeKind, Timing};
use ndtune_store::{
    fingerprint, source_hash, Group, Observation, Record, ResultKey, Store, StoreError, Study,
    APPLICATION_ID, NDTUNE_VERSION, SCHEMA_VERSION,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn key(kernel: &str, n: i64, x: i64) -> ResultKey {
    ResultKey {
        device: "0123456789abcdef".into(),
        kernel: kernel.into(),
        source_hash: source_hash(kernel),
        setup: "5e7a5e7a5e7a5e7a".into(),
        constants: ndtune_core::int_config([("N", n), ("M", 2)]),
        config: ndtune_core::int_config([("X", x), ("Y", -x)]),
    }
}

fn record(key: ResultKey, outcome: Outcome) -> Record {
    Record {
        key,
        outcome,
        ndtune_version: NDTUNE_VERSION.into(),
        started_at: 1_700_000_000_000,
        finished_at: 1_700_000_000_123,
    }
}

/// One outcome of every kind, in [`OutcomeKind::ALL`] order.
fn every_outcome() -> Vec<Outcome> {
    vec![
        Outcome::Measured(Timing::new(vec![0.1 + 0.2, 1.0 / 3.0, 2.5e-7, 12.0], 2)),
        Outcome::Pruned {
            constraint: "X * Y <= device.max_work_group_size".into(),
        },
        Outcome::BuildFailed {
            log: "<source>:3:1: error: use of undeclared identifier 'q'\n\"quoted\"".into(),
        },
        Outcome::Refused {
            error: "CL_INVALID_WORK_GROUP_SIZE".into(),
        },
        Outcome::WrongResult {
            detail: "C[3]: 1 != 2".into(),
        },
        Outcome::Crashed {
            detail: "signal 11 (SIGSEGV)".into(),
        },
        Outcome::TimedOut { seconds: 7.5 },
    ]
}

fn new_store() -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.ndtune");
    let store = Store::open(&path).unwrap();
    (dir, path, store)
}

#[test]
fn a_new_store_is_created_and_reopened_with_its_data() {
    let (_dir, path, store) = new_store();
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    let profile = ndtune_device::builtin::find("gt550m").unwrap();
    let fp = store.put_device(&profile).unwrap();
    assert_eq!(fp, fingerprint(&profile));
    let rec = record(key("gemm", 64, 1), every_outcome().remove(0));
    store.insert(&rec).unwrap();
    drop(store);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert_eq!(store.get(&rec.key).unwrap(), Some(rec));
    assert_eq!(store.device(&fp).unwrap(), Some(profile.clone()));
    assert_eq!(store.device("feedfacefeedface").unwrap(), None);
    assert_eq!(store.devices().unwrap(), vec![(fp, profile)]);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let pragma = |name: &str| -> i64 { conn.pragma_query_value(None, name, |r| r.get(0)).unwrap() };
    assert_eq!(pragma("application_id"), i64::from(APPLICATION_ID));
    assert_eq!(pragma("user_version"), i64::from(SCHEMA_VERSION));
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let meta: BTreeMap<String, String> = conn
        .prepare("SELECT key, value FROM meta")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(meta["application_id"], "ndtune");
    assert_eq!(meta["schema_version"], SCHEMA_VERSION.to_string());
    assert_eq!(meta["ndtune_version"], NDTUNE_VERSION);
}

#[test]
fn every_outcome_round_trips_with_its_score_and_times() {
    let (_dir, path, store) = new_store();
    for (x, outcome) in every_outcome().into_iter().enumerate() {
        let rec = record(key("gemm", 64, x as i64), outcome);
        store.insert(&rec).unwrap();
        assert_eq!(store.get(&rec.key).unwrap().as_ref(), Some(&rec));
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: Vec<(String, Option<String>, Option<f64>)> = conn
        .prepare("SELECT outcome_kind, times_ms, score_ms FROM results ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let kinds: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let expected: Vec<&str> = OutcomeKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(kinds, expected);
    let Outcome::Measured(t) = &every_outcome()[0] else {
        unreachable!()
    };
    let times: Vec<f64> = serde_json::from_str(rows[0].1.as_deref().unwrap()).unwrap();
    assert_eq!(times, t.times_ms);
    assert_eq!(rows[0].2, Some(t.score_ms()));
    assert!(rows[1..].iter().all(|r| r.1.is_none() && r.2.is_none()));
}

#[test]
fn insert_replaces_the_record_of_the_same_key() {
    let (_dir, _path, store) = new_store();
    let first = record(
        key("gemm", 64, 8),
        Outcome::Crashed {
            detail: "abort".into(),
        },
    );
    store.insert(&first).unwrap();
    let mut second = record(
        first.key.clone(),
        Outcome::Measured(Timing::new(vec![3.0], 1)),
    );
    second.finished_at += 1000;
    store.insert(&second).unwrap();
    assert_eq!(store.get(&first.key).unwrap(), Some(second.clone()));
    let all = store.records(&first.key.group()).unwrap();
    assert_eq!(all, vec![second]);
}

#[test]
fn records_and_groups_separate_device_kernel_source_setup_and_constants() {
    let (_dir, _path, store) = new_store();
    let mut keys = Vec::new();
    for kernel in ["gemm", "conv"] {
        for n in [64, 128] {
            for x in 0..3 {
                keys.push(key(kernel, n, x));
            }
        }
    }
    let mut other_device = key("gemm", 64, 0);
    other_device.device = "fedcba9876543210".into();
    let mut other_source = key("gemm", 64, 0);
    other_source.source_hash = source_hash("gemm v2");
    let mut other_setup = key("gemm", 64, 0);
    other_setup.setup = "0123012301230123".into();
    keys.extend([other_device, other_source.clone(), other_setup.clone()]);
    for (i, k) in keys.iter().enumerate() {
        let times = vec![i as f64 + 1.0];
        store
            .insert(&record(k.clone(), Outcome::Measured(Timing::new(times, 1))))
            .unwrap();
    }

    let groups = store.groups().unwrap();
    assert_eq!(groups.len(), 7);
    let mut expected: Vec<Group> = keys.iter().map(ResultKey::group).collect();
    expected.sort();
    expected.dedup();
    assert_eq!(groups, expected);

    let g = key("conv", 128, 0).group();
    let got = store.records(&g).unwrap();
    let configs: Vec<i64> = got
        .iter()
        .map(|r| r.key.config["X"].as_int().unwrap())
        .collect();
    assert_eq!(configs, [0, 1, 2]);
    assert!(got.iter().all(|r| r.key.group() == g));
    let none = store
        .records(&Group {
            kernel: "nope".into(),
            ..g
        })
        .unwrap();
    assert!(none.is_empty());

    // The same problem under another setup is another campaign, never the same; another
    // source is another kernel.
    let gemm = key("gemm", 64, 0).group();
    let others = store.other_setups(&gemm).unwrap();
    assert_eq!(others, [other_setup.group()]);
    assert!(!gemm.same_problem(&other_source.group()));
    assert_eq!(store.records(&other_setup.group()).unwrap().len(), 1);
    assert_eq!(store.records(&gemm).unwrap().len(), 3);
}

#[test]
fn an_empty_file_becomes_a_store_and_a_missing_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.ndtune");
    std::fs::write(&empty, b"").unwrap();
    assert_eq!(
        Store::open(&empty).unwrap().schema_version(),
        SCHEMA_VERSION
    );

    let nowhere = dir.path().join("no/such/dir/results.ndtune");
    let err = Store::open(&nowhere).err().unwrap();
    assert!(matches!(err, StoreError::NoDirectory { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!dir.path().join("no").exists());
}

/// Siblings SQLite would create next to a database it opened.
fn sidecars(path: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm", "-journal"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", path.display())))
        .filter(|p| p.exists())
        .collect()
}

/// Opens `path`, expects a refusal naming the file, and checks the file did not change.
fn assert_refused(path: &Path, reason: &str) -> StoreError {
    let before = std::fs::read(path).unwrap();
    let err = Store::open(path).err().expect("the file must be refused");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains(reason), "{msg}");
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "{} changed",
        path.display()
    );
    assert_eq!(sidecars(path), Vec::<PathBuf>::new());
    err
}

#[test]
fn files_that_are_not_stores_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "results: none yet\n").unwrap();
    let err = assert_refused(
        &text,
        "not an SQLite database: SQLite does not recognise its header",
    );
    assert!(matches!(err, StoreError::NotAStore { .. }));

    let random = dir.path().join("random.bin");
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&random, bytes).unwrap();
    assert_refused(&random, "not an SQLite database");

    let foreign = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE foo (a INTEGER); INSERT INTO foo VALUES (1);")
        .unwrap();
    drop(conn);
    assert_refused(&foreign, "another application");

    let dir_path = dir.path().join("a_dir");
    std::fs::create_dir(&dir_path).unwrap();
    let err = Store::open(&dir_path).err().unwrap();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn a_foreign_database_with_the_sqlite_header_but_another_application_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("app.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("PRAGMA application_id = 1234; CREATE TABLE meta (key TEXT, value TEXT);")
        .unwrap();
    drop(conn);
    assert_refused(&foreign, "application_id 0x4d2");
}

#[test]
fn a_truncated_store_is_refused_untouched() {
    let (dir, path, store) = new_store();
    for x in 0..300 {
        let log = format!("error {x}: {}", "x".repeat(200));
        store
            .insert(&record(key("gemm", 64, x), Outcome::BuildFailed { log }))
            .unwrap();
    }
    drop(store);
    let whole = std::fs::read(&path).unwrap();
    assert!(whole.len() > 16 * 4096, "{} bytes", whole.len());
    let truncated = dir.path().join("truncated.ndtune");
    std::fs::write(&truncated, &whole[..whole.len() / 2]).unwrap();
    assert_refused(&truncated, "damaged");
}

#[test]
fn a_store_of_a_newer_schema_is_refused_untouched() {
    let (_dir, path, store) = new_store();
    drop(store);
    let newer = SCHEMA_VERSION + 1;
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA user_version = {newer};
         UPDATE meta SET value = '{newer}' WHERE key = 'schema_version';"
    ))
    .unwrap();
    drop(conn);
    let err = assert_refused(&path, "newer");
    match err {
        StoreError::NewerSchema {
            found, supported, ..
        } => assert_eq!((found, supported), (newer, SCHEMA_VERSION)),
        other => panic!("{other}"),
    }
}

/// The version 1 schema, frozen here as released: a store made with it must keep opening.
const V1_DDL: &str = "
PRAGMA application_id = 1852077173;
PRAGMA user_version = 1;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
INSERT INTO meta (key, value) VALUES
    ('application_id', 'ndtune'), ('schema_version', '1'), ('ndtune_version', '0.1.0');
CREATE TABLE devices (fingerprint TEXT PRIMARY KEY, profile TEXT NOT NULL) STRICT;
CREATE TABLE results (
    id INTEGER PRIMARY KEY, device TEXT NOT NULL, kernel TEXT NOT NULL,
    source_hash TEXT NOT NULL, constants TEXT NOT NULL, config TEXT NOT NULL,
    outcome_kind TEXT NOT NULL, outcome TEXT NOT NULL, times_ms TEXT, score_ms REAL,
    ndtune_version TEXT NOT NULL, started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX results_key ON results (device, kernel, source_hash, constants, config);
CREATE INDEX results_score ON results (device, kernel, source_hash, constants, score_ms);
INSERT INTO results (device, kernel, source_hash, constants, config, outcome_kind, outcome,
    times_ms, score_ms, ndtune_version, started_at, finished_at)
VALUES ('0123456789abcdef', 'gemm', 'aaaabbbbccccdddd', '{\"N\":64}', '{\"X\":2}', 'measured',
    '{\"outcome\":\"measured\",\"times_ms\":[2.0,1.0],\"best_of\":1}', '[2.0,1.0]', 1.0,
    '0.1.0', 5, 6);
";

#[test]
fn a_store_built_with_the_v1_ddl_opens_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.ndtune");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(V1_DDL)
        .unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    let key = ResultKey {
        device: "0123456789abcdef".into(),
        kernel: "gemm".into(),
        source_hash: "aaaabbbbccccdddd".into(),
        // Results of stores before version 6 keep the setup no campaign computes.
        setup: ndtune_core::setup::LEGACY.into(),
        constants: ndtune_core::int_config([("N", 64)]),
        config: ndtune_core::int_config([("X", 2)]),
    };
    let got = store.get(&key).unwrap().unwrap();
    let legacy = store.setup(ndtune_core::setup::LEGACY).unwrap().unwrap();
    assert_eq!(legacy.description, ndtune_core::setup::legacy_description());
    assert_eq!(legacy.first_seen, 5);
    assert_eq!(
        got.outcome,
        Outcome::Measured(Timing::new(vec![2.0, 1.0], 1))
    );
    assert_eq!((got.started_at, got.finished_at), (5, 6));
    assert_eq!(got.ndtune_version, "0.1.0");
}

#[test]
fn reopening_a_current_store_changes_nothing() {
    let (_dir, path, store) = new_store();
    store
        .insert(&record(
            key("gemm", 64, 1),
            Outcome::TimedOut { seconds: 1.0 },
        ))
        .unwrap();
    drop(store);
    let before = std::fs::read(&path).unwrap();
    for _ in 0..2 {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version(), SCHEMA_VERSION);
        drop(store);
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(sidecars(&path), Vec::<PathBuf>::new());
}

#[test]
fn file_names_with_uri_characters_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("my results ?#%&=.ndtune");
    let rec = record(key("gemm", 64, 1), every_outcome().remove(0));
    Store::open(&path).unwrap().insert(&rec).unwrap();
    assert_eq!(
        Store::open(&path).unwrap().get(&rec.key).unwrap(),
        Some(rec)
    );

    let foreign = dir.path().join("other app ?#%.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE foo (a INTEGER);")
        .unwrap();
    assert_refused(&foreign, "another application");
}

#[test]
fn studies_replace_by_kind_and_name_and_survive_reopening() {
    let (_dir, path, store) = new_store();
    let study = |kind: &str, name: &str, x: i64| Study {
        kind: kind.into(),
        name: name.into(),
        body: serde_json::json!({"x": x, "list": [1.5, "a"]}),
        created_at: 1_700_000_000_000 + x,
    };
    store.put_study(&study("split", "matmul 0,1", 1)).unwrap();
    store.put_study(&study("learn", "cv10", 2)).unwrap();
    store.put_study(&study("split", "matmul 0,1", 3)).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.studies(None).unwrap(),
        vec![study("learn", "cv10", 2), study("split", "matmul 0,1", 3)]
    );
    assert_eq!(
        store.studies(Some("split")).unwrap(),
        vec![study("split", "matmul 0,1", 3)]
    );
    assert!(store.studies(Some("report")).unwrap().is_empty());
}

#[test]
fn observations_keep_their_order_features_and_refusals() {
    let (_dir, path, store) = new_store();
    let obs = |scenario: &str, wc: u64, runtime_ms: Option<f64>| Observation {
        scenario: scenario.into(),
        features: vec![("f_a".into(), 1.25), ("f_b".into(), -3.0)],
        local: [wc, 4],
        runtime_ms,
        received_at: 1_700_000_000_000,
    };
    let written = [
        obs("s1", 32, Some(0.5)),
        obs("s2", 64, None),
        obs("s1", 8, Some(0.25)),
    ];
    let ids: Vec<i64> = written
        .iter()
        .map(|o| store.add_observation(o).unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    drop(store);
    assert_eq!(Store::open(&path).unwrap().observations().unwrap(), written);
}

/// Workers starting together on a store none of them has made yet (a node's first campaign):
/// each opens it, one creates it, none takes it for another application's database seen in
/// the middle of its creation (once read in three statements: no id yet, ndtune's tables).
#[test]
fn sqlite_stores_opened_together_while_one_creates_them_all_open() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..12 {
        let path = dir.path().join(format!("together-{round}.db"));
        let openers: Vec<_> = (0..6)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || Store::open(&path).map(drop))
            })
            .collect();
        for opener in openers {
            opener
                .join()
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
    }
}
