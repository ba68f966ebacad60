//! `ndtune status`, and the commands on a PostgreSQL store: a real server started by the test
//! (`ndtune_store::testing::PgServer`; skipped with a message where the server binaries are
//! absent), a real tune on PoCL into it, then status, export and report from it; errors that
//! name the URL with its password hidden.

mod common;

use common::{examples, fails, json, ndtune};
use ndtune_core::{Config, Outcome, Timing};
use ndtune_store::testing::{PgServer, PASSWORD};
use ndtune_store::{Group, Record, ResultKey, Store};
use std::time::Duration;

fn group(device: &str) -> Group {
    Group {
        device: device.into(),
        kernel: "gemm".into(),
        source_hash: "aaaabbbbccccdddd".into(),
        setup: "5e7a5e7a5e7a5e7a".into(),
        constants: ndtune_core::int_config([("N", 64)]),
    }
}

fn config(x: i64) -> Config {
    ndtune_core::int_config([("X", x)])
}

fn record(g: &Group, c: &Config) -> Record {
    Record {
        key: ResultKey::new(g, c.clone()),
        outcome: Outcome::Measured(Timing::new(vec![1.0], 1)),
        ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
        started_at: 1,
        finished_at: 2,
    }
}

/// Two workers on one campaign: `w1` completed two configurations, `w2` holds one.
fn shared_campaign(location: &str) -> Group {
    let store = Store::open(location).unwrap();
    let fp = store
        .put_device(&ndtune_device::builtin::find("gt550m").unwrap())
        .unwrap();
    let g = group(&fp);
    let order: Vec<Config> = (0..5).map(config).collect();
    let lease = Duration::from_secs(600);
    for _ in 0..2 {
        let c = store.claim(&g, "w1", &order, lease).unwrap().unwrap();
        store.complete("w1", &record(&g, &c)).unwrap();
    }
    assert_eq!(
        store.claim(&g, "w2", &order, lease).unwrap(),
        Some(config(2))
    );
    g
}

#[test]
fn status_shows_each_workers_share_as_a_table_and_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let db = db.to_str().unwrap();
    let g = shared_campaign(db);

    let out = ndtune().args(["status", "--db", db]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "gemm on GeForce GT 550M ({}), N=64, source aaaabbbbccccdddd, setup 5e7a5e7a5e7a5e7a: 2 results",
            g.device
        )
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        [
            "worker",
            "claimed",
            "done",
            "expired",
            "per",
            "min",
            "last",
            "heartbeat"
        ]
    );
    assert_eq!(
        lines[2].split_whitespace().take(4).collect::<Vec<_>>(),
        ["w1", "0", "2", "0"]
    );
    // A worker that completed nothing has no rate yet.
    assert_eq!(
        lines[3].split_whitespace().take(5).collect::<Vec<_>>(),
        ["w2", "1", "0", "0", "-"]
    );
    assert!(lines[3].ends_with(" s ago"), "{text}");

    let v = json(&["status", "--db", db, "--json"]);
    let c = &v["campaigns"][0];
    assert_eq!(c["device_name"], "GeForce GT 550M");
    assert_eq!(c["group"]["kernel"], "gemm");
    assert_eq!(c["group"]["constants"]["N"], 64);
    assert_eq!(c["results"], 2);
    let workers: Vec<(&str, u64, u64, u64)> = c["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["worker"].as_str().unwrap(),
                w["claimed"].as_u64().unwrap(),
                w["done"].as_u64().unwrap(),
                w["expired"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(workers, [("w1", 0, 2, 0), ("w2", 1, 0, 0)]);
    // When each started and last completed, for its rate.
    assert!(
        c["workers"][0]["first_claim"].as_i64().unwrap()
            <= c["workers"][0]["last_done"].as_i64().unwrap()
    );
    assert!(c["workers"][1]["last_done"].is_null());
    assert!(c["workers"][0]["heartbeat"].as_i64().unwrap() <= v["now"].as_i64().unwrap());

    let filtered = json(&["status", "--db", db, "--kernel", "conv", "--json"]);
    assert_eq!(filtered["campaigns"], serde_json::json!([]));
    let missing = dir.path().join("missing.db");
    let err = fails(&["status", "--db", missing.to_str().unwrap()]);
    assert!(err.contains("no such store"), "{err}");
    assert!(!missing.exists());
}

#[test]
fn earlier_campaigns_of_a_kernel_show_after_the_newest_with_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("setups.db");
    let db = db.to_str().unwrap();
    let store = Store::open(db).unwrap();
    let fp = store
        .put_device(&ndtune_device::builtin::find("gt550m").unwrap())
        .unwrap();
    let setup = |runs: i64| {
        ndtune_core::setup::Setup::new(serde_json::json!({ "measure": { "runs": runs } }))
    };
    // Tuned with 10 runs, then again with 20, then another size.
    for (runs, n, at) in [(10, 64, 5), (20, 64, 50), (20, 128, 60)] {
        let s = setup(runs);
        store.put_setup(&s).unwrap();
        let g = Group {
            setup: s.digest,
            constants: ndtune_core::int_config([("N", n)]),
            ..group(&fp)
        };
        let mut r = record(&g, &config(1));
        r.finished_at = at;
        store.insert(&r).unwrap();
    }
    drop(store);
    let out = ndtune().args(["status", "--db", db]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("gemm")).collect();
    let (old, new) = (setup(10).digest, setup(20).digest);
    assert_eq!(headings.len(), 3, "{text}");
    assert!(headings[0].contains(&format!("N=64, source aaaabbbbccccdddd, setup {new}")));
    assert!(headings[1].contains(&format!("N=64, source aaaabbbbccccdddd, setup {old}")));
    assert!(headings[2].contains("N=128"), "{text}");
    assert!(
        text.contains(&format!(
            "setup {old}: 1 results\n  an earlier campaign: setup {new} is newer and does not reuse these results; from this setup to it:\n    measure.runs: 10 -> 20\n"
        )),
        "{text}"
    );

    let v = json(&["status", "--db", db, "--json", "--set", "N=64"]);
    let campaigns = v["campaigns"].as_array().unwrap();
    assert_eq!(campaigns.len(), 2, "--set N=64 selects that size: {v}");
    assert_eq!(campaigns[0]["earlier_than"], serde_json::Value::Null);
    assert_eq!(campaigns[1]["earlier_than"], new.as_str());
    assert_eq!(
        campaigns[1]["differences"],
        serde_json::json!(["measure.runs: 10 -> 20"])
    );
    assert_eq!(campaigns[1]["group"]["setup"], old.as_str());
    let none = json(&["status", "--db", db, "--json", "--set", "N=32"]);
    assert_eq!(none["campaigns"], serde_json::json!([]));
}

