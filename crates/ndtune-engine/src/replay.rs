//! Replay: a strategy run on recorded results instead of a device (`ndtune tune --replay`), from
//! a campaign of an ndtune store or a Kernel Tuner cache file, and how close it came to the
//! recording's optimum by the objective, with how many evaluations. A recording is loaded from a
//! cache file or a store's campaign selected by kernel, device, constants and setup
//! ([`Recording::load`]); front ends print the [`ReplayReport`].

use crate::tuning::resolve_strategy;
use crate::ObjectiveReport;
use ndtune_core::{Config, Constants, Outcome, OutcomeKind};
use ndtune_metrics::{Definitions, Inputs, MetricDef, Metrics, Objective};
use ndtune_search::{Budget, Candidates, Recorded};
use ndtune_store::kt::{self, MetricValues};
use ndtune_store::{Group, Record, Store};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Why a recording could not be read or replayed; each names the file or the option.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Store(#[from] ndtune_store::StoreError),
    #[error(transparent)]
    KtFile(#[from] kt::KtError),
    #[error(transparent)]
    Select(#[from] crate::select::SelectError),
    /// The metrics or objective asked for do not fit the recording (named by its label).
    #[error("{recording}: {source}")]
    Metrics {
        recording: String,
        source: ndtune_metrics::MetricError,
    },
    /// The recorded configurations do not make a space a strategy can search.
    #[error(transparent)]
    Space(#[from] ndtune_search::InvalidSpace),
    #[error(transparent)]
    Strategy(#[from] ndtune_search::UnknownStrategy),
}

/// Recorded results: what they are, parameter names, every configuration's outcome, and what
/// they were tuned for.
pub struct Recording {
    pub label: String,
    pub names: Vec<String>,
    pub entries: Vec<(Config, Outcome)>,
    /// The problem's constants, where known (a store's campaign; a cache ndtune wrote, whose
    /// `problem_size` holds them).
    pub constants: Constants,
    /// Metric values recorded with each configuration (a Kernel Tuner cache's).
    pub recorded: MetricValues,
    /// The metrics and objective the recording was tuned with.
    pub definitions: Definitions,
}

/// Whether `path` names a Kernel Tuner cache file (`.json`, `.json.gz`) rather than a store.
pub fn is_kernel_tuner_cache(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".json") || name.ends_with(".json.gz")
}

impl Recording {
    /// The recording at `path`: a Kernel Tuner cache file, or the one campaign of an ndtune
    /// store that `criteria` select ([`crate::select`]).
    pub fn load(path: &Path, criteria: &crate::select::Criteria) -> Result<Recording, ReplayError> {
        if is_kernel_tuner_cache(path) {
            return Recording::from_kt_cache(path);
        }
        let store = Store::open_read_only(path)?;
        let (group, device_name, records) = crate::select::select(&store, path, criteria)?;
        Recording::from_store(&store, path, group, &device_name, records)
    }

    /// The results of a Kernel Tuner cache file.
    pub fn from_kt_cache(path: &Path) -> Result<Recording, ReplayError> {
        let cache = kt::read_kt_cache(path)?;
        Ok(Recording {
            label: format!(
                "`{}` on {} (Kernel Tuner cache {})",
                cache.header.kernel_name,
                cache.header.device_name,
                path.display()
            ),
            names: cache.header.tune_params_keys.clone(),
            entries: cache.entries.into_iter().collect(),
            constants: constants_of(&cache.header.problem_size),
            recorded: cache.metrics,
            definitions: cache_definitions(&cache.header),
        })
    }

    /// The records of one campaign (`group`, on the device named `device_name`) of the store
    /// at `path`.
    pub fn from_store(
        store: &Store,
        path: &Path,
        group: Group,
        device_name: &str,
        records: Vec<Record>,
    ) -> Result<Recording, ReplayError> {
        let names: Vec<String> = records
            .first()
            .map(|r| r.key.config.keys().cloned().collect())
            .unwrap_or_default();
        Ok(Recording {
            label: format!("`{}` on {device_name} ({})", group.kernel, path.display()),
            names,
            entries: records
                .into_iter()
                .map(|r| (r.key.config, r.outcome))
                .collect(),
            definitions: store.metrics(&group)?.unwrap_or_default(),
            constants: group.constants,
            recorded: MetricValues::new(),
        })
    }

    /// The recording's metrics and objectives with `metrics` and `objectives` (where not
    /// empty) given beside them, checked against its parameters, constants and recorded values.
    pub fn metrics(
        &self,
        metrics: Vec<MetricDef>,
        objectives: Vec<Objective>,
    ) -> Result<Metrics, ReplayError> {
        let defs = self.definitions.clone().with(metrics, objectives);
        let mut recorded: Vec<String> = self
            .recorded
            .values()
            .flat_map(BTreeMap::keys)
            .cloned()
            .collect();
        recorded.sort();
        recorded.dedup();
        let configs = self.entries.iter().map(|(c, _)| c);
        Metrics::check_recorded(
            defs,
            self.names.clone(),
            configs,
            &self.constants,
            &recorded,
        )
        .map_err(|source| ReplayError::Metrics {
            recording: self.label.clone(),
            source,
        })
    }

    /// What one recorded configuration's metrics are computed from.
    pub fn inputs<'a>(&'a self, config: &'a Config, outcome: &'a Outcome) -> Inputs<'a> {
        Inputs::new(&self.constants, config, outcome).recorded(self.recorded.get(config))
    }
}

/// The constants a cache's `problem_size` holds where ndtune wrote it (an object of values).
fn constants_of(problem_size: &serde_json::Value) -> Constants {
    serde_json::from_value::<Constants>(problem_size.clone()).unwrap_or_default()
}

/// What a Kernel Tuner cache was tuned for: ndtune's definitions where it wrote them, the
/// objectives it names, and for a metric of its own whose direction it does not say, Kernel
/// Tuner's default (lower is better).
fn cache_definitions(header: &kt::KtHeader) -> Definitions {
    let objective = |metric: &String, said: Option<bool>| Objective {
        metric: metric.clone(),
        higher_is_better: said
            .or_else(|| Objective::default_direction(metric))
            .unwrap_or(false),
    };
    Definitions {
        metrics: header.metrics.clone(),
        objective: objective(&header.objective, header.objective_higher_is_better),
        more_objectives: header
            .more_objectives
            .iter()
            .map(|(m, said)| objective(m, *said))
            .collect(),
    }
}

/// A configuration the replay found, or the recording's optimum.
#[derive(Debug, Serialize)]
pub struct Found {
    pub config: Config,
    /// The score in ms, where measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<f64>,
    /// The objective's value.
    pub objective: f64,
}

/// What a replay did and how close it came.
#[derive(Debug, Serialize)]
pub struct ReplayReport {
    pub replay: String,
    pub strategy: String,
    /// What `--strategy auto` chose, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto: Option<String>,
    pub budget: Option<usize>,
    pub objective: ObjectiveReport,
    pub configurations: usize,
    pub evaluations: usize,
    pub best: Option<Found>,
    pub optimum: Option<Found>,
    /// The optimum's cost over the found one's (time over time; for a maximised objective,
    /// found value over the optimum's): 1 when the strategy found the best configuration.
    pub relative_performance: Option<f64>,
    /// With several objectives: the fraction of the true front's hypervolume the configurations
    /// evaluated cover ([`crate::front::hypervolume_fraction`]), and the sizes of both fronts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub front: Option<ReplayFront>,
    pub outcomes: BTreeMap<&'static str, usize>,
}

/// How close a replay came to the recording's front.
#[derive(Debug, Serialize)]
pub struct ReplayFront {
    pub hypervolume_fraction: f64,
    /// Configurations on the front of those evaluated.
    pub found: usize,
    /// Configurations on the recording's front.
    pub recorded: usize,
}

/// Runs `strategy` (`auto` resolved for the recording's size) with `given` budget and `seed`
/// on `rec`, ranked by `metrics`.
pub fn replay(
    rec: &Recording,
    metrics: &Metrics,
    strategy: &str,
    given: Budget,
    seed: u64,
) -> Result<ReplayReport, ReplayError> {
    let value = |c: &Config, o: &Outcome| metrics.evaluate(&rec.inputs(c, o)).objective;
    let costs = |c: &Config, o: &Outcome| metrics.costs(&rec.inputs(c, o));
    let mut recorded = Recorded::infer(rec.names.clone(), rec.entries.clone())?
        .costed_each(metrics.objectives().len(), costs);
    let space: Candidates = recorded.space().clone();
    let objectives = metrics.objectives().len();
    let resolved = resolve_strategy(
        strategy,
        given,
        space.len() as u128,
        false,
        false,
        objectives,
    );
    let mut search = ndtune_search::by_name(&resolved.strategy, seed)?;
    let run = ndtune_search::Run {
        budget: resolved.budget,
        warm: Vec::new(),
        patience: None,
    };
    let trace = search.search(&space, &mut recorded, &run);
    let found = |config: &Config, outcome: &Outcome| -> Option<Found> {
        Some(Found {
            config: config.clone(),
            time_ms: outcome.score_ms(),
            objective: value(config, outcome)?,
        })
    };
    let best = trace.best().and_then(|(p, _)| {
        let config = space.config(p);
        let outcome = recorded.outcome(p)?;
        found(&config, outcome)
    });
    let optimum = rec
        .entries
        .iter()
        .filter_map(|(c, o)| Some((c, o, metrics.objective().cost(value(c, o)?)?)))
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .and_then(|(c, o, _)| found(c, o));
    let mut outcomes: BTreeMap<&'static str, usize> =
        OutcomeKind::ALL.iter().map(|k| (k.as_str(), 0)).collect();
    for s in &trace.steps {
        *outcomes.entry(s.outcome.kind().as_str()).or_default() += 1;
    }
    let front = metrics.several().then(|| {
        let all: Vec<Vec<f64>> = recorded
            .space()
            .points()
            .iter()
            .filter_map(|p| recorded.costs_of(p))
            .collect();
        let found: Vec<Vec<f64>> = trace.steps.iter().filter_map(|s| s.costs.clone()).collect();
        ReplayFront {
            hypervolume_fraction: crate::front::hypervolume_fraction(&found, &all).unwrap_or(0.0),
            found: trace.front().len(),
            recorded: ndtune_core::pareto::front(&all).len(),
        }
    });
    let objective = metrics.objective();
    Ok(ReplayReport {
        replay: rec.label.clone(),
        strategy: resolved.strategy,
        auto: resolved.auto.as_ref().map(ToString::to_string),
        budget: resolved.budget.evaluations,
        objective: ObjectiveReport::of(metrics),
        configurations: space.len(),
        evaluations: trace.steps.len(),
        relative_performance: match (&best, &optimum) {
            (Some(b), Some(o)) => objective
                .cost(o.objective)
                .zip(objective.cost(b.objective))
                .map(|(o, b)| o / b),
            _ => None,
        },
        best,
        optimum,
        front,
        outcomes,
    })
}
