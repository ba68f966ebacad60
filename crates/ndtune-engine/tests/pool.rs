//! The engine's pool through its API, on PoCL: devices of two kinds never share a campaign. (The
//! command line cannot ask for such a pair on a machine of one device: a device and a part of it
//! share compute units, which device selection refuses first.)

use ndtune_engine::pool::Pool;
use ndtune_engine::{Event, Options, Processes};
use ndtune_spec::Spec;
use ndtune_store::Store;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

#[test]
fn devices_of_two_kinds_never_pool() {
    let whole = ndtune_backend::open(0).unwrap();
    let half = ndtune_backend::open(0).unwrap().sub_device(1, 2).unwrap();
    let spec = Spec::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/saxpy.toml"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("pool.db");
    let store = Store::open(db.to_str().unwrap()).unwrap();
    let options = Options {
        strategy: "brute_force".into(),
        budget: None,
        time: None,
        warm_start: false,
        patience: None,
        configs: Vec::new(),
        share: None,
        guard: None,
        seed: 1,
        timeout: None,
        build_jobs: 1,
        race: None,
        advice_prior: false,
        keep_timed_out: false,
        cache_dir: None,
        processes: Processes::current_exe().unwrap(),
    };
    let devices = [whole, half];
    let pool = Pool {
        spec: &spec,
        overrides: &BTreeMap::new(),
        devices: &devices,
        store: &store,
        location: db.clone().into(),
        db_retry: Duration::from_secs(1),
        options,
        lease: Duration::from_secs(60),
        id: "test".into(),
    };
    let mut on = |_: ndtune_engine::pool::PoolEvent<'_>| {};
    let mut observer = |_: Event<'_>| {};
    let e = pool.run(&mut on, &mut observer).err().expect("refused");
    assert!(
        e.to_string()
            .contains("a pool shares one campaign among identical devices"),
        "{e}"
    );
    // Nothing was started or recorded.
    assert!(store.campaigns().unwrap().is_empty());
}

mod common;
use common::*;
use ndtune_bench::node_builds::NodeRole;

#[test]
fn a_pool_of_two_parts_of_a_device_shares_one_campaign_in_sqlite_and_one_build_service() {
    let dir = tempfile::tempdir().unwrap();
    let spec = work_spec(dir.path());
    let db = dir.path().join("pool.db");
    let cache = dir.path().join("cache");
    let mut request = request(&spec, &db, &[("NDTUNE_CACHE_DIR", &cache)]);
    request.devices = ndtune_engine::DeviceChoice::Selector(Some("0:0/2,0:1/2".into()));
    request.mode = ndtune_engine::Mode::Pool;
    request.search.build_jobs = Some(2);
    let ran = ndtune_engine::request::run(&request, &mut |_| {}, None).unwrap();
    let pool = ran.pool.as_ref().expect("a pool's account");
    let report = &ran.reports[0];
    assert_eq!(
        report.outcomes["measured"], CONFIGURATIONS as u128,
        "{report:?}"
    );
    // Evaluated now, by the pool's workers: nothing was reused from an earlier campaign.
    assert_eq!(
        (report.evaluated as u64, report.reused as u64),
        (CONFIGURATIONS, 0)
    );
    assert_eq!(pool.workers.len(), 2, "{:?}", pool.workers);
    assert!(
        pool.workers.iter().all(|w| w.done > 0),
        "both parts measured: {:?}",
        pool.workers
    );
    assert_eq!(
        pool.workers.iter().map(|w| w.done).sum::<u64>(),
        CONFIGURATIONS
    );
    assert_eq!(pool.measured_twice, 0);
    for end in &pool.ends {
        assert!(end.success && end.status == "exit status 0", "{end:?}");
    }
    // Each worker tells its own account; the two share one build service, which one of them
    // hosted for the node and which is gone with the pool.
    let mut roles = Vec::new();
    for w in &pool.workers {
        let account = &pool.accounts[&w.worker];
        assert_eq!(account.evaluated as u64, w.done, "{account:?}");
        assert!(
            account.time.total_s > 0.0 && account.time.build_jobs == 2,
            "{account:?}"
        );
        roles.push(account.time.node_builds.expect("a role"));
    }
    roles.sort_by_key(|r| *r != NodeRole::Hosted);
    assert_eq!(roles, [NodeRole::Hosted, NodeRole::Joined]);
    let left: Vec<_> = std::fs::read_dir(cache.join("node-builds"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "the node's build service left {left:?}");
}
