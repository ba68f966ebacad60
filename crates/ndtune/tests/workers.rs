//! Campaigns shared by workers, on PoCL sub-devices (equal parts: one kind of device): three
//! `tune --worker` processes on a real PostgreSQL server started by the test, one killed with
//! SIGKILL mid-campaign; a worker whose server restarts mid-campaign; `tune --pool` and
//! `--worker` refused on devices that cannot share; two plain `tune`s of one campaign at once;
//! time budgets; a worker stopped with SIGTERM mid-measurement. (A pool's campaign and warm
//! starts are the engine's tests: crates/ndtune-engine/tests/.)

mod common;

use common::{fails, json, ndtune, ndtune_process, work_spec as spec, CONFIGURATIONS};
use ndtune_store::testing::PgServer;
use ndtune_store::{CampaignStatus, Store};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `ndtune tune SPEC --worker` on `device` as worker `id`, output into files of `dir`.
fn worker(dir: &Path, spec: &str, db: &str, device: &str, id: &str) -> Child {
    let log = |ext: &str| std::fs::File::create(dir.join(format!("{id}.{ext}"))).unwrap();
    ndtune_process()
        .args([
            "tune",
            spec,
            "--device",
            device,
            "--worker",
            "--worker-id",
            id,
        ])
        .args(["--lease", "3s", "--build-jobs", "2", "--json"])
        .env("NDTUNE_DB", db)
        .stdout(Stdio::from(log("out")))
        .stderr(Stdio::from(log("err")))
        .spawn()
        .unwrap()
}

/// The one campaign of the store at `db`, as far as it got.
fn status(db: &str) -> Option<CampaignStatus> {
    let store = Store::open(db).ok()?;
    let group = store.campaigns().ok()?.into_iter().next()?;
    store.campaign_status(&group).ok()
}

/// Where the doomed `worker` seems to have finished a configuration and to hold another, freezes
/// it (SIGSTOP) and says whether, frozen, it still does; if not, lets it go on. A worker killed on
/// a status read while running may finish its claim between the read and the kill, and then holds
/// nothing that could expire.
fn holds_a_claim_when_frozen(worker: &Child, db: &str) -> bool {
    let holds = || {
        status(db)
            .is_some_and(|s| share(&s, "doomed").is_some_and(|w| w.done >= 1 && w.claimed >= 1))
    };
    if !holds() {
        return false;
    }
    let signal = |signal| assert_eq!(unsafe { libc::kill(worker.id() as libc::pid_t, signal) }, 0);
    signal(libc::SIGSTOP);
    // A statement sent just before the stop may still commit: read once it has.
    std::thread::sleep(Duration::from_millis(100));
    let holds = holds();
    if !holds {
        signal(libc::SIGCONT);
    }
    holds
}

fn share<'a>(status: &'a CampaignStatus, id: &str) -> Option<&'a ndtune_store::WorkerStatus> {
    status.workers.iter().find(|w| w.worker == id)
}

