//! What `ndtune collect` keeps in a results store, read back as the oracle analysis's input: each
//! scenario's [`ScenarioInfo`] (the `scenarios` table) and one [`Observation`] per size of its
//! grid, from the store's outcomes (`WG_C` x `WG_R`); a size of the grid that was never run
//! (beyond W_max or the device's limits) is [`Status::Illegal`].

use crate::oracle::{Observation, Status};
use ndtune_core::Outcome;
use ndtune_store::{Group, Store, StoreError};
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

/// Reads every recorded scenario of `store` and its observations on the grid.
pub fn read(store: &Store) -> Result<Collected, StoreError> {
    let mut out = Collected::default();
    for (i, (g, info)) in store.scenarios()?.into_iter().enumerate() {
        let info: ScenarioInfo = serde_json::from_value(info).map_err(|e| StoreError::Corrupt {
            path: store.path().to_path_buf(),
            detail: format!("a scenario this ndtune cannot read: {e}"),
        })?;
        let records: BTreeMap<(u64, u64), Outcome> = store
            .records(&g.device, &g.kernel, &g.source_hash, &g.constants)?
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
