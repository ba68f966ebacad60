//! `ndtune tune --replay PATH`: runs a strategy on recorded results instead of a device, from an
//! ndtune store or a Kernel Tuner cache file, and reports how close it got to the recording's
//! optimum by its objective with how many evaluations.

use crate::cli::{MetricArgs, TuneArgs};
use crate::output::{outcome_counts, show_config};
use crate::select::{select, Criteria};
use anyhow::{anyhow, Result};
use ndtune_core::{Config, Constants, Outcome, OutcomeKind};
use ndtune_metrics::{Definitions, Inputs, Metrics, Objective};
use ndtune_search::{Candidates, Recorded};
use ndtune_store::kt::MetricValues;
use ndtune_store::{kt, Store};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Recorded results: what they are, parameter names, every configuration's outcome, and what
/// they were tuned for.
pub(crate) struct Recording {
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

impl Recording {
    /// The recording's metrics and objective with those of the command line, checked against
    /// its parameters, constants and recorded values.
    pub fn metrics(&self, args: &MetricArgs) -> Result<Metrics> {
        let objective = args.objective().map_err(|e| anyhow!(e))?;
        let defs = self
            .definitions
            .clone()
            .with(args.metrics.clone(), objective);
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
        .map_err(|e| anyhow!("{}: {e}", self.label))
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
/// objective it names, and for a metric of its own whose direction it does not say, Kernel
/// Tuner's default (lower is better).
fn cache_definitions(header: &kt::KtHeader) -> Definitions {
    let higher_is_better = header
        .objective_higher_is_better
        .or_else(|| Objective::default_direction(&header.objective))
        .unwrap_or(false);
    Definitions {
        metrics: header.metrics.clone(),
        objective: Objective {
            metric: header.objective.clone(),
            higher_is_better,
        },
    }
}

fn is_kernel_tuner_cache(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// Reads a Kernel Tuner cache, or the one campaign of an ndtune store that `criteria` select.
fn load(path: &Path, criteria: &Criteria) -> Result<Recording> {
    if is_kernel_tuner_cache(path) {
        let cache = kt::read_kt_cache(path)?;
        return Ok(Recording {
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
        });
    }
    let store = Store::open_read_only(path)?;
    let (group, device_name, records) = select(&store, path, criteria)?;
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

#[derive(Serialize)]
struct Found {
    config: Config,
    /// The score in ms, where measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    time_ms: Option<f64>,
    /// The objective's value.
    objective: f64,
}

#[derive(Serialize)]
struct ReplayReport {
    replay: String,
    strategy: String,
    /// What `--strategy auto` chose, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    auto: Option<String>,
    budget: Option<usize>,
    objective: ndtune_engine::ObjectiveReport,
    configurations: usize,
    evaluations: usize,
    best: Option<Found>,
    optimum: Option<Found>,
    /// The optimum's cost over the found one's (time over time; for a maximised objective,
    /// found value over the optimum's): 1 when the strategy found the best configuration.
    relative_performance: Option<f64>,
    outcomes: BTreeMap<&'static str, usize>,
}

pub fn run(args: &TuneArgs, path: &Path) -> Result<()> {
    let kernel = match &args.spec {
        Some(spec) => Some(ndtune_spec::Spec::load(spec)?.kernel.name),
        None => None,
    };
    let criteria = Criteria {
        kernel: kernel.as_deref(),
        device: args.device.as_deref(),
        constants: args
            .campaign
            .constants
            .single()
            .map_err(anyhow::Error::msg)?,
        setup: args.setup.as_deref(),
    };
    let rec = load(path, &criteria)?;
    let metrics = rec.metrics(&args.metrics)?;
    let value = |c: &Config, o: &Outcome| metrics.evaluate(&rec.inputs(c, o)).objective;
    let cost = |c: &Config, o: &Outcome| metrics.objective().cost(value(c, o)?);
    let mut recorded = Recorded::infer(rec.names.clone(), rec.entries.clone())?.costed(cost);
    let space: Candidates = recorded.space().clone();
    let resolved = crate::cmd_tune::resolve_strategy(
        &args.campaign,
        args.search.time,
        space.len() as u128,
        false,
    );
    let mut strategy = ndtune_search::by_name(&resolved.strategy, args.campaign.seed)?;
    let run = ndtune_search::Run {
        budget: resolved.budget,
        warm: Vec::new(),
    };
    let trace = strategy.search(&space, &mut recorded, &run);
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
        .filter_map(|(c, o)| Some((c, o, cost(c, o)?)))
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .and_then(|(c, o, _)| found(c, o));
    let mut outcomes: BTreeMap<&'static str, usize> =
        OutcomeKind::ALL.iter().map(|k| (k.as_str(), 0)).collect();
    for s in &trace.steps {
        *outcomes.entry(s.outcome.kind().as_str()).or_default() += 1;
    }
    let objective = metrics.objective();
    let report = ReplayReport {
        replay: rec.label.clone(),
        strategy: resolved.strategy,
        auto: resolved.auto.as_ref().map(ToString::to_string),
        budget: resolved.budget.evaluations,
        objective: ndtune_engine::ObjectiveReport::of(&metrics),
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
        outcomes,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    if let Some(why) = &report.auto {
        println!("strategy auto: {why}");
    }
    println!(
        "replay of {}: {} strategy, {} of {} configurations evaluated",
        report.replay, report.strategy, report.evaluations, report.configurations
    );
    if !metrics.is_time() {
        println!("  objective   {}", metrics.describe_objective());
    }
    let unit = metrics
        .unit(&objective.metric)
        .map_or(String::new(), |u| format!(" {u}"));
    let show = |f: &Found| {
        let time = match f.time_ms {
            Some(ms) if objective.metric != ndtune_metrics::TIME => format!(" ({ms:.4} ms)"),
            _ => String::new(),
        };
        format!(
            "{}: {:.4}{unit}{time}",
            show_config(&rec.names, &f.config),
            f.objective
        )
    };
    let best = report
        .best
        .as_ref()
        .ok_or_else(|| anyhow!("no evaluated configuration was measured"))?;
    println!("  best found  {}", show(best));
    if let (Some(o), Some(r)) = (&report.optimum, report.relative_performance) {
        println!(
            "  optimum     {} (found {:.1}% of the optimum's performance)",
            show(o),
            r * 100.0
        );
    }
    println!("  outcomes    {}", outcome_counts(&report.outcomes));
    Ok(())
}
