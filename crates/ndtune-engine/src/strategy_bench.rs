//! The strategy benchmark's datasets and runs, for `ndtune bench-strategies` and Python's
//! `ndtune.bench_strategies`: recorded spaces (a Kernel Tuner cache, a CLTune CSV, each
//! campaign of an ndtune store) replayed by a strategy over many seeds at several budgets, with
//! the mean fraction of the optimum reached and the evaluations needed to reach 90% and 95% of
//! it (the methodology of Schoonhoven et al. 2022). With several objectives ([`Dataset::costed`])
//! the fraction is of the true front's hypervolume that the front found covers, in the ln costs
//! against the recording's reference point ([`crate::front`]; in linear units random sampling
//! covered 0.9 of the fronts of the recordings within 25 evaluations: the slowest
//! configurations' box makes nearly any front look whole). The front ends print and plot.

use crate::front::ln_costs;
use ndtune_core::pareto::{front, hypervolume, reference_point};
use ndtune_core::{Config, Constants, Outcome};
use ndtune_metrics::{Definitions, Inputs, MetricDef, Metrics, Objective};
use ndtune_search::{by_name, Budget, Point, Recorded, Run, Trace};
use ndtune_store::kt::MetricValues;
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
    /// What a run's fraction is of: the optimum (the time's, or after [`Dataset::costed`] of
    /// one objective, its cost), or the true front's hypervolume.
    pub target: Target,
    /// The constants and the metric values recorded with each configuration (a Kernel Tuner
    /// cache's), what objectives other than the time are computed from.
    constants: Constants,
    values: MetricValues,
    metrics: Vec<MetricDef>,
}

/// What a run of a strategy is scored against.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// The lowest cost: a run's fraction is it over the best cost found.
    Optimum(f64),
    /// Several objectives: a run's fraction is the hypervolume its front covers over the true
    /// front's, both against `reference` (in ln costs).
    Front {
        reference: Vec<f64>,
        hypervolume: f64,
        /// How many configurations the true front has.
        size: usize,
    },
}

impl Dataset {
    /// This dataset costed by `objectives` (the recording's metrics, with `metrics` beside
    /// them, define the values): one objective makes its cost what runs minimise, several make
    /// the benchmark one of fronts ([`Target::Front`]).
    pub fn costed(
        self,
        objectives: &[Objective],
        metrics: &[MetricDef],
    ) -> Result<Dataset, BenchError> {
        let Some((first, more)) = objectives.split_first() else {
            return Ok(self);
        };
        let defs = Definitions {
            metrics: self.metrics.clone(),
            objective: first.clone(),
            more_objectives: more.to_vec(),
        }
        .with(metrics.to_vec(), Vec::new());
        let space = self.recorded.space().clone();
        let names = space.names().to_vec();
        let configs: Vec<Config> = space.points().iter().map(|p| space.config(p)).collect();
        let mut recorded: Vec<String> = self
            .values
            .values()
            .flat_map(|v| v.keys())
            .cloned()
            .collect();
        recorded.sort();
        recorded.dedup();
        let checked =
            Metrics::check_recorded(defs, names, configs.iter(), &self.constants, &recorded)
                .map_err(|e| BenchError::Dataset(format!("{}: {e}", self.id)))?;
        let (constants, values) = (self.constants.clone(), self.values.clone());
        let costs = move |c: &Config, o: &Outcome| {
            checked.costs(&Inputs::new(&constants, c, o).recorded(values.get(c)))
        };
        let costed = self.recorded.costed_each(objectives.len(), costs);
        let all: Vec<Vec<f64>> = space
            .points()
            .iter()
            .filter_map(|p| costed.costs_of(p))
            .map(|c| ln_costs(&c))
            .collect();
        let target = if more.is_empty() {
            let optimum = all.iter().map(|c| c[0].exp()).reduce(f64::min);
            Target::Optimum(optimum.ok_or_else(|| nothing_measured(&self.id))?)
        } else {
            let reference = reference_point(&all).ok_or_else(|| nothing_measured(&self.id))?;
            Target::Front {
                hypervolume: hypervolume(&all, &reference),
                size: front(&all).len(),
                reference,
            }
        };
        Ok(Dataset {
            recorded: costed,
            target,
            ..self
        })
    }

