//! `ndtune tune --replay PATH`: runs a strategy on recorded results instead of a device, from an
//! ndtune store or a Kernel Tuner cache file, and reports how close it got to the recording's
//! optimum with how many evaluations.

use crate::cli::TuneArgs;
use crate::cmd_tune::{outcome_counts, show_config};
use crate::select::{select, Criteria};
use anyhow::{anyhow, Result};
use ndtune_core::{Config, Outcome, OutcomeKind};
use ndtune_search::{Candidates, Recorded};
use ndtune_store::{kt, Store};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Recorded results: what they are, parameter names, and every configuration's outcome.
pub(crate) struct Recording {
    pub label: String,
    pub names: Vec<String>,
    pub entries: Vec<(Config, Outcome)>,
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
    })
}

#[derive(Serialize)]
struct Found {
    config: Config,
    time_ms: f64,
}

#[derive(Serialize)]
struct ReplayReport {
    replay: String,
    strategy: String,
    budget: Option<usize>,
    configurations: usize,
    evaluations: usize,
    best: Option<Found>,
    optimum: Option<Found>,
    /// Optimum time over found time: 1 when the strategy found the best configuration.
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
    let mut recorded = Recorded::infer(rec.names.clone(), rec.entries.clone())?;
    let space: Candidates = recorded.space().clone();
    let mut strategy = ndtune_search::by_name(&args.campaign.strategy, args.campaign.seed)?;
    let run = ndtune_search::Run {
        budget: ndtune_search::Budget {
            evaluations: args.campaign.budget,
            time: args.search.time,
        },
        warm: Vec::new(),
    };
    let trace = strategy.search(&space, &mut recorded, &run);
    let found = |p: &[i64], ms: f64| Found {
        config: space.config(p),
        time_ms: ms,
    };
    let best = trace.best().map(|(p, ms)| found(p, ms));
    let optimum = rec
        .entries
        .iter()
        .filter_map(|(c, o)| o.score_ms().filter(|s| s.is_finite()).map(|s| (c, s)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, ms)| Found {
            config: c.clone(),
            time_ms: ms,
        });
    let mut outcomes: BTreeMap<&'static str, usize> =
        OutcomeKind::ALL.iter().map(|k| (k.as_str(), 0)).collect();
    for s in &trace.steps {
        *outcomes.entry(s.outcome.kind().as_str()).or_default() += 1;
    }
    let report = ReplayReport {
        replay: rec.label,
        strategy: args.campaign.strategy.clone(),
        budget: args.campaign.budget,
        configurations: space.len(),
        evaluations: trace.steps.len(),
        relative_performance: match (&best, &optimum) {
            (Some(b), Some(o)) => Some(o.time_ms / b.time_ms),
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
    println!(
        "replay of {}: {} strategy, {} of {} configurations evaluated",
        report.replay, report.strategy, report.evaluations, report.configurations
    );
    let show = |f: &Found| {
        format!(
            "{}: {:.4} ms",
            show_config(&rec.names, &f.config),
            f.time_ms
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
