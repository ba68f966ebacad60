//! Evaluating work-group size prediction (Cummins et al. 2016, §4 and §7): protocols that split
//! the scenarios into training and test sets (never the rows of one scenario into both), the
//! classifiers with the fallback handlers of Algorithm 1, the regressors with Algorithm 2, and
//! the metrics: accuracy, validity, refused, performance relative to the oracle, speedup over the
//! baseline and over the human expert's 32x4, prediction time.
//!
//! A size is legal in a test scenario when it was measured there; Algorithm 1's fallbacks and
//! Algorithm 2's self-correction only ever return legal sizes, so validity after fallback is 100%.

use crate::data::Data;
use crate::models::{Classifier, ClassifierKind, ModelError, Regressor};
use crate::oracle::{analyse, Status, Wg, EXPERT};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

/// How scenarios are split into training and test sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Ten folds of scenarios.
    Cv10,
    /// Train on kernels named `syn*`, test on the rest.
    SyntheticReal,
    LooDevice,
    LooKernel,
    LooDataset,
}

impl Protocol {
    pub const ALL: [Protocol; 5] = [
        Protocol::Cv10,
        Protocol::SyntheticReal,
        Protocol::LooDevice,
        Protocol::LooKernel,
        Protocol::LooDataset,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Cv10 => "cv10",
            Protocol::SyntheticReal => "synthetic-real",
            Protocol::LooDevice => "loo-device",
            Protocol::LooKernel => "loo-kernel",
            Protocol::LooDataset => "loo-dataset",
        }
    }

    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The (training, test) scenario index sets.
    pub fn folds(self, data: &Data, seed: u64) -> Vec<Fold> {
        let n = data.scenarios.len();
        match self {
            Protocol::Cv10 => {
                let mut order: Vec<usize> = (0..n).collect();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                for i in (1..n).rev() {
                    order.swap(i, rng.random_range(0..=i));
                }
                let k = 10.min(n);
                (0..k)
                    .map(|f| {
                        let test: Vec<usize> = order.iter().copied().skip(f).step_by(k).collect();
                        let train = (0..n).filter(|i| !test.contains(i)).collect();
                        (train, test)
                    })
                    .collect()
            }
            Protocol::SyntheticReal => {
                vec![(0..n).partition(|&i| data.scenarios[i].kernel.starts_with("syn"))]
            }
            Protocol::LooDevice => leave_one_out(data.scenarios.iter().map(|s| s.device.as_str())),
            Protocol::LooKernel => leave_one_out(data.scenarios.iter().map(|s| s.kernel.as_str())),
            Protocol::LooDataset => {
                leave_one_out(data.scenarios.iter().map(|s| s.dataset.as_str()))
            }
        }
    }
}

/// A fold: the training and the test scenarios' indices.
pub type Fold = (Vec<usize>, Vec<usize>);

/// One fold per distinct key: its scenarios are the test set, all others the training set.
fn leave_one_out<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<Fold> {
    let keys: Vec<&str> = keys.collect();
    let distinct: BTreeSet<&str> = keys.iter().copied().collect();
    distinct
        .into_iter()
        .map(|g| (0..keys.len()).partition(|&i| keys[i] != g))
        .collect()
}

/// Algorithm 1's handlers for a prediction that is not legal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    Baseline,
    Random,
    NearestNeighbour,
}

impl Fallback {
    pub const ALL: [Fallback; 3] = [
        Fallback::Baseline,
        Fallback::Random,
        Fallback::NearestNeighbour,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fallback::Baseline => "baseline",
            Fallback::Random => "random",
            Fallback::NearestNeighbour => "nearest",
        }
    }
}

/// A way to choose a work-group size for a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    Classify(ClassifierKind, Fallback),
    /// Algorithm 2 on a random forest predicting the runtime.
    RegressRuntime,
    /// Algorithm 2 on a random forest predicting the speedup over the baseline.
    RegressSpeedup,
    /// The best fixed size of the training set.
    Baseline,
}

impl Method {
    /// Every classifier with every fallback, both regressors, and the baseline.
    pub fn all() -> Vec<Method> {
        let mut m: Vec<Method> = ClassifierKind::ALL
            .into_iter()
            .flat_map(|k| {
                Fallback::ALL
                    .into_iter()
                    .map(move |f| Method::Classify(k, f))
            })
            .collect();
        m.extend([
            Method::RegressRuntime,
            Method::RegressSpeedup,
            Method::Baseline,
        ]);
        m
    }

    /// The methods a comma-separated list names: a classifier (with every fallback),
    /// `forest-runtime`, `forest-speedup` or `baseline`; an unknown name is an error listing
    /// the names.
    pub fn parse_list(list: &str) -> Result<Vec<Method>, UnknownMethod> {
        let mut methods = Vec::new();
        for name in list.split(',').map(str::trim) {
            match name {
                "forest-runtime" => methods.push(Method::RegressRuntime),
                "forest-speedup" => methods.push(Method::RegressSpeedup),
                "baseline" => methods.push(Method::Baseline),
                _ => {
                    let kind = ClassifierKind::parse(name).ok_or_else(|| UnknownMethod {
                        name: name.to_string(),
                    })?;
                    methods.extend(Fallback::ALL.into_iter().map(|f| Method::Classify(kind, f)));
                }
            }
        }
        Ok(methods)
    }

