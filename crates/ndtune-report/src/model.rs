//! What a report shows, read from a store into plain structs ([`Report::read`]): per device the
//! pruned spaces that were tuned and each campaign's evaluations in the order run, with its best,
//! median and worst configuration by the campaign's objective (its metrics computed now from the
//! measurements, with the definitions of its last run); the collected work-group scenarios with
//! the oracle analysis; the co-execution and learning studies. A kernel tuned again with the same
//! constants on the same device under another setup (a changed source, build options, arguments,
//! verification or measurement) is a campaign of its own: the earlier ones are shown as such,
//! with what differs from the newest, never merged with it.

use crate::Error;
use ndtune_core::{Config, OutcomeKind};
use ndtune_learn::collected::{self, ScenarioInfo};
use ndtune_learn::oracle::{analyse, Analysis, Observation, Status, Wg};
use ndtune_metrics::{Inputs, Metrics, Objective};
use ndtune_store::{Store, UnixMs};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The most work-group heatmaps a report draws; beyond it, those with the largest spread.
pub const MAX_HEATMAPS: usize = 12;

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct Report {
    pub store: PathBuf,
    pub devices: Vec<DeviceSection>,
    /// Collected work-group scenarios (`ndtune collect`), if any.
    pub collection: Option<Collection>,
    /// Co-execution studies (`ndtune split`).
    pub splits: Vec<Named<ndtune_split::study::Report>>,
    /// Learning evaluations (`ndtune learn eval --db`).
    pub learning: Vec<Named<ndtune_learn::eval::Report>>,
}

/// A study's body with its name and time.
#[derive(Debug, Clone)]
pub struct Named<T> {
    pub name: String,
    pub created_at: UnixMs,
    pub body: T,
}

/// One device of the store.
#[derive(Debug, Clone)]
pub struct DeviceSection {
    pub fingerprint: String,
    pub name: String,
    pub compute_units: u64,
    /// Pruned spaces of what was tuned on it (Erdem Tables 1-2).
    pub spaces: Vec<SpaceRow>,
    /// Every campaign on it, in the store's order.
    pub campaigns: Vec<Campaign>,
}

/// The pruning counts of one tuned (kernel, constants) on one device.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SpaceRow {
    /// The kernel, or the collected scenario's stencil and dataset.
    pub kernel: String,
    #[serde(default)]
    pub constants: ndtune_core::Constants,
    pub declared: u128,
    /// Within the device's per-dimension work-item limits (Erdem Table 1).
    pub bounded: u128,
    /// Every constraint holds (Erdem Table 2).
    pub pruned: u128,
    /// What each constraint removed, in evaluation order.
    pub constraints: Vec<Removal>,
}

/// What one constraint removed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Removal {
    pub constraint: String,
    /// `application` or `platform`.
    pub origin: String,
    pub removed: u128,
}

/// A `space` study's body: `ndtune space --json`'s report with the device and constants.
#[derive(Deserialize)]
struct SpaceStudy {
    device: String,
    constants: ndtune_core::Constants,
    space: SpaceBody,
}

#[derive(Deserialize)]
struct SpaceBody {
    kernel: String,
    declared: u128,
    bounded: u128,
    pruned: u128,
    constraints: Vec<Removal>,
}

/// One (kernel, constants) tuned on a device under one setup: what its measurements say.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The kernel, or the collected scenario's stencil and dataset.
    pub kernel: String,
    pub constants: ndtune_core::Constants,
    /// The digest of its setup.
    pub setup: String,
    /// Where the same kernel and constants were tuned on this device under another setup
    /// since: the newest campaign's setup and what differs from this one's to it.
    pub earlier: Option<Earlier>,
    /// A collected stencil scenario (`ndtune collect`), drawn as a work-group heatmap rather
    /// than as a tuning campaign.
    pub collected: bool,
    /// What the campaign optimised (the time, minimised, unless its last run said otherwise).
    pub objective: Objective,
    /// The units of the objective and of the best's metrics, where known.
    pub units: BTreeMap<String, String>,
    /// Every evaluation, in the order run (by `started_at`).
    pub evaluations: Vec<Evaluation>,
    pub outcomes: BTreeMap<OutcomeKind, usize>,
    /// The best measured configuration by the objective, and its value.
    pub best: Option<(Config, f64)>,
    /// The best configuration's energy, power and metrics, where they have values.
    pub best_metrics: BTreeMap<String, f64>,
    /// The median and the worst measured value of the objective.
    pub median: Option<f64>,
    pub worst: Option<f64>,
    /// Each evaluation a worker claimed (a campaign shared by workers, a plain `tune`'s own
    /// claims), by who evaluated it and when, in the order run.
    pub timeline: Vec<Span>,
    /// With several objectives, the measured configurations' values of each and the front.
    pub front: Option<Front>,
}

