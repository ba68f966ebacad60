//! Simulated annealing over the neighbourhood graph of the candidates.

use super::rng;
use crate::session::Session;
use crate::{Candidates, Evaluator, Strategy, Trace};
use ndtune_core::Outcome;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::RngExt;

/// Simulated annealing on the cost ln(score in ms); every outcome but
/// [`Outcome::Measured`] costs +inf.
///
/// - Neighbours of a point: for each parameter and direction, the nearest value of the
///   parameter's domain that, with the other parameters unchanged, gives a candidate. That is
///   the next value of the sorted domain where it gives a candidate; where the constraints cut
///   that out, the walk jumps the gap to the nearest value that does.
/// - Step: evaluate a uniformly chosen neighbour not evaluated yet; move to it if its cost is no
///   worse, else with probability exp(-Δcost / T). A failure is never moved to, unless the
///   current point is a failure too.
/// - Temperature: geometric over the budget, T(k) = T0 (T1 / T0)^(k / budget) after k
///   evaluations, T0 = 0.2 and T1 = 0.005. A step 10% slower (Δcost 0.095) is taken with
///   probability 0.62 at first, 0.05 half-way and about 0 at the end.
/// - Restart: when every neighbour of the current point has been evaluated, the walk starts
///   again from a random point not evaluated yet.
///
/// The default budget is min(candidates, 100).
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

    fn run(
        &mut self,
        space: &Candidates,
        eval: &mut dyn Evaluator,
        budget: Option<usize>,
    ) -> Trace {
        let mut rng = rng(self.seed);
        let mut session = Session::new(space, eval, budget.unwrap_or(DEFAULT_BUDGET));
        let mut restarts: Vec<usize> = (0..space.len()).collect();
        restarts.shuffle(&mut rng);
        // The point the walk stands on and its cost.
        let mut current: Option<(usize, f64)> = None;
        while !session.done() {
            let progress = session.used() as f64 / session.budget() as f64;
            let temperature = T0 * (T1 / T0).powf(progress);
            let next = current.and_then(|(at, _)| {
                let fresh: Vec<usize> = neighbours(space, at)
                    .into_iter()
                    .filter(|&n| !session.seen(n))
                    .collect();
                let chosen = fresh.choose(&mut rng).copied();
                // The chosen neighbour first, the others after it: the walk may go there next.
                session.upcoming(
                    chosen
                        .into_iter()
                        .chain(fresh.iter().copied().filter(|&n| Some(n) != chosen)),
                );
                chosen
            });
            match (current, next) {
                (Some((_, cost)), Some(n)) => {
                    let new = cost_of(session.evaluate(n));
                    let delta = new - cost;
                    if new <= cost
                        || (new.is_finite() && rng.random_bool((-delta / temperature).exp()))
                    {
                        current = Some((n, new));
                    }
                }
                _ => {
                    // Stuck (or starting): restart from a random point not evaluated yet. There is
                    // one, since the budget never exceeds the candidates.
                    while let Some(start) = restarts.pop() {
                        if !session.seen(start) {
                            current = Some((start, cost_of(session.evaluate(start))));
                            break;
                        }
                    }
                }
            }
        }
        session.finish()
    }
}

/// ln(score) of a measured outcome, +inf for anything else.
fn cost_of(outcome: Option<&Outcome>) -> f64 {
    outcome
        .and_then(Outcome::score_ms)
        .filter(|ms| *ms >= 0.0)
        .map_or(f64::INFINITY, f64::ln)
}

/// The candidates next to candidate `at`: per parameter and direction, the nearest domain value
/// that gives a candidate when only that parameter changes.
fn neighbours(space: &Candidates, at: usize) -> Vec<usize> {
    let mut probe = space.points()[at].clone();
    let mut found = Vec::new();
    for (p, domain) in space.domains().iter().enumerate() {
        let value = probe[p];
        let pos = domain
            .binary_search(&value)
            .expect("a candidate's value is in its domain");
        found.extend(nearest(space, &mut probe, p, domain[..pos].iter().rev()));
        found.extend(nearest(space, &mut probe, p, domain[pos + 1..].iter()));
        probe[p] = value;
    }
    found
}

/// The first of `values` that, set as parameter `p` of `probe`, gives a candidate.
fn nearest<'a>(
    space: &Candidates,
    probe: &mut [i64],
    p: usize,
    mut values: impl Iterator<Item = &'a i64>,
) -> Option<usize> {
    values.find_map(|&v| {
        probe[p] = v;
        space.index_of(probe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_step_one_value_and_jump_gaps_the_constraints_cut() {
        // A 4x4 grid without (1, 1) and (2, 1).
        let points = (0..4)
            .flat_map(|x| (0..4).map(move |y| vec![x, y]))
            .filter(|p| !(p[1] == 1 && (p[0] == 1 || p[0] == 2)))
            .collect();
        let space = Candidates::new(vec!["X".into(), "Y".into()], points).unwrap();
        let of = |p: &[i64]| {
            let mut n: Vec<_> = neighbours(&space, space.index_of(p).unwrap())
                .into_iter()
                .map(|i| space.points()[i].clone())
                .collect();
            n.sort();
            n
        };
        assert_eq!(of(&[0, 0]), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(of(&[0, 1]), vec![vec![0, 0], vec![0, 2], vec![3, 1]]);
        assert_eq!(of(&[1, 0]), vec![vec![0, 0], vec![1, 2], vec![2, 0]]);
    }

    #[test]
    fn failures_cost_more_than_any_measurement() {
        let measured = Outcome::Measured(ndtune_core::Timing::new(vec![1e9], 1));
        assert!(cost_of(Some(&measured)) < cost_of(Some(&Outcome::Crashed { detail: "".into() })));
        assert_eq!(cost_of(None), f64::INFINITY);
    }
}
