//! Stored results as a reader sees them (`ndtune show`, Python's `ndtune.Store.results()`): each
//! campaign with its device's name, and each result with every metric's value, computed now from
//! the measurement with the definitions of the campaign's last run.

use crate::Error;
use ndtune_core::Constants;
use ndtune_metrics::{Inputs, Metrics};
use ndtune_store::{Group, Record, Store};
use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

/// One campaign as the store holds it.
pub struct Campaign {
    pub group: Group,
    /// The name of the device's profile (empty where the store lacks the profile).
    pub device_name: String,
    pub records: Vec<Record>,
}

impl Campaign {
    /// Its metrics and objective, as its last run defined them ([`crate::model::campaign_metrics`]).
    pub fn metrics(&self, store: &Store) -> Result<Metrics, Error> {
        crate::model::campaign_metrics(store, &self.group, &self.records)
    }
}

/// Every campaign in `store`, with its records.
pub fn campaigns(store: &Store) -> Result<Vec<Campaign>, Error> {
    let devices: BTreeMap<String, String> = store
        .devices()?
        .into_iter()
        .map(|(fingerprint, profile)| (fingerprint, profile.name))
        .collect();
    store
        .groups()?
        .into_iter()
        .map(|group| {
            Ok(Campaign {
                device_name: devices.get(&group.device).cloned().unwrap_or_default(),
                records: store.records(&group)?,
                group,
            })
        })
        .collect()
}

/// A metric's value for one result, with its unit where known.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// The measured energy and power and every metric with a value for `r`, by `metrics`.
pub fn metric_values(metrics: &Metrics, constants: &Constants, r: &Record) -> Vec<Metric> {
    metrics
        .evaluate(&Inputs::new(constants, &r.key.config, &r.outcome))
        .shown()
        .into_iter()
        .map(|(name, value)| Metric {
            unit: metrics.unit(&name).map(str::to_string),
            name,
            value,
        })
        .collect()
}

/// The indices of `records` on the Pareto front of `metrics`' objectives, best by the first
/// objective first; empty with one objective.
pub fn front(metrics: &Metrics, constants: &Constants, records: &[Record]) -> Vec<usize> {
    if !metrics.several() {
        return Vec::new();
    }
    let (index, points): (Vec<usize>, Vec<Vec<f64>>) = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let values = metrics.evaluate(&Inputs::new(constants, &r.key.config, &r.outcome));
            Some((i, metrics.objective_values(&values)?))
        })
        .unzip();
    metrics
        .front(&points)
        .into_iter()
        .map(|i| index[i])
        .collect()
}

/// A time as RFC 3339 in UTC, to the millisecond.
pub fn when(ms: ndtune_store::UnixMs) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(t).to_string()
}

/// One result as JSON (`ndtune show --json`): its campaign, configuration, whole outcome, score,
/// metrics, and when and by which ndtune it was evaluated.
pub fn json(device_name: &str, r: &Record, metrics: &[Metric]) -> serde_json::Value {
    serde_json::json!({
        "kernel": r.key.kernel,
        "device": device_name,
        "device_fingerprint": r.key.device,
        "source_hash": r.key.source_hash,
        "constants": r.key.constants,
        "config": r.key.config,
        "outcome": r.outcome,
        "score_ms": r.outcome.score_ms(),
        "metrics": metrics,
        "ndtune_version": r.ndtune_version,
        "started_at": when(r.started_at),
        "finished_at": when(r.finished_at),
    })
}

/// A campaign's Pareto front, as `ndtune status` counts it: its objectives and how many
/// configurations are on it.
#[derive(Debug, serde::Serialize)]
pub struct FrontSize {
    pub objectives: Vec<String>,
    pub size: usize,
}

/// One campaign as `ndtune status` shows it: its device's name, its progress per worker, the
/// newest campaign of the same problem it is earlier than (and what differs), its front.
pub struct StatusRow {
    pub device_name: Option<String>,
    pub status: ndtune_store::CampaignStatus,
    pub earlier: Option<(Group, Vec<String>)>,
    pub front: Option<FrontSize>,
}

