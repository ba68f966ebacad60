//! Model-based search: a bagged ensemble of regression trees (a random forest without feature
//! subsampling, SMAC-style) predicts the cost of unmeasured valid points, and the model's best
//! predictions are measured, interleaved with random points.

use super::rng;
use crate::session::Session;
use crate::space::{neighbours, Neighbourhood};
use crate::{Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use smartcore::linalg::basic::matrix::DenseMatrix;
use smartcore::tree::decision_tree_regressor::{
    DecisionTreeRegressor, DecisionTreeRegressorParameters,
};
use std::collections::HashSet;

/// Surrogate-model search (after SMAC, Hutter et al. 2011).
///
/// - Start: the warm-start points, then random points up to [`INITIAL`] measured.
/// - Model: [`TREES`] regression trees, each fitted on a bootstrap sample of the points measured
///   so far, from parameters (domain indices) to cost (ln ms); a failure counts as twice the
///   slowest measurement. The prediction is the trees' mean.
/// - Proposals: only valid points, never measured: [`POOL`] uniformly random ones plus the
///   Hamming neighbours of the [`LOCAL`] best measured points; the [`BATCH`] - 1 with the lowest
///   predicted cost, and one random point (SMAC's interleaving, which is the exploration: it
///   keeps the model honest far from where it looks). On the Kernel Tuner caches of
///   BENCHMARKS.md the mean did better than expected improvement and a lower confidence bound.
///
/// Each batch is announced to the evaluator before it is measured. The default budget is
/// min(points, 100).
#[derive(Debug, Clone, Copy)]
pub struct Surrogate {
    pub seed: u64,
}

pub const INITIAL: usize = 10;
pub const TREES: usize = 16;
pub const POOL: usize = 256;
pub const LOCAL: usize = 4;
pub const BATCH: usize = 4;
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

/// The next batch: the lowest predicted costs, then one random point.
fn proposals(session: &mut Session, model: &Model, rng: &mut ChaCha8Rng) -> Vec<Point> {
    let space = session.space();
    let mut pool: HashSet<Point> = HashSet::new();
    for _ in 0..POOL {
        let p = space
            .nth(rng.random_range(0..space.len()))
            .expect("a rank below the length");
        if !session.seen(&p) {
            pool.insert(p);
        }
    }
    for (best, _) in session.best(LOCAL) {
        pool.extend(
            neighbours(space, &best, Neighbourhood::Hamming)
                .into_iter()
                .filter(|n| !session.seen(n)),
        );
    }
    // A set's order is not deterministic: sort before scoring, so ties break the same way.
    let mut pool: Vec<Point> = pool.into_iter().collect();
    pool.sort_unstable();
    let mut scored: Vec<(f64, Point)> = pool
        .into_iter()
        .map(|p| (model.predict(space, &p), p))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut batch: Vec<Point> = scored.into_iter().take(BATCH - 1).map(|(_, p)| p).collect();
    while let Some(p) = session.fresh(rng) {
        if !batch.contains(&p) {
            batch.push(p);
            break;
        }
    }
    batch
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

    /// The predicted cost of `point`: the trees' mean.
    fn predict(&self, space: &dyn SearchSpace, point: &[i64]) -> f64 {
        let Ok(row) = DenseMatrix::from_2d_vec(&vec![encode(space, point)]) else {
            return f64::INFINITY;
        };
        let preds: Vec<f64> = self
            .trees
            .iter()
            .filter_map(|t| t.predict(&row).ok().and_then(|v| v.first().copied()))
            .collect();
        if preds.is_empty() {
            return f64::INFINITY;
        }
        preds.iter().sum::<f64>() / preds.len() as f64
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
