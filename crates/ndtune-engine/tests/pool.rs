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