    fn names(self) -> (String, String) {
        match self {
            Method::Classify(k, f) => (k.name().into(), f.name().into()),
            Method::RegressRuntime => ("forest-runtime".into(), "self-correct".into()),
            Method::RegressSpeedup => ("forest-speedup".into(), "self-correct".into()),
            Method::Baseline => ("baseline".into(), "-".into()),
        }
    }
}

/// One method's figures over every test scenario of every fold. Figures over no scenario are NaN
/// (`null` in JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MethodResult {
    pub model: String,
    pub fallback: String,
    pub scenarios: usize,
    /// The prediction (before any fallback) was the oracle.
    pub accuracy: f64,
    /// The prediction (before any fallback) was legal.
    pub validity: f64,
    /// The prediction (before any fallback) was refused there.
    pub refused: f64,
    /// Geometric mean of oracle time / chosen size's time.
    pub performance_geomean: f64,
    /// Minimum, quartiles and maximum of that ratio.
    #[serde(deserialize_with = "quantiles_or_nan")]
    pub performance_quantiles: [f64; 5],
    #[serde(deserialize_with = "f64_or_nan")]
    pub speedup_over_baseline_median: f64,
    /// Over the scenarios where 32x4 is legal.
    pub speedup_over_expert_median: Option<f64>,
    /// Mean time to choose, features given, in microseconds.
    pub predict_us: f64,
    /// The most training scenarios it was trained on in a fold: fewer than the fold's where
    /// [`Options::max_training`] cut them to a sample (0 in evaluations kept before it existed).
    #[serde(default)]
    pub trained_on: usize,
    /// Per test scenario, ascending: oracle time / chosen size's time (Fig. 4's distribution).
    #[serde(default)]
    pub performance: Vec<f64>,
    /// Per test scenario, ascending: the baseline's time / the chosen size's time.
    #[serde(default)]
    pub speedups_over_baseline: Vec<f64>,
    /// Per test scenario where 32x4 is legal, ascending: its time / the chosen size's time
    /// (Fig. 6's distribution).
    #[serde(default)]
    pub speedups_over_expert: Vec<f64>,
}

/// Reads back a figure that JSON holds as `null` where it was NaN.
fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

fn quantiles_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 5], D::Error> {
    Ok(<[Option<f64>; 5]>::deserialize(d)?.map(|q| q.unwrap_or(f64::NAN)))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaselineSummary {
    pub size: [u64; 2],
    pub performance_geomean: f64,
}

/// An evaluation under one protocol.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub protocol: String,
    pub folds: usize,
    pub scenarios: usize,
    /// The most training scenarios a fold has.
    #[serde(default)]
    pub training_scenarios: usize,
    /// [`Options::max_training`] of the evaluation.
    #[serde(default)]
    pub max_training: Option<usize>,
    pub results: Vec<MethodResult>,
    pub baseline: Option<BaselineSummary>,
    /// Mean of each scenario's slowest over fastest legal time: what any choice can gain.
    pub mean_spread: Option<f64>,
}

/// What is known of each scenario: the time of each legal size, and the refused ones.
struct Facts {
    times: Vec<HashMap<Wg, f64>>,
    refused: Vec<BTreeSet<Wg>>,
    oracle: Vec<(Wg, f64)>,
}

impl Facts {
    fn new(data: &Data) -> Facts {
        let n = data.scenarios.len();
        let mut times = vec![HashMap::new(); n];
        let mut refused = vec![BTreeSet::new(); n];
        for o in &data.observations {
            match (o.status, o.cost) {
                (Status::Measured, Some(t)) => {
                    times[o.scenario].insert(o.wg, t);
                }
                (Status::Refused, _) => {
                    refused[o.scenario].insert(o.wg);
                }
                _ => {}
            }
        }
        let oracle = times
            .iter()
            .map(|t| {
                let (wg, ms) = t
                    .iter()
                    .min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(b.0)))
                    .expect("every scenario has a measured size (checked on load)");
                (*wg, *ms)
            })
            .collect();
        Facts {
            times,
            refused,
            oracle,
        }
    }

    fn legal(&self, s: usize, wg: Wg) -> bool {
        self.times[s].contains_key(&wg)
    }
}

/// One test scenario's choice: (scenario, chosen size, first prediction, microseconds taken).
type Choice = (usize, Wg, Option<Wg>, f64);

