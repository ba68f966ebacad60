//! The strategies and their names.

mod anneal;
mod auto;
mod bayes;
mod genetic;
mod local;
mod nsga2;
mod surrogate;

pub use anneal::{Anneal, AnnealJump};
pub use auto::{
    auto_choice, Auto, AutoChoice, AUTO_BUDGET, AUTO_CLIMB, AUTO_EXHAUSTIVE_TIME,
    AUTO_EXHAUSTIVE_UP_TO, AUTO_PROBE, AUTO_PROBE_UP_TO, AUTO_STRATEGY,
};
pub use bayes::{Bayes, ParEgo};
pub use genetic::Genetic;
pub use local::LocalSearch;
pub use nsga2::Nsga2;
pub use surrogate::Surrogate;

use crate::session::Session;
use crate::space::Neighbourhood;
use crate::{Budget, Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// The names [`by_name`] knows.
pub const STRATEGY_NAMES: [&str; 14] = [
    "auto",
    "exhaustive",
    "random",
    "anneal",
    "anneal-jump",
    "ga",
    "ils",
    "ils-adjacent",
    "mls",
    "mls-adjacent",
    "forest",
    "bo",
    "nsga2",
    "parego",
];

/// The strategy called `name`; `seed` drives its randomness (ignored by `exhaustive`). `auto`
/// picks one by the space's size ([`auto_choice`]).
pub fn by_name(name: &str, seed: u64) -> Result<Box<dyn Strategy>, UnknownStrategy> {
    let local = |iterated, neighbourhood| {
        Box::new(LocalSearch {
            seed,
            neighbourhood,
            iterated,
        }) as Box<dyn Strategy>
    };
    match name {
        "auto" => Ok(Box::new(Auto { seed })),
        "exhaustive" => Ok(Box::new(Exhaustive)),
        "random" => Ok(Box::new(RandomSampling { seed })),
        "anneal" => Ok(Box::new(Anneal { seed })),
        "anneal-jump" => Ok(Box::new(AnnealJump { seed })),
        "ga" => Ok(Box::new(Genetic { seed })),
        "ils" => Ok(local(true, Neighbourhood::Hamming)),
        "ils-adjacent" => Ok(local(true, Neighbourhood::Adjacent)),
        "mls" => Ok(local(false, Neighbourhood::Hamming)),
        "mls-adjacent" => Ok(local(false, Neighbourhood::Adjacent)),
        "forest" => Ok(Box::new(Surrogate { seed })),
        "bo" => Ok(Box::new(Bayes { seed })),
        "nsga2" => Ok(Box::new(Nsga2 { seed })),
        "parego" => Ok(Box::new(ParEgo { seed })),
        _ => Err(UnknownStrategy(name.to_string())),
    }
}

/// A strategy name that [`by_name`] does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStrategy(pub String);

impl fmt::Display for UnknownStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown strategy `{}`; valid: {}",
            self.0,
            STRATEGY_NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownStrategy {}

/// E[max(0, incumbent − cost)] for a cost predicted normal with `mean` and `sd` (minimising).
fn expected_improvement(mean: f64, sd: f64, incumbent: f64) -> f64 {
    let gain = incumbent - mean;
    if !gain.is_finite() {
        return if gain > 0.0 { f64::INFINITY } else { 0.0 };
    }
    if sd < 1e-12 {
        return gain.max(0.0);
    }
    let z = gain / sd;
    let density = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    gain * normal_cdf(z) + sd * density
}

/// The standard normal distribution function (erf after Abramowitz and Stegun 7.1.26, error
/// below 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * x);
    let poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
        + 0.254829592)
        * t;
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The random generator of a run: the same seed gives the same run.
fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Every point (brute force, as in Erdem et al.), in a scattered order ([`Scattered`]); with a
/// budget, the first ones of that order. The space's own order would meet the points of one
/// corner first (a reduction's smallest grids and blocks, each far slower than the best): with
/// points from every part of the space early, a fast configuration is found early and racing
/// stops the slow ones after their first timed run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exhaustive;

