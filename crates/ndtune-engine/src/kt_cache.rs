//! A campaign continued from a Kernel Tuner cache file and written back to it, as Kernel Tuner's
//! `cache=` does (the Python package's `tune_kernel(..., cache=PATH)`): before the campaign, the
//! cache's entries that the store does not hold yet become the campaign's records, so they are
//! reused and not measured again (a cache of another kernel, device or parameter space is
//! refused, as Kernel Tuner refuses it); after it, the campaign's records are written to the
//! cache, with the spec's metrics.

use crate::request::RequestError;
use ndtune_backend::AnyDevice;
use ndtune_core::Value as ParamValue;
use ndtune_core::{Config, Outcome};
use ndtune_metrics::Inputs;
use ndtune_spec::Spec;
use ndtune_store::kt::{read_kt_cache, write_kt_cache, KtHeader, MetricValues};
use ndtune_store::{Group, Record, ResultKey, Store};
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

/// The cache file and what its header says of the campaign, as the caller describes it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct KtCache {
    pub path: PathBuf,
    pub kernel_name: String,
    /// As Kernel Tuner writes it: an integer, a list of integers, or a string.
    pub problem_size: Json,
    pub tune_params_keys: Vec<String>,
    pub tune_params: BTreeMap<String, Vec<ParamValue>>,
}

impl KtCache {
    /// The header this campaign's cache has on `device`, with the spec's metrics and objective.
    fn header(&self, device: &AnyDevice, spec: &Spec) -> KtHeader {
        KtHeader {
            device_name: device.profile().name.clone(),
            kernel_name: self.kernel_name.clone(),
            problem_size: self.problem_size.clone(),
            tune_params_keys: self.tune_params_keys.clone(),
            tune_params: self.tune_params.clone(),
            objective: spec.metrics.objective().metric.clone(),
            objective_higher_is_better: Some(spec.metrics.objective().higher_is_better),
            more_objectives: spec
                .metrics
                .definitions()
                .more_objectives
                .iter()
                .map(|o| (o.metric.clone(), Some(o.higher_is_better)))
                .collect(),
            metrics: spec.metrics.definitions().metrics.clone(),
        }
    }

    /// Makes the cache's entries that the store lacks the campaign `group`'s records.
    pub(crate) fn continue_from(
        &self,
        device: &AnyDevice,
        spec: &Spec,
        store: &Store,
        group: &Group,
    ) -> Result<(), RequestError> {
        let path = &self.path;
        if !path.exists() {
            return Ok(());
        }
        let header = self.header(device, spec);
        let cache = read_kt_cache(path)?;
        for (what, theirs, ours) in [
            (
                "kernel_name",
                &cache.header.kernel_name,
                &header.kernel_name,
            ),
            (
                "device_name",
                &cache.header.device_name,
                &header.device_name,
            ),
        ] {
            if theirs != ours {
                return Err(RequestError::Cache(format!(
                    "{}: the cache's {what} is `{theirs}`, this call's `{ours}`: give another cache file",
                    path.display()
                )));
            }
        }
        if cache.header.tune_params != header.tune_params
            || cache.header.tune_params_keys != header.tune_params_keys
        {
            return Err(RequestError::Cache(format!(
                "{}: the cache's tune_params differ from this call's: give another cache file",
                path.display()
            )));
        }
        let known: HashSet<Config> = store
            .records(group)?
            .into_iter()
            .map(|r| r.key.config)
            .collect();
        let now = ndtune_store::now_ms();
        for (config, outcome) in cache.entries {
            // A cache entry of a configuration this spec prunes carries no measurement.
            if known.contains(&config) || matches!(outcome, Outcome::Pruned { .. }) {
                continue;
            }
            store.insert(&Record {
                key: ResultKey::new(group, config),
                outcome,
                ndtune_version: format!("Kernel Tuner cache {}", path.display()),
                started_at: now,
                finished_at: now,
            })?;
        }
        Ok(())
    }

    /// Writes the campaign `group`'s records to the cache, each with its metrics' values.
    pub(crate) fn write(
        &self,
        device: &AnyDevice,
        spec: &Spec,
        store: &Store,
        group: &Group,
    ) -> Result<(), RequestError> {
        let records = store.records(group)?;
        if records.is_empty() {
            return Ok(());
        }
        let metrics: MetricValues = records
            .iter()
            .filter_map(|r| {
                let shown = spec
                    .metrics
                    .evaluate(&Inputs::new(&group.constants, &r.key.config, &r.outcome))
                    .shown();
                (!shown.is_empty()).then(|| (r.key.config.clone(), shown))
            })
            .collect();
        write_kt_cache(&self.path, &self.header(device, spec), &records, &metrics)?;
        Ok(())
    }
}