/// Sizes of the training scenarios, best fixed choice first: those legal in every training
/// scenario by geometric-mean performance, then the rest by how many scenarios they are legal
/// in and their geometric mean there.
fn ranking(facts: &Facts, train: &[usize]) -> Vec<Wg> {
    let mut stats: BTreeMap<Wg, (usize, f64)> = BTreeMap::new();
    for &s in train {
        for (wg, t) in &facts.times[s] {
            let e = stats.entry(*wg).or_default();
            e.0 += 1;
            e.1 += (facts.oracle[s].1 / t).ln();
        }
    }
    let mut ranked: Vec<(Wg, usize, f64)> = stats
        .into_iter()
        .map(|(wg, (n, logs))| (wg, n, logs / n as f64))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(a.0.cmp(&b.0)));
    ranked.into_iter().map(|(wg, ..)| wg).collect()
}

/// Every size of `data`, best fixed choice first (see [`ranking`]): what a trained model falls
/// back on.
pub fn fixed_ranking(data: &Data) -> Vec<Wg> {
    let facts = Facts::new(data);
    ranking(&facts, &(0..data.scenarios.len()).collect::<Vec<_>>())
}

/// The oracle size of every scenario of `data`, in order.
pub fn oracles(data: &Data) -> Vec<Wg> {
    Facts::new(data)
        .oracle
        .into_iter()
        .map(|(wg, _)| wg)
        .collect()
}

/// The first size of `ranking` legal in `s` (or, where none is, `s`'s smallest legal size).
fn first_legal(facts: &Facts, ranking: &[Wg], s: usize) -> Wg {
    ranking
        .iter()
        .copied()
        .find(|&w| facts.legal(s, w))
        .unwrap_or_else(|| *facts.times[s].keys().min().expect("a measured size"))
}

/// A name in a list of methods that names none ([`Method::parse_list`]).
#[derive(Debug, thiserror::Error)]
#[error("unknown model `{name}`; one of {}, forest-runtime, forest-speedup, baseline", ClassifierKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "))]
pub struct UnknownMethod {
    pub name: String,
}

/// Keeps an evaluation in `store` for `ndtune report` (a study of kind `learn`), named by its
/// protocol, the `models` asked for (all without) and the `data` file's name.
pub fn keep(
    store: &ndtune_store::Store,
    report: &Report,
    data: &std::path::Path,
    models: Option<&str>,
) -> Result<(), ndtune_store::StoreError> {
    let data_name = data.file_name().unwrap_or(data.as_os_str());
    let models = models.map_or(String::new(), |m| format!(" ({m})"));
    store.put_study(&ndtune_store::Study {
        kind: "learn".into(),
        name: format!(
            "{}{models} on {}",
            report.protocol,
            data_name.to_string_lossy()
        ),
        body: serde_json::to_value(report).expect("an evaluation serialises"),
        created_at: ndtune_store::now_ms(),
    })
}

/// Why an evaluation could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{protocol} has no fold with both training and test scenarios: {why}")]
    NoFolds { protocol: &'static str, why: String },
    #[error("fold {fold} of {folds}: {source}")]
    Model {
        fold: usize,
        folds: usize,
        source: ModelError,
    },
}

/// Where an evaluation is: reported before each model is trained and tested on a fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step<'a> {
    /// Steps done so far, of `total` (one per fold and model).
    pub done: usize,
    pub total: usize,
    /// The fold, from 1, of `folds`.
    pub fold: usize,
    pub folds: usize,
    /// What is trained and tested: a classifier's name, `forest-runtime`, `forest-speedup` or
    /// `baseline`.
    pub model: &'a str,
}

/// What one step of a fold trains and tests: a classifier with all its fallbacks, a regressor
/// or the baseline (indices into the methods).
enum Unit {
    Classifier(ClassifierKind, Vec<(usize, Fallback)>),
    Regressor { speedup: bool, method: usize },
    Baseline(usize),
}

impl Unit {
    fn of(methods: &[Method]) -> Vec<Unit> {
        let mut units: Vec<Unit> = Vec::new();
        for (m, method) in methods.iter().enumerate() {
            match *method {
                Method::Classify(kind, fallback) => {
                    let known = units.iter_mut().find_map(|u| match u {
                        Unit::Classifier(k, list) if *k == kind => Some(list),
                        _ => None,
                    });
                    match known {
                        Some(list) => list.push((m, fallback)),
                        None => units.push(Unit::Classifier(kind, vec![(m, fallback)])),
                    }
                }
                Method::RegressRuntime => units.push(Unit::Regressor {
                    speedup: false,
                    method: m,
                }),
                Method::RegressSpeedup => units.push(Unit::Regressor {
                    speedup: true,
                    method: m,
                }),
                Method::Baseline => units.push(Unit::Baseline(m)),
            }
        }
        units
    }

    /// Whether it trains on a sample where a fold has over [`Options::max_training`]
    /// scenarios: the models whose training time grows fastest with the scenarios (quadratically
    /// for the SVM; the regressors' rows are scenarios times sizes).
    fn samples(&self) -> bool {
        matches!(
            self,
            Unit::Classifier(ClassifierKind::Logistic | ClassifierKind::Svm, _)
                | Unit::Regressor { .. }
        )
    }

