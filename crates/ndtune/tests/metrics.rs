//! Metrics and objectives end to end on PoCL: a campaign maximising a GFLOP/s metric picks what
//! the time picks, a metric that penalises a parameter picks otherwise; Kernel Tuner caches
//! carry the metrics and the objective out and back in; a device without a power source tunes
//! on with a note, and a metric that needs the energy is refused before anything is measured.

mod common;
use common::*;
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
WG = [8, 16]
SLOW = [1, 16]
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
gflops = {{ expr = "2 * N / time / 1e6", unit = "GFLOP/s" }}
"#
        ),
    )
}

fn best(report: &serde_json::Value) -> (i64, i64) {
    let c = &report["devices"][0]["best"]["config"];
    (c["WG"].as_i64().unwrap(), c["SLOW"].as_i64().unwrap())
}

fn records(db: &Path) -> usize {
    let store = ndtune_store::Store::open(db).unwrap();
    store
        .groups()
        .unwrap()
        .iter()
        .map(|g| store.records(g).unwrap().len())
        .sum()
}

#[test]
fn an_objective_picks_what_its_metric_says_and_travels_through_kernel_tuner_caches() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("m.db");
    let db = db.to_str().unwrap();
    let by_time = json(&["tune", &spec, "--db", db, "--json"]);
    let d = &by_time["devices"][0];
    assert_eq!(d["objective"]["metric"], "time");
    assert_eq!(d["objective"]["unit"], "ms");
    let fastest = best(&by_time);
    assert_eq!(fastest.1, 1, "16 iterations a work-item are slower: {d}");
    let time_ms = d["best"]["time_ms"].as_f64().unwrap();
    // The metric is shown with its unit even where the time is the objective.
    let gflops = d["best"]["metrics"]["gflops"].as_f64().unwrap();
    assert!((gflops - 2.0 * 65536.0 / time_ms / 1e6).abs() < 1e-12 * gflops);
    assert_eq!(d["units"]["gflops"], "GFLOP/s");

    // GFLOP/s of a fixed count is the time's inverse: maximising it must pick the same
    // configuration, from the same (reused) measurements.
    let by_rate = json(&[
        "tune",
        &spec,
        "--db",
        db,
        "--objective",
        "gflops",
        "--maximize",
        "--json",
    ]);
    let r = &by_rate["devices"][0];
    assert_eq!(
        (r["evaluated"].as_u64(), r["reused"].as_u64()),
        (Some(0), Some(4))
    );
    assert_eq!(best(&by_rate), fastest);
    assert_eq!(r["best"]["objective"].as_f64().unwrap(), gflops);
    assert_eq!(
        r["objective"],
        serde_json::json!({"metric": "gflops", "unit": "GFLOP/s", "higher_is_better": true})
    );
    let top: Vec<f64> = r["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["objective"].as_f64().unwrap())
        .collect();
    assert!(top.windows(2).all(|w| w[0] >= w[1]), "best first: {top:?}");

    // A metric that penalises SLOW = 1 ten thousandfold makes a slower configuration the best,
    // for a strategy other than the exhaustive one too.
    let penalised = json(&[
        "tune",
        &spec,
        "--db",
        db,
        "--metric",
        "penalised=gflops / (SLOW == 1 ? 1e4 : 1)",
        "--objective",
        "penalised",
        "--maximize",
        "--strategy",
        "random",
        "--json",
    ]);
    let p = &penalised["devices"][0];
    assert_eq!(best(&penalised).1, 16, "{p}");
    assert_ne!(best(&penalised), fastest);
    assert_eq!(p["objective"]["metric"], "penalised");
    assert!(p["objective"].get("unit").is_none(), "no unit was given");

    // Kernel Tuner's cache carries each value and the objective; reading it back keeps them.
    let kt = dir.path().join("work.json");
    let kt = kt.to_str().unwrap();
    ndtune()
        .args(["export", "--db", db, "--format", "kt", "--out", kt])
        .assert()
        .success();
    let cache = ndtune_store::kt::read_kt_cache(Path::new(kt)).unwrap();
    assert_eq!(cache.header.objective, "penalised");
    assert_eq!(cache.header.objective_higher_is_better, Some(true));
    let names: Vec<&str> = cache
        .header
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(names, ["gflops", "penalised"]);
    assert_eq!(cache.metrics.len(), 4, "every measured configuration");
    for (config, values) in &cache.metrics {
        let ms = cache.entries[config].score_ms().unwrap();
        let slow = if config["SLOW"] == 1 { 1e4 } else { 1.0 };
        let expected = 2.0 * 65536.0 / ms / 1e6;
        assert!((values["gflops"] - expected).abs() <= 1e-12 * expected);
        assert!((values["penalised"] - expected / slow).abs() <= 1e-12 * expected);
    }
    let replayed = json(&["tune", "--replay", kt, "--json"]);
    assert_eq!(replayed["objective"]["metric"], "penalised");
    assert_eq!(replayed["objective"]["higher_is_better"], true);
    assert_eq!(replayed["optimum"]["config"], p["best"]["config"]);
    assert_eq!(replayed["optimum"]["objective"], p["best"]["objective"]);
    // ... and the command line may choose another objective of the cache's metrics.
    let replayed = json(&["tune", "--replay", kt, "--objective", "time", "--json"]);
    assert_eq!(replayed["optimum"]["config"], d["best"]["config"]);
    // T4 results name the objective and give each metric with its unit.
    let t4 = dir.path().join("work-t4.json");
    ndtune()
        .args([
            "export",
            "--db",
            db,
            "--format",
            "t4",
            "--out",
            t4.to_str().unwrap(),
        ])
        .assert()
        .success();
    let t4: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&t4).unwrap()).unwrap();
    let first = &t4["results"][0];
    assert_eq!(first["objectives"], serde_json::json!(["penalised"]));
    let units: Vec<(&str, &str)> = first["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["unit"].as_str().unwrap()))
        .collect();
    assert_eq!(
        units,
        [("time", "ms"), ("gflops", "GFLOP/s"), ("penalised", "")]
    );

    // `show` gives one result's metrics with their units, computed with the last run's formulas.
    let shown = json(&[
        "show",
        "--db",
        db,
        "--kernel",
        "work",
        "--config",
        "WG=8,SLOW=16",
        "--json",
    ]);
    let metrics = shown[0]["metrics"].as_array().unwrap();
    let names: Vec<(&str, Option<&str>)> = metrics
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["unit"].as_str()))
        .collect();
    assert_eq!(names, [("gflops", Some("GFLOP/s")), ("penalised", None)]);
    let ms = shown[0]["score_ms"].as_f64().unwrap();
    let gflops = metrics[0]["value"].as_f64().unwrap();
    assert!((gflops - 2.0 * 65536.0 / ms / 1e6).abs() <= 1e-12 * gflops);
    assert_eq!(
        metrics[1]["value"].as_f64().unwrap(),
        gflops,
        "SLOW = 16 is not penalised"
    );

    // A metric the command line gets wrong says which and where.
    let err = fails(&["tune", &spec, "--db", db, "--metric", "x=2 * N / tiem"]);
    assert!(
        err.contains("--metric/--objective: metric `x`: unknown name `tiem`"),
        "{err}"
    );
    let err = fails(&["tune", &spec, "--db", db, "--objective", "gflops"]);
    assert!(
        err.contains("say `gflops:max`") && err.contains("--maximize"),
        "{err}"
    );
}