/// The objectives of a campaign of several, each measured configuration's values of them, and
/// which are on the Pareto front.
#[derive(Debug, Clone, PartialEq)]
pub struct Front {
    pub objectives: Vec<Objective>,
    /// Configurations with a value of every objective, in the order run.
    pub points: Vec<(Config, Vec<f64>)>,
    /// Indices into `points` of the front's members, best by the first objective first.
    pub members: Vec<usize>,
}

/// One evaluation on a worker's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub worker: String,
    /// Unix milliseconds, from its start to its result.
    pub start_ms: i64,
    pub end_ms: i64,
    pub outcome: OutcomeKind,
}

/// A campaign superseded by a newer one of the same kernel source, constants and device.
#[derive(Debug, Clone, PartialEq)]
pub struct Earlier {
    /// The newest campaign's setup.
    pub newest: String,
    /// What differs from this campaign's setup to the newest's (`path: old -> new`).
    pub differences: Vec<String>,
}

/// One configuration evaluated in a campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub config: Config,
    pub outcome: OutcomeKind,
    /// The objective's value (measured outcomes where it has a positive, finite one).
    pub value: Option<f64>,
}

impl Campaign {
    /// Measured (and verified) configurations.
    pub fn measured(&self) -> usize {
        self.outcomes
            .get(&OutcomeKind::Measured)
            .copied()
            .unwrap_or(0)
    }

    /// Whether the objective is the time, minimised.
    pub fn by_time(&self) -> bool {
        self.objective == Objective::time()
    }

    /// The objective with its unit: `time (ms)`, `gflops (GFLOP/s)`.
    pub fn label(&self) -> String {
        self.labelled(&self.objective.metric)
    }

    /// A metric with its unit, where known.
    pub fn labelled(&self, metric: &str) -> String {
        match self.units.get(metric) {
            Some(unit) => format!("{metric} ({unit})"),
            None => metric.to_string(),
        }
    }

    /// A value of the objective with its unit: `1.234 ms`, `1948 GFLOP/s`.
    pub fn show(&self, value: f64) -> String {
        let number = crate::document::value(value);
        match self.units.get(&self.objective.metric) {
            Some(unit) => format!("{number} {unit}"),
            None => number,
        }
    }

    /// How many times better the best is than the worst and than the median configuration
    /// (for the time: how much faster).
    pub fn speedups(&self) -> Option<(f64, f64)> {
        let o = &self.objective;
        let best = o.cost(self.best.as_ref()?.1)?;
        Some((o.cost(self.worst?)? / best, o.cost(self.median?)? / best))
    }
}

/// The collected work-group scenarios of the store (Cummins et al. 2016).
#[derive(Debug, Clone)]
pub struct Collection {
    pub scenarios: Vec<Scenario>,
    /// Scenarios drawn as heatmaps, in store order: all, or the [`MAX_HEATMAPS`] of the largest
    /// spread.
    pub shown: Vec<usize>,
    pub analysis: Analysis,
}

/// One collected scenario on its work-group grid.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub info: ScenarioInfo,
    /// Every size of the grid: status and cost (the run time, or the collection objective's).
    pub cells: BTreeMap<Wg, (Status, Option<f64>)>,
}

impl Report {
    /// Reads what a report shows from `store`.
    pub fn read(store: &Store) -> Result<Report, Error> {
        Report::read_selected(store, &BTreeMap::new())
    }

