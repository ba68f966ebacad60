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
use ndtune_search::by_name;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
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
        let text = ndtune_core::input::read_text(kt, ndtune_core::input::KT_RESULTS)?;
        let not_theirs = || format!("{}: not bench/kt_strategies.py's JSON", kt.display());
        let value: serde_json::Value = serde_json::from_str(&text).with_context(not_theirs)?;
        let runs = value
            .as_array()
            .and_then(|a| a.first())
            .is_some_and(|r| r.get("orders").is_some());
        if runs {
            let theirs: Vec<strategy_bench::Orders> =
                serde_json::from_value(value).with_context(not_theirs)?;
            for r in &theirs {
                if let Some(d) = datasets.iter().find(|d| d.id == r.dataset) {
                    results.push(strategy_bench::score_orders(d, r, &budgets)?);
                }
            }
        } else {
            let theirs: Vec<StrategyResult> =
                serde_json::from_value(value).with_context(not_theirs)?;
            let ids: Vec<&str> = datasets.iter().map(|d| d.id.as_str()).collect();
            results.extend(
                theirs
                    .into_iter()
                    .filter(|r| ids.contains(&r.dataset.as_str())),
            );
        }
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
        std::fs::write(path, figure(&ids, &results, &budgets)?)
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

const COLOURS: [RGBColor; 10] = [
    RGBColor(52, 101, 164),
    RGBColor(230, 126, 34),
    RGBColor(46, 139, 87),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// One panel per dataset: mean fraction of the optimum at each budget (evenly spaced), a line per
/// strategy; Kernel Tuner's dashed, coloured among themselves.
fn figure(ids: &[String], results: &[StrategyResult], budgets: &[usize]) -> Result<String> {
    register_font();
    let mut strategies: Vec<&str> = results.iter().map(|r| r.strategy.as_str()).collect();
    strategies.sort_by_key(|s| (s.starts_with("kt:"), *s));
    strategies.dedup();
    let theirs = |s: &str| s.starts_with("kt:");
    // Solid lines (ndtune) and dashed ones (Kernel Tuner) each take the colours from the start.
    let colour_of = |s: &str| {
        let i = strategies
            .iter()
            .filter(|o| theirs(o) == theirs(s))
            .position(|o| *o == s)
            .unwrap_or(0);
        COLOURS[i % COLOURS.len()]
    };
    let cols = ids.len().clamp(1, 3);
    let rows = ids.len().div_ceil(cols).max(1);
    let (pw, ph) = (420u32, 320u32);
    let legend = 22 * strategies.len().div_ceil(4) as u32 + 10;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (pw * cols as u32, ph * rows as u32 + legend))
            .into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (top, bottom) = root.split_vertically(ph * rows as u32);
        let last = budgets.len().saturating_sub(1).max(1) as f64;
        let at = |b: usize| budgets.iter().position(|&x| x == b).unwrap_or(0) as f64;
        for (panel, id) in top.split_evenly((rows, cols)).iter().zip(ids) {
            let ours: Vec<&StrategyResult> = results.iter().filter(|r| &r.dataset == id).collect();
            let y_min = ours
                .iter()
                .flat_map(|r| r.mean.values())
                .fold(1.0f64, |a, &b| a.min(b))
                .clamp(0.0, 0.95);
            let mut chart = ChartBuilder::on(panel)
                .caption(id, ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(32)
                .y_label_area_size(44)
                .build_cartesian_2d(-0.2..last + 0.2, (y_min - 0.01)..1.005)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("evaluations")
                .y_desc("fraction of optimum")
                .x_labels(budgets.len())
                .max_light_lines(1)
                .x_label_formatter(&|x| {
                    budgets
                        .get(x.round().max(0.0) as usize)
                        .filter(|_| (x - x.round()).abs() < 1e-6)
                        .map_or(String::new(), |b| b.to_string())
                })
                .y_label_formatter(&|y| format!("{y:.2}"))
                .draw()
                .map_err(plot_err)?;
            for r in ours {
                let colour = colour_of(&r.strategy);
                let points: Vec<(f64, f64)> = r.mean.iter().map(|(&b, &m)| (at(b), m)).collect();
                if theirs(&r.strategy) {
                    chart
                        .draw_series(std::iter::once(DashedPathElement::new(
                            points,
                            6,
                            4,
                            colour.stroke_width(2),
                        )))
                        .map_err(plot_err)?;
                } else {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            points,
                            colour.stroke_width(2),
                        )))
                        .map_err(plot_err)?;
                }
            }
        }
        for (i, s) in strategies.iter().enumerate() {
            let x = 10 + (i % 4) as i32 * (pw as i32 * cols as i32 / 4);
            let y = 12 + (i / 4) as i32 * 22;
            let line = vec![(x, y), (x + 24, y)];
            let style = colour_of(s).stroke_width(3);
            if theirs(s) {
                bottom.draw(&DashedPathElement::new(line, 6, 4, style))
            } else {
                bottom.draw(&PathElement::new(line, style))
            }
            .map_err(plot_err)?;
            bottom
                .draw(&Text::new(
                    s.to_string(),
                    (x + 30, y - 7),
                    ("sans-serif", 13),
                ))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the figure: {e}")
}

/// Text in the figure uses the report's embedded font, so no system font is needed.
fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The embedded font is valid TrueType: registering it cannot fail.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            ndtune_report::figures::FONT,
        );
    });
}
