//! `ndtune bench-strategies`: replays recorded spaces (Kernel Tuner caches, ndtune stores) with
//! every strategy over many seeds and a list of budgets, and reports per budget the mean fraction
//! of the optimum reached and the evaluations needed to reach 90% and 95% of it (the methodology
//! of Schoonhoven et al. 2022), as a table, JSON and an SVG figure. Kernel Tuner's strategies,
//! run in its simulation mode by bench/kt_strategies.py, come in through `--kt` and sit beside
//! ndtune's.
//!
//! With `--warm-start`, each dataset's runs first measure the best configurations of the other
//! datasets of the same kernel ([`ndtune_search::warm_start`]): learn on six GPUs, tune the
//! seventh. The datasets and the runs are [`ndtune_engine::strategy_bench`]'s; this command
//! parses, prints and plots.

use crate::cli::BenchStrategiesArgs;
use anyhow::{bail, Context, Result};
use ndtune_engine::strategy_bench::{self, DatasetInfo, StrategyResult};
use ndtune_report::strategies::{figure, Line};
use ndtune_search::by_name;
use serde::Serialize;

/// What `--json` writes.
#[derive(Serialize)]
struct Report<'a> {
    budgets: &'a [usize],
    seeds: u64,
    warm_start: bool,
    datasets: Vec<DatasetInfo>,
    results: &'a [StrategyResult],
}

pub fn run(args: &BenchStrategiesArgs) -> Result<()> {
    let mut budgets = args.budgets.clone();
    budgets.sort_unstable();
    budgets.dedup();
    if budgets.is_empty() {
        bail!("--budgets: give at least one budget");
    }
    for name in &args.strategies {
        by_name(name, 0)?;
    }
    let objectives = args.metrics.objectives()?;
    let mut datasets = Vec::new();
    for path in &args.recordings {
        for d in strategy_bench::datasets(path)? {
            datasets.push(d.costed(&objectives, &args.metrics.metrics)?);
        }
    }
    let (infos, mut results) = strategy_bench::bench_all(
        &datasets,
        &args.strategies,
        &budgets,
        args.seeds,
        args.warm_start.then_some(args.warm),
        |info| eprintln!("{}: {}", info.id, info.describe()),
    )?;
    if let Some(kt) = &args.kt {
        results.extend(strategy_bench::kt_results(kt, &datasets, &budgets)?);
    }
    print!("{}", strategy_bench::table(&infos, &results, &budgets));
    if let Some(path) = &args.json {
        let report = Report {
            budgets: &budgets,
            seeds: args.seeds,
            warm_start: args.warm_start,
            datasets: infos,
            results: &results,
        };
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        let ids: Vec<String> = datasets.iter().map(|d| d.id.clone()).collect();
        let lines: Vec<Line> = results
            .iter()
            .map(|r| Line {
                dataset: &r.dataset,
                strategy: &r.strategy,
                mean: &r.mean,
            })
            .collect();
        std::fs::write(path, figure(&ids, &lines, &budgets)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
