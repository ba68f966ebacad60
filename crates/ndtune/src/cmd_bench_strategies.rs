//! `ndtune bench-strategies`: replays recorded spaces (Kernel Tuner caches, ndtune stores) with
//! every strategy over many seeds and a list of budgets, and reports per budget the mean fraction
//! of the optimum reached and the evaluations needed to reach 90% and 95% of it (the methodology
//! of Schoonhoven et al. 2022), as a table, JSON and an SVG figure. Kernel Tuner's strategies,
//! run in its simulation mode by bench/kt_strategies.py, come in through `--kt` and sit beside
//! ndtune's.
//!
//! With `--warm-start`, each dataset's runs first measure the best configurations of the other
//! datasets of the same kernel ([`ndtune_search::warm_start`]): learn on six GPUs, tune the
//! seventh.

use crate::cli::BenchStrategiesArgs;
use anyhow::{bail, Context, Result};
use ndtune_core::Config;
use ndtune_search::{by_name, Budget, Candidates, Point, Recorded, Run, Trace};
use ndtune_store::{kt, Store};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One recorded space.
struct Dataset {
    /// `kernel/device`, e.g. `convolution_milo/A100`: how results and `--kt` name it.
    id: String,
    /// What identifies the kernel for warm starts (Kernel Tuner: the cache's kernel name and
    /// parameters; a store: kernel, source hash and constants).
    kernel: String,
    recorded: Recorded,
    optimum_ms: f64,
}

/// One strategy on one dataset.
#[derive(Serialize, Deserialize, Clone)]
pub struct StrategyResult {
    pub dataset: String,
    pub strategy: String,
    /// Per budget, the mean over seeds of optimum / best found (0 where a run measured nothing).
    pub mean: BTreeMap<usize, f64>,
    /// Median over seeds of the evaluations after which the best found is within 90% (95%) of
    /// the optimum, within the largest budget; `None` where fewer than half the seeds got there.
    pub evals_90: Option<usize>,
    pub evals_95: Option<usize>,
    pub seeds: u64,
}

/// What `--json` writes.
#[derive(Serialize)]
struct Report<'a> {
    budgets: &'a [usize],
    seeds: u64,
    warm_start: bool,
    datasets: Vec<DatasetInfo>,
    results: &'a [StrategyResult],
}

#[derive(Serialize)]
struct DatasetInfo {
    id: String,
    configurations: usize,
    optimum_ms: f64,
    warm_points: usize,
}