    /// Reads what a report shows from `store`, its tuning campaigns and pruned spaces only
    /// those with these values of constants (`ndtune report --set N=256`).
    pub fn read_selected(
        store: &Store,
        constants: &ndtune_core::Constants,
    ) -> Result<Report, Error> {
        let selected =
            |of: &ndtune_core::Constants| constants.iter().all(|(k, v)| of.get(k) == Some(v));
        let mut spaces: Vec<Named<SpaceStudy>> = studies(store, "space")?;
        spaces.retain(|s| selected(&s.body.constants));
        // Collected scenarios all run the stencil skeleton: name them by stencil and dataset.
        let names: BTreeMap<(String, String, ndtune_core::Constants), String> = store
            .scenarios()?
            .into_iter()
            .filter_map(|(g, info)| {
                let info: ScenarioInfo = serde_json::from_value(info).ok()?;
                Some((
                    (g.device, g.kernel, g.constants),
                    format!("{} {}", info.kernel, info.dataset),
                ))
            })
            .collect();
        let name = |device: &str, kernel: &str, constants: &ndtune_core::Constants| {
            names
                .get(&(device.to_string(), kernel.to_string(), constants.clone()))
                .cloned()
                .unwrap_or_else(|| kernel.to_string())
        };
        let mut devices = Vec::new();
        for (fingerprint, profile) in store.devices()? {
            let mine: Vec<&Named<SpaceStudy>> = spaces
                .iter()
                .filter(|s| s.body.device == fingerprint)
                .collect();
            let mut campaigns = campaigns(store, &fingerprint)?;
            campaigns.retain(|c| selected(&c.constants));
            for c in &mut campaigns {
                c.collected = names.contains_key(&(
                    fingerprint.clone(),
                    c.kernel.clone(),
                    c.constants.clone(),
                ));
                c.kernel = name(&fingerprint, &c.kernel, &c.constants);
            }
            if mine.is_empty() && campaigns.is_empty() {
                continue;
            }
            devices.push(DeviceSection {
                spaces: mine
                    .iter()
                    .map(|s| SpaceRow {
                        kernel: name(&fingerprint, &s.body.space.kernel, &s.body.constants),
                        constants: s.body.constants.clone(),
                        declared: s.body.space.declared,
                        bounded: s.body.space.bounded,
                        pruned: s.body.space.pruned,
                        constraints: s.body.space.constraints.clone(),
                    })
                    .collect(),
                campaigns,
                fingerprint,
                name: profile.name,
                compute_units: profile.compute_units,
            });
        }
        Ok(Report {
            store: store.path().to_path_buf(),
            devices,
            collection: collection(store)?,
            splits: studies(store, "split")?,
            learning: studies(store, "learn")?,
        })
    }

    /// Whether the store holds nothing a report can show.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
            && self.collection.is_none()
            && self.splits.is_empty()
            && self.learning.is_empty()
    }
}

/// Every study of `kind`, its body read as `T`.
fn studies<T: DeserializeOwned>(store: &Store, kind: &str) -> Result<Vec<Named<T>>, Error> {
    store
        .studies(Some(kind))?
        .into_iter()
        .map(|s| {
            let body = serde_json::from_value(s.body).map_err(|e| Error::Study {
                store: store.path().to_path_buf(),
                kind: kind.into(),
                name: s.name.clone(),
                detail: e.to_string(),
            })?;
            Ok(Named {
                name: s.name,
                created_at: s.created_at,
                body,
            })
        })
        .collect()
}

/// Every campaign of the store on one device; campaigns of a kernel and constants that were
/// tuned again under another setup are marked [`Earlier`] than the newest.
fn campaigns(store: &Store, device: &str) -> Result<Vec<Campaign>, Error> {
    let mut out = Vec::new();
    for g in store.groups()?.into_iter().filter(|g| g.device == device) {
        let mut records = store.records(&g)?;
        records.sort_by_key(|r| (r.started_at, r.finished_at));
        let metrics = campaign_metrics(store, &g, &records)?;
        let by = store.evaluated_by(&g)?;
        let timeline = records
            .iter()
            .filter_map(|r| {
                Some(Span {
                    worker: by.get(&ndtune_core::config_key(&r.key.config))?.clone(),
                    start_ms: r.started_at,
                    end_ms: r.finished_at,
                    outcome: r.outcome.kind(),
                })
            })
            .collect();
        let mut c = campaign(&g, records, &metrics);
        c.timeline = timeline;
        c.earlier = store
            .newest_other(&g)?
            .map(|(newest, differences)| Earlier {
                newest: newest.setup,
                differences,
            });
        out.push(c);
    }
    Ok(out)
}

