//! Several objectives end to end on PoCL: a campaign of the time and a metric of the user's,
//! small enough to measure whole, finds the exact Pareto front (checked against every stored
//! measurement by the definition), with racing off; the report draws it; a replay and the
//! front strategies score the front they find; a Kernel Tuner cache carries the objective list
//! out and back in.

mod common;
use common::*;
use std::collections::BTreeSet;
use std::path::Path;

fn spec(dir: &Path) -> String {
    std::fs::write(dir.join("work.cl"), KERNEL).unwrap();
    write(
        dir,
        "work.toml",
        &format!(
            r#"
[kernel]
name = "work"
source = "work.cl"
[constants]
N = 65536
[params]
WG = [8, 16, 32]
SLOW = [1, 2, 4, 8]
[launch]
global = ["N"]
local = ["WG"]
{XY_ARGS}
[verify]
outputs = ["y"]
reference = {{ config = {{ WG = 8, SLOW = 1 }} }}
[measure]
runs = 3
[metrics]
work = {{ expr = "SLOW * N" }}
[objective]
metric = ["time", "work"]
higher_is_better = [false, true]
"#
        ),
    )
}

/// `WG=.. SLOW=..` of a configuration.
fn key(config: &serde_json::Value) -> (i64, i64) {
    (
        config["WG"].as_i64().unwrap(),
        config["SLOW"].as_i64().unwrap(),
    )
}

