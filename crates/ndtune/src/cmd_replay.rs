//! `ndtune tune --replay PATH`: runs a strategy on recorded results instead of a device
//! (`ndtune_engine::replay`), from an ndtune store's campaign (selected by `--kernel`/the spec,
//! `--device`, `--set` and `--setup`) or a Kernel Tuner cache file, and prints how close it got
//! to the recording's optimum by its objective with how many evaluations.

use crate::cli::TuneArgs;
use anyhow::{anyhow, Result};
use ndtune_core::text::show_config;
use ndtune_engine::outcome_counts;
use ndtune_engine::replay::{replay, Found, Recording};
use ndtune_engine::select::Criteria;
use ndtune_search::Budget;
use std::path::Path;

pub fn run(args: &TuneArgs, path: &Path) -> Result<()> {
    let kernel = match &args.spec {
        Some(spec) => Some(ndtune_spec::Spec::load(spec)?.kernel.name),
        None => None,
    };
    let criteria = Criteria {
        kernel: kernel.as_deref(),
        device: args.device.as_deref(),
        constants: args.campaign.constants.single()?,
        setup: args.setup.as_deref(),
    };
    let rec = Recording::load(path, &criteria)?;
    let metrics = rec.metrics(args.metrics.metrics.clone(), args.metrics.objectives()?)?;
    let given = Budget {
        evaluations: args.campaign.budget,
        time: args.search.time,
    };
    let report = replay(
        &rec,
        &metrics,
        &args.campaign.strategy,
        given,
        args.campaign.seed,
    )?;
    let objective = metrics.objective();
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