pub fn run(args: &BenchStrategiesArgs) -> Result<()> {
    let mut budgets = args.budgets.clone();
    budgets.sort_unstable();
    budgets.dedup();
    let Some(&largest) = budgets.last() else {
        bail!("--budgets: give at least one budget");
    };
    for name in &args.strategies {
        by_name(name, 0)?;
    }
    let mut datasets = Vec::new();
    for path in &args.recordings {
        datasets.extend(load(path)?);
    }
    let mut results: Vec<StrategyResult> = Vec::new();
    let mut infos = Vec::new();
    for (i, d) in datasets.iter().enumerate() {
        let warm = if args.warm_start {
            let others: Vec<&Recorded> = datasets
                .iter()
                .enumerate()
                .filter(|(j, o)| *j != i && o.kernel == d.kernel)
                .map(|(_, o)| &o.recorded)
                .collect();
            ndtune_search::warm_start(&others, args.warm)
        } else {
            Vec::new()
        };
        let space = d.recorded.space().clone();
        eprintln!(
            "{}: {} configurations, optimum {:.4} ms, {} warm-start points",
            d.id,
            space.len(),
            d.optimum_ms,
            warm.len()
        );
        infos.push(DatasetInfo {
            id: d.id.clone(),
            configurations: space.len(),
            optimum_ms: d.optimum_ms,
            warm_points: warm.len(),
        });
        for name in &args.strategies {
            results.push(bench(d, &space, name, &budgets, largest, args.seeds, &warm));
        }
    }
    if let Some(kt) = &args.kt {
        let text =
            std::fs::read_to_string(kt).with_context(|| format!("reading {}", kt.display()))?;
        let theirs: Vec<StrategyResult> = serde_json::from_str(&text)
            .with_context(|| format!("{}: not bench/kt_strategies.py's JSON", kt.display()))?;
        let ids: Vec<&str> = datasets.iter().map(|d| d.id.as_str()).collect();
        results.extend(
            theirs
                .into_iter()
                .filter(|r| ids.contains(&r.dataset.as_str())),
        );
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

/// One seed's run: the fraction of the optimum at each budget, and the evaluations to reach 90%
/// and 95% of it.
struct SeedResult {
    fractions: Vec<f64>,
    to_90: Option<usize>,
    to_95: Option<usize>,
}

/// Runs `name` with seeds 0.. at every budget on one dataset.
fn bench(
    d: &Dataset,
    space: &Candidates,
    name: &str,
    budgets: &[usize],
    largest: usize,
    seeds: u64,
    warm: &[Point],
) -> StrategyResult {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_seed: Vec<SeedResult> = std::thread::scope(|scope| {
        let chunks: Vec<Vec<u64>> = (0..workers as u64)
            .map(|w| (0..seeds).filter(|s| s % workers as u64 == w).collect())
            .collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let mut eval = d.recorded.clone();
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|seed| {
                            let mut one = |budget: usize| -> Trace {
                                let run = Run {
                                    budget: Budget {
                                        evaluations: Some(budget),
                                        time: None,
                                    },
                                    warm: warm.to_vec(),
                                };
                                by_name(name, seed)
                                    .expect("checked")
                                    .search(space, &mut eval, &run)
                            };
                            let fractions: Vec<f64> = budgets
                                .iter()
                                .map(|&b| fraction(d.optimum_ms, &one(b)))
                                .collect();
                            let long = one(largest);
                            let to = |target: f64| reached(d.optimum_ms, &long, target);
                            SeedResult {
                                fractions,
                                to_90: to(0.90),
                                to_95: to(0.95),
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a benchmark thread panicked"))
            .collect()
    });
    let n = per_seed.len().max(1) as f64;
    let mean = budgets
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, per_seed.iter().map(|s| s.fractions[i]).sum::<f64>() / n))
        .collect();
    let median = |pick: fn(&SeedResult) -> Option<usize>| {
        let mut v: Vec<usize> = per_seed
            .iter()
            .map(|s| pick(s).unwrap_or(usize::MAX))
            .collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().filter(|&m| m != usize::MAX)
    };
    StrategyResult {
        dataset: d.id.clone(),
        strategy: name.to_string(),
        mean,
        evals_90: median(|s| s.to_90),
        evals_95: median(|s| s.to_95),
        seeds,
    }
}

/// optimum / best of the trace, 0 where it measured nothing.
fn fraction(optimum_ms: f64, trace: &Trace) -> f64 {
    trace.best().map_or(0.0, |(_, ms)| optimum_ms / ms)
}

/// After how many evaluations the best so far is within `target` of the optimum.
fn reached(optimum_ms: f64, trace: &Trace, target: f64) -> Option<usize> {
    let mut best = f64::INFINITY;
    for (i, step) in trace.steps.iter().enumerate() {
        if let Some(ms) = step.outcome.score_ms().filter(|s| s.is_finite()) {
            best = best.min(ms);
        }
        if optimum_ms / best >= target {
            return Some(i + 1);
        }
    }
    None
}

/// The datasets of a Kernel Tuner cache (one), a CLTune CSV (one) or an ndtune store (one per
/// recorded campaign).
fn load(path: &Path) -> Result<Vec<Dataset>> {
    let name = path.to_string_lossy();
    let mut out = Vec::new();
    if name.ends_with(".csv") || name.ends_with(".csv.gz") {
        let table = ndtune_store::cltune::read_cltune_csv(path)?;
        // `sgemm-cltune-gtx680/sgemm_product.csv.gz`: the folder names the recording.
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        let kernel = format!("cltune {:?}", table.names);
        out.push(dataset(
            format!("cltune/{dir}"),
            kernel,
            table.names,
            table.entries.into_iter(),
            path,
        )?);
        return Ok(out);
    }
    if name.ends_with(".json") || name.ends_with(".json.gz") {
        let cache = kt::read_kt_cache(path)?;
        let stem = path
            .file_name()
            .map(|f| {
                f.to_string_lossy()
                    .trim_end_matches(".gz")
                    .trim_end_matches(".json")
                    .to_string()
            })
            .unwrap_or_default();
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        let kernel = format!(
            "{} {:?}",
            cache.header.kernel_name, cache.header.tune_params_keys
        );
        out.push(dataset(
            format!("{dir}/{stem}"),
            kernel,
            cache.header.tune_params_keys.clone(),
            cache.entries.into_iter(),
            path,
        )?);
        return Ok(out);
    }
    let store = Store::open_read_only(path)?;
    let devices: BTreeMap<String, String> = store
        .devices()?
        .into_iter()
        .map(|(fp, p)| (fp, p.name))
        .collect();
    let groups = store.groups()?;
    for g in &groups {
        let records = store.records(g)?;
        let Some(first) = records.first() else {
            continue;
        };
        let names: Vec<String> = first.key.config.keys().cloned().collect();
        let device = devices.get(&g.device).cloned().unwrap_or(g.device.clone());
        // A problem tuned under several setups is a dataset per setup.
        let setup = match groups.iter().filter(|o| o.same_problem(g)).count() {
            1 => String::new(),
            _ => format!(" (setup {})", g.setup),
        };
        out.push(dataset(
            format!("{}/{device}{setup}", g.kernel),
            format!("{} {} {:?}", g.kernel, g.source_hash, g.constants),
            names,
            records.into_iter().map(|r| (r.key.config, r.outcome)),
            path,
        )?);
    }
    Ok(out)
}

fn dataset(
    id: String,
    kernel: String,
    names: Vec<String>,
    entries: impl Iterator<Item = (Config, ndtune_core::Outcome)>,
    path: &Path,
) -> Result<Dataset> {
    let recorded = Recorded::infer(names, entries.collect())
        .with_context(|| format!("{}: {id} is not a space", path.display()))?;
    let optimum_ms = recorded
        .space()
        .points()
        .iter()
        .filter_map(|p| recorded.outcome(p).and_then(|o| o.score_ms()))
        .filter(|s| s.is_finite() && *s > 0.0)
        .reduce(f64::min)
        .with_context(|| format!("{}: {id} has no measured configuration", path.display()))?;
    Ok(Dataset {
        id,
        kernel,
        recorded,
        optimum_ms,
    })
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
        out += &format!(
            "\n{} ({} configurations, optimum {:.4} ms{})\n",
            info.id,
            info.configurations,
            info.optimum_ms,
            if info.warm_points > 0 {
                format!(", warm start from {} configurations", info.warm_points)
            } else {
                String::new()
            }
        );
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