/// The store's campaigns of `kernel` (every kernel's without) whose constants hold `wanted`:
/// each problem's newest campaign first, then its earlier ones, latest first.
pub fn status_rows(
    store: &Store,
    kernel: Option<&str>,
    wanted: &Constants,
) -> Result<Vec<StatusRow>, Error> {
    let mut rows = Vec::new();
    for group in store.campaigns()? {
        if kernel.is_some_and(|k| k != group.kernel)
            || wanted
                .iter()
                .any(|(k, v)| group.constants.get(k) != Some(v))
        {
            continue;
        }
        rows.push(StatusRow {
            device_name: store.device(&group.device)?.map(|p| p.name),
            status: store.campaign_status(&group)?,
            earlier: store.newest_other(&group)?,
            front: front_size(store, &group)?,
        });
    }
    rows.sort_by_key(|r| {
        let g = &r.status.group;
        (
            (
                g.device.clone(),
                g.kernel.clone(),
                g.source_hash.clone(),
                g.constants.clone(),
            ),
            r.earlier.is_some(),
            std::cmp::Reverse(r.status.last_result),
        )
    });
    Ok(rows)
}

/// The front of `group`'s stored results, where its objectives are several.
fn front_size(store: &Store, group: &Group) -> Result<Option<FrontSize>, Error> {
    let campaign = Campaign {
        group: group.clone(),
        device_name: String::new(),
        records: store.records(group)?,
    };
    // Status tells progress: a campaign whose definitions cannot be read (`ndtune show` says
    // why) is shown without its front rather than stopping the table.
    let Ok(metrics) = campaign.metrics(store) else {
        return Ok(None);
    };
    if !metrics.several() {
        return Ok(None);
    }
    let on = front(&metrics, &group.constants, &campaign.records);
    Ok(Some(FrontSize {
        objectives: metrics
            .objectives()
            .iter()
            .map(|o| o.metric.clone())
            .collect(),
        size: on.len(),
    }))
}

/// What selects the stored results `ndtune show` prints.
#[derive(Default)]
pub struct Selection {
    pub kernel: Option<String>,
    /// A spec's source hash and constants, where a spec was given.
    pub source: Option<(String, Constants)>,
    /// A part of the device's name.
    pub device: Option<String>,
    /// The campaigns of these values.
    pub constants: Constants,
    /// The results of these parameter values.
    pub config: ndtune_core::Config,
    /// Only the configurations on each campaign's Pareto front (several objectives).
    pub front: bool,
}

/// A result selected: its device's name, the record, its metrics computed now.
pub type Shown = (String, Record, Vec<Metric>);

/// What [`select`] found: the results selected, and every campaign of the store (its group,
/// device name and how many results), to say what it holds where nothing matched.
pub struct Selected {
    pub shown: Vec<Shown>,
    pub held: Vec<(Group, String, usize)>,
}

impl Selection {
    fn group(&self, g: &Group, device_name: &str) -> bool {
        self.kernel.as_ref().is_none_or(|k| &g.kernel == k)
            && self
                .constants
                .iter()
                .all(|(k, v)| g.constants.get(k) == Some(v))
            && self
                .source
                .as_ref()
                .is_none_or(|(hash, constants)| &g.source_hash == hash && &g.constants == constants)
            && self
                .device
                .as_ref()
                .is_none_or(|d| device_name.to_lowercase().contains(&d.to_lowercase()))
    }

    fn record(&self, r: &Record) -> bool {
        self.config
            .iter()
            .all(|(k, v)| r.key.config.get(k) == Some(v))
    }
}

/// The stored results `selection` selects, each with its metrics; with `front`, of each
/// campaign only those on its Pareto front (a campaign of one objective is an error).
pub fn select(store: &Store, selection: &Selection) -> Result<Selected, Error> {
    let mut shown = Vec::new();
    let mut held = Vec::new();
    for campaign in campaigns(store)? {
        held.push((
            campaign.group.clone(),
            campaign.device_name.clone(),
            campaign.records.len(),
        ));
        if !selection.group(&campaign.group, &campaign.device_name) {
            continue;
        }
        let metrics = campaign.metrics(store)?;
        let Campaign {
            group: g,
            device_name,
            mut records,
        } = campaign;
        if selection.front {
            if !metrics.several() {
                return Err(Error::Select(format!(
                    "--front: `{}` on {device_name} (setup {}) was tuned for one objective ({}); a front needs several (`ndtune tune --objective time,power_w`)",
                    g.kernel,
                    g.setup,
                    metrics.objective().metric
                )));
            }
            let on = front(&metrics, &g.constants, &records);
            let mut all: Vec<Option<Record>> = records.into_iter().map(Some).collect();
            records = on.into_iter().filter_map(|i| all[i].take()).collect();
        }
        shown.extend(
            records
                .into_iter()
                .filter(|r| selection.record(r))
                .map(|r| {
                    let values = metric_values(&metrics, &g.constants, &r);
                    (device_name.clone(), r, values)
                }),
        );
    }
    Ok(Selected { shown, held })
}