#[test]
fn workers_share_a_postgres_campaign_and_a_killed_worker_loses_nothing() {
    let Some(server) = PgServer::shared() else {
        return;
    };
    let db = server.create_database("workers").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = |id: &str| std::fs::read_to_string(dir.path().join(format!("{id}.err"))).unwrap();
    let spec = spec(dir.path());
    // Two parts of the CPU, the first shared by the worker that is killed.
    let mut doomed = worker(dir.path(), &spec, &db, "0:0/2", "doomed");
    let mut a = worker(dir.path(), &spec, &db, "0:0/2", "a");
    let mut b = worker(dir.path(), &spec, &db, "0:1/2", "b");
    // Kill it once it has finished a configuration and holds another.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(
            Instant::now() < deadline,
            "the doomed worker never got going"
        );
        if let Some(exit) = doomed.try_wait().unwrap() {
            panic!(
                "the doomed worker ended ({exit}) before it was killed: {}",
                log("doomed")
            );
        }
        if holds_a_claim_when_frozen(&doomed, &db) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    doomed.kill().unwrap(); // SIGKILL, while frozen
    doomed.wait().unwrap();
    for (name, child) in [("a", &mut a), ("b", &mut b)] {
        let exit = child.wait().unwrap();
        assert!(exit.success(), "worker {name}: {}", log(name));
    }

    let s = status(&db).unwrap();
    assert_eq!(
        s.results, CONFIGURATIONS,
        "every configuration measured: {s:?}"
    );
    assert_eq!(s.measured_twice, 0, "{s:?}");
    let done: u64 = s.workers.iter().map(|w| w.done).sum();
    assert_eq!(done, CONFIGURATIONS, "each result is one worker's: {s:?}");
    assert!(s.workers.iter().all(|w| w.claimed == 0), "{s:?}");
    let doomed = share(&s, "doomed").unwrap();
    assert!(doomed.done >= 1 && doomed.expired >= 1, "{s:?}");
    for id in ["a", "b"] {
        let w = share(&s, id).unwrap();
        assert!(w.done >= 1, "{s:?}");
        assert!(w.per_minute().is_some_and(|r| r > 0.0), "{s:?}");
    }
    // A surviving worker's report covers the whole campaign.
    let out = std::fs::read_to_string(dir.path().join("a.out")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &report["devices"][0];
    // The workers of this host share one build service, which one of them hosted; where that
    // was the doomed one, the others built alone once it died.
    for id in ["a", "b"] {
        let out = std::fs::read_to_string(dir.path().join(format!("{id}.out"))).unwrap();
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        let time = &report["devices"][0]["time"];
        assert!(
            ["hosted", "joined"].contains(&time["node_builds"].as_str().unwrap()),
            "{time}"
        );
    }
    assert_eq!(r["outcomes"]["measured"], CONFIGURATIONS, "{r}");
    assert_eq!(
        r["evaluated"].as_u64().unwrap(),
        share(&s, "a").unwrap().done,
        "{r}\nstore: {s:?}\nworker a's log:\n{}\nworker b's log:\n{}",
        log("a"),
        log("b")
    );

    // The shared store serves export and report like any other.
    let cache = dir.path().join("work.json");
    let exported = ndtune()
        .args(["export", "--db", &db, "--format", "kt", "--out"])
        .arg(&cache)
        .output()
        .unwrap();
    assert!(exported.status.success(), "{exported:?}");
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(
        cache["cache"].as_object().unwrap().len() as u64,
        CONFIGURATIONS
    );
    let html = dir.path().join("report.html");
    let reported = ndtune()
        .args(["report", "--db", &db, "--out"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(reported.status.success(), "{reported:?}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("work"));
}

#[test]
fn a_worker_carries_on_across_a_postgres_restart_and_loses_nothing() {
    let Some(bin) = ndtune_store::testing::binaries() else {
        eprintln!("skipped: no PostgreSQL server binaries");
        return;
    };
    // A server of this test's own: restarting the shared one would cut other tests off.
    let mut server = PgServer::start(&bin).unwrap();
    let db = server.create_database("restarted").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let log = |ext: &str| std::fs::File::create(dir.path().join(format!("w.{ext}"))).unwrap();
    let mut w = Command::new(env!("CARGO_BIN_EXE_ndtune"))
        .args(["tune", &spec, "--worker", "--worker-id", "w", "--json"])
        .args(["--build-jobs", "1", "--set", "N=262144"])
        .env("NDTUNE_DB", &db)
        .stdout(Stdio::from(log("out")))
        .stderr(Stdio::from(log("err")))
        .spawn()
        .unwrap();
    let err = || std::fs::read_to_string(dir.path().join("w.err")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while status(&db).is_none_or(|s| s.results < 2) {
        assert!(Instant::now() < deadline, "the worker never got going");
        assert!(w.try_wait().unwrap().is_none(), "{}", err());
        std::thread::sleep(Duration::from_millis(50));
    }
    server.restart_after(Duration::from_secs(3)).unwrap();
    assert!(w.wait().unwrap().success(), "{}", err());

    let s = status(&db).unwrap();
    assert_eq!(s.results, CONFIGURATIONS, "nothing lost: {s:?}");
    assert_eq!(s.measured_twice, 0, "{s:?}");
    let w = share(&s, "w").unwrap();
    assert_eq!(
        (w.done, w.claimed, w.expired),
        (CONFIGURATIONS, 0, 0),
        "{s:?}"
    );
    let out = std::fs::read_to_string(dir.path().join("w.out")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        report["devices"][0]["evaluated"], CONFIGURATIONS,
        "{report}"
    );
}

#[test]
fn two_plain_tunes_of_one_campaign_measure_each_configuration_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("both.db");
    let db = db.to_str().unwrap();
    let tunes: Vec<_> = (0..2)
        .map(|_| {
            ndtune_process()
                .args(["tune", &spec, "--db", db, "--build-jobs", "1", "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let reports: Vec<serde_json::Value> = tunes
        .into_iter()
        .map(|t| {
            let out = t.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    let counts = |r: &serde_json::Value| {
        let d = &r["devices"][0];
        (
            d["evaluated"].as_u64().unwrap(),
            d["reused"].as_u64().unwrap(),
        )
    };
    let (a, b) = (counts(&reports[0]), counts(&reports[1]));
    assert_eq!(
        a.0 + b.0,
        CONFIGURATIONS,
        "measured once in all: {a:?} {b:?}"
    );
    assert_eq!(a.0 + a.1, CONFIGURATIONS, "each saw every one: {a:?}");
    assert_eq!(b.0 + b.1, CONFIGURATIONS, "each saw every one: {b:?}");
    let s = status(db).unwrap();
    assert_eq!(s.results, CONFIGURATIONS, "{s:?}");
    assert_eq!(s.measured_twice, 0, "{s:?}");
    assert_eq!(
        s.workers.iter().map(|w| w.done).sum::<u64>(),
        CONFIGURATIONS,
        "{s:?}"
    );
    assert!(s.workers.iter().all(|w| w.claimed == 0), "{s:?}");
}

#[test]
fn four_workers_of_one_node_share_one_build_service_to_the_end() {
    // Two workers on each half of the CPU, one SQLite store: one hosts the node's build service
    // and three join it. Each plans its claims while others wait for builds; a wait must
    // survive another's plan (it once did not, and the workers waited for ever).
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("node.db");
    let db = db.to_str().unwrap();
    let ids = ["w0", "w1", "w2", "w3"];
    let mut workers: Vec<Child> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| worker(dir.path(), &spec, db, &format!("0:{}/2", i % 2), id))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(300);
    for (i, id) in ids.iter().enumerate() {
        let exit = loop {
            if let Some(exit) = workers[i].try_wait().unwrap() {
                break exit;
            }
            if Instant::now() > deadline {
                workers.iter_mut().for_each(|w| drop(w.kill()));
                panic!("worker {id} still runs after 300 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let err = std::fs::read_to_string(dir.path().join(format!("{id}.err"))).unwrap();
        assert!(exit.success(), "worker {id}: {err}");
    }
    let s = status(db).unwrap();
    assert_eq!(s.results, CONFIGURATIONS, "{s:?}");
    assert_eq!(s.measured_twice, 0, "{s:?}");
    let mut roles = Vec::new();
    for id in ids {
        let out = std::fs::read_to_string(dir.path().join(format!("{id}.out"))).unwrap();
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        roles.push(
            report["devices"][0]["time"]["node_builds"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    roles.sort();
    assert_eq!(roles, ["hosted", "joined", "joined", "joined"]);
    // The report draws what each worker evaluated when.
    let html = dir.path().join("node.html");
    let reported = ndtune()
        .args(["report", "--db", db, "--out"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(reported.status.success(), "{reported:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("What each of the 4 workers that shared the campaign evaluated when")
        .unwrap_or_else(|| panic!("no timeline in the report"));
    let caption = &page[at..at + 600];
    for id in ids {
        let n = s.workers.iter().find(|w| w.worker == id).unwrap().done;
        assert!(
            caption.contains(&format!("{id} {n} in ")),
            "{id}: {caption}"
        );
    }
}

#[test]
fn a_pool_or_a_worker_on_devices_that_cannot_share_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("pool.db");
    let db = db.to_str().unwrap();
    // A device and a part of it share compute units: never picked together (what a pool does,
    // and that different kinds of device never pool, are the engine's tests,
    // crates/ndtune-engine/tests/pool.rs); a worker measures on one device.
    let err = fails(&["tune", &spec, "--db", db, "--device", "0,0:1/2", "--pool"]);
    assert!(err.contains("share compute units"), "{err}");
    let err = fails(&[
        "tune",
        &spec,
        "--db",
        db,
        "--device",
        "0:0/2,0:1/2",
        "--worker",
    ]);
    assert!(err.contains("--worker measures on one device"), "{err}");
}

#[test]
fn a_time_budget_stops_the_search_and_bad_durations_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("time.db");
    let db = db.to_str().unwrap();
    let v = json(&["tune", &spec, "--db", db, "--time", "0s", "--json"]);
    assert_eq!(v["devices"][0]["evaluated"], 0, "{v}");
    let err = fails(&["tune", &spec, "--db", db, "--time", "ten minutes"]);
    assert!(err.contains("`ten minutes` is not a duration"), "{err}");
}

#[test]
fn a_worker_stopped_mid_measurement_gives_back_every_claim() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("stopped.db");
    let db = db.to_str().unwrap();
    let mut stopped = worker(dir.path(), &spec, db, "0", "stopped");
    let deadline = Instant::now() + Duration::from_secs(120);
    while status(db).map_or(0, |s| s.results) < 2 {
        assert!(Instant::now() < deadline, "nothing measured in 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Most of a worker's time goes to measuring: the signal finds a claimed configuration in
    // flight, besides those claimed ahead.
    // SAFETY: kill(2) of the child started above.
    unsafe {
        libc::kill(stopped.id() as libc::pid_t, libc::SIGTERM);
    }
    let exit = stopped.wait().unwrap();
    let err = std::fs::read_to_string(dir.path().join("stopped.err")).unwrap();
    assert_eq!(exit.code(), Some(128 + libc::SIGTERM), "{exit:?} {err}");
    let s = status(db).unwrap();
    assert!(s.results < CONFIGURATIONS, "stopped before the end: {s:?}");
    assert!(s.workers.iter().all(|w| w.claimed == 0), "{s:?}");
}
