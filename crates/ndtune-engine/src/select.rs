//! Selecting one recorded campaign of a store (`export`, `tune --replay`): by kernel, device,
//! constants and setup. Where several match, the error lists them and names the options that
//! tell them apart.

use ndtune_core::text::show_constants;
use ndtune_store::{Group, Record, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Why no one campaign was selected.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// None matches, or several do: the message says which and how to tell them apart.
    #[error("{0}")]
    NotOne(String),
}

/// What the command line asks for; `None` and empty maps match anything.
pub struct Criteria<'a> {
    pub kernel: Option<&'a str>,
    /// Part of the device name, case-insensitive.
    pub device: Option<&'a str>,
    /// Constants with these values (others may have any).
    pub constants: ndtune_core::Constants,
    /// The start of the setup's digest.
    pub setup: Option<&'a str>,
}

/// The one campaign of `store` that `criteria` select, with its device's name and records.
pub fn select(
    store: &Store,
    path: &Path,
    criteria: &Criteria,
) -> Result<(Group, String, Vec<Record>), SelectError> {
    let devices: BTreeMap<String, String> = store
        .devices()?
        .into_iter()
        .map(|(fp, p)| (fp, p.name))
        .collect();
    let device_name = |fp: &str| devices.get(fp).cloned().unwrap_or_else(|| fp.to_string());
    let groups: Vec<Group> = store
        .groups()?
        .into_iter()
        .filter(|g| criteria.kernel.is_none_or(|k| g.kernel == k))
        .filter(|g| {
            criteria.device.is_none_or(|d| {
                device_name(&g.device)
                    .to_lowercase()
                    .contains(&d.to_lowercase())
            })
        })
        .filter(|g| {
            criteria
                .constants
                .iter()
                .all(|(k, v)| g.constants.get(k) == Some(v))
        })
        .filter(|g| criteria.setup.is_none_or(|s| g.setup.starts_with(s)))
        .collect();
    match groups.as_slice() {
        [one] => Ok((one.clone(), device_name(&one.device), store.records(one)?)),
        [] => {
            let mut asked = Vec::new();
            if let Some(k) = criteria.kernel {
                asked.push(format!("kernel `{k}`"));
            }
            if let Some(d) = criteria.device {
                asked.push(format!("device `{d}`"));
            }
            if !criteria.constants.is_empty() {
                asked.push(format!("constants{}", show_constants(&criteria.constants)));
            }
            if let Some(s) = criteria.setup {
                asked.push(format!("setup {s}"));
            }
            match (asked.is_empty(), store.groups()?.is_empty()) {
                (_, true) => Err(SelectError::NotOne(format!(
                    "{}: the store holds no campaign yet: `ndtune tune SPEC --db {0}` records one",
                    path.display()
                ))),
                (true, false) => unreachable!("with no criteria every campaign matches"),
                (false, false) => Err(SelectError::NotOne(format!(
                    "{}: no recorded campaign matches {}; `ndtune status --db {0}` lists them",
                    path.display(),
                    asked.join(", ")
                ))),
            }
        }
        many => {
            let mut lines = Vec::new();
            for g in many {
                let status = store.campaign_status(g)?;
                let newest = match store.newest_other(g)? {
                    None if many.iter().any(|o| o != g && o.same_problem(g)) => " (newest)",
                    _ => "",
                };
                lines.push(format!(
                    "  `{}` on {}{}, setup {}{newest}: {} results",
                    g.kernel,
                    device_name(&g.device),
                    show_constants(&g.constants),
                    g.setup,
                    status.results
                ));
            }
            Err(SelectError::NotOne(format!(
                "{}: {} recorded campaigns match; {} tells them apart:\n{}",
                path.display(),
                many.len(),
                apart(many),
                lines.join("\n")
            )))
        }
    }
}