impl Strategy for Exhaustive {
    fn name(&self) -> &'static str {
        "exhaustive"
    }

    fn anytime(&self) -> bool {
        true
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let mut session = Session::new(space, eval, run, usize::MAX);
        let mut ranks = Scattered::new(space.len());
        session.evaluate_in_order(|s| {
            for rank in ranks.by_ref() {
                let p = s
                    .space()
                    .nth(rank)
                    .expect("a rank below the space's length");
                if !s.seen(&p) {
                    return Some(p);
                }
            }
            None
        });
        session.finish()
    }
}

/// The ranks `0..len`, each once, in a scattered order: rank `i` is `i · stride mod len`, with
/// `stride` the number nearest `len / φ` that shares no factor with `len` (so the `len` steps
/// meet every rank). A golden-ratio stride spreads any run of consecutive steps over the whole
/// range, in constant memory whatever the space's size.
#[derive(Debug, Clone)]
pub struct Scattered {
    len: u128,
    stride: u128,
    next: u128,
    left: u128,
}

impl Scattered {
    pub fn new(len: u128) -> Scattered {
        let golden = (len as f64 * 0.618_033_988_749_895).round() as u128;
        let mut stride = golden.clamp(1, len.saturating_sub(1).max(1));
        while len > 1 && gcd(stride, len) != 1 {
            stride = if stride + 1 < len { stride + 1 } else { 1 };
        }
        Scattered {
            len,
            stride,
            next: 0,
            left: len,
        }
    }
}

impl Iterator for Scattered {
    type Item = u128;

    fn next(&mut self) -> Option<u128> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let rank = self.next;
        // `rank + stride` wrapped below `len`, without overflowing whatever `len` is.
        self.next = if rank >= self.len - self.stride {
            rank - (self.len - self.stride)
        } else {
            rank + self.stride
        };
        Some(rank)
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The given points, promised in their order, and no other (`ndtune tune --config`): a
/// configuration checked, or a few timed side by side. Points outside the space are left out (a
/// caller checks them first, to say why); the run's budget of time still applies.
#[derive(Debug, Clone, Default)]
pub struct Listed {
    pub points: Vec<Point>,
}

impl Strategy for Listed {
    fn name(&self) -> &'static str {
        "listed"
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let listed = Run {
            budget: Budget {
                evaluations: Some(self.points.len()),
                time: run.budget.time,
            },
            warm: self.points.clone(),
            patience: None,
        };
        Session::new(space, eval, &listed, 0).finish()
    }
}

/// Uniform sampling without replacement: `budget` distinct points (all without a budget), in
/// random order.
#[derive(Debug, Clone, Copy)]
pub struct RandomSampling {
    pub seed: u64,
}

impl Strategy for RandomSampling {
    fn name(&self) -> &'static str {
        "random"
    }

    fn anytime(&self) -> bool {
        true
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let mut rng = rng(self.seed);
        let mut session = Session::new(space, eval, run, usize::MAX);
        session.evaluate_in_order(|s| s.fresh(&mut rng));
        session.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for name in STRATEGY_NAMES {
            assert_eq!(by_name(name, 1).unwrap().name(), name);
        }
        let err = by_name("genetic", 1).err().unwrap();
        assert_eq!(
            err.to_string(),
            "unknown strategy `genetic`; valid: auto, exhaustive, random, anneal, anneal-jump, ga, ils, ils-adjacent, mls, mls-adjacent, forest, bo, nsga2, parego"
        );
    }

    #[test]
    fn scattered_ranks_meet_each_rank_once() {
        for len in (0..=400).chain([2376, 65_536]) {
            let mut ranks: Vec<u128> = Scattered::new(len).collect();
            ranks.sort_unstable();
            assert_eq!(ranks, (0..len).collect::<Vec<_>>(), "len {len}");
        }
        // Near the top of the range, stepping never overflows.
        let huge = u128::MAX - 5;
        assert_eq!(Scattered::new(huge).take(1000).count(), 1000);
    }

    #[test]
    fn any_eight_consecutive_scattered_ranks_lie_far_apart() {
        for len in [1000u128, 1890, 2376, 1_000_003] {
            let ranks: Vec<u128> = Scattered::new(len).take(5000).collect();
            for window in ranks.windows(8) {
                let mut w = window.to_vec();
                w.sort_unstable();
                let closest = w.windows(2).map(|p| p[1] - p[0]).min().unwrap();
                assert!(
                    closest * 12 >= len,
                    "len {len}: {window:?} has ranks {closest} apart"
                );
            }
        }
    }
}
