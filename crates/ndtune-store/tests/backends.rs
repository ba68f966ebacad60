//! The same behaviour on both backends: one scenario of writes and reads runs against an SQLite
//! file and a PostgreSQL database (a real server started by the test), and what each reads back
//! must be equal. Also what opening a PostgreSQL store refuses: an unreachable server, wrong
//! credentials, a missing database, a database of another program, a newer schema.

use ndtune_core::{Outcome, Timing};
use ndtune_store::testing::PgServer;
use ndtune_store::{
    fingerprint, source_hash, Group, Observation, Record, ResultKey, Store, StoreError, Study,
    NDTUNE_VERSION, SCHEMA_VERSION,
};

const SETUP_A: &str = "5e7a5e7a5e7a5e7a";

fn key(kernel: &str, n: i64, x: i64) -> ResultKey {
    ResultKey {
        device: "0123456789abcdef".into(),
        kernel: kernel.into(),
        source_hash: source_hash(kernel),
        setup: SETUP_A.into(),
        constants: ndtune_core::int_config([("N", n), ("M", 2)]),
        config: ndtune_core::int_config([("X", x), ("Y", -x)]),
    }
}

fn outcome(i: i64) -> Outcome {
    match i % 7 {
        0 => Outcome::Measured(Timing::new(vec![0.1 + 0.2, 1.0 / 3.0, 2.5e-7, i as f64], 2)),
        1 => Outcome::Pruned {
            constraint: "X * Y <= device.max_work_group_size".into(),
        },
        2 => Outcome::BuildFailed {
            log: "<source>:3:1: error: 'q' ünïcode\n\"quoted\" \\ %s ?1 $1".into(),
        },
        3 => Outcome::Refused {
            error: "CL_INVALID_WORK_GROUP_SIZE".into(),
        },
        4 => Outcome::WrongResult {
            detail: "C[3]: 1 != 2".into(),
        },
        5 => Outcome::Crashed {
            detail: "signal 11 (SIGSEGV)".into(),
        },
        _ => Outcome::TimedOut { seconds: 7.5 },
    }
}

/// Everything the store can read back, in one value to compare between backends.
#[derive(Debug, PartialEq)]
struct Contents {
    devices: Vec<(String, ndtune_device::DeviceProfile)>,
    setups: Vec<(String, serde_json::Value)>,
    groups: Vec<Group>,
    records: Vec<Vec<Record>>,
    got: Vec<Option<Record>>,
    scenarios: Vec<(Group, serde_json::Value)>,
    studies: Vec<Study>,
    learn_studies: Vec<Study>,
    observations: Vec<Observation>,
    observation_ids: Vec<i64>,
}

/// Writes a campaign's worth of everything, with replacements, then reads it all back.
fn exercise(store: &Store) -> Contents {
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    let mut devices = Vec::new();
    for name in ["gt550m", "i7-4770", "hd4600"] {
        let profile = ndtune_device::builtin::find(name).unwrap();
        assert_eq!(store.put_device(&profile).unwrap(), fingerprint(&profile));
        devices.push(profile);
    }
    // Replacing a profile keeps one row.
    store.put_device(&devices[0]).unwrap();
    let mut keys = Vec::new();
    for kernel in ["gemm", "conv", "Äbc"] {
        for n in [64, 128] {
            for x in [3, 1, 2, 0] {
                keys.push(key(kernel, n, x));
            }
        }
    }
    for (i, k) in keys.iter().enumerate() {
        let record = Record {
            key: k.clone(),
            outcome: outcome(i as i64),
            ndtune_version: NDTUNE_VERSION.into(),
            started_at: 1_700_000_000_000 + i as i64,
            finished_at: 1_700_000_000_500 + i as i64,
        };
        store.insert(&record).unwrap();
    }
    // A replaced record keeps its place in insertion order.
    let mut again = store.get(&keys[1]).unwrap().unwrap();
    again.outcome = Outcome::Measured(Timing::new(vec![9.0, 8.0], 1));
    store.insert(&again).unwrap();

    // The same configuration under another setup is another record.
    let mut other_setup = keys[1].clone();
    other_setup.setup = "0123012301230123".into();
    store
        .insert(&Record {
            key: other_setup.clone(),
            outcome: outcome(3),
            ndtune_version: NDTUNE_VERSION.into(),
            started_at: 5,
            finished_at: 6,
        })
        .unwrap();
    let setups: Vec<(String, serde_json::Value)> = ["b", "a", "b"]
        .iter()
        .map(|x| {
            let setup = ndtune_core::setup::Setup::new(serde_json::json!({ "x": x, "ü": [1.5] }));
            store.put_setup(&setup).unwrap();
            let back = store.setup(&setup.digest).unwrap().unwrap();
            (back.digest, back.description)
        })
        .collect();
    assert_eq!(setups[0], setups[2]);
    assert_eq!(store.setup("nope").unwrap(), None);

    let groups = store.groups().unwrap();
    let records = groups.iter().map(|g| store.records(g).unwrap()).collect();
    let others = store.other_setups(&keys[1].group()).unwrap();
    assert_eq!(others, [other_setup.group()]);
    let got = [
        keys[0].clone(),
        keys[1].clone(),
        key("gemm", 64, 99),
        other_setup,
    ]
    .iter()
    .map(|k| store.get(k).unwrap())
    .collect();

    for (i, g) in groups.iter().enumerate().rev() {
        let info = serde_json::json!({"dataset": i, "labels": ["a", "b"], "x": 0.1});
        store.put_scenario(g, &info).unwrap();
    }
    store
        .put_scenario(&groups[0], &serde_json::json!({"replaced": true}))
        .unwrap();

    for (kind, name) in [
        ("split", "b"),
        ("learn", "z"),
        ("split", "a"),
        ("learn", "B"),
    ] {
        store
            .put_study(&Study {
                kind: kind.into(),
                name: name.into(),
                body: serde_json::json!({"of": name, "values": [1.5, 2.0]}),
                created_at: 42,
            })
            .unwrap();
    }
    let observation_ids = (0..5)
        .map(|i| {
            store
                .add_observation(&Observation {
                    scenario: format!("s{}", i % 2),
                    features: vec![("a".into(), i as f64 * 0.25), ("b".into(), -1.0)],
                    local: [32, 4 + i as u64],
                    runtime_ms: (i != 3).then_some(1.0 / (i + 1) as f64),
                    received_at: 1000 + i,
                })
                .unwrap()
        })
        .collect();
    Contents {
        devices: store.devices().unwrap(),
        setups,
        groups,
        records,
        got,
        scenarios: store.scenarios().unwrap(),
        studies: store.studies(None).unwrap(),
        learn_studies: store.studies(Some("learn")).unwrap(),
        observations: store.observations().unwrap(),
        observation_ids,
    }
}

