//! `ndtune export`: one recorded campaign (selected by kernel, device, constants and setup) as a
//! Kernel Tuner cache or as T4 results JSON, each configuration with its metric values (computed
//! now from its measurements, with the definitions the campaign was last tuned with and those of
//! the command line) and the objective.

use crate::cli::ExportArgs;
use crate::select::{select, Criteria};
use anyhow::{anyhow, Result};
use ndtune_metrics::{Definitions, Inputs, Metrics};
use ndtune_store::kt::{self, KtHeader, MetricValues, T4Metrics};
use std::collections::{BTreeMap, BTreeSet};

pub fn run(args: &ExportArgs) -> Result<()> {
    let store = args.store.open_read_only()?;
    let c = &args.campaign;
    let criteria = Criteria {
        kernel: c.kernel.as_deref(),
        device: c.device.as_deref(),
        constants: c.constants.single().map_err(anyhow::Error::msg)?,
        setup: c.setup.as_deref(),
    };
    let (group, device_name, records) = select(&store, store.path(), &criteria)?;
    let mut values: BTreeMap<String, BTreeSet<ndtune_core::Value>> = BTreeMap::new();
    for r in &records {
        for (k, v) in &r.key.config {
            values.entry(k.clone()).or_default().insert(v.clone());
        }
    }
    let names: Vec<String> = values.keys().cloned().collect();
    let objective = args.metrics.objective().map_err(|e| anyhow!(e))?;
    let defs = store
        .metrics(&group)?
        .unwrap_or_default()
        .with(args.metrics.metrics.clone(), objective);
    let configs = records.iter().map(|r| &r.key.config);
    let metrics = Metrics::check_recorded(defs, names.clone(), configs, &group.constants, &[])
        .map_err(|e| anyhow!("export: {e}"))?;
    let metric_values: MetricValues = records
        .iter()
        .filter_map(|r| {
            let shown = metrics
                .evaluate(&Inputs::new(&group.constants, &r.key.config, &r.outcome))
                .shown();
            (!shown.is_empty()).then(|| (r.key.config.clone(), shown))
        })
        .collect();
    let Definitions {
        metrics: defined,
        objective,
    } = metrics.definitions().clone();
    match args.format.as_str() {
        "kt" => {
            let header = KtHeader {
                device_name: device_name.clone(),
                kernel_name: group.kernel.clone(),
                problem_size: serde_json::json!(group.constants),
                tune_params_keys: names,
                tune_params: values
                    .into_iter()
                    .map(|(k, v)| (k, v.into_iter().collect()))
                    .collect(),
                objective: objective.metric.clone(),
                objective_higher_is_better: Some(objective.higher_is_better),
                metrics: defined,
            };
            kt::write_kt_cache(&args.out, &header, &records, &metric_values)?;
        }
        _ => {
            let units: BTreeMap<String, String> = metric_values
                .values()
                .flat_map(BTreeMap::keys)
                .filter_map(|n| Some((n.clone(), metrics.unit(n)?.to_string())))
                .collect();
            let t4 = T4Metrics {
                objective: &objective.metric,
                values: &metric_values,
                units: &units,
            };
            kt::write_t4(&args.out, &records, t4)?;
        }
    }
    eprintln!(
        "wrote {} records of `{}` on {device_name} to {} (objective {})",
        records.len(),
        group.kernel,
        args.out.display(),
        metrics.describe_objective()
    );
    Ok(())
}