/// The options that tell `groups` apart, e.g. `--set N=VALUE or --setup DIGEST`.
fn apart(groups: &[Group]) -> String {
    let differ =
        |f: &dyn Fn(&Group) -> String| groups.iter().map(f).collect::<BTreeSet<String>>().len() > 1;
    let mut options = Vec::new();
    if differ(&|g| g.kernel.clone()) {
        options.push("--kernel NAME".to_string());
    }
    if differ(&|g| g.device.clone()) {
        options.push("--device SEL".to_string());
    }
    let names: BTreeSet<&String> = groups.iter().flat_map(|g| g.constants.keys()).collect();
    for name in names {
        if differ(&|g| format!("{:?}", g.constants.get(name))) {
            options.push(format!("--set {name}=VALUE"));
        }
    }
    if differ(&|g| format!("{} {}", g.setup, g.source_hash)) {
        options.push("--setup DIGEST".to_string());
    }
    options.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(kernel: &str, n: i64, setup: &str) -> Group {
        Group {
            device: "d".into(),
            kernel: kernel.into(),
            source_hash: "h".into(),
            setup: setup.into(),
            constants: ndtune_core::int_config([("N", n), ("M", 1)]),
        }
    }

    #[test]
    fn the_options_that_tell_campaigns_apart_are_named() {
        let (a, b) = ("aaaa", "bbbb");
        assert_eq!(
            apart(&[group("k", 1, a), group("k", 2, a)]),
            "--set N=VALUE"
        );
        assert_eq!(
            apart(&[group("k", 1, a), group("k", 1, b)]),
            "--setup DIGEST"
        );
        assert_eq!(
            apart(&[group("k", 1, a), group("j", 2, b)]),
            "--kernel NAME or --set N=VALUE or --setup DIGEST"
        );
    }
}

/// The formats of one recorded campaign written out ([`export`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// A Kernel Tuner cache.
    Kt,
    /// Kernel Tuner's T4 results JSON.
    T4,
}

/// What [`export`] wrote: how many records of which kernel, on which device, ranked by what.
pub struct Exported {
    pub records: usize,
    pub kernel: String,
    pub device_name: String,
    pub objective: String,
}

/// Why a campaign could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Select(#[from] SelectError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("export: {0}")]
    Metrics(String),
    #[error(transparent)]
    Write(#[from] ndtune_store::kt::KtError),
}

/// Writes the campaign of `store` that `criteria` select to `out` as `format`: each
/// configuration with its metric values (computed now from its measurement, with the
/// definitions it was last tuned with and `metrics` and `objectives` added) and the objective.
pub fn export(
    store: &Store,
    criteria: &Criteria,
    metrics: Vec<ndtune_metrics::MetricDef>,
    objectives: Vec<ndtune_metrics::Objective>,
    format: ExportFormat,
    out: &Path,
) -> Result<Exported, ExportError> {
    use ndtune_metrics::{Definitions, Inputs, Metrics};
    use ndtune_store::kt::{self, KtHeader, MetricValues, T4Metrics};
    let (group, device_name, records) = select(store, store.path(), criteria)?;
    let mut values: BTreeMap<String, BTreeSet<ndtune_core::Value>> = BTreeMap::new();
    for r in &records {
        for (k, v) in &r.key.config {
            values.entry(k.clone()).or_default().insert(v.clone());
        }
    }
    let names: Vec<String> = values.keys().cloned().collect();
    let defs = store
        .metrics(&group)?
        .unwrap_or_default()
        .with(metrics, objectives);
    let configs = records.iter().map(|r| &r.key.config);
    let metrics = Metrics::check_recorded(defs, names.clone(), configs, &group.constants, &[])
        .map_err(|e| ExportError::Metrics(e.to_string()))?;
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
        more_objectives,
    } = metrics.definitions().clone();
    match format {
        ExportFormat::Kt => {
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
                more_objectives: more_objectives
                    .iter()
                    .map(|o| (o.metric.clone(), Some(o.higher_is_better)))
                    .collect(),
                metrics: defined,
            };
            kt::write_kt_cache(out, &header, &records, &metric_values)?;
        }
        ExportFormat::T4 => {
            let units: BTreeMap<String, String> = metric_values
                .values()
                .flat_map(BTreeMap::keys)
                .filter_map(|n| Some((n.clone(), metrics.unit(n)?.to_string())))
                .collect();
            let objectives: Vec<&str> = std::iter::once(&objective)
                .chain(&more_objectives)
                .map(|o| o.metric.as_str())
                .collect();
            let t4 = T4Metrics {
                objectives: &objectives,
                values: &metric_values,
                units: &units,
            };
            kt::write_t4(out, &records, t4)?;
        }
    }
    Ok(Exported {
        records: records.len(),
        kernel: group.kernel,
        device_name,
        objective: metrics.describe_objective(),
    })
}