    /// The methods whose choices it makes.
    fn methods(&self) -> Vec<usize> {
        match self {
            Unit::Classifier(_, fallbacks) => fallbacks.iter().map(|&(m, _)| m).collect(),
            &Unit::Regressor { method, .. } | &Unit::Baseline(method) => vec![method],
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Unit::Classifier(kind, _) => kind.name(),
            Unit::Regressor { speedup: false, .. } => "forest-runtime",
            Unit::Regressor { speedup: true, .. } => "forest-speedup",
            Unit::Baseline(_) => "baseline",
        }
    }
}

/// Why `protocol` has no usable fold on `data`.
fn no_folds(protocol: Protocol, data: &Data) -> EvalError {
    let n = data.scenarios.len();
    let distinct = |what: &str, key: fn(&crate::data::Scenario) -> &str| {
        let keys: BTreeSet<&str> = data.scenarios.iter().map(key).collect();
        format!(
            "it leaves out one {what} at a time and needs scenarios of at least 2; the data has {} ({})",
            keys.len(),
            keys.into_iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        )
    };
    let why = match protocol {
        Protocol::Cv10 => format!("it needs at least 2 scenarios; the data has {n}"),
        Protocol::SyntheticReal => {
            let synthetic = data
                .scenarios
                .iter()
                .filter(|s| s.kernel.starts_with("syn"))
                .count();
            format!(
                "it trains on the kernels named `syn*` and tests on the others; the data has {synthetic} scenarios of synthetic kernels and {} of others",
                n - synthetic
            )
        }
        Protocol::LooDevice => distinct("device", |s| &s.device),
        Protocol::LooKernel => distinct("kernel", |s| &s.kernel),
        Protocol::LooDataset => distinct("dataset", |s| &s.dataset),
    };
    EvalError::NoFolds {
        protocol: protocol.name(),
        why,
    }
}

/// How an evaluation runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Seed of the folds, the random fallback, the samples and the models.
    pub seed: u64,
    /// Steps (a model trained and tested on a fold) run at once, each on its own thread.
    pub jobs: usize,
    /// The most training scenarios of a fold that logistic regression, the SVM and the
    /// regressors train on: a fold with more trains them on a random sample of this many
    /// (seeded; the other models, the ranking and the fallbacks use them all). `None`: all.
    pub max_training: Option<usize>,
}

/// [`Options::max_training`] by default: on a 100 MB CSV of 1,120 scenarios, cv10 then finishes
/// in 24 minutes on a loaded 2-core machine (BENCHMARKS.md); the shipped data's folds are all
/// below it.
pub const MAX_TRAINING: usize = 300;

impl Default for Options {
    fn default() -> Options {
        Options {
            seed: 1,
            jobs: 1,
            max_training: Some(MAX_TRAINING),
        }
    }
}

/// What every model of one fold trains on and is tested on.
struct FoldSet {
    train: Vec<usize>,
    /// Positions in `train` of the sample the models that sample train on (all where the fold
    /// is within the limit).
    sample: Vec<usize>,
    test: Vec<usize>,
    /// The training sizes, best fixed choice first.
    rank: Vec<Wg>,
    /// The classes (the training oracles), and the training rows and their classes.
    classes: Vec<Wg>,
    x: Vec<Vec<f64>>,
    y: Vec<usize>,
    seed: u64,
}

impl FoldSet {
    fn new(
        facts: &Facts,
        data: &Data,
        index: usize,
        (train, test): Fold,
        options: &Options,
    ) -> FoldSet {
        let seed = options.seed ^ (index as u64).wrapping_mul(0x9E37_79B9);
        let mut sample: Vec<usize> = (0..train.len()).collect();
        if let Some(max) = options.max_training.filter(|&m| m < train.len()) {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5A3F1E);
            for i in 0..max {
                sample.swap(i, rng.random_range(i..train.len()));
            }
            sample.truncate(max);
            sample.sort_unstable();
        }
        let rank = ranking(facts, &train);
        let classes: Vec<Wg> = train
            .iter()
            .map(|&s| facts.oracle[s].0)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let x = train
            .iter()
            .map(|&s| data.scenarios[s].features.clone())
            .collect();
        let y = train
            .iter()
            .map(|&s| classes.binary_search(&facts.oracle[s].0).expect("a class"))
            .collect();
        FoldSet {
            train,
            sample,
            test,
            rank,
            classes,
            x,
            y,
            seed,
        }
    }
}

/// One method's choice for one test scenario.
type Chosen = (usize, Choice);

