//! What `ndtune collect` keeps in a results store, read back as the oracle analysis's input: each
//! scenario's [`ScenarioInfo`] (the `scenarios` table) and one [`Observation`] per size of its
//! grid, from the store's outcomes (`WG_C` x `WG_R`); a size of the grid that was never run
//! (beyond W_max or the device's limits) is [`Status::Illegal`]. A measured size's cost is its
//! run time, or the cost of the objective the collection named ([`Objective::cost`]), computed
//! from the metrics the store keeps with the scenario's results.

use crate::oracle::{Observation, Status};
use ndtune_core::Outcome;
use ndtune_metrics::{Inputs, Metrics, Objective};
use ndtune_store::{Group, Record, Store, StoreError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the store keeps of a scenario (the `scenarios` table's `info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    /// `kernel ROWSxCOLS @ device`.
    pub label: String,
    pub kernel: String,
    /// The device's label (`ndtune devices`).
    pub device: String,
    /// `ROWSxCOLS`.
    pub dataset: String,
    /// The grid's work-group columns and rows.
    pub wc: Vec<u64>,
    pub wr: Vec<u64>,
    pub wmax: u64,
    pub feature_names: Vec<String>,
    pub features: Vec<f64>,
}

/// Every collected scenario of a store.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// Scenario `i` of the observations, with the store's group of its results.
    pub scenarios: Vec<(Group, ScenarioInfo)>,
    pub observations: Vec<Observation>,
    /// What every scenario was collected for: what the observations' costs are.
    pub objective: Objective,
}

/// Reads every recorded scenario of `store` and its observations on the grid. A scenario
/// collected again under another setup (another measurement protocol or seed, or first by an
/// ndtune that kept no setups) is read from its newest campaign only: earlier campaigns are
/// never merged with it.
pub fn read(store: &Store) -> Result<Collected, StoreError> {
    // The newest campaign of each (device, kernel, constants), with its records.
    let mut newest: Vec<(Group, serde_json::Value, Vec<Record>, i64)> = Vec::new();
    for (g, info) in store.scenarios()? {
        let records = store.records(&g)?;
        let last = records
            .iter()
            .map(|r| r.finished_at)
            .max()
            .unwrap_or(i64::MIN);
        match newest.iter_mut().find(|(other, ..)| other.same_problem(&g)) {
            Some(seen) if seen.3 >= last => {}
            Some(seen) => *seen = (g, info, records, last),
            None => newest.push((g, info, records, last)),
        }
    }
    let mut out = Collected::default();
    let corrupt = |detail: String| StoreError::Corrupt {
        path: store.path().to_path_buf(),
        detail,
    };
    for (i, (g, info, records, _)) in newest.into_iter().enumerate() {
        let info: ScenarioInfo = serde_json::from_value(info)
            .map_err(|e| corrupt(format!("a scenario this ndtune cannot read: {e}")))?;
        let defs = store.metrics(&g)?.unwrap_or_default();
        if i > 0 && defs.objective != out.objective {
            return Err(StoreError::Unreadable {
                path: store.path().to_path_buf(),
                reason: format!(
                    "scenario `{}` was collected for the objective `{}`, `{}` for `{}`: a collection ranks every scenario by one objective; collect each in a store of its own",
                    out.scenarios[0].1.label,
                    out.objective.metric,
                    info.label,
                    defs.objective.metric
                ),
            });
        }
        out.objective = defs.objective.clone();
        let configs: Vec<_> = records.iter().map(|r| &r.key.config).collect();
        let metrics = Metrics::check_recorded(
            defs,
            vec!["WG_C".into(), "WG_R".into()],
            configs,
            &g.constants,
            &[],
        )
        .map_err(|e| corrupt(format!("scenario `{}`: {e}", info.label)))?;
        let records: BTreeMap<(u64, u64), (&ndtune_core::Config, &Outcome)> = records
            .iter()
            .filter_map(|r| {
                let c = r.key.config.get("WG_C")?.as_int()?;
                let w = r.key.config.get("WG_R")?.as_int()?;
                Some(((c as u64, w as u64), (&r.key.config, &r.outcome)))
            })
            .collect();
        for &wc in &info.wc {
            for &wr in &info.wr {
                let (status, cost) = match records.get(&(wc, wr)) {
                    None => (Status::Illegal, None),
                    Some((config, outcome @ Outcome::Measured(_))) => {
                        let cost = metrics.cost(&Inputs::new(&g.constants, config, outcome));
                        // A measured size whose objective has no value (a division by zero, a
                        // missing energy reading) cannot be ranked, and is no failure either.
                        let cost = cost.ok_or_else(|| StoreError::Unreadable {
                            path: store.path().to_path_buf(),
                            reason: format!(
                                "scenario `{}`, size {wc}x{wr}: the objective `{}` has no positive value for it; change the collection's metrics",
                                info.label, out.objective.metric
                            ),
                        })?;
                        (Status::Measured, Some(cost))
                    }
                    Some((_, o)) => (Status::from(o.kind()), None),
                };
                out.observations.push(Observation {
                    scenario: i,
                    wg: (wc, wr),
                    status,
                    cost,
                });
            }
        }
        out.scenarios.push((g, info));
    }
    Ok(out)
}

