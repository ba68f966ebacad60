//! Simulated annealing over the adjacent neighbourhood.

use super::rng;
use crate::session::Session;
use crate::space::{neighbours, Neighbourhood};
use crate::{Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::seq::IndexedRandom;
use rand::RngExt;

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
///   current point has been evaluated, from a random point not evaluated yet.
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
                let fresh: Vec<Point> = neighbours(space, at, Neighbourhood::Adjacent)
                    .into_iter()
                    .filter(|n| !session.seen(n))
                    .collect();
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
