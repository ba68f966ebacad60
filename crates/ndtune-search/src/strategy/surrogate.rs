//! Model-based search: a bagged ensemble of regression trees (a random forest without feature
//! subsampling, SMAC-style) predicts the cost of unmeasured valid points, and the model's best
//! predictions are measured, interleaved with random points.

use super::{expected_improvement, rng};
use crate::session::Session;
use crate::space::{neighbours, Neighbourhood};
use crate::{Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::seq::SliceRandom;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use smartcore::linalg::basic::matrix::DenseMatrix;
use smartcore::tree::decision_tree_regressor::{
    DecisionTreeRegressor, DecisionTreeRegressorParameters,
};
use std::collections::{HashMap, HashSet};

/// Surrogate-model search (after SMAC, Hutter et al. 2011).
///
/// - Start: the warm-start points, then random points up to [`INITIAL`] measured.
/// - Model: [`TREES`] regression trees, each fitted on a bootstrap sample of the points measured
///   so far, from parameters (domain indices) to cost (ln ms); a failure counts as twice the
///   slowest measurement. The prediction is the trees' mean, their standard deviation its
///   uncertainty.
/// - Proposals: only valid points, never measured: [`POOL`] uniformly random ones, the Hamming
///   neighbours of the [`LOCAL`] best measured points, and the points scored by greedy walks
///   over the model (SMAC's local search): from each of the [`WALKS`] best measured points, to
///   the neighbour that scores best while it improves, once on the predicted cost and once on
///   the expected improvement over the best measured cost (the trees' spread taken as a normal
///   distribution's). A batch of [`BATCH`]: the [`BATCH`] - 2 with the lowest predicted cost,
///   the one with the highest expected improvement, and one random point (SMAC's interleaving:
///   it keeps the model honest far from where it looks); from [`RANDOM_UNTIL`] of the budget on,
///   the second best expected improvement instead of the random point. On the Kernel Tuner
///   caches of BENCHMARKS.md this mix did better than either acquisition alone (the mean finds
///   the good region early, the expected improvement leaves it for a better one later), and
///   dropping the random point late did better than keeping it.
///
/// Candidates that the driver's advice says are likely refused at launch are left out
/// ([`crate::Evaluator::exceeds_advice`]). Each batch is announced to the evaluator before it
/// is measured. The default budget is min(points, 100).
#[derive(Debug, Clone, Copy)]
pub struct Surrogate {
    pub seed: u64,
}

pub const INITIAL: usize = 10;
pub const TREES: usize = 16;
pub const POOL: usize = 256;
pub const LOCAL: usize = 4;
pub const BATCH: usize = 4;
/// Greedy walks over the model per acquisition, from the best measured points.
pub const WALKS: usize = 8;
/// How far through its budget a run measures a random point in each batch; after that, the
/// batch's last point is a second pick by expected improvement.
pub const RANDOM_UNTIL: f64 = 0.5;
/// Steps of a walk at most.
pub const WALK_STEPS: usize = 20;
/// Neighbours a walk scores per step at most.
pub const WALK_NEIGHBOURS: usize = 64;
const DEFAULT_BUDGET: usize = 100;

impl Strategy for Surrogate {
    fn name(&self) -> &'static str {
        "forest"
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let mut rng = rng(self.seed);
        let mut session = Session::new(space, eval, run, DEFAULT_BUDGET);
        while !session.done() {
            let measured = session.evaluated().any(|(_, c)| c.is_finite());
            let batch = match (session.used() >= INITIAL && measured)
                .then(|| Model::fit(&session, &mut rng))
                .flatten()
            {
                Some(model) => proposals(&mut session, &model, &mut rng),
                None => {
                    let want = if measured {
                        INITIAL.saturating_sub(session.used()).max(1)
                    } else {
                        BATCH
                    };
                    std::iter::from_fn(|| session.fresh(&mut rng))
                        .take(want)
                        .collect()
                }
            };
            if batch.is_empty() {
                break;
            }
            session.upcoming(batch.iter().cloned());
            for p in batch {
                session.evaluate(&p);
            }
        }
        session.finish()
    }
}

