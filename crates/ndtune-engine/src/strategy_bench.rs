//! The strategy benchmark's datasets and runs, for `ndtune bench-strategies` and Python's
//! `ndtune.bench_strategies`: recorded spaces (a Kernel Tuner cache, a CLTune CSV, each
//! campaign of an ndtune store) replayed by a strategy over many seeds at several budgets, with
//! the mean fraction of the optimum reached and the evaluations needed to reach 90% and 95% of
//! it (the methodology of Schoonhoven et al. 2022). The front ends print and plot.

use ndtune_core::{Config, Outcome};
use ndtune_search::{by_name, Budget, Point, Recorded, Run, Trace};
use ndtune_store::{kt, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One recorded space.
pub struct Dataset {
    /// `kernel/device`, e.g. `convolution_milo/A100`: how results and Kernel Tuner's own
    /// figures (bench/kt_strategies.py) name it.
    pub id: String,
    /// What identifies the kernel for warm starts (Kernel Tuner: the cache's kernel name and
    /// parameters; a store: kernel, source hash and constants).
    pub kernel: String,
    pub recorded: Recorded,
    pub optimum_ms: f64,
}

/// What a benchmark says of a dataset beside its results.
#[derive(Debug, Serialize, Clone)]
pub struct DatasetInfo {
    pub id: String,
    pub configurations: usize,
    pub optimum_ms: f64,
    /// Configurations its runs measured first (a warm start).
    pub warm_points: usize,
}

/// One strategy on one dataset.
#[derive(Debug, Serialize, Deserialize, Clone)]
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

/// Why a recording gives no dataset, or a benchmark cannot run; each names the file or the
/// strategy.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    KtFile(#[from] kt::KtError),
    /// A CLTune CSV that cannot be read.
    #[error("{0}")]
    Cltune(String),
    #[error("{}: {source}", path.display())]
    Store {
        path: std::path::PathBuf,
        source: ndtune_store::StoreError,
    },
    /// A recording that is no space a strategy can search, or has nothing measured.
    #[error("{0}")]
    Dataset(String),
    #[error(transparent)]
    Strategy(#[from] ndtune_search::UnknownStrategy),
    #[error("give at least one budget")]
    NoBudget,
}

/// The datasets of a Kernel Tuner cache (one), a CLTune CSV (one) or an ndtune store (one per
/// recorded campaign, and per setup where a problem was tuned under several).
pub fn datasets(path: &Path) -> Result<Vec<Dataset>, BenchError> {
    let name = path.to_string_lossy();
    let folder = || {
        path.parent()
            .and_then(|p| p.file_name())
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default()
    };
    if name.ends_with(".csv") || name.ends_with(".csv.gz") {
        let table = ndtune_store::cltune::read_cltune_csv(path)
            .map_err(|e| BenchError::Cltune(e.to_string()))?;
        // `sgemm-cltune-gtx680/sgemm_product.csv.gz`: the folder names the recording.
        let kernel = format!("cltune {:?}", table.names);
        return Ok(vec![dataset(
            format!("cltune/{}", folder()),
            kernel,
            table.names,
            table.entries,
            path,
        )?]);
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
        let kernel = format!(
            "{} {:?}",
            cache.header.kernel_name, cache.header.tune_params_keys
        );
        return Ok(vec![dataset(
            format!("{}/{stem}", folder()),
            kernel,
            cache.header.tune_params_keys.clone(),
            cache.entries.into_iter().collect(),
            path,
        )?]);
    }
    let in_store = |source| BenchError::Store {
        path: path.to_path_buf(),
        source,
    };
    let store = Store::open_read_only(path).map_err(in_store)?;
    let devices: BTreeMap<String, String> = store
        .devices()
        .map_err(in_store)?
        .into_iter()
        .map(|(fp, p)| (fp, p.name))
        .collect();
    let groups = store.groups().map_err(in_store)?;
    let mut out = Vec::new();
    for g in &groups {
        let records = store.records(g).map_err(in_store)?;
        let Some(first) = records.first() else {
            continue;
        };
        let names: Vec<String> = first.key.config.keys().cloned().collect();
        let device = devices.get(&g.device).cloned().unwrap_or(g.device.clone());
        let setup = match groups.iter().filter(|o| o.same_problem(g)).count() {
            1 => String::new(),
            _ => format!(" (setup {})", g.setup),
        };
        out.push(dataset(
            format!("{}/{device}{setup}", g.kernel),
            format!("{} {} {:?}", g.kernel, g.source_hash, g.constants),
            names,
            records
                .into_iter()
                .map(|r| (r.key.config, r.outcome))
                .collect(),
            path,
        )?);
    }
    Ok(out)
}

fn dataset(
    id: String,
    kernel: String,
    names: Vec<String>,
    entries: Vec<(Config, Outcome)>,
    path: &Path,
) -> Result<Dataset, BenchError> {
    let recorded = Recorded::infer(names, entries).map_err(|e| {
        BenchError::Dataset(format!("{}: {id} is not a space: {e}", path.display()))
    })?;
    let optimum_ms = recorded
        .space()
        .points()
        .iter()
        .filter_map(|p| recorded.outcome(p).and_then(|o| o.score_ms()))
        .filter(|s| s.is_finite() && *s > 0.0)
        .reduce(f64::min)
        .ok_or_else(|| {
            BenchError::Dataset(format!(
                "{}: {id} has no measured configuration",
                path.display()
            ))
        })?;
    Ok(Dataset {
        id,
        kernel,
        recorded,
        optimum_ms,
    })
}

/// The warm start of dataset `i`: the best configurations of the other datasets of the same
/// kernel ([`ndtune_search::warm_start`]), at most `points`: learn on six GPUs, tune the seventh.
pub fn warm_start(datasets: &[Dataset], i: usize, points: usize) -> Vec<Point> {
    let others: Vec<&Recorded> = datasets
        .iter()
        .enumerate()
        .filter(|(j, o)| *j != i && o.kernel == datasets[i].kernel)
        .map(|(_, o)| &o.recorded)
        .collect();
    ndtune_search::warm_start(&others, points)
}

/// Runs each of `strategies` with seeds `0..seeds` at each of `budgets` (sorted here) on every
/// dataset; with `warm`, each dataset's runs first measure that many best configurations of the
/// other datasets of the same kernel. `started` hears of each dataset before its runs.
pub fn bench_all(
    datasets: &[Dataset],
    strategies: &[String],
    budgets: &[usize],
    seeds: u64,
    warm: Option<usize>,
    mut started: impl FnMut(&DatasetInfo),
) -> Result<(Vec<DatasetInfo>, Vec<StrategyResult>), BenchError> {
    let mut budgets = budgets.to_vec();
    budgets.sort_unstable();
    budgets.dedup();
    let (mut infos, mut results) = (Vec::new(), Vec::new());
    for (i, d) in datasets.iter().enumerate() {
        let points = warm.map_or_else(Vec::new, |k| warm_start(datasets, i, k));
        let info = DatasetInfo {
            id: d.id.clone(),
            configurations: d.recorded.space().len(),
            optimum_ms: d.optimum_ms,
            warm_points: points.len(),
        };
        started(&info);
        infos.push(info);
        for name in strategies {
            results.push(bench(d, name, &budgets, seeds, &points)?);
        }
    }
    Ok((infos, results))
}

/// One seed's run: the fraction of the optimum at each budget, and the evaluations to reach 90%
/// and 95% of it.
struct SeedResult {
    fractions: Vec<f64>,
    to_90: Option<usize>,
    to_95: Option<usize>,
}

/// Runs strategy `name` with seeds `0..seeds` at every one of `budgets` (ascending, distinct,
/// at least one) on dataset `d`, measuring `warm` first; the seeds spread over the cores.
pub fn bench(
    d: &Dataset,
    name: &str,
    budgets: &[usize],
    seeds: u64,
    warm: &[Point],
) -> Result<StrategyResult, BenchError> {
    by_name(name, 0)?;
    let &largest = budgets.last().ok_or(BenchError::NoBudget)?;
    let space = d.recorded.space();
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
                                    patience: None,
                                };
                                by_name(name, seed)
                                    .expect("checked")
                                    .search(space, &mut eval, &run)
                            };
                            let long = one(largest);
                            // A strategy whose choices do not depend on the budget runs once.
                            let anytime = by_name(name, seed).expect("checked").anytime();
                            let fractions: Vec<f64> = budgets
                                .iter()
                                .map(|&b| {
                                    if anytime {
                                        fraction(d.optimum_ms, &long, b)
                                    } else {
                                        fraction(d.optimum_ms, &one(b), b)
                                    }
                                })
                                .collect();
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
    Ok(StrategyResult {
        dataset: d.id.clone(),
        strategy: name.to_string(),
        mean,
        evals_90: median(|s| s.to_90),
        evals_95: median(|s| s.to_95),
        seeds,
    })
}

/// optimum / best of the trace's first `budget` evaluations, 0 where they measured nothing.
fn fraction(optimum_ms: f64, trace: &Trace, budget: usize) -> f64 {
    trace
        .steps
        .iter()
        .take(budget)
        .filter_map(|s| s.outcome.score_ms().filter(|ms| ms.is_finite()))
        .reduce(f64::min)
        .map_or(0.0, |ms| optimum_ms / ms)
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