#[test]
fn without_a_power_source_the_campaign_goes_on_and_energy_metrics_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let db = dir.path().join("e.db");
    let db = db.to_str().unwrap();
    // PoCL's CPU device is no NVIDIA GPU: no energy, and the campaign measures all the same.
    let tuned = json(&["tune", &spec, "--db", db, "--json"]);
    let energy = &tuned["devices"][0]["energy"];
    assert_eq!(
        (energy["available"].as_bool(), energy["measured"].as_bool()),
        (Some(false), Some(false))
    );
    let why = energy["detail"].as_str().unwrap();
    assert!(
        why.starts_with("energy and power are not available on this device: ")
            && why.contains("is not an NVIDIA GPU"),
        "{why}"
    );
    let out = ndtune().args(["tune", &spec, "--db", db]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  energy     energy and power are not available on this device"),
        "{text}"
    );

    // A metric on the power, or the energy as the objective: refused, nothing measured.
    let fresh = dir.path().join("fresh.db");
    let fresh = fresh.to_str().unwrap();
    let err = fails(&[
        "tune",
        &spec,
        "--db",
        fresh,
        "--metric",
        "gflops_per_w=gflops / power_w",
    ]);
    assert!(
        err.contains("energy and power are not available on this device")
            && err.contains("the metric `gflops_per_w` needs them; nothing was measured"),
        "{err}"
    );
    let err = fails(&["tune", &spec, "--db", fresh, "--objective", "energy_j"]);
    assert!(err.contains("the metric `energy_j` needs them"), "{err}");
    assert_eq!(records(Path::new(fresh)), 0);
}