/// The next batch: the lowest predicted costs, the highest expected improvement, then one
/// random point (in the first half of the budget; after it a second expected improvement).
fn proposals(session: &mut Session, model: &Model, rng: &mut ChaCha8Rng) -> Vec<Point> {
    let space = session.space();
    let incumbent = session.best(1).first().map_or(f64::INFINITY, |b| b.1);
    let mut pool: HashSet<Point> = HashSet::new();
    for _ in 0..POOL {
        let p = space
            .nth(rng.random_range(0..space.len()))
            .expect("a rank below the length");
        if !session.seen(&p) {
            pool.insert(p);
        }
    }
    let bests = session.best(LOCAL.max(WALKS));
    for (best, _) in bests.iter().take(LOCAL) {
        pool.extend(
            neighbours(space, best, Neighbourhood::Hamming)
                .into_iter()
                .filter(|n| !session.seen(n)),
        );
    }
    let mut predicted: HashMap<Point, Prediction> = HashMap::new();
    for acquisition in [Acquisition::Mean, Acquisition::ExpectedImprovement] {
        for (start, _) in bests.iter().take(WALKS) {
            pool.extend(walk(
                session,
                model,
                &mut predicted,
                start,
                acquisition,
                incumbent,
                rng,
            ));
        }
    }
    // A set's order is not deterministic: sort before scoring, so ties break the same way.
    let mut pool: Vec<Point> = pool.into_iter().collect();
    pool.sort_unstable();
    // Launches beyond the driver's advice would likely be refused: not worth a measurement.
    pool.retain(|p| !session.likely_refused(p));
    let scored: Vec<(Prediction, Point)> = pool
        .into_iter()
        .map(|p| (predict(model, space, &mut predicted, &p), p))
        .collect();
    let ranked = |acquisition: Acquisition| {
        let mut v: Vec<(f64, &Point)> = scored
            .iter()
            .map(|(pred, p)| (acquisition.score(*pred, incumbent), p))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        v.into_iter().map(|(_, p)| p.clone()).collect::<Vec<_>>()
    };
    let random = session.progress() < RANDOM_UNTIL;
    let mut batch: Vec<Point> = Vec::with_capacity(BATCH);
    for (acquisition, until) in [
        (Acquisition::Mean, BATCH - 2),
        (
            Acquisition::ExpectedImprovement,
            BATCH - usize::from(random),
        ),
    ] {
        for p in ranked(acquisition) {
            if batch.len() >= until {
                break;
            }
            if !batch.contains(&p) {
                batch.push(p);
            }
        }
    }
    if random {
        while let Some(p) = session.fresh(rng) {
            if !batch.contains(&p) {
                batch.push(p);
                break;
            }
        }
    }
    batch
}

/// The trees' mean and standard deviation for a point.
#[derive(Debug, Clone, Copy)]
struct Prediction {
    mean: f64,
    sd: f64,
}

#[derive(Debug, Clone, Copy)]
enum Acquisition {
    /// The predicted cost.
    Mean,
    /// The expected improvement over the incumbent's cost, the trees taken as a normal
    /// distribution (negated: lower is better, as for the mean).
    ExpectedImprovement,
}

impl Acquisition {
    /// Lower is better.
    fn score(self, pred: Prediction, incumbent: f64) -> f64 {
        match self {
            Acquisition::Mean => pred.mean,
            Acquisition::ExpectedImprovement => {
                if !pred.mean.is_finite() {
                    return f64::INFINITY;
                }
                -expected_improvement(pred.mean, pred.sd.max(1e-9), incumbent)
            }
        }
    }
}

/// `point`'s prediction, made once per batch.
fn predict(
    model: &Model,
    space: &dyn SearchSpace,
    predicted: &mut HashMap<Point, Prediction>,
    point: &Point,
) -> Prediction {
    *predicted
        .entry(point.clone())
        .or_insert_with(|| model.predict(space, point))
}

