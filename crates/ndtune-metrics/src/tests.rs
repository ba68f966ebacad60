use super::*;
use ndtune_core::{int_config, Coding, Energy, Timing};
use std::sync::Arc;

fn scope() -> Scope {
    let mut s = Scope::ints(&["TS", "V"], &[("N", 1000)]);
    s.params.push("TYPE".into());
    s.codings = vec![
        Coding::Int,
        Coding::Int,
        Coding::Table(Arc::from(vec![Value::from("float"), Value::from("half")])),
    ];
    s
}

fn defs(metrics: &[(&str, &str)], objective: &str, higher: bool) -> Definitions {
    Definitions {
        metrics: metrics
            .iter()
            .map(|(n, e)| MetricDef::new(n, e, None))
            .collect(),
        objective: Objective {
            metric: objective.into(),
            higher_is_better: higher,
        },
        more_objectives: Vec::new(),
    }
}

fn measured(ms: f64, energy: Option<(f64, f64)>) -> Outcome {
    let mut t = Timing::new(vec![ms], 1);
    t.energy = energy.map(|(joules, watts)| {
        Box::new(Energy {
            joules,
            watts,
            runs: 10,
            window_ms: 100.0,
            samples: 20,
            source: "test".into(),
            lead_in_ms: Some(100.0),
            temperature_c: None,
            core_clock_mhz: None,
            mem_clock_mhz: None,
        })
    });
    Outcome::Measured(t)
}

fn config(ts: i64, ty: &str) -> Config {
    let mut c = int_config([("TS", ts), ("V", 2)]);
    c.insert("TYPE".into(), Value::from(ty));
    c
}

#[test]
fn metrics_are_real_expressions_of_the_measurements_constants_parameters_and_earlier_metrics() {
    let m = Metrics::check(
        defs(
            &[
                ("gflops", "2 * N * N * N / time / 1e6"),
                ("half", "1 / 2"),
                ("per_lane", "gflops / V / (TYPE == 'half' ? 2 : 1)"),
            ],
            "per_lane",
            true,
        ),
        &scope(),
        &[],
    )
    .unwrap();
    let constants = int_config([("N", 1000)]);
    let outcome = measured(4.0, None);
    let c = config(16, "half");
    let v = m.evaluate(&Inputs::new(&constants, &c, &outcome));
    assert_eq!(v.get("gflops"), Some(500.0));
    assert_eq!(v.get("half"), Some(0.5), "`/` divides exactly");
    assert_eq!(v.get("per_lane"), Some(125.0));
    assert_eq!(v.get("time"), Some(4.0));
    assert_eq!(v.objective, Some(125.0));
    assert_eq!(
        m.cost(&Inputs::new(&constants, &c, &outcome)),
        Some(1.0 / 125.0)
    );
    assert!(m.needing_energy().is_empty());
    // A failure has no values at all.
    let refused = Outcome::Refused {
        error: "-54".into(),
    };
    let v = m.evaluate(&Inputs::new(&constants, &c, &refused));
    assert_eq!((v.get("gflops"), v.objective), (None, None));
}

#[test]
fn energy_and_power_are_metrics_where_they_were_measured() {
    let m = Metrics::check(
        defs(
            &[
                ("gflops", "2 * N**3 / time / 1e6"),
                ("gflops_per_w", "gflops / power_w"),
            ],
            "energy_j",
            false,
        ),
        &scope(),
        &[],
    )
    .unwrap();
    assert_eq!(m.needing_energy(), ["gflops_per_w", "energy_j"]);
    assert_eq!(m.label("energy_j"), "energy_j (J)");
    assert_eq!(m.describe_objective(), "energy_j (J), lower is better");
    let constants = int_config([("N", 1000)]);
    let c = config(8, "float");
    let with = measured(2.0, Some((0.5, 250.0)));
    let v = m.evaluate(&Inputs::new(&constants, &c, &with));
    assert_eq!(v.get("gflops_per_w"), Some(4.0));
    assert_eq!(v.objective, Some(0.5));
    assert_eq!(
        v.shown().into_iter().collect::<Vec<_>>(),
        [
            ("energy_j".to_string(), 0.5),
            ("gflops".to_string(), 1000.0),
            ("gflops_per_w".to_string(), 4.0),
            ("power_w".to_string(), 250.0)
        ]
    );
    // Without a power source the energy metrics have no value, the others do.
    let without = measured(2.0, None);
    let v = m.evaluate(&Inputs::new(&constants, &c, &without));
    assert_eq!(
        (v.get("gflops"), v.get("gflops_per_w")),
        (Some(1000.0), None)
    );
    assert_eq!(m.cost(&Inputs::new(&constants, &c, &without)), None);
    assert_eq!(m.power_source_quantities(), ["energy_j", "power_w"]);
}