/// The metrics and objective a campaign was last tuned with (the time where none were
/// recorded), checked against its parameters and constants.
pub fn campaign_metrics(
    store: &Store,
    g: &ndtune_store::Group,
    records: &[ndtune_store::Record],
) -> Result<Metrics, Error> {
    let Some(defs) = store.metrics(g)? else {
        return Ok(Metrics::time());
    };
    let names: Vec<String> = records
        .first()
        .map(|r| r.key.config.keys().cloned().collect())
        .unwrap_or_default();
    let configs = records.iter().map(|r| &r.key.config);
    Metrics::check_recorded(defs, names, configs, &g.constants, &[]).map_err(|e| Error::Study {
        store: store.path().to_path_buf(),
        kind: ndtune_store::METRICS_STUDY.into(),
        name: g.kernel.clone(),
        detail: e.to_string(),
    })
}

/// One campaign from its records, in the order run, ranked by `metrics`' objective.
fn campaign(
    g: &ndtune_store::Group,
    records: Vec<ndtune_store::Record>,
    metrics: &Metrics,
) -> Campaign {
    let objective = metrics.objective().clone();
    let mut outcomes = BTreeMap::new();
    let mut measured: Vec<(Config, f64, f64, BTreeMap<String, f64>)> = Vec::new();
    let mut evaluations = Vec::with_capacity(records.len());
    let objectives: Vec<Objective> = metrics.objectives().into_iter().cloned().collect();
    let mut several: Vec<(Config, Vec<f64>)> = Vec::new();
    for r in records {
        *outcomes.entry(r.outcome.kind()).or_insert(0) += 1;
        let values = metrics.evaluate(&Inputs::new(&g.constants, &r.key.config, &r.outcome));
        if metrics.several() {
            if let Some(all) = metrics.objective_values(&values) {
                several.push((r.key.config.clone(), all));
            }
        }
        let value = values.objective.filter(|v| objective.cost(*v).is_some());
        if let Some(v) = value {
            let cost = objective.cost(v).expect("filtered");
            measured.push((r.key.config.clone(), v, cost, values.shown()));
        }
        evaluations.push(Evaluation {
            config: r.key.config,
            outcome: r.outcome.kind(),
            value,
        });
    }
    measured.sort_by(|a, b| a.2.total_cmp(&b.2));
    let units = metrics.units();
    let front = metrics.several().then(|| {
        let values: Vec<Vec<f64>> = several.iter().map(|(_, v)| v.clone()).collect();
        Front {
            objectives: objectives.clone(),
            members: metrics.front(&values),
            points: several,
        }
    });
    Campaign {
        kernel: g.kernel.clone(),
        constants: g.constants.clone(),
        setup: g.setup.clone(),
        earlier: None,
        collected: false,
        objective,
        units,
        evaluations,
        outcomes,
        median: measured.get(measured.len() / 2).map(|m| m.1),
        worst: measured.last().map(|m| m.1),
        best_metrics: measured.first().map(|m| m.3.clone()).unwrap_or_default(),
        best: measured.into_iter().next().map(|m| (m.0, m.1)),
        timeline: Vec::new(),
        front,
    }
}

/// The collected scenarios with the oracle analysis, if the store holds any.
fn collection(store: &Store) -> Result<Option<Collection>, Error> {
    let c = collected::read(store)?;
    if c.scenarios.is_empty() {
        return Ok(None);
    }
    let analysis = analyse(c.scenarios.len(), &c.observations);
    let mut scenarios: Vec<Scenario> = c
        .scenarios
        .into_iter()
        .map(|(_, info)| Scenario {
            info,
            cells: BTreeMap::new(),
        })
        .collect();
    for o in &c.observations {
        scenarios[o.scenario].cells.insert(o.wg, (o.status, o.cost));
    }
    Ok(Some(Collection {
        shown: most_spread(&analysis, &c.observations, scenarios.len()),
        scenarios,
        analysis,
    }))
}

