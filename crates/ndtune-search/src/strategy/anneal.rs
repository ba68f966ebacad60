//! Simulated annealing: over the adjacent neighbourhood (`anneal`), and with wide moves over
//! measured points (`anneal-jump`).

use super::rng;
use crate::session::Session;
use crate::space::{neighbours, Neighbourhood};
use crate::{Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::seq::IndexedRandom;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Simulated annealing on the cost ln(score in ms); every outcome but a measurement costs +inf.
///
/// - Neighbours of a point: [`Neighbourhood::Adjacent`], for each parameter and direction the
///   nearest domain value that, with the other parameters unchanged, gives a valid point.
/// - Step: evaluate a uniformly chosen neighbour not evaluated yet; move to it if its cost is no
///   worse, else with probability exp(-Δcost / T). A failure is never moved to, unless the
///   current point is a failure too.
/// - Temperature: geometric over the budget, T = T0 (T1 / T0)^progress, progress going from 0
///   to 1 over the evaluations (or the time, where that ends the run first), T0 = 0.2 and
///   T1 = 0.005. A step 10% slower (Δcost 0.095) is taken with probability 0.62 at first, 0.05
///   half-way and about 0 at the end.
/// - Start: the best warm-start point, else a random point. Restart: when every neighbour of the
///   current point has been evaluated (or is likely refused at launch, by the driver's advice:
///   [`crate::Evaluator::exceeds_advice`]), from a random point not evaluated yet.
///
/// The default budget is min(points, 100).
#[derive(Debug, Clone, Copy)]
pub struct Anneal {
    pub seed: u64,
}

const T0: f64 = 0.2;
const T1: f64 = 0.005;
const DEFAULT_BUDGET: usize = 100;

impl Strategy for Anneal {
    fn name(&self) -> &'static str {
        "anneal"
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let mut rng = rng(self.seed);
        let mut session = Session::new(space, eval, run, DEFAULT_BUDGET);
        // The point the walk stands on and its cost.
        let mut current: Option<(Point, f64)> = session.best(1).pop();
        while !session.done() {
            let temperature = T0 * (T1 / T0).powf(session.progress());
            let next = current.as_ref().and_then(|(at, _)| {
                let mut fresh: Vec<Point> = neighbours(space, at, Neighbourhood::Adjacent)
                    .into_iter()
                    .filter(|n| !session.seen(n))
                    .collect();
                // Never a step the driver's advice says is likely refused.
                fresh.retain(|n| !session.likely_refused(n));
                let chosen = fresh.choose(&mut rng).cloned();
                // The chosen neighbour first, the others after it: the walk may go there next.
                let others = fresh
                    .iter()
                    .filter(|&n| Some(n) != chosen.as_ref())
                    .cloned();
                session.upcoming(chosen.iter().cloned().chain(others));
                chosen
            });
            match (current.as_ref(), next) {
                (Some((_, cost)), Some(n)) => {
                    let Some(new) = session.evaluate(&n) else {
                        break;
                    };
                    let delta = new - cost;
                    if new <= *cost
                        || (new.is_finite() && rng.random_bool((-delta / temperature).exp()))
                    {
                        current = Some((n, new));
                    }
                }
                _ => {
                    // Stuck (or starting): restart from a random point not evaluated yet.
                    let Some(start) = session.fresh(&mut rng) else {
                        break;
                    };
                    let Some(cost) = session.evaluate(&start) else {
                        break;
                    };
                    current = Some((start, cost));
                }
            }
        }
        session.finish()
    }
}