/// Trains `unit` on fold `f` and chooses a size for each of its test scenarios.
fn run_unit(
    data: &Data,
    facts: &Facts,
    f: &FoldSet,
    unit: &Unit,
) -> Result<Vec<Chosen>, ModelError> {
    let mut out = Vec::new();
    match unit {
        Unit::Classifier(kind, fallbacks) => {
            let c = if unit.samples() && f.sample.len() < f.train.len() {
                let x: Vec<Vec<f64>> = f.sample.iter().map(|&i| f.x[i].clone()).collect();
                let y: Vec<usize> = f.sample.iter().map(|&i| f.y[i]).collect();
                Classifier::fit(*kind, &x, &y, f.seed)?
            } else {
                Classifier::fit(*kind, &f.x, &f.y, f.seed)?
            };
            for &(m, fallback) in fallbacks {
                let mut rng = ChaCha8Rng::seed_from_u64(f.seed ^ 0x5EED);
                for &s in &f.test {
                    let started = Instant::now();
                    let predicted = f.classes[c.predict(&data.scenarios[s].features)?];
                    let chosen = if facts.legal(s, predicted) {
                        predicted
                    } else {
                        fallback_choice(facts, &f.rank, s, predicted, fallback, &mut rng)
                    };
                    let us = started.elapsed().as_secs_f64() * 1e6;
                    out.push((m, (s, chosen, Some(predicted), us)));
                }
            }
        }
        &Unit::Regressor { speedup, method } => {
            let sampled: Vec<usize> = f.sample.iter().map(|&i| f.train[i]).collect();
            let (rx, ry) = regression_rows(data, facts, &sampled, &f.rank, speedup);
            let model = Regressor::fit(&rx, &ry, f.seed)?;
            for &s in &f.test {
                let started = Instant::now();
                let (chosen, first) = algorithm2(
                    &model,
                    &data.scenarios[s].features,
                    &f.rank,
                    facts,
                    s,
                    speedup,
                )?;
                let us = started.elapsed().as_secs_f64() * 1e6;
                out.push((method, (s, chosen, Some(first), us)));
            }
        }
        &Unit::Baseline(m) => {
            for &s in &f.test {
                let started = Instant::now();
                let chosen = first_legal(facts, &f.rank, s);
                let us = started.elapsed().as_secs_f64() * 1e6;
                out.push((m, (s, chosen, Some(f.rank[0]), us)));
            }
        }
    }
    Ok(out)
}

/// What a worker of [`evaluate`] says: a step started, or finished with its choices.
enum Event {
    Started(usize),
    Finished(usize, Result<Vec<Chosen>, ModelError>),
}