#[test]
fn the_sensors_read_over_the_energy_window_are_metrics_where_the_gpu_reads_them() {
    let m = Metrics::check(
        defs(
            &[
                ("warm", "temperature_c - 40"),
                ("ghz", "core_clock_mhz / 1000"),
            ],
            "time",
            false,
        ),
        &scope(),
        &[],
    )
    .unwrap();
    assert_eq!(m.needing_energy(), ["warm", "ghz"]);
    assert_eq!(
        m.power_source_quantities(),
        ["temperature_c", "core_clock_mhz"]
    );
    assert_eq!(m.label("mem_clock_mhz"), "mem_clock_mhz (MHz)");
    let constants = int_config([("N", 1000)]);
    let c = config(8, "float");
    let Outcome::Measured(mut t) = measured(2.0, Some((0.5, 250.0))) else {
        unreachable!()
    };
    // A GPU that reads the temperature and the core clock, not the memory clock.
    let energy = t.energy.as_mut().unwrap();
    energy.temperature_c = Some(61.5);
    energy.core_clock_mhz = Some(1980.0);
    let read = Outcome::Measured(t);
    let v = m.evaluate(&Inputs::new(&constants, &c, &read));
    assert_eq!((v.get("warm"), v.get("ghz")), (Some(21.5), Some(1.98)));
    assert_eq!(v.get("temperature_c"), Some(61.5));
    assert_eq!(v.get("mem_clock_mhz"), None);
    assert!(!v.shown().contains_key("mem_clock_mhz"));
    // A timing from before the sensors were read: the energy is there, the sensors are not.
    let v = m.evaluate(&Inputs::new(
        &constants,
        &c,
        &measured(2.0, Some((0.5, 250.0))),
    ));
    assert_eq!((v.get("warm"), v.get("ghz")), (None, None));
    assert_eq!(Objective::default_direction("temperature_c"), Some(false));
    assert_eq!(Objective::default_direction("core_clock_mhz"), None);
}

#[test]
fn bad_definitions_say_what_and_where() {
    let err = |metrics: &[(&str, &str)], objective: &str| {
        Metrics::check(defs(metrics, objective, true), &scope(), &[])
            .unwrap_err()
            .to_string()
    };
    let e = err(&[("gflops", "2 * N / tiem")], "gflops");
    assert!(
        e.starts_with("metric `gflops`: unknown name `tiem` (column 9)"),
        "{e}"
    );
    assert!(
        e.contains("did you mean `time`?") || e.contains("a metric uses the measured time"),
        "{e}"
    );
    let e = err(&[("a", "1"), ("b", "nothing + 1")], "a");
    assert!(e.contains("metric `b`: unknown name `nothing`"), "{e}");
    assert!(e.contains("the metrics defined before it (a)"), "{e}");
    assert!(err(&[("a", "1"), ("a", "2")], "a").contains("metric `a`: is defined twice"));
    assert!(err(&[("TS", "1")], "TS").contains("metric `TS`: `TS` is a parameter"));
    assert!(err(&[("N", "1")], "N").contains("`N` is a constant"));
    assert!(err(&[("time", "1")], "time").contains("`time` is measured"));
    assert!(err(&[("x", "TYPE + 1")], "x").contains("takes identifiers"));
    assert!(err(&[("x", "2 * (N")], "x").starts_with("metric `x`: "));
    let e = err(&[("gflops", "1 / time")], "gflop");
    assert_eq!(
        e,
        "objective `gflop`: is no metric; the metrics are: time, energy_j, power_w, temperature_c, core_clock_mhz, mem_clock_mhz, gflops"
    );
    // A measured quantity's name taken by a parameter is ambiguous in a metric.
    let mut s = scope();
    s.params.push("time".into());
    let e = Metrics::check(defs(&[("x", "1 / time")], "x", true), &s, &[]).unwrap_err();
    assert!(e.to_string().contains("cannot tell them apart"), "{e}");
}

#[test]
fn recorded_values_can_be_the_objective_and_feed_metrics() {
    let recorded = vec!["GFLOP/s".to_string(), "nvml_power".to_string()];
    let m = Metrics::check(
        defs(&[("per_watt", "nvml_power / 2")], "GFLOP/s", true),
        &scope(),
        &recorded,
    )
    .unwrap();
    let values: BTreeMap<String, f64> = [
        ("GFLOP/s".to_string(), 400.0),
        ("nvml_power".to_string(), 100.0),
    ]
    .into();
    let constants = int_config([("N", 1000)]);
    let c = config(8, "float");
    let outcome = measured(1.0, None);
    let inputs = Inputs::new(&constants, &c, &outcome).recorded(Some(&values));
    let v = m.evaluate(&inputs);
    assert_eq!((v.objective, v.get("per_watt")), (Some(400.0), Some(50.0)));
}

#[test]
fn costs_are_positive_and_lower_is_better_either_way() {
    let max = Objective {
        metric: "gflops".into(),
        higher_is_better: true,
    };
    assert_eq!(max.cost(4.0), Some(0.25));
    assert!(max.better(5.0, 4.0));
    assert_eq!(Objective::time().cost(4.0), Some(4.0));
    assert!(Objective::time().better(3.0, 4.0));
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(max.cost(bad), None);
        assert_eq!(Objective::time().cost(bad), None);
    }
    assert_eq!(Objective::default_direction("energy_j"), Some(false));
    assert_eq!(Objective::default_direction("gflops"), None);
    assert!(Metrics::time().is_time());
}