/// The scenarios to draw: every one with a measurement, or the [`MAX_HEATMAPS`] of the largest
/// spread (slowest over fastest legal size), in store order.
fn most_spread(a: &Analysis, obs: &[Observation], n: usize) -> Vec<usize> {
    let mut drawable: Vec<usize> = (0..n)
        .filter(|&i| {
            obs.iter()
                .any(|o| o.scenario == i && o.status == Status::Measured)
        })
        .collect();
    if drawable.len() > MAX_HEATMAPS {
        let spread = |i: usize| a.scenarios[i].spread.unwrap_or(0.0);
        drawable.sort_by(|&x, &y| spread(y).total_cmp(&spread(x)).then(x.cmp(&y)));
        drawable.truncate(MAX_HEATMAPS);
        drawable.sort();
    }
    drawable
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{document, Block};
    use crate::figures::{Cell, Figure};
    use ndtune_core::{Outcome, Timing};
    use ndtune_learn::data::{Data, Scenario as LearnScenario};
    use ndtune_learn::eval::{evaluate, Method, Protocol};
    use ndtune_store::{Group, Record, ResultKey, Study};

    fn record(group: &Group, config: Config, outcome: Outcome) -> Record {
        Record {
            key: ResultKey::new(group, config),
            outcome,
            ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
            started_at: 0,
            finished_at: 1,
        }
    }

    fn measured(ms: f64) -> Outcome {
        Outcome::Measured(Timing::new(vec![ms], 1))
    }

    fn study(kind: &str, name: &str, body: serde_json::Value) -> Study {
        Study {
            kind: kind.into(),
            name: name.into(),
            body,
            created_at: 7,
        }
    }

    /// A store with one tuned campaign (and its space) and one collected 2x2 scenario.
    fn tuned_store(dir: &std::path::Path) -> Store {
        let store = Store::open(dir.join("r.db")).unwrap();
        let fp = store
            .put_device(&ndtune_device::builtin::find("gt550m").unwrap())
            .unwrap();
        let gemm = Group {
            device: fp.clone(),
            kernel: "gemm".into(),
            source_hash: "h".into(),
            setup: "5e7a5e7a5e7a5e7a".into(),
            constants: ndtune_core::int_config([("N", 64)]),
        };
        for (tx, outcome) in [
            (1, measured(4.0)),
            (2, measured(1.0)),
            (4, measured(2.0)),
            (8, Outcome::Refused { error: "-5".into() }),
        ] {
            let cfg: Config = ndtune_core::int_config([("TX", tx)]);
            store.insert(&record(&gemm, cfg, outcome)).unwrap();
        }
        store
            .put_study(&study(
                "space",
                "gemm N=64 on fp",
                serde_json::json!({"device": fp, "constants": {"N": 64}, "space": {
                    "kernel": "gemm", "device": "0 GeForce GT 550M", "declared": 16,
                    "bounded": 8, "pruned": 4, "order": ["TX"], "constraints": [
                        {"constraint": "TX <= 8", "origin": "application", "removed": 12}]}}),
            ))
            .unwrap();
        let stencil = Group {
            kernel: "sobel".into(),
            constants: ndtune_core::int_config([("ROWS", 64)]),
            ..gemm
        };
        store
            .put_scenario(
                &stencil,
                &serde_json::to_value(ScenarioInfo {
                    label: "sobel 64x64 @ 0".into(),
                    kernel: "sobel".into(),
                    device: "0".into(),
                    dataset: "64x64".into(),
                    wc: vec![2, 4],
                    wr: vec![2, 4],
                    wmax: 8,
                    feature_names: vec![],
                    features: vec![],
                })
                .unwrap(),
            )
            .unwrap();
        for (c, r, outcome) in [
            (2, 2, measured(3.0)),
            (4, 2, measured(1.5)),
            (
                2,
                4,
                Outcome::Refused {
                    error: "-54".into(),
                },
            ),
        ] {
            let cfg: Config = ndtune_core::int_config([("WG_C", c), ("WG_R", r)]);
            store.insert(&record(&stencil, cfg, outcome)).unwrap();
        }
        store
    }

    #[test]
    fn a_device_has_its_spaces_and_each_campaign_its_best_median_and_worst() {
        let dir = tempfile::tempdir().unwrap();
        let store = tuned_store(dir.path());
        let r = Report::read(&store).unwrap();
        assert_eq!(r.devices.len(), 1);
        let d = &r.devices[0];
        assert_eq!(
            (
                d.spaces[0].declared,
                d.spaces[0].bounded,
                d.spaces[0].pruned
            ),
            (16, 8, 4)
        );
        assert_eq!(d.spaces[0].constraints[0].removed, 12);
        let gemm = d.campaigns.iter().find(|c| c.kernel == "gemm").unwrap();
        let names: Vec<&str> = d.campaigns.iter().map(|c| c.kernel.as_str()).collect();
        assert_eq!(
            names,
            ["gemm", "sobel 64x64"],
            "scenarios by stencil and dataset"
        );
        assert_eq!(gemm.measured(), 3);
        assert_eq!(gemm.outcomes[&OutcomeKind::Refused], 1);
        assert_eq!(gemm.best, Some((ndtune_core::int_config([("TX", 2)]), 1.0)));
        assert_eq!(gemm.speedups(), Some((4.0, 2.0)));
        assert!(gemm.by_time());
        assert_eq!(gemm.label(), "time (ms)");
        assert!(r.splits.is_empty() && r.learning.is_empty());
    }

    #[test]
    fn a_kernel_tuned_again_under_another_setup_shows_the_earlier_campaign_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = tuned_store(dir.path());
        let old = ndtune_core::setup::Setup::new(serde_json::json!({"measure": {"runs": 10}}));
        let new = ndtune_core::setup::Setup::new(serde_json::json!({"measure": {"runs": 20}}));
        let gemm = store.groups().unwrap().remove(0);
        assert_eq!(gemm.kernel, "gemm");
        let (earlier, newest) = (
            Group {
                setup: old.digest.clone(),
                ..gemm.clone()
            },
            Group {
                setup: new.digest.clone(),
                ..gemm.clone()
            },
        );
        for (setup, group, ms, at) in [(&old, &earlier, 9.0, 5), (&new, &newest, 7.0, 50)] {
            store.put_setup(setup).unwrap();
            let mut r = record(group, ndtune_core::int_config([("TX", 1)]), measured(ms));
            r.finished_at = at;
            store.insert(&r).unwrap();
        }
        let r = Report::read(&store).unwrap();
        let gemms: Vec<&Campaign> = r.devices[0]
            .campaigns
            .iter()
            .filter(|c| c.kernel == "gemm")
            .collect();
        assert_eq!(gemms.len(), 3, "never merged");
        let of = |g: &Group| gemms.iter().find(|c| c.setup == g.setup).unwrap();
        assert_eq!(of(&newest).earlier, None);
        assert_eq!(
            of(&newest).best,
            Some((ndtune_core::int_config([("TX", 1)]), 7.0))
        );
        assert_eq!(
            of(&earlier).earlier,
            Some(Earlier {
                newest: new.digest.clone(),
                differences: vec!["measure.runs: 10 -> 20".into()],
            })
        );
        let legacy = of(&gemm).earlier.as_ref().unwrap();
        assert_eq!(legacy.newest, new.digest);
        let page = crate::html::render(&document(&r)).unwrap();
        assert!(page.contains("An earlier campaign"), "the page says so");
        assert!(page.contains("measure.runs: 10 -&gt; 20"));

        // `--set` keeps the campaigns and spaces of those constants only.
        let n = |v: i64| ndtune_core::int_config([("N", v)]);
        let none = Report::read_selected(&store, &n(128)).unwrap();
        assert!(none
            .devices
            .iter()
            .all(|d| d.campaigns.iter().all(|c| c.collected)));
        assert!(none.devices.iter().all(|d| d.spaces.is_empty()));
        let some = Report::read_selected(&store, &n(64)).unwrap();
        assert_eq!(some.devices[0].campaigns.len(), 3);
    }

    #[test]
    fn a_collected_scenario_becomes_a_heatmap_with_refused_and_illegal_cells_and_the_oracle() {
        let dir = tempfile::tempdir().unwrap();
        let r = Report::read(&tuned_store(dir.path())).unwrap();
        let c = r.collection.as_ref().unwrap();
        assert_eq!(c.shown, vec![0]);
        assert_eq!(c.analysis.scenarios[0].oracle, Some(((4, 2), 1.5)));
        let doc = document(&r);
        let maps: Vec<&Figure> = doc
            .figures()
            .map(|(_, f)| f)
            .filter(|f| matches!(f, Figure::Heatmap(_)))
            .collect();
        // The oracle frequency (Fig. 2) and the scenario (Fig. 1); gemm has one parameter.
        assert_eq!(maps.len(), 2);
        let Figure::Heatmap(h) = maps[1] else {
            panic!("{:?}", maps[1])
        };
        assert_eq!(h.circled, Some((1, 0)));
        assert!(matches!(h.cells[0], Cell::Value { shade, .. } if shade == 0.0));
        assert!(matches!(h.cells[1], Cell::Value { shade, .. } if shade == 1.0));
        assert_eq!(h.cells[2], Cell::Refused);
        assert_eq!(h.cells[3], Cell::Illegal, "4x4 was never run");
        // Sections without data say so.
        let missing = doc
            .blocks
            .iter()
            .filter(|b| matches!(b, Block::Missing(_)))
            .count();
        assert_eq!(missing, 2, "no co-execution, no learning");
    }

    #[test]
    fn only_the_scenarios_of_the_largest_spread_are_drawn_beyond_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("r.db")).unwrap();
        let fp = store
            .put_device(&ndtune_device::builtin::find("hd4600").unwrap())
            .unwrap();
        let n = MAX_HEATMAPS + 3;
        for i in 0..n {
            let g = Group {
                device: fp.clone(),
                kernel: format!("k{i:02}"),
                source_hash: "h".into(),
                setup: "5e7a5e7a5e7a5e7a".into(),
                constants: BTreeMap::new(),
            };
            let info = serde_json::json!({"label": format!("k{i:02}"), "kernel": "k",
                "device": "0", "dataset": "8x8", "wc": [2, 4], "wr": [2], "wmax": 8,
                "feature_names": [], "features": []});
            store.put_scenario(&g, &info).unwrap();
            for (c, ms) in [(2, 1.0), (4, 1.0 + i as f64)] {
                let cfg: Config = ndtune_core::int_config([("WG_C", c), ("WG_R", 2)]);
                store.insert(&record(&g, cfg, measured(ms))).unwrap();
            }
        }
        let c = Report::read(&store).unwrap().collection.unwrap();
        assert_eq!(c.scenarios.len(), n);
        // Scenario i's spread is 1 + i: the largest are the last ones.
        assert_eq!(c.shown, (n - MAX_HEATMAPS..n).collect::<Vec<_>>());
    }

    #[test]
    fn split_and_learning_studies_read_back_and_become_figures() {
        let dir = tempfile::tempdir().unwrap();
        let store = tuned_store(dir.path());
        let plan = ndtune_split::plan(
            256,
            &[
                ndtune_split::Device {
                    wg: 16,
                    time_ms: 2.0,
                },
                ndtune_split::Device {
                    wg: 16,
                    time_ms: 2.0,
                },
            ],
        )
        .unwrap();
        let sweep: Vec<serde_json::Value> =
            [(0.0, 2.1, false), (0.5, 1.2, true), (1.0, 2.0, false)]
                .iter()
                .map(|&(f, ms, planner)| {
                    serde_json::json!({"factor": f, "factors": [f, 1.0 - f],
                "coexec_ms": ms, "theoretical_ms": 2.0 * f64::max(f, 1.0 - f), "verified": true,
                "planner": planner})
                })
                .collect();
        let mut body = serde_json::json!({"kernel": "gemm", "constants": {"N": 64}, "dim": 0,
            "devices": [
                {"device": "0:0/2", "config": {"TX": 2}, "tuned_ms": 1.9, "wg": 16, "single_ms": 2.0, "single_kernel_ms": 1.8},
                {"device": "0:1/2", "config": {"TX": 2}, "tuned_ms": 1.9, "wg": 16, "single_ms": 2.0, "single_kernel_ms": 1.8}],
            "single_ms": [2.0, 2.0], "single_kernel_ms": [1.8, 1.8], "best_single": 0,
            "coexec_ms": 1.2, "overhead": 0.2, "ideal_speedup": 2.0, "speedup": 1.67,
            "efficiency": 0.83, "balance": 0.9, "verified": true, "mismatch": null,
            "parts": [{"device": 0, "finish_ms": 1.1, "kernel_ms": 0.9}, {"device": 1, "finish_ms": 1.2, "kernel_ms": 0.9}],
            "decision": {"mode": "coexec", "device": null, "reason": "co-execution is 1.67x", "ms": 1.2},
            "sweep": sweep});
        let plan = serde_json::to_value(&plan).unwrap();
        body.as_object_mut()
            .unwrap()
            .extend(plan.as_object().unwrap().clone());
        store.put_study(&study("split", "gemm on 2", body)).unwrap();

        let mut data = Data {
            feature_names: vec!["f".into()],
            scenarios: vec![],
            observations: vec![],
            objective: None,
        };
        for i in 0..6 {
            data.scenarios.push(LearnScenario {
                id: format!("s{i}"),
                device: "d".into(),
                kernel: format!("k{i}"),
                dataset: "8x8".into(),
                features: vec![(i % 2) as f64],
            });
            for (wg, ms) in [((32, 4), 2.0), ((8, 8), 1.0 + (i % 2) as f64 * 2.0)] {
                data.observations.push(ndtune_learn::oracle::Observation {
                    scenario: i,
                    wg,
                    status: Status::Measured,
                    cost: Some(ms),
                });
            }
        }
        let eval = evaluate(
            &data,
            Protocol::Cv10,
            &[Method::Baseline],
            &Default::default(),
            &mut |_| {},
        )
        .unwrap();
        store
            .put_study(&study(
                "learn",
                "cv10 on d.csv",
                serde_json::to_value(&eval).unwrap(),
            ))
            .unwrap();

        let r = Report::read(&store).unwrap();
        let s = &r.splits[0].body;
        assert_eq!(s.study.plan.parts.len(), 2);
        assert_eq!(s.study.sweep.as_ref().unwrap().len(), 3);
        let l = &r.learning[0].body;
        assert_eq!(l.results[0].performance.len(), 6);
        assert_eq!(l.results[0].speedups_over_expert.len(), 6);
        let doc = document(&r);
        let kinds: Vec<&str> = doc
            .figures()
            .map(|(_, f)| match f {
                Figure::Heatmap(_) => "heatmap",
                Figure::Bars(_) => "bars",
                Figure::Sweep(_) => "sweep",
                Figure::Distribution(_) => "distribution",
                Figure::Convergence(_) => "convergence",
                Figure::Histogram(_) => "histogram",
                Figure::Effects(_) => "effects",
                Figure::Timeline(_) => "timeline",
                Figure::Front(_) => "front",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "convergence",
                "histogram",
                "effects",
                "heatmap",
                "heatmap",
                "bars",
                "sweep",
                "distribution",
                "distribution",
                "distribution"
            ]
        );
        let page = crate::html(&r).unwrap();
        assert_eq!(page.matches("<figure ").count(), 10);
        assert!(!page.contains("http:") && !page.contains("https:"));
    }

    #[test]
    fn a_study_this_ndtune_cannot_read_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("r.db")).unwrap();
        store
            .put_study(&study("split", "old", serde_json::json!({"kernel": 3})))
            .unwrap();
        let e = Report::read(&store).unwrap_err().to_string();
        assert!(e.contains("the split study `old` cannot be read"), "{e}");
    }
}