#[test]
fn a_campaign_of_two_objectives_finds_the_exact_front_of_what_it_measured() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("f.db");
    let db = db.to_str().unwrap();
    // Racing asked for: with several objectives it is off (a slower configuration may be on
    // the front).
    let report = json(&["tune", &spec, "--db", db, "--race", "on", "--json"]);
    let d = &report["devices"][0];
    assert_eq!(d["outcomes"]["measured"], 12, "{d}");
    let front = &d["front"];
    assert_eq!(front["measured"], 12);
    assert_eq!(front["objectives"][1]["metric"], "work");
    assert_eq!(front["objectives"][1]["higher_is_better"], true);
    let listed: BTreeSet<(i64, i64)> = front["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| key(&m["config"]))
        .collect();

    // The front by its definition, from every stored measurement: (time, -work) minimised.
    let store = ndtune_store::Store::open(Path::new(db)).unwrap();
    let group = store.groups().unwrap().remove(0);
    let points: Vec<((i64, i64), f64, f64)> = store
        .records(&group)
        .unwrap()
        .into_iter()
        .map(|r| {
            let ndtune_core::Outcome::Measured(t) = &r.outcome else {
                panic!("every configuration runs: {:?}", r.outcome);
            };
            assert!(t.raced.is_none(), "racing is off with several objectives");
            let c = &r.key.config;
            let (wg, slow) = (c["WG"].as_int().unwrap(), c["SLOW"].as_int().unwrap());
            ((wg, slow), t.score_ms(), (slow * 65536) as f64)
        })
        .collect();
    let dominated = |p: &((i64, i64), f64, f64)| {
        points
            .iter()
            .any(|q| q.1 <= p.1 && q.2 >= p.2 && (q.1 < p.1 || q.2 > p.2))
    };
    let exact: BTreeSet<(i64, i64)> = points
        .iter()
        .filter(|p| !dominated(p))
        .map(|p| p.0)
        .collect();
    assert_eq!(listed, exact);
    // The most work a work-item does (SLOW = 8) has a member: nothing beats it in work.
    assert!(listed.iter().any(|(_, slow)| *slow == 8), "{listed:?}");
    // Members come fastest first, each with its values.
    let members = front["members"].as_array().unwrap();
    let times: Vec<f64> = members
        .iter()
        .map(|m| m["values"][0].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    for m in members {
        let (_, slow) = key(&m["config"]);
        assert_eq!(m["values"][1].as_f64().unwrap(), (slow * 65536) as f64);
    }
    assert!(front["hypervolume"].as_f64().unwrap() > 0.0);
    assert_eq!(front["reference"].as_array().unwrap().len(), 2);

    // `show --front` lists the same configurations, fastest first.
    let shown = json(&["show", "--db", db, "--front", "--json"]);
    let listed_again: Vec<(i64, i64)> = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|r| key(&r["config"]))
        .collect();
    let in_order: Vec<(i64, i64)> = members.iter().map(|m| key(&m["config"])).collect();
    assert_eq!(listed_again, in_order);

    // `status` counts it.
    let status = succeeds(&["status", "--db", db]);
    assert!(
        status.contains(&format!(
            "front      {} configurations on the Pareto front of time, work",
            exact.len()
        )),
        "{status}"
    );

    // The report draws the front: a table of its members and a scatter of the two objectives.
    let page = dir.path().join("report.html");
    ndtune()
        .args(["report", "--db", db, "--out", page.to_str().unwrap()])
        .assert()
        .success();
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains(&format!("{} of the 12 configurations", exact.len())),
        "the front's size"
    );
    assert!(page.contains("work against time"), "the scatter's title");
    assert!(
        page.contains("the Pareto front: none better in both"),
        "its legend"
    );
    assert!(
        page.contains("effect of each parameter on work"),
        "an effect per objective"
    );

    // A replay of the recording with a front strategy that may evaluate every configuration
    // covers the whole front; with fewer, no more than it.
    for (strategy, budget) in [("nsga2", "12"), ("parego", "12"), ("parego", "5")] {
        let replay = json(&[
            "tune",
            "--replay",
            db,
            "--strategy",
            strategy,
            "--budget",
            budget,
            "--json",
        ]);
        let fraction = replay["front"]["hypervolume_fraction"].as_f64().unwrap();
        assert_eq!(replay["front"]["recorded"], exact.len() as u64, "{replay}");
        if budget == "12" {
            assert_eq!(fraction, 1.0, "{strategy}: {replay}");
        } else {
            assert!((0.0..=1.0).contains(&fraction), "{replay}");
        }
    }

    // Wisdom keeps the front, and a preference picks from it: the fastest that does the most
    // work, and the most work within 1.5 times the fastest time.
    let wisdom = dir.path().join("wisdom.json");
    let wisdom = wisdom.to_str().unwrap();
    ndtune()
        .args([
            "export", "--format", "wisdom", "--spec", &spec, "--db", db, "--out", wisdom,
        ])
        .assert()
        .success();
    let most = exact.iter().map(|(_, slow)| *slow).max().unwrap();
    let fastest_time = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let pick = |prefer: &str| {
        let out = json(&["pick", "--wisdom", wisdom, "--prefer", prefer, "--json"]);
        key(&out["pick"]["config"])
    };
    let at_most = points
        .iter()
        .filter(|p| p.2 == (most * 65536) as f64)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    assert_eq!(pick(&format!("time,work>={}", most * 65536)), at_most.0);
    let within = points
        .iter()
        .filter(|p| exact.contains(&p.0) && p.1 <= 1.5 * fastest_time)
        .max_by(|a, b| a.2.total_cmp(&b.2).then(b.1.total_cmp(&a.1)))
        .unwrap();
    assert_eq!(pick("work,time<=1.5x"), within.0);
    let none = fails(&["pick", "--wisdom", wisdom, "--prefer", "time,work>=1e12"]);
    assert!(none.contains("no configuration on the front"), "{none}");

    // Kernel Tuner 1.4+'s cache: the objectives as a list, and read back as they were.
    let kt = dir.path().join("work-kt.json");
    let kt = kt.to_str().unwrap();
    ndtune()
        .args(["export", "--db", db, "--format", "kt", "--out", kt])
        .assert()
        .success();
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kt).unwrap()).unwrap();
    assert_eq!(cache["objective"], serde_json::json!(["time", "work"]));
    assert_eq!(
        cache["objective_higher_is_better"],
        serde_json::json!([false, true])
    );
    let replayed = json(&["tune", "--replay", kt, "--strategy", "exhaustive", "--json"]);
    assert_eq!(replayed["front"]["hypervolume_fraction"], 1.0, "{replayed}");
    assert_eq!(replayed["front"]["recorded"], exact.len() as u64);
}