    /// A run's fraction of the target within its first `budget` evaluations: the optimum over
    /// the best cost found, or the hypervolume of the front found over the true front's; 0
    /// where they measured nothing.
    fn fraction(&self, trace: &Trace, budget: usize) -> f64 {
        let steps = trace.steps.iter().take(budget);
        match &self.target {
            Target::Optimum(optimum) => steps
                .filter_map(|s| s.cost)
                .reduce(f64::min)
                .map_or(0.0, |c| optimum / c),
            Target::Front {
                reference,
                hypervolume: whole,
                ..
            } => {
                let found: Vec<Vec<f64>> = steps
                    .filter_map(|s| Some(ln_costs(s.costs.as_ref()?)))
                    .collect();
                hypervolume(&found, reference) / whole
            }
        }
    }

    /// After how many evaluations the fraction reaches `target`.
    fn reached(&self, trace: &Trace, target: f64) -> Option<usize> {
        (1..=trace.steps.len())
            .find(|&n| trace.steps[n - 1].costs.is_some() && self.fraction(trace, n) >= target)
    }
}

fn nothing_measured(id: &str) -> BenchError {
    BenchError::Dataset(format!(
        "{id}: no configuration has a value of every objective"
    ))
}

/// What a benchmark says of a dataset beside its results.
#[derive(Debug, Serialize, Clone)]
pub struct DatasetInfo {
    pub id: String,
    pub configurations: usize,
    pub optimum_ms: f64,
    /// Configurations its runs measured first (a warm start).
    pub warm_points: usize,
    /// With several objectives, the true front the fractions are of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub front: Option<FrontInfo>,
}

/// The true front of a dataset of several objectives.
#[derive(Debug, Serialize, Clone)]
pub struct FrontInfo {
    /// Configurations on it.
    pub size: usize,
    pub hypervolume: f64,
    /// The reference point, in ln costs.
    pub reference: Vec<f64>,
}

impl DatasetInfo {
    fn of(d: &Dataset, warm_points: usize) -> DatasetInfo {
        let front = match &d.target {
            Target::Optimum(_) => None,
            Target::Front {
                reference,
                hypervolume,
                size,
            } => Some(FrontInfo {
                size: *size,
                hypervolume: *hypervolume,
                reference: reference.clone(),
            }),
        };
        DatasetInfo {
            id: d.id.clone(),
            configurations: d.recorded.space().len(),
            optimum_ms: d.optimum_ms,
            warm_points,
            front,
        }
    }
}

/// Another tool's runs on a dataset, each the configurations it evaluated in order (their
/// values in the recording's parameter order): scored here as ndtune's runs are
/// ([`score_orders`]). bench/kt_strategies.py writes them for front strategies.
#[derive(Debug, Deserialize)]
pub struct Orders {
    pub dataset: String,
    pub strategy: String,
    pub orders: Vec<Vec<Vec<serde_json::Value>>>,
}

/// The fractions [`bench`] gives, of runs another tool made ([`Orders`]) on dataset `d`:
/// configurations the recording lacks or that repeat count as evaluations that found nothing.
pub fn score_orders(
    d: &Dataset,
    runs: &Orders,
    budgets: &[usize],
) -> Result<StrategyResult, BenchError> {
    let space = d.recorded.space();
    let names = space.names().to_vec();
    let mut per_seed = Vec::new();
    for order in &runs.orders {
        let mut steps = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for values in order {
            let config: Config = names
                .iter()
                .zip(values)
                .filter_map(|(n, v)| Some((n.clone(), json_value(v)?)))
                .collect();
            let point = space
                .codec()
                .point(&config)
                .ok()
                .filter(|p| seen.insert(p.clone()));
            let costs = point.as_ref().and_then(|p| d.recorded.costs_of(p));
            steps.push(ndtune_search::Step {
                point: point.unwrap_or_default(),
                outcome: Outcome::Pruned {
                    constraint: ndtune_search::NOT_RECORDED.into(),
                },
                reused: true,
                cost: costs.as_ref().map(|c| c[0]),
                costs,
            });
        }
        per_seed.push(Trace {
            steps,
            decided: None,
        });
    }
    let largest = *budgets.last().ok_or(BenchError::NoBudget)?;
    let seeds: Vec<SeedResult> = per_seed
        .iter()
        .map(|t| SeedResult {
            fractions: budgets.iter().map(|&b| d.fraction(t, b)).collect(),
            to_90: d.reached(t, 0.90).filter(|&n| n <= largest),
            to_95: d.reached(t, 0.95).filter(|&n| n <= largest),
        })
        .collect();
    Ok(summarise(d, &runs.strategy, budgets, &seeds))
}