#[test]
fn definitions_merge_with_those_of_the_command_line() {
    let spec = defs(&[("a", "1"), ("b", "2")], "time", false);
    let merged = spec.with(
        vec![
            MetricDef::new("b", "3", Some("x")),
            MetricDef::new("c", "4", None),
        ],
        vec![Objective {
            metric: "c".into(),
            higher_is_better: true,
        }],
    );
    let names: Vec<(&str, &str)> = merged
        .metrics
        .iter()
        .map(|m| (m.name.as_str(), m.expr.as_str()))
        .collect();
    assert_eq!(names, [("a", "1"), ("b", "3"), ("c", "4")]);
    assert_eq!(merged.objective.metric, "c");
    let json = serde_json::to_string(&merged).unwrap();
    assert_eq!(serde_json::from_str::<Definitions>(&json).unwrap(), merged);
}

#[test]
fn several_objectives_give_a_cost_each_and_are_checked_alike() {
    let scope = Scope::ints(&["X"], &[("N", 10)]);
    let o = |metric: &str, higher_is_better: bool| Objective {
        metric: metric.into(),
        higher_is_better,
    };
    let two = defs(&[("rate", "N * X / time")], "time", false).with(
        Vec::new(),
        vec![o("time", false), o("rate", true), o("energy_j", false)],
    );
    let metrics = Metrics::check(two.clone(), &scope, &[]).unwrap();
    assert!(metrics.several() && !metrics.is_time());
    assert_eq!(metrics.objectives().len(), 3);
    assert_eq!(metrics.needing_energy(), vec!["energy_j"]);
    assert_eq!(
        metrics.describe_objective(),
        "time (ms), lower is better; rate, higher is better; energy_j (J), lower is better"
    );
    let constants = ndtune_core::int_config([("N", 10)]);
    let config = ndtune_core::int_config([("X", 4)]);
    // Without the energy, one objective has no value: no costs.
    let no_energy = measured(2.0, None);
    assert_eq!(
        metrics.costs(&Inputs::new(&constants, &config, &no_energy)),
        None
    );
    let with_energy = measured(2.0, Some((0.5, 250.0)));
    let inputs = Inputs::new(&constants, &config, &with_energy);
    // time 2 ms; rate 10 * 4 / 2 = 20, higher is better: cost 1/20; energy 0.5 J.
    assert_eq!(metrics.costs(&inputs), Some(vec![2.0, 0.05, 0.5]));
    assert_eq!(
        metrics.evaluate(&inputs).objectives,
        vec![Some(2.0), Some(20.0), Some(0.5)]
    );
    // Each objective must be defined, and once.
    let unknown = two
        .clone()
        .with(Vec::new(), vec![o("time", false), o("nope", true)]);
    let e = Metrics::check(unknown, &scope, &[]).unwrap_err();
    assert_eq!((e.place, e.name.as_str()), (Place::Objective, "nope"));
    let twice = two.with(Vec::new(), vec![o("time", false), o("time", true)]);
    assert!(Metrics::check(twice, &scope, &[])
        .unwrap_err()
        .to_string()
        .contains("is an objective twice"));
    // Definitions stored before several objectives existed read as one.
    let old: Definitions = serde_json::from_str(
        r#"{"metrics":[],"objective":{"metric":"time","higher_is_better":false}}"#,
    )
    .unwrap();
    assert_eq!(old, Definitions::default());
}

#[test]
fn objective_lists_read_as_people_write_them() {
    let list = Objective::parse_list("time, gflops:max ,energy_j:min").unwrap();
    let names: Vec<(&str, bool)> = list
        .iter()
        .map(|o| (o.metric.as_str(), o.higher_is_better))
        .collect();
    assert_eq!(
        names,
        [("time", false), ("gflops", true), ("energy_j", false)]
    );
    assert!(Objective::parse_list("gflops")
        .unwrap_err()
        .contains("say `gflops:max`"));
    assert!(Objective::parse_list("time:up")
        .unwrap_err()
        .contains("no direction"));
    assert_eq!(Objective::time().oriented(3.0), 3.0);
    let gflops = &Objective::parse_list("gflops:max").unwrap()[0];
    assert_eq!(gflops.oriented(3.0), -3.0);
}

#[test]
fn a_metric_reads_as_people_write_it_on_a_command_line() {
    let m = MetricDef::parse_assignment("gflops[GFLOP/s] = 2 * N**3 / time / 1e6").unwrap();
    assert_eq!(
        m,
        MetricDef::new("gflops", "2 * N**3 / time / 1e6", Some("GFLOP/s"))
    );
    assert_eq!(
        MetricDef::parse_assignment("e=energy_j").unwrap().unit,
        None
    );
    assert!(MetricDef::parse_assignment("gflops")
        .unwrap_err()
        .contains("NAME=EXPR"));
    for bad in [
        "z[GFLOP/s=time",
        "z]=time",
        "2x=time",
        "a b=time",
        "z[a[b]]=time",
    ] {
        assert!(
            MetricDef::parse_assignment(bad)
                .unwrap_err()
                .contains("is not NAME or NAME[UNIT]"),
            "{bad}"
        );
    }
}