/// A greedy walk over the model from `start` (SMAC's local search): to the Hamming neighbour
/// that scores best under `acquisition` while it improves, at most [`WALK_STEPS`] steps,
/// scoring at most [`WALK_NEIGHBOURS`] neighbours a step (a random subset of more). Returns the
/// points it scored that were not evaluated.
fn walk(
    session: &Session,
    model: &Model,
    predicted: &mut HashMap<Point, Prediction>,
    start: &Point,
    acquisition: Acquisition,
    incumbent: f64,
    rng: &mut ChaCha8Rng,
) -> Vec<Point> {
    let space = session.space();
    let mut scored = Vec::new();
    let mut at = start.clone();
    let mut at_score = acquisition.score(predict(model, space, predicted, &at), incumbent);
    for _ in 0..WALK_STEPS {
        let mut around = neighbours(space, &at, Neighbourhood::Hamming);
        if around.len() > WALK_NEIGHBOURS {
            around.shuffle(rng);
            around.truncate(WALK_NEIGHBOURS);
        }
        around.sort_unstable();
        let mut next: Option<(f64, Point)> = None;
        for n in around {
            let score = acquisition.score(predict(model, space, predicted, &n), incumbent);
            if !session.seen(&n) {
                scored.push(n.clone());
            }
            if next.as_ref().is_none_or(|(b, _)| score < *b) {
                next = Some((score, n));
            }
        }
        match next {
            Some((score, n)) if score < at_score => {
                at = n;
                at_score = score;
            }
            _ => break,
        }
    }
    scored
}

struct Model {
    trees: Vec<DecisionTreeRegressor<f64, f64, DenseMatrix<f64>, Vec<f64>>>,
}

impl Model {
    /// Fits the trees on what `session` measured; `None` where smartcore refuses the data.
    fn fit(session: &Session, rng: &mut ChaCha8Rng) -> Option<Model> {
        let space = session.space();
        let worst = session
            .evaluated()
            .map(|(_, c)| c)
            .filter(|c| c.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        let (x, y): (Vec<Vec<f64>>, Vec<f64>) = session
            .evaluated()
            .map(|(p, c)| {
                let cost = if c.is_finite() {
                    c
                } else {
                    worst + std::f64::consts::LN_2
                };
                (encode(space, p), cost)
            })
            .unzip();
        let mut trees = Vec::with_capacity(TREES);
        for _ in 0..TREES {
            let rows: Vec<usize> = (0..x.len()).map(|_| rng.random_range(0..x.len())).collect();
            let xs: Vec<Vec<f64>> = rows.iter().map(|&r| x[r].clone()).collect();
            let ys: Vec<f64> = rows.iter().map(|&r| y[r]).collect();
            let params = DecisionTreeRegressorParameters {
                seed: Some(rng.random()),
                ..Default::default()
            };
            let m = DenseMatrix::from_2d_vec(&xs).ok()?;
            trees.push(DecisionTreeRegressor::fit(&m, &ys, params).ok()?);
        }
        Some(Model { trees })
    }

    /// The trees' mean and standard deviation for `point`.
    fn predict(&self, space: &dyn SearchSpace, point: &[i64]) -> Prediction {
        let unknown = Prediction {
            mean: f64::INFINITY,
            sd: 0.0,
        };
        let Ok(row) = DenseMatrix::from_2d_vec(&vec![encode(space, point)]) else {
            return unknown;
        };
        let preds: Vec<f64> = self
            .trees
            .iter()
            .filter_map(|t| t.predict(&row).ok().and_then(|v| v.first().copied()))
            .collect();
        if preds.is_empty() {
            return unknown;
        }
        let n = preds.len() as f64;
        let mean = preds.iter().sum::<f64>() / n;
        let var = preds.iter().map(|p| (p - mean) * (p - mean)).sum::<f64>() / n;
        Prediction {
            mean,
            sd: var.sqrt(),
        }
    }
}

/// A point as model features: each value's index in its domain.
fn encode(space: &dyn SearchSpace, point: &[i64]) -> Vec<f64> {
    point
        .iter()
        .enumerate()
        .map(|(p, &v)| space.domain_index(p, v).map_or(-1.0, |i| i as f64))
        .collect()
}