#[test]
fn sqlite_and_postgres_read_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = exercise(&Store::open(dir.path().join("s.ndtune")).unwrap());
    assert_eq!(sqlite.devices.len(), 3);
    assert_eq!(sqlite.groups.len(), 7);
    assert_eq!(sqlite.records.iter().map(Vec::len).sum::<usize>(), 25);
    assert_eq!(sqlite.setups.len(), 3);
    assert_eq!(sqlite.learn_studies.len(), 2);
    assert_eq!(sqlite.observations.len(), 5);

    let Some(server) = PgServer::shared() else {
        return;
    };
    let url = server.create_database("same_results").unwrap();
    let store = Store::open(&url).unwrap();
    assert_eq!(
        store.path().to_str().unwrap(),
        url.replace(ndtune_store::testing::PASSWORD, "***")
    );
    let postgres = exercise(&store);
    assert_eq!(postgres, sqlite);
    drop(store);
    // Reopening finds everything, migrates nothing.
    let store = Store::open(&url).unwrap();
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert_eq!(store.devices().unwrap(), sqlite.devices);
    assert_eq!(store.observations().unwrap(), sqlite.observations);
}

#[test]
fn postgres_workers_starting_together_migrate_once() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    let url = server.create_database("opened_together").unwrap();
    let versions: Vec<u32> = std::thread::scope(|s| {
        let opens: Vec<_> = (0..6)
            .map(|_| s.spawn(|| Store::open(&url).unwrap().schema_version()))
            .collect();
        opens.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(versions, vec![SCHEMA_VERSION; 6]);
}

/// Opening `url` fails; the message names the URL without its password.
fn refused(url: &str, expected: &str) -> StoreError {
    let err = Store::open(url).err().expect("the store must be refused");
    let msg = err.to_string();
    let shown = url.replace(ndtune_store::testing::PASSWORD, "***");
    assert!(msg.contains(&shown), "{msg}");
    assert!(!msg.contains(ndtune_store::testing::PASSWORD), "{msg}");
    assert!(msg.contains(expected), "{msg}");
    err
}

/// The tables of `database`, to check that a refused open created nothing.
fn tables(server: &PgServer, database: &str) -> Vec<String> {
    let mut client = postgres::Client::connect(&server.url(database), postgres::NoTls).unwrap();
    client
        .query(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = 'public' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn unreachable_servers_wrong_credentials_and_missing_databases_are_clear_errors() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    // Nothing listens on a port just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = format!("postgres://ndtune:secret@127.0.0.1:{port}/db");
    let err = Store::open(&nowhere).err().unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("postgres://ndtune:***@127.0.0.1:{port}/db")),
        "{msg}"
    );
    assert!(!msg.contains("secret"), "{msg}");
    assert!(msg.contains("cannot be reached"), "{msg}");

    let url = server.create_database("credentials").unwrap();
    let wrong = url.replace(ndtune_store::testing::PASSWORD, "not-the-password");
    let err = Store::open(&wrong).err().unwrap();
    let msg = err.to_string();
    assert!(msg.contains("refused the credentials"), "{msg}");
    assert!(msg.contains("postgres://ndtune:***@"), "{msg}");
    assert!(!msg.contains("not-the-password"), "{msg}");
    assert_eq!(tables(&server, "credentials"), Vec::<String>::new());

    let missing = server.url("no_such_database");
    refused(&missing, "does not exist");
}

#[test]
fn databases_of_other_programs_are_refused_untouched() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    let url = server.create_database("foreign").unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute("CREATE TABLE customers (id INTEGER, name TEXT); INSERT INTO customers VALUES (1, 'a');")
        .unwrap();
    let err = refused(&url, "another program");
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    assert!(err.to_string().contains("customers"), "{err}");
    assert_eq!(tables(&server, "foreign"), ["customers"]);

    // A meta table that is someone else's.
    client
        .batch_execute("CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('application_id', 'other');")
        .unwrap();
    refused(&url, "does not name ndtune");
    assert_eq!(tables(&server, "foreign"), ["customers", "meta"]);
}

#[test]
fn a_postgres_store_of_a_newer_schema_is_refused_untouched() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    let url = server.create_database("newer").unwrap();
    drop(Store::open(&url).unwrap());
    let newer = SCHEMA_VERSION + 1;
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!(
            "UPDATE meta SET value = '{newer}' WHERE key = 'schema_version'"
        ))
        .unwrap();
    let before = tables(&server, "newer");
    let err = refused(&url, "newer");
    assert!(
        matches!(err, StoreError::NewerSchema { found, supported, .. }
            if found == newer && supported == SCHEMA_VERSION),
        "{err}"
    );
    assert_eq!(tables(&server, "newer"), before);
}
