//! What `ndtune collect` keeps in a results store, read back as the oracle analysis's input: each
//! scenario's [`ScenarioInfo`] (the `scenarios` table) and one [`Observation`] per size of its
//! grid, from the store's outcomes (`WG_C` x `WG_R`); a size of the grid that was never run
//! (beyond W_max or the device's limits) is [`Status::Illegal`].

use crate::oracle::{Observation, Status};
use ndtune_core::Outcome;
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
    for (i, (g, info, records, _)) in newest.into_iter().enumerate() {
        let info: ScenarioInfo = serde_json::from_value(info).map_err(|e| StoreError::Corrupt {
            path: store.path().to_path_buf(),
            detail: format!("a scenario this ndtune cannot read: {e}"),
        })?;
        let records: BTreeMap<(u64, u64), Outcome> = records
            .into_iter()
            .filter_map(|r| {
                let c = r.key.config.get("WG_C")?.as_int()?;
                let w = r.key.config.get("WG_R")?.as_int()?;
                Some(((c as u64, w as u64), r.outcome))
            })
            .collect();
        for &wc in &info.wc {
            for &wr in &info.wr {
                let (status, runtime_ms) = match records.get(&(wc, wr)) {
                    None => (Status::Illegal, None),
                    Some(Outcome::Measured(t)) => (Status::Measured, Some(t.score_ms())),
                    Some(o) => (Status::from(o.kind()), None),
                };
                out.observations.push(Observation {
                    scenario: i,
                    wg: (wc, wr),
                    status,
                    runtime_ms,
                });
            }
        }
        out.scenarios.push((g, info));
    }
    Ok(out)
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
        let times: Vec<Option<f64>> = c.observations.iter().map(|o| o.runtime_ms).collect();
        assert_eq!(times, [Some(3.0), Some(4.0)]);
    }
}
