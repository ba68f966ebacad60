//! Kernel Tuner caches and T4 files: a real cache from the benchmark hub, round trips, refusals.

use ndtune_core::Value;
use ndtune_core::{Config, Outcome, OutcomeKind, Timing};
use ndtune_store::kt::{
    parse_kt_cache, read_kt_cache, write_kt_cache, write_t4, KtCache, KtError, KtHeader,
    MetricValues, T4Metrics,
};
use ndtune_store::{Record, ResultKey};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A real Kernel Tuner cache (convolution on an A100, 4362 configurations).
fn a100_cache() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/kt-benchmark-hub/cachefiles/convolution_milo/A100.json.gz");
    assert!(
        path.is_file(),
        "missing test data {}: the shared/ data folder must sit beside the repository",
        path.display()
    );
    path
}

fn config(pairs: &[(&str, i64)]) -> Config {
    pairs
        .iter()
        .map(|&(k, v)| (k.to_string(), v.into()))
        .collect()
}

fn kind_counts(cache: &KtCache) -> BTreeMap<OutcomeKind, usize> {
    let mut counts = BTreeMap::new();
    for outcome in cache.entries.values() {
        *counts.entry(outcome.kind()).or_default() += 1;
    }
    counts
}

#[test]
fn reads_a_real_kernel_tuner_cache() {
    let cache = read_kt_cache(&a100_cache()).unwrap();
    let h = &cache.header;
    assert_eq!(h.device_name, "NVIDIA A100-PCIE-40GB");
    assert_eq!(h.kernel_name, "convolution_kernel");
    assert_eq!(h.problem_size, serde_json::json!([4096, 4096]));
    assert_eq!(h.tune_params_keys.len(), 10);
    assert_eq!(h.tune_params_keys[0], "block_size_x");
    assert_eq!(
        h.tune_params["block_size_x"],
        (1..=16).map(|i| i * 16).collect::<Vec<_>>()
    );
    assert_eq!(h.tune_params["block_size_y"], [1, 2, 4, 8, 16]);

    assert_eq!(cache.entries.len(), 4362);
    let expected = BTreeMap::from([
        (OutcomeKind::Measured, 4201),
        (OutcomeKind::BuildFailed, 6),
        (OutcomeKind::Refused, 155),
    ]);
    assert_eq!(kind_counts(&cache), expected);

    // "16,1,1,1,0,0,0,1,15,15": time 3.8753279224038124, the mean of its 32 runs.
    let first = config(&[
        ("block_size_x", 16),
        ("block_size_y", 1),
        ("tile_size_x", 1),
        ("tile_size_y", 1),
        ("read_only", 0),
        ("use_padding", 0),
        ("use_shmem", 0),
        ("use_cmem", 1),
        ("filter_height", 15),
        ("filter_width", 15),
    ]);
    let Outcome::Measured(t) = &cache.entries[&first] else {
        panic!("{:?}", cache.entries[&first])
    };
    assert_eq!((t.times_ms.len(), t.best_of), (32, 32));
    assert_eq!(t.times_ms[0], 3.976191997528076);
    // Its metric, as Kernel Tuner recorded it; the objective, as the header names it.
    assert_eq!(
        cache.metrics[&first],
        BTreeMap::from([("GFLOP/s".to_string(), 1948.1569950129526)])
    );
    assert_eq!(cache.metrics.len(), 4201, "every measured configuration");
    assert_eq!(
        (h.objective.as_str(), h.objective_higher_is_better),
        ("time", None)
    );
    assert!(
        (t.score_ms() - 3.8753279224038124).abs() < 1e-12,
        "{}",
        t.score_ms()
    );

    // "32,16,2,4,1,0,0,1,15,15" failed at run time.
    let mut failed = first.clone();
    for (k, v) in [
        ("block_size_x", 32),
        ("block_size_y", 16),
        ("tile_size_x", 2),
    ] {
        failed.insert(k.into(), v.into());
    }
    failed.insert("tile_size_y".into(), 4.into());
    failed.insert("read_only".into(), 1.into());
    assert_eq!(cache.entries[&failed].kind(), OutcomeKind::Refused);

    let best = cache
        .entries
        .iter()
        .filter_map(|(c, o)| Some((o.score_ms()?, c)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap();
    assert!((best.0 - 0.5536000076681376).abs() < 1e-12);
    assert_eq!(
        (&best.1["block_size_x"], &best.1["block_size_y"]),
        (&32.into(), &4.into())
    );
}

fn records_of(cache: &KtCache) -> Vec<Record> {
    cache
        .entries
        .iter()
        .enumerate()
        .map(|(i, (config, outcome))| Record {
            key: ResultKey {
                device: "a100a100a100a100".into(),
                kernel: cache.header.kernel_name.clone(),
                source_hash: "0000000000000000".into(),
                setup: "0000000000000000".into(),
                constants: BTreeMap::new(),
                config: config.clone(),
            },
            outcome: outcome.clone(),
            ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
            started_at: 1_703_238_845_000 + i as i64,
            finished_at: 1_703_238_845_502 + i as i64,
        })
        .collect()
}

#[test]
fn a_written_cache_reads_back_the_same() {
    let cache = read_kt_cache(&a100_cache()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("A100.json");
    write_kt_cache(&out, &cache.header, &records_of(&cache), &cache.metrics).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.ends_with("}\n}"),
        "Kernel Tuner tells a closed cache by its end"
    );
    assert!(text.contains(r#""16,1,1,1,0,0,0,1,15,15":{"block_size_x":16,"block_size_y":1,"#));
    assert!(text.contains(r#""GFLOP/s":1948.1569950129526,"ndtune_outcome""#));
    assert_eq!(read_kt_cache(&out).unwrap(), cache);

    // Kernel Tuner reopens a cache for appending by cutting its last "}\n}" and adding ",".
    let open = dir.path().join("open.json");
    std::fs::write(&open, format!("{},", &text[..text.len() - 3])).unwrap();
    assert_eq!(read_kt_cache(&open).unwrap(), cache);
}

#[test]
fn outcomes_kernel_tuner_lacks_round_trip_too() {
    let header = KtHeader {
        device_name: "pocl-cpu".into(),
        kernel_name: "gemm".into(),
        problem_size: serde_json::json!(1024),
        tune_params_keys: vec!["TX".into(), "A".into()],
        tune_params: BTreeMap::from([
            ("TX".into(), ints(&[1, 2, 4, 8])),
            ("A".into(), ints(&[-1, 0])),
        ]),
        objective: "time".into(),
        objective_higher_is_better: None,
        more_objectives: Vec::new(),
        metrics: vec![],
    };
    let outcomes = [
        Outcome::Measured(Timing::new(vec![3.0, 1.0, 2.0], 1)),
        Outcome::Pruned {
            constraint: "TX * A < 2".into(),
        },
        Outcome::BuildFailed {
            log: "error".into(),
        },
        Outcome::Refused {
            error: "CL_OUT_OF_RESOURCES".into(),
        },
        Outcome::WrongResult {
            detail: "C[0]".into(),
        },
        Outcome::Crashed {
            detail: "signal 6".into(),
        },
        Outcome::TimedOut { seconds: 2.0 },
    ];
    let cache = KtCache {
        header: header.clone(),
        entries: outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| {
                (
                    config(&[("TX", 1 << (i % 4)), ("A", -((i / 4) as i64))]),
                    o.clone(),
                )
            })
            .collect(),
        metrics: MetricValues::new(),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gemm.json");
    write_kt_cache(&out, &header, &records_of(&cache), &cache.metrics).unwrap();
    assert_eq!(read_kt_cache(&out).unwrap(), cache);

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["schema_version"], "1.1.0");
    assert_eq!(json["tune_params_keys"], serde_json::json!(["TX", "A"]));
    let entry = &json["cache"]["1,0"];
    assert_eq!(entry["time"], 2.0);
    assert_eq!(entry["times"], serde_json::json!([3.0, 1.0, 2.0]));
    let stamp = entry["timestamp"].as_str().unwrap();
    assert!(
        stamp.starts_with("2023-12-22 09:54:05.50") && stamp.ends_with("000+00:00"),
        "{stamp}"
    );
    assert_eq!(json["cache"]["2,0"]["time"], "InvalidConfig");
    assert_eq!(json["cache"]["4,0"]["time"], "CompilationFailedConfig");
    assert_eq!(json["cache"]["8,0"]["time"], "RuntimeFailedConfig");
    assert_eq!(json["cache"]["1,-1"]["time"], "RuntimeFailedConfig");
}

#[test]
fn writing_refuses_configurations_that_do_not_match_the_parameters() {
    let cache = KtCache {
        header: KtHeader {
            device_name: "d".into(),
            kernel_name: "k".into(),
            problem_size: serde_json::json!("callable"),
            tune_params_keys: vec!["X".into()],
            tune_params: BTreeMap::from([("X".into(), ints(&[1]))]),
            objective: "time".into(),
            objective_higher_is_better: None,
            more_objectives: Vec::new(),
            metrics: vec![],
        },
        entries: BTreeMap::from([(
            config(&[("X", 1), ("Y", 2)]),
            Outcome::TimedOut { seconds: 1.0 },
        )]),
        metrics: MetricValues::new(),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.json");
    let none = MetricValues::new();
    let err = write_kt_cache(&out, &cache.header, &records_of(&cache), &none).unwrap_err();
    assert!(err.to_string().contains(r#"{"X":1,"Y":2}"#), "{err}");
    let err = write_kt_cache(&out, &cache.header, &[], &none).unwrap_err();
    assert!(err.to_string().contains("no records"), "{err}");
    let clash = MetricValues::from([(
        config(&[("X", 1)]),
        BTreeMap::from([("compile_time".to_string(), 1.0)]),
    )]);
    let one = KtCache {
        entries: BTreeMap::from([(config(&[("X", 1)]), Outcome::TimedOut { seconds: 1.0 })]),
        ..cache
    };
    let err = write_kt_cache(&out, &one.header, &records_of(&one), &clash).unwrap_err();
    assert!(
        err.to_string()
            .contains("metric `compile_time` has the name of a field"),
        "{err}"
    );
}

fn small_cache(values: &str) -> String {
    format!(
        r#"{{"device_name": "d", "kernel_name": "k", "problem_size": 8,
            "tune_params_keys": ["x"], "tune_params": {{"x": {values}}}, "objective": "time",
            "cache": {{"1": {{"x": 1, "time": 1.5}}, "2": {{"x": 2.0, "time": "InvalidConfig"}}}}}}"#
    )
}

#[test]
fn parameters_keep_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    std::fs::write(&path, small_cache("[1, 2.0]")).unwrap();
    let cache = read_kt_cache(&path).unwrap();
    // Python writes an integer as 2 and a float as 2.0: a real stays a real.
    assert_eq!(
        cache.header.tune_params["x"],
        [Value::Int(1), Value::Real(2.0)]
    );
    assert_eq!(
        cache.entries[&config(&[("x", 1)])],
        Outcome::Measured(Timing::new(vec![1.5], 1))
    );
    let two: ndtune_core::Config = [("x".to_string(), Value::Real(2.0))].into();
    assert_eq!(cache.entries[&two].kind(), OutcomeKind::Pruned);

    std::fs::write(
        &path,
        small_cache(r#"["float", "half"]"#)
            .replace(r#""x": 1,"#, r#""x": "float","#)
            .replace(r#""x": 2.0,"#, r#""x": "half","#),
    )
    .unwrap();
    let cache = read_kt_cache(&path).unwrap();
    assert_eq!(
        cache.header.tune_params["x"],
        [Value::from("float"), Value::from("half")]
    );

    for bad in [r#"[null]"#, r#"[[1]]"#, r#"[{}]"#] {
        std::fs::write(&path, small_cache(bad)).unwrap();
        let err = read_kt_cache(&path).unwrap_err();
        assert!(
            matches!(err, KtError::BadValue { ref param, .. } if param == "x"),
            "{err}"
        );
        assert!(err.to_string().contains("c.json"), "{err}");
    }

    std::fs::write(&path, "device_name = 'd'").unwrap();
    let err = read_kt_cache(&path).unwrap_err();
    assert!(
        err.to_string().contains("not a Kernel Tuner cache file"),
        "{err}"
    );
}

#[test]
fn t4_results_hold_every_record_with_its_validity() {
    let outcomes = [
        Outcome::Measured(Timing::new(vec![4.0, 1.0, 2.0, 3.0], 2)),
        Outcome::Pruned {
            constraint: "c".into(),
        },
        Outcome::BuildFailed { log: "l".into() },
        Outcome::Refused { error: "e".into() },
        Outcome::WrongResult { detail: "d".into() },
        Outcome::Crashed { detail: "d".into() },
        Outcome::TimedOut { seconds: 1.0 },
    ];
    let cache = KtCache {
        header: KtHeader {
            device_name: "d".into(),
            kernel_name: "k".into(),
            problem_size: serde_json::Value::Null,
            tune_params_keys: vec!["X".into()],
            tune_params: BTreeMap::new(),
            objective: "time".into(),
            objective_higher_is_better: None,
            more_objectives: Vec::new(),
            metrics: vec![],
        },
        entries: outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| (config(&[("X", i as i64)]), o.clone()))
            .collect(),
        metrics: MetricValues::new(),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t4.json");
    let values = MetricValues::from([
        (
            config(&[("X", 0)]),
            BTreeMap::from([("gflops".to_string(), 8.0)]),
        ),
        (
            config(&[("X", 1)]),
            BTreeMap::from([("gflops".to_string(), 9.0)]),
        ),
    ]);
    let units = BTreeMap::from([("gflops".to_string(), "GFLOP/s".to_string())]);
    let metrics = T4Metrics {
        objectives: &["gflops"],
        values: &values,
        units: &units,
    };
    write_t4(&out, &records_of(&cache), metrics).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["schema_version"], "1.0.0");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 7);
    for r in results {
        for field in [
            "timestamp",
            "configuration",
            "objectives",
            "times",
            "invalidity",
            "correctness",
            "measurements",
        ] {
            assert!(r.get(field).is_some(), "{field} missing in {r}");
        }
    }
    let invalidity: Vec<&str> = results
        .iter()
        .map(|r| r["invalidity"].as_str().unwrap())
        .collect();
    assert_eq!(
        invalidity,
        [
            "correct",
            "constraints",
            "compile",
            "runtime",
            "correctness",
            "runtime",
            "timeout"
        ]
    );
    let measured = &results[0];
    assert_eq!(measured["configuration"], serde_json::json!({"X": 0}));
    assert_eq!(measured["objectives"], serde_json::json!(["gflops"]));
    assert_eq!(
        measured["times"]["runtimes"],
        serde_json::json!([4.0, 1.0, 2.0, 3.0])
    );
    assert_eq!(
        measured["measurements"],
        serde_json::json!([{"name": "time", "value": 1.5, "unit": "ms"},
            {"name": "gflops", "value": 8.0, "unit": "GFLOP/s"}])
    );
    assert_eq!(measured["correctness"], 1);
    assert_eq!(results[4]["correctness"], 0);
    assert_eq!(
        results[1]["measurements"],
        serde_json::json!([]),
        "no value without a measurement"
    );
    assert_eq!(results[1]["times"]["runtimes"], serde_json::json!([]));
}

fn ints(v: &[i64]) -> Vec<ndtune_core::Value> {
    v.iter().map(|&x| x.into()).collect()
}

#[test]
fn metrics_and_the_objective_travel_with_the_cache() {
    let header = KtHeader {
        device_name: "pocl-cpu".into(),
        kernel_name: "gemm".into(),
        problem_size: serde_json::json!({"N": 64}),
        tune_params_keys: vec!["TX".into()],
        tune_params: BTreeMap::from([("TX".into(), ints(&[1, 2]))]),
        objective: "gflops".into(),
        objective_higher_is_better: Some(true),
        more_objectives: Vec::new(),
        metrics: vec![ndtune_metrics::MetricDef::new(
            "gflops",
            "2 * N**3 / time / 1e6",
            Some("GFLOP/s"),
        )],
    };
    let cache = KtCache {
        header: header.clone(),
        entries: BTreeMap::from([
            (
                config(&[("TX", 1)]),
                Outcome::Measured(Timing::new(vec![2.0], 1)),
            ),
            (
                config(&[("TX", 2)]),
                Outcome::Refused { error: "-5".into() },
            ),
        ]),
        metrics: MetricValues::from([(
            config(&[("TX", 1)]),
            BTreeMap::from([("gflops".to_string(), 0.262144)]),
        )]),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gemm.json");
    write_kt_cache(&out, &header, &records_of(&cache), &cache.metrics).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["objective"], "gflops");
    assert_eq!(json["objective_higher_is_better"], true);
    assert_eq!(json["cache"]["1"]["gflops"], 0.262144);
    assert!(json["cache"]["2"].get("gflops").is_none());
    assert_eq!(read_kt_cache(&out).unwrap(), cache);
}

/// A cache as Kernel Tuner 1.4+ writes one for several objectives: the objective a list, a
/// failure marked `"__error__"` (its other fields as they come), an open end.
#[test]
fn reads_kernel_tuner_caches_of_several_objectives_and_failures_marked_error() {
    let text = r#"{
"device_name": "NVIDIA H100",
"kernel_name": "vector_add",
"problem_size": 1000000,
"tune_params_keys": ["block_size_x"],
"tune_params": {"block_size_x": [64, 128, 256]},
"objective": ["time", "nvml_energy"],
"cache": {
"64": {"block_size_x": 64, "time": 0.5, "times": [0.5, 0.5], "nvml_energy": 0.2},
"128": {"block_size_x": 128, "__error__": "CompilationFailedConfig", "time": 1e20},
"256": {"block_size_x": 256, "__error__": "RuntimeFailedConfig"},"#;
    let cache = parse_kt_cache(text.as_bytes(), Path::new("several.json")).unwrap();
    let h = &cache.header;
    assert_eq!(
        (h.objective.as_str(), h.objective_higher_is_better),
        ("time", None)
    );
    assert_eq!(h.more_objectives, vec![("nvml_energy".to_string(), None)]);
    let kinds: Vec<OutcomeKind> = [64, 128, 256]
        .iter()
        .map(|b| cache.entries[&config(&[("block_size_x", *b)])].kind())
        .collect();
    assert_eq!(
        kinds,
        [
            OutcomeKind::Measured,
            OutcomeKind::BuildFailed,
            OutcomeKind::Refused
        ]
    );
    assert_eq!(
        cache.metrics[&config(&[("block_size_x", 64)])]["nvml_energy"],
        0.2
    );
    // The lists must agree.
    let mismatched = text.replace(
        r#""objective": ["time", "nvml_energy"],"#,
        r#""objective": ["time", "nvml_energy"], "objective_higher_is_better": [false],"#,
    );
    let e = parse_kt_cache(mismatched.as_bytes(), Path::new("several.json")).unwrap_err();
    assert!(e.to_string().contains("2 objectives but 1 values"), "{e}");
    // An unknown error name is named.
    let unknown = text.replace("RuntimeFailedConfig", "SomethingElse");
    let e = parse_kt_cache(unknown.as_bytes(), Path::new("several.json")).unwrap_err();
    assert!(
        e.to_string().contains("unknown error \"SomethingElse\""),
        "{e}"
    );
}