/// A parameter value as JSON writes it.
fn json_value(v: &serde_json::Value) -> Option<ndtune_core::Value> {
    match v {
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(ndtune_core::Value::Int)
            .or_else(|| n.as_f64().map(ndtune_core::Value::Real)),
        serde_json::Value::String(s) => Some(ndtune_core::Value::from(s.as_str())),
        _ => None,
    }
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

/// Kernel Tuner's strategies on `datasets`, as `bench/kt_strategies.py` wrote them to `path`:
/// the orders its runs measured in (scored here as ndtune's are, at `budgets`), or results it
/// scored itself; those of other datasets are left out.
pub fn kt_results(
    path: &Path,
    datasets: &[Dataset],
    budgets: &[usize],
) -> Result<Vec<StrategyResult>, BenchError> {
    let text = ndtune_core::input::read_text(path, ndtune_core::input::KT_RESULTS)
        .map_err(|e| BenchError::Dataset(e.to_string()))?;
    let not_theirs = |e: serde_json::Error| {
        BenchError::Dataset(format!(
            "{}: not bench/kt_strategies.py's JSON: {e}",
            path.display()
        ))
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(not_theirs)?;
    let runs = value
        .as_array()
        .and_then(|a| a.first())
        .is_some_and(|r| r.get("orders").is_some());
    if runs {
        let theirs: Vec<Orders> = serde_json::from_value(value).map_err(not_theirs)?;
        theirs
            .iter()
            .filter_map(|r| datasets.iter().find(|d| d.id == r.dataset).map(|d| (d, r)))
            .map(|(d, r)| score_orders(d, r, budgets))
            .collect()
    } else {
        let theirs: Vec<StrategyResult> = serde_json::from_value(value).map_err(not_theirs)?;
        Ok(theirs
            .into_iter()
            .filter(|r| datasets.iter().any(|d| d.id == r.dataset))
            .collect())
    }
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
        let mut d = dataset(
            format!("{}/{stem}", folder()),
            kernel,
            cache.header.tune_params_keys.clone(),
            cache.entries.into_iter().collect(),
            path,
        )?;
        // ndtune writes its constants as the problem size.
        d.constants = serde_json::from_value(cache.header.problem_size.clone()).unwrap_or_default();
        d.values = cache.metrics;
        d.metrics = cache.header.metrics;
        return Ok(vec![d]);
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
        target: Target::Optimum(optimum_ms),
        constants: Constants::new(),
        values: MetricValues::new(),
        metrics: Vec::new(),
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
        let info = DatasetInfo::of(d, points.len());
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
                                        d.fraction(&long, b)
                                    } else {
                                        d.fraction(&one(b), b)
                                    }
                                })
                                .collect();
                            let to = |target: f64| d.reached(&long, target);
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
    Ok(summarise(d, name, budgets, &per_seed))
}

/// The mean fraction per budget and the median evaluations to 90% and 95% over seeds.
fn summarise(
    d: &Dataset,
    name: &str,
    budgets: &[usize],
    per_seed: &[SeedResult],
) -> StrategyResult {
    let seeds = per_seed.len() as u64;
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

/// The results as a table (`ndtune bench-strategies` prints it): per dataset a row per strategy,
/// the best at each budget starred, and who wins where.
pub fn table(infos: &[DatasetInfo], results: &[StrategyResult], budgets: &[usize]) -> String {
    let mut out = String::new();
    for info in infos {
        let rows: Vec<&StrategyResult> = results.iter().filter(|r| r.dataset == info.id).collect();
        let width = rows
            .iter()
            .map(|r| r.strategy.len())
            .max()
            .unwrap_or(8)
            .max(8);
        out += &format!("\n{} ({})\n", info.id, info.describe());
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

impl DatasetInfo {
    /// The dataset as its header says it: its size, and the optimum or the true front the
    /// fractions are of.
    pub fn describe(&self) -> String {
        let info = self;
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
}