/// One device's part of a collection: its scenarios, the sizes tried (not illegal) and those of
/// them the driver refused.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeviceTally {
    pub scenarios: usize,
    pub tried: usize,
    pub refused: usize,
}

impl DeviceTally {
    /// The share of the sizes tried that were refused.
    pub fn refused_ratio(&self) -> f64 {
        self.refused as f64 / self.tried.max(1) as f64
    }
}

/// Each device's [`DeviceTally`] over `scenarios` and their observations, by device.
pub fn per_device<'a>(
    scenarios: &'a [ScenarioInfo],
    observations: &[crate::oracle::Observation],
) -> std::collections::BTreeMap<&'a str, DeviceTally> {
    use crate::oracle::Status;
    let mut tally: std::collections::BTreeMap<&str, DeviceTally> = Default::default();
    for (i, info) in scenarios.iter().enumerate() {
        let t = tally.entry(&info.device).or_default();
        t.scenarios += 1;
        for o in observations.iter().filter(|o| o.scenario == i) {
            t.tried += usize::from(o.status != Status::Illegal);
            t.refused += usize::from(o.status == Status::Refused);
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_core::Timing;
    use ndtune_store::{Record, ResultKey};

    #[test]
    fn a_scenario_collected_again_under_another_setup_is_read_from_the_newest_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.db")).unwrap();
        let info = serde_json::json!({"label": "gol 8x8", "kernel": "gol", "device": "0",
            "dataset": "8x8", "wc": [2], "wr": [2], "wmax": 8, "feature_names": [],
            "features": []});
        let scenario = |setup: &str, source: &str| Group {
            device: "d".into(),
            kernel: "stencil".into(),
            source_hash: source.into(),
            setup: setup.into(),
            constants: ndtune_core::int_config([("ROWS", 8)]),
        };
        // The same stencil measured under two setups, and another stencil of the same name.
        for (g, ms, at) in [
            (scenario("old", "gol"), 5.0, 10),
            (scenario("new", "gol"), 3.0, 20),
            (scenario("new", "heat"), 4.0, 5),
        ] {
            store.put_scenario(&g, &info).unwrap();
            let config = ndtune_core::int_config([("WG_C", 2), ("WG_R", 2)]);
            store
                .insert(&Record {
                    key: ResultKey::new(&g, config),
                    outcome: Outcome::Measured(Timing::new(vec![ms], 1)),
                    ndtune_version: "0".into(),
                    started_at: at,
                    finished_at: at,
                })
                .unwrap();
        }
        let c = read(&store).unwrap();
        let read: Vec<(&str, &str)> = c
            .scenarios
            .iter()
            .map(|(g, _)| (g.source_hash.as_str(), g.setup.as_str()))
            .collect();
        assert_eq!(read, [("gol", "new"), ("heat", "new")]);
        let times: Vec<Option<f64>> = c.observations.iter().map(|o| o.cost).collect();
        assert_eq!(times, [Some(3.0), Some(4.0)]);
    }

    #[test]
    fn each_device_counts_its_scenarios_and_the_sizes_tried_and_refused() {
        use crate::oracle::Status;
        let info = |device: &str| ScenarioInfo {
            label: format!("gol 8x8 @ {device}"),
            kernel: "gol".into(),
            device: device.into(),
            dataset: "8x8".into(),
            wc: vec![2],
            wr: vec![2],
            wmax: 8,
            feature_names: vec![],
            features: vec![],
        };
        let scenarios = [info("a"), info("b"), info("a")];
        let seen = |scenario, status| Observation {
            scenario,
            wg: (2, 2),
            status,
            cost: None,
        };
        let obs = [
            seen(0, Status::Refused),
            seen(0, Status::Illegal),
            seen(1, Status::Measured),
            seen(2, Status::Refused),
            seen(2, Status::Measured),
        ];
        let tally = per_device(&scenarios, &obs);
        let a = tally["a"];
        assert_eq!((a.scenarios, a.tried, a.refused), (2, 3, 2));
        assert!((a.refused_ratio() - 2.0 / 3.0).abs() < 1e-12);
        let b = tally["b"];
        assert_eq!((b.scenarios, b.tried, b.refused), (1, 1, 0));
    }
}
