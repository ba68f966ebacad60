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
        |info| eprintln!("{}: {}", info.id, describe(info)),
    )?;
    if let Some(kt) = &args.kt {
        results.extend(strategy_bench::kt_results(kt, &datasets, &budgets)?);
    }
    print!("{}", table(&infos, &results, &budgets));
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

/// Per dataset: a row per strategy, the best at each budget starred, and who wins where.
fn table(infos: &[DatasetInfo], results: &[StrategyResult], budgets: &[usize]) -> String {
    let mut out = String::new();
    for info in infos {
        let rows: Vec<&StrategyResult> = results.iter().filter(|r| r.dataset == info.id).collect();
        let width = rows
            .iter()
            .map(|r| r.strategy.len())
            .max()
            .unwrap_or(8)
            .max(8);
        out += &format!("\n{} ({})\n", info.id, describe(info));
        out += &format!("{:width$}", "strategy");
        for b in budgets {
            out += &format!(" {:>7}", b);
        }
        out += "   e90   e95\n";
        let best_at = |b: usize| {
            rows.iter()
                .filter_map(|r| r.mean.get(&b).copied())
                .fold(f64::NEG_INFINITY, f64::max)
        };
        for r in &rows {
            out += &format!("{:width$}", r.strategy);
            for b in budgets {
                match r.mean.get(b) {
                    Some(m) => {
                        let star = if *m >= best_at(*b) { "*" } else { " " };
                        out += &format!(" {m:>6.3}{star}");
                    }
                    None => out += &format!(" {:>7}", "-"),
                }
            }
            let e = |v: Option<usize>| v.map_or("-".to_string(), |v| v.to_string());
            out += &format!(" {:>5} {:>5}\n", e(r.evals_90), e(r.evals_95));
        }
        let wins: Vec<String> = budgets
            .iter()
            .map(|b| {
                let best = best_at(*b);
                let who: Vec<&str> = rows
                    .iter()
                    .filter(|r| r.mean.get(b).is_some_and(|m| *m >= best))
                    .map(|r| r.strategy.as_str())
                    .collect();
                format!("{b}: {}", who.join(" = "))
            })
            .collect();
        out += &format!("best at {}\n", wins.join("; "));
    }
    out
}

/// A dataset as its header says it: its size, and the optimum or the true front the fractions
/// are of.
fn describe(info: &DatasetInfo) -> String {
    let target = match &info.front {
        None => format!("optimum {:.4} ms", info.optimum_ms),
        Some(f) => format!(
            "fractions of the hypervolume of the true front of {} configurations, {:.4} in ln costs against the reference ({})",
            f.size,
            f.hypervolume,
            f.reference.iter().map(|r| format!("{r:.4}")).collect::<Vec<_>>().join(", ")
        ),
    };
    let warm = match info.warm_points {
        0 => String::new(),
        n => format!(", warm start from {n} configurations"),
    };
    format!("{} configurations, {target}{warm}", info.configurations)
}