#[test]
fn a_postgres_store_serves_tune_status_export_and_report() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    let url = server.create_database("cli").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = examples().join("conv1d.toml");
    // NDTUNE_DB is --db's default.
    let tuned = ndtune()
        .args(["tune", spec.to_str().unwrap(), "--json"])
        .env("NDTUNE_DB", &url)
        .output()
        .unwrap();
    assert!(
        tuned.status.success(),
        "{}",
        String::from_utf8_lossy(&tuned.stderr)
    );
    let tuned: serde_json::Value = serde_json::from_slice(&tuned.stdout).unwrap();
    let best = &tuned["devices"][0]["best"]["config"];

    let status = ndtune()
        .args(["status", "--json"])
        .env("NDTUNE_DB", &url)
        .output()
        .unwrap();
    assert!(status.status.success());
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        status["store"].as_str().unwrap(),
        url.replace(PASSWORD, "***")
    );
    let campaign = &status["campaigns"][0];
    assert_eq!(campaign["group"]["kernel"], "conv1d");
    let results = campaign["results"].as_u64().unwrap();
    assert!(results > 1, "{status}");
    // A plain tune claims what it measures, as one worker.
    let workers = campaign["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1, "{status}");
    assert_eq!(workers[0]["done"], results, "{status}");
    assert_eq!(workers[0]["claimed"], 0, "{status}");

    let cache = dir.path().join("conv1d.json");
    let out = ndtune()
        .args(["export", "--db", &url, "--format", "kt", "--out"])
        .arg(&cache)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(cache["cache"].as_object().unwrap().len() as u64, results);

    let html = dir.path().join("report.html");
    let out = ndtune()
        .args(["report", "--db", &url, "--out"])
        .arg(&html)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("postgres://ndtune:***@"), "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("conv1d"));
    assert!(best.is_object());
}

#[test]
fn wrong_credentials_and_foreign_databases_fail_naming_the_url_without_its_password() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    let url = server.create_database("cli_errors").unwrap();
    let wrong = url.replace(PASSWORD, "hunter2");
    let err = fails(&["status", "--db", &wrong]);
    assert!(err.contains("postgres://ndtune:***@127.0.0.1"), "{err}");
    assert!(err.contains("refused the credentials"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");

    server
        .admin("DROP DATABASE IF EXISTS shop; CREATE DATABASE shop")
        .unwrap();
    let shop = server.url("shop");
    let mut client = postgres::Client::connect(&shop, postgres::NoTls).unwrap();
    client
        .batch_execute("CREATE TABLE orders (id INTEGER)")
        .unwrap();
    let spec = examples().join("conv1d.toml");
    let err = fails(&["tune", spec.to_str().unwrap(), "--db", &shop]);
    assert!(err.contains("another program"), "{err}");
    assert!(err.contains("postgres://ndtune:***@"), "{err}");
    let tables: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(tables, ["orders"]);
}
