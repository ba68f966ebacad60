//! Model-based search: a bagged ensemble of regression trees (a random forest without feature
//! subsampling, SMAC-style) predicts the cost of unmeasured valid points, and expected improvement
//! picks which to measure.

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
///   slowest measurement. The trees' mean and spread are the prediction and its uncertainty.
/// - Proposals: only valid points, never measured: [`POOL`] uniformly random ones plus the
///   Hamming neighbours of the [`LOCAL`] best measured points; the [`BATCH`] - 1 with the highest
///   expected improvement over the best cost, and one random point (SMAC's interleaving, which
///   keeps the model honest far from where it looks).
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

/// The next batch: the best by expected improvement, then one random point.
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
        .map(|p| (model.expected_improvement(space, &p), p))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
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
    best: f64,
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
        let best = y.iter().copied().fold(f64::INFINITY, f64::min);
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
        Some(Model { trees, best })
    }

    /// Expected improvement of `point` over the best cost, under a normal with the trees' mean
    /// and spread.
    fn expected_improvement(&self, space: &dyn SearchSpace, point: &[i64]) -> f64 {
        let Ok(row) = DenseMatrix::from_2d_vec(&vec![encode(space, point)]) else {
            return 0.0;
        };
        let preds: Vec<f64> = self
            .trees
            .iter()
            .filter_map(|t| t.predict(&row).ok().and_then(|v| v.first().copied()))
            .collect();
        let n = preds.len().max(1) as f64;
        let mean = preds.iter().sum::<f64>() / n;
        let sd = (preds.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / n).sqrt();
        expected_improvement(self.best, mean, sd)
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

/// E[max(best - X, 0)] for X ~ N(mean, sd²) (minimisation).
fn expected_improvement(best: f64, mean: f64, sd: f64) -> f64 {
    if sd <= 1e-12 {
        return (best - mean).max(0.0);
    }
    let z = (best - mean) / sd;
    (best - mean) * normal_cdf(z) + sd * (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Φ(z) through erf (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_improvement_prefers_low_means_and_wide_spreads() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-3);
        assert!(expected_improvement(1.0, 0.5, 0.1) > expected_improvement(1.0, 0.9, 0.1));
        assert!(expected_improvement(1.0, 1.0, 0.5) > expected_improvement(1.0, 1.0, 0.1));
        assert_eq!(expected_improvement(1.0, 2.0, 0.0), 0.0);
    }
}