/// Evaluates `methods` on `data` under `protocol`. Each model is trained and tested on each fold
/// as one step; [`Options::jobs`] steps run at once (each on its own thread, so the prediction
/// times are measured beside the others: 1 measures them alone), and the results are the same
/// for any number. `progress` hears of every step as it starts. Folds without training or test
/// scenarios are skipped; none left is an error.
pub fn evaluate(
    data: &Data,
    protocol: Protocol,
    methods: &[Method],
    options: &Options,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<Report, EvalError> {
    let facts = Facts::new(data);
    let jobs = options.jobs;
    let folds: Vec<FoldSet> = protocol
        .folds(data, options.seed)
        .into_iter()
        .enumerate()
        .filter(|(_, (train, test))| !train.is_empty() && !test.is_empty())
        .map(|(i, fold)| FoldSet::new(&facts, data, i, fold, options))
        .collect();
    if folds.is_empty() {
        return Err(no_folds(protocol, data));
    }
    let units = Unit::of(methods);
    // Step t is unit t % units of fold t / units: fold by fold, as the progress reads.
    let total = folds.len() * units.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<Vec<Chosen>, ModelError>>> =
        (0..total).map(|_| None).collect();
    std::thread::scope(|scope| {
        let (events, heard) = std::sync::mpsc::channel();
        for _ in 0..jobs.clamp(1, total) {
            let events = events.clone();
            let (next, folds, units, facts) = (&next, &folds, &units, &facts);
            scope.spawn(move || loop {
                let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if t >= total {
                    break;
                }
                let _ = events.send(Event::Started(t));
                let fold = &folds[t / units.len()];
                let result = run_unit(data, facts, fold, &units[t % units.len()]);
                let failed = result.is_err();
                let _ = events.send(Event::Finished(t, result));
                if failed {
                    // No step starts after a failure: the evaluation fails anyway.
                    next.store(total, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
        drop(events);
        let mut done = 0;
        for event in heard {
            match event {
                Event::Started(t) => progress(Step {
                    done,
                    total,
                    fold: t / units.len() + 1,
                    folds: folds.len(),
                    model: units[t % units.len()].name(),
                }),
                Event::Finished(t, result) => {
                    done += 1;
                    results[t] = Some(result);
                }
            }
        }
    });
    // Per method: per test scenario (chosen, predicted, micros), in step order.
    let mut outcomes: Vec<Vec<Choice>> = vec![Vec::new(); methods.len()];
    for (t, result) in results.into_iter().enumerate() {
        let failed = |source| EvalError::Model {
            fold: t / units.len() + 1,
            folds: folds.len(),
            source,
        };
        // A step that never ran follows a failed one, which comes first in step order.
        for (m, choice) in result.unwrap_or(Ok(Vec::new())).map_err(failed)? {
            outcomes[m].push(choice);
        }
    }
    let baseline_choice: HashMap<usize, Wg> = folds
        .iter()
        .flat_map(|f| f.test.iter().map(|&s| (s, first_legal(&facts, &f.rank, s))))
        .collect();
    let training = folds.iter().map(|f| f.train.len()).max().unwrap_or(0);
    let sampled = folds.iter().map(|f| f.sample.len()).max().unwrap_or(0);
    let mut trained_on = vec![training; methods.len()];
    for unit in units.iter().filter(|u| u.samples()) {
        for m in unit.methods() {
            trained_on[m] = sampled;
        }
    }
    let results = methods
        .iter()
        .zip(&outcomes)
        .zip(trained_on)
        .map(|((method, rows), trained_on)| MethodResult {
            trained_on,
            ..summarise(*method, rows, &facts, &baseline_choice)
        })
        .collect();
    let all = analyse(data.scenarios.len(), &data.observations);
    Ok(Report {
        protocol: protocol.name().into(),
        folds: folds.len(),
        scenarios: data.scenarios.len(),
        training_scenarios: training,
        max_training: options.max_training,
        results,
        baseline: all.baseline.map(|b| BaselineSummary {
            size: [b.wg.0, b.wg.1],
            performance_geomean: b.performance,
        }),
        mean_spread: all.mean_spread,
    })
}

fn fallback_choice(
    facts: &Facts,
    rank: &[Wg],
    s: usize,
    predicted: Wg,
    fallback: Fallback,
    rng: &mut ChaCha8Rng,
) -> Wg {
    let mut legal: Vec<Wg> = facts.times[s].keys().copied().collect();
    legal.sort();
    match fallback {
        Fallback::Baseline => first_legal(facts, rank, s),
        Fallback::Random => legal[rng.random_range(0..legal.len())],
        Fallback::NearestNeighbour => {
            let d = |w: &Wg| {
                let dc = w.0 as f64 - predicted.0 as f64;
                let dr = w.1 as f64 - predicted.1 as f64;
                dc * dc + dr * dr
            };
            *legal
                .iter()
                .min_by(|a, b| d(a).total_cmp(&d(b)).then(a.cmp(b)))
                .expect("a measured size")
        }
    }
}

/// Rows of (scenario features, wc, wr) -> log runtime, or -> speedup over the baseline choice.
fn regression_rows(
    data: &Data,
    facts: &Facts,
    train: &[usize],
    rank: &[Wg],
    speedup: bool,
) -> (Vec<Vec<f64>>, Vec<f64>) {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for &s in train {
        let base = facts.times[s][&first_legal(facts, rank, s)];
        let mut sizes: Vec<(&Wg, &f64)> = facts.times[s].iter().collect();
        sizes.sort_by(|a, b| a.0.cmp(b.0));
        for (wg, t) in sizes {
            x.push(with_size(&data.scenarios[s].features, *wg));
            y.push(if speedup { base / t } else { t.ln() });
        }
    }
    (x, y)
}

fn with_size(features: &[f64], wg: Wg) -> Vec<f64> {
    let mut row = features.to_vec();
    row.extend([wg.0 as f64, wg.1 as f64, (wg.0 * wg.1) as f64]);
    row
}

/// Algorithm 2: the candidate with the best predicted value; a candidate that is not legal in
/// the scenario (refused, or beyond its limits) is dropped and the next best tried. Returns the
/// choice and the first candidate tried.
fn algorithm2(
    model: &Regressor,
    features: &[f64],
    candidates: &[Wg],
    facts: &Facts,
    s: usize,
    speedup: bool,
) -> Result<(Wg, Wg), ModelError> {
    let rows: Vec<Vec<f64>> = candidates.iter().map(|&w| with_size(features, w)).collect();
    let predicted = model.predict_many(&rows)?;
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (predicted[a], predicted[b]);
        if speedup {
            pb.total_cmp(&pa)
        } else {
            pa.total_cmp(&pb)
        }
    });
    let first = candidates[order[0]];
    let chosen = order
        .iter()
        .map(|&i| candidates[i])
        .find(|&w| facts.legal(s, w))
        .unwrap_or_else(|| *facts.times[s].keys().min().expect("a measured size"));
    Ok((chosen, first))
}

fn summarise(
    method: Method,
    rows: &[Choice],
    facts: &Facts,
    baseline_choice: &HashMap<usize, Wg>,
) -> MethodResult {
    let (model, fallback) = method.names();
    let n = rows.len().max(1) as f64;
    let mut perf: Vec<f64> = Vec::new();
    let mut over_base = Vec::new();
    let mut over_expert = Vec::new();
    let (mut correct, mut valid, mut refused, mut us) = (0usize, 0usize, 0usize, 0f64);
    for &(s, chosen, predicted, micros) in rows {
        let t = facts.times[s][&chosen];
        perf.push(facts.oracle[s].1 / t);
        over_base.push(facts.times[s][&baseline_choice[&s]] / t);
        if let Some(e) = facts.times[s].get(&EXPERT) {
            over_expert.push(e / t);
        }
        if let Some(p) = predicted {
            correct += usize::from(p == facts.oracle[s].0);
            valid += usize::from(facts.legal(s, p));
            refused += usize::from(facts.refused[s].contains(&p));
        }
        us += micros;
    }
    let geomean = (perf.iter().map(|p| p.ln()).sum::<f64>() / n).exp();
    let performance_quantiles = quantiles(&mut perf);
    let speedup_over_baseline_median = median(&mut over_base);
    let speedup_over_expert_median = (!over_expert.is_empty()).then(|| median(&mut over_expert));
    MethodResult {
        model,
        fallback,
        scenarios: rows.len(),
        accuracy: correct as f64 / n,
        validity: valid as f64 / n,
        refused: refused as f64 / n,
        performance_geomean: geomean,
        performance_quantiles,
        speedup_over_baseline_median,
        speedup_over_expert_median,
        predict_us: us / n,
        trained_on: 0,
        // Sorted by the quantiles and medians above.
        performance: perf,
        speedups_over_baseline: over_base,
        speedups_over_expert: over_expert,
    }
}

fn median(v: &mut [f64]) -> f64 {
    quantiles(v)[2]
}

fn quantiles(v: &mut [f64]) -> [f64; 5] {
    if v.is_empty() {
        return [f64::NAN; 5];
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    [at(0.0), at(0.25), at(0.5), at(0.75), at(1.0)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Scenario;
    use crate::oracle::Observation;

    fn opts(seed: u64, jobs: usize) -> Options {
        Options {
            seed,
            jobs,
            ..Options::default()
        }
    }

    /// Scenarios of two kinds: feature 0 says which size is fastest (8x8 or 64x2); 32x32 is
    /// refused on the GPU ones; the `syn*` kernels and the others share both kinds.
    fn data() -> Data {
        let mut d = Data {
            feature_names: vec!["f_kind".into(), "f_noise".into()],
            scenarios: vec![],
            observations: vec![],
            objective: None,
        };
        for i in 0..24 {
            let kind = (i % 2) as f64;
            let device = if i % 3 == 0 { "gpu" } else { "cpu" };
            d.scenarios.push(Scenario {
                id: format!("s{i}"),
                device: device.into(),
                kernel: format!("{}{}", if i < 12 { "syn" } else { "real" }, i % 4),
                dataset: format!("{}x{}", 64 << (i % 2), 64),
                features: vec![kind, (i * 7 % 5) as f64],
            });
            let fast = if kind == 0.0 { (8, 8) } else { (64, 2) };
            for (wg, ms) in [((8, 8), 2.0), ((64, 2), 2.0), ((32, 4), 3.0)] {
                let ms = if wg == fast { 1.0 } else { ms };
                d.observations.push(Observation {
                    scenario: i,
                    wg,
                    status: Status::Measured,
                    cost: Some(ms),
                });
            }
            if device == "gpu" {
                d.observations.push(Observation {
                    scenario: i,
                    wg: (32, 32),
                    status: Status::Refused,
                    cost: None,
                });
            }
        }
        d
    }

    #[test]
    fn protocols_split_by_scenario_and_by_key() {
        let d = data();
        let cv = Protocol::Cv10.folds(&d, 1);
        assert_eq!(cv.len(), 10);
        let mut tested: Vec<usize> = cv.iter().flat_map(|(_, t)| t.clone()).collect();
        tested.sort();
        assert_eq!(
            tested,
            (0..24).collect::<Vec<_>>(),
            "each scenario tested once"
        );
        for (train, test) in &cv {
            assert!(train.iter().all(|i| !test.contains(i)));
        }
        assert_eq!(Protocol::LooDevice.folds(&d, 1).len(), 2);
        assert_eq!(Protocol::LooKernel.folds(&d, 1).len(), 8);
        let (train, test) = &Protocol::SyntheticReal.folds(&d, 1)[0];
        assert!(train
            .iter()
            .all(|&i| d.scenarios[i].kernel.starts_with("syn")));
        assert!(test
            .iter()
            .all(|&i| !d.scenarios[i].kernel.starts_with("syn")));
    }

    #[test]
    fn classifiers_learn_the_oracle_and_every_choice_is_legal() {
        let d = data();
        let report =
            evaluate(&d, Protocol::Cv10, &Method::all(), &opts(3, 2), &mut |_| {}).unwrap();
        assert_eq!(report.results.len(), Method::all().len());
        for r in &report.results {
            assert_eq!(r.scenarios, 24, "{r:?}");
            // Every choice was measured in its scenario, so its performance is defined.
            assert!(r.performance_quantiles[0] > 0.0, "{r:?}");
            assert_eq!(r.refused, 0.0, "nothing predicted 32x32: {r:?}");
        }
        let tree = &report.results[0];
        assert_eq!(
            (tree.model.as_str(), tree.fallback.as_str()),
            ("tree", "baseline")
        );
        assert_eq!(tree.accuracy, 1.0, "{tree:?}");
        assert_eq!(tree.performance_geomean, 1.0);
        let base = report.results.last().unwrap();
        assert_eq!(base.model, "baseline");
        // A fixed size is the oracle of one kind of scenario and half as fast on the other.
        let p = base.performance_geomean;
        assert!(p > 0.5 && p < 0.8, "{base:?}");
        assert!(tree.speedup_over_baseline_median >= 1.0);
    }

    #[test]
    fn a_protocol_without_a_usable_fold_is_an_error_that_says_why() {
        let fails = |d: &Data, p| {
            evaluate(d, p, &[Method::Baseline], &opts(1, 1), &mut |_| {}).unwrap_err()
        };
        let mut one = data();
        one.scenarios.truncate(1);
        one.observations.retain(|o| o.scenario == 0);
        let e = fails(&one, Protocol::Cv10);
        assert_eq!(
            e.to_string(),
            "cv10 has no fold with both training and test scenarios: it needs at least 2 scenarios; the data has 1"
        );
        let mut d = data();
        for s in &mut d.scenarios {
            s.device = "gpu".into();
        }
        let e = fails(&d, Protocol::LooDevice);
        assert!(
            e.to_string()
                .ends_with("needs scenarios of at least 2; the data has 1 (`gpu`)"),
            "{e}"
        );
        let e = fails(&one, Protocol::SyntheticReal);
        assert!(
            e.to_string()
                .ends_with("the data has 1 scenarios of synthetic kernels and 0 of others"),
            "{e}"
        );
    }

    #[test]
    fn steps_run_at_once_give_the_results_of_steps_run_one_by_one() {
        let d = data();
        let methods = Method::all();
        let one = evaluate(&d, Protocol::Cv10, &methods, &opts(5, 1), &mut |_| {}).unwrap();
        let mut started = 0;
        let four = evaluate(&d, Protocol::Cv10, &methods, &opts(5, 4), &mut |_| {
            started += 1
        })
        .unwrap();
        assert_eq!(started, 10 * 8, "a step per fold and model");
        for (a, b) in one.results.iter().zip(&four.results) {
            let figures = |r: &MethodResult| {
                (
                    r.accuracy,
                    r.validity,
                    r.performance.clone(),
                    r.speedups_over_baseline.clone(),
                    r.speedups_over_expert.clone(),
                )
            };
            assert_eq!(figures(a), figures(b), "{} {}", a.model, a.fallback);
        }
    }

    #[test]
    fn the_slow_models_train_on_a_seeded_sample_of_a_large_fold() {
        let d = data();
        let methods = [
            Method::Classify(ClassifierKind::Logistic, Fallback::Baseline),
            Method::Classify(ClassifierKind::DecisionTree, Fallback::Baseline),
            Method::RegressRuntime,
        ];
        let options = Options {
            max_training: Some(8),
            ..opts(2, 2)
        };
        let report = evaluate(&d, Protocol::Cv10, &methods, &options, &mut |_| {}).unwrap();
        // cv10 of 24 scenarios: 21 or 22 train a fold.
        assert_eq!(report.training_scenarios, 22);
        let trained: Vec<usize> = report.results.iter().map(|r| r.trained_on).collect();
        assert_eq!(trained, [8, 22, 8]);
        let again = evaluate(&d, Protocol::Cv10, &methods, &options, &mut |_| {}).unwrap();
        for (a, b) in report.results.iter().zip(&again.results) {
            assert_eq!(a.performance, b.performance, "the sample is seeded");
        }
        let all = Options {
            max_training: None,
            ..opts(2, 2)
        };
        let report = evaluate(&d, Protocol::Cv10, &methods, &all, &mut |_| {}).unwrap();
        assert!(report.results.iter().all(|r| r.trained_on == 22));
    }

    #[test]
    fn progress_hears_of_every_fold_and_model_in_order() {
        let mut steps = Vec::new();
        let methods = [
            Method::Classify(ClassifierKind::DecisionTree, Fallback::Baseline),
            Method::Baseline,
            Method::Classify(ClassifierKind::DecisionTree, Fallback::Random),
        ];
        evaluate(
            &data(),
            Protocol::LooDevice,
            &methods,
            &opts(1, 1),
            &mut |s| steps.push((s.done, s.total, s.fold, s.folds, s.model.to_string())),
        )
        .unwrap();
        let expected: Vec<(usize, usize, usize, usize, String)> = vec![
            (0, 4, 1, 2, "tree".into()),
            (1, 4, 1, 2, "baseline".into()),
            (2, 4, 2, 2, "tree".into()),
            (3, 4, 2, 2, "baseline".into()),
        ];
        assert_eq!(steps, expected);
    }
}