/// Simulated annealing with wide moves (after Kernel Tuner's `simulated_annealing`): a walk
/// that may jump across the space and steps over points it has measured for free.
///
/// - Move: from the current point, for each parameter with probability [`JUMP`] a jump to a
///   random Hamming neighbour (one parameter to any valid value), then one step to a random
///   valid point of the king's neighbourhood (each parameter's domain index -1, 0 or +1, several
///   of them at once; drawn by rejection, else [`Neighbourhood::Adjacent`]). Moves along
///   correlated parameters (a block's two sides, tile and block) are single steps.
/// - Points measured before cost nothing: the walk moves over them by the same rule without
///   spending budget; after [`STUCK`] such steps in a row it restarts from a random point not
///   evaluated yet.
/// - Acceptance on the cost ln(score in ms): no worse, or with probability exp(-Δcost / T); a
///   failure is never moved to unless the current point failed too. T = T0 (T1 / T0)^progress
///   with T0 = 0.1 and T1 = 0.0001 over the budget.
/// - Start: the best warm-start point, else a random point.
///
/// The default budget is min(points, 100).
#[derive(Debug, Clone, Copy)]
pub struct AnnealJump {
    pub seed: u64,
}

/// Per parameter, the probability of a random Hamming jump in a move.
pub const JUMP: f64 = 0.2;
/// Steps in a row over measured points before a random restart.
pub const STUCK: usize = 100;
const JUMP_T0: f64 = 0.1;
const JUMP_T1: f64 = 1e-4;
/// Draws of a king's move before falling back to the adjacent neighbourhood.
const KING_TRIES: usize = 32;

impl Strategy for AnnealJump {
    fn name(&self) -> &'static str {
        "anneal-jump"
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let mut rng = rng(self.seed);
        let mut session = Session::new(space, eval, run, DEFAULT_BUDGET);
        let mut current: Option<(Point, f64)> = session.best(1).pop();
        let mut stuck = 0;
        while !session.done() {
            let temperature = JUMP_T0 * (JUMP_T1 / JUMP_T0).powf(session.progress());
            let Some((at, cost)) = current.take() else {
                // Starting, stuck or cornered: a random point not evaluated yet.
                let Some(start) = session.fresh(&mut rng) else {
                    break;
                };
                let Some(cost) = session.evaluate(&start) else {
                    break;
                };
                current = Some((start, cost));
                continue;
            };
            let Some(next) = wide_move(space, &at, &mut rng) else {
                continue;
            };
            let new = match session.cost(&next) {
                Some(c) => {
                    stuck += 1;
                    c
                }
                None => {
                    stuck = 0;
                    session.upcoming(std::iter::once(next.clone()));
                    let Some(c) = session.evaluate(&next) else {
                        break;
                    };
                    c
                }
            };
            if stuck > STUCK {
                stuck = 0;
                continue;
            }
            let accept = !cost.is_finite()
                || new <= cost
                || (new.is_finite() && rng.random_bool((-(new - cost) / temperature).exp()));
            current = Some(if accept { (next, new) } else { (at, cost) });
        }
        session.finish()
    }
}

/// [`AnnealJump`]'s move from `at`: random Hamming jumps, then a king's step; `None` where no
/// valid point differs from `at`.
fn wide_move(space: &dyn SearchSpace, at: &[i64], rng: &mut ChaCha8Rng) -> Option<Point> {
    let mut p = at.to_vec();
    for _ in 0..at.len() {
        if rng.random_bool(JUMP) {
            if let Some(q) = neighbours(space, &p, Neighbourhood::Hamming).choose(rng) {
                p = q.clone();
            }
        }
    }
    for _ in 0..KING_TRIES {
        let mut q = p.clone();
        for (i, v) in q.iter_mut().enumerate() {
            let Some(index) = space.domain_index(i, *v) else {
                continue;
            };
            let j = index as i64 + rng.random_range(-1i64..=1);
            if j >= 0 && (j as usize) < space.domain_len(i) {
                *v = space.domain_value(i, j as usize);
            }
        }
        if q != p && space.contains(&q) {
            return Some(q);
        }
    }
    neighbours(space, &p, Neighbourhood::Adjacent)
        .choose(rng)
        .cloned()
        .or_else(|| (p != at).then_some(p))
}
