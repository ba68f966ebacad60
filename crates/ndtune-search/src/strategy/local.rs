//! Local search: greedy iterated local search and multi-start local search (after Kernel
//! Tuner's `greedy_ils` and `greedy_mls`).

use super::rng;
use crate::session::Session;
use crate::space::{neighbours, Neighbourhood};
use crate::{Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::seq::{IndexedRandom, SliceRandom};
use rand_chacha::ChaCha8Rng;

/// First-improvement hill climbing: the neighbours of the current point in random order (all
/// announced to the evaluator), moving to the first one cheaper than it; where the evaluator
/// builds several at once ([`crate::Evaluator::width`]), the neighbours go in batches of that
/// many, each evaluated in the order its builds finish. At a local optimum:
///
/// - iterated (`ils`): perturb the best local optimum so far by [`PERTURBATION`] random moves
///   in the neighbourhood and climb again from there;
/// - multi-start (`mls`): climb again from a random point not evaluated yet.
///
/// Neighbours measured before cost nothing; those the driver's advice says are likely refused
/// at launch are skipped ([`crate::Evaluator::exceeds_advice`]). When perturbations keep landing on measured points
/// without measuring anything new, the search restarts from a random point instead, so it ends
/// only at its budget or when every point has been measured. Starts from the best warm-start
/// point where there is one. The default budget is min(points, 100).
#[derive(Debug, Clone, Copy)]
pub struct LocalSearch {
    pub seed: u64,
    pub neighbourhood: Neighbourhood,
    /// Iterated (perturb the best optimum) rather than multi-start (random restarts).
    pub iterated: bool,
}

/// Random moves from a local optimum to the next start of an iterated search.
pub const PERTURBATION: usize = 3;
const DEFAULT_BUDGET: usize = 100;
/// Perturbations in a row that may measure nothing before a random restart.
const IDLE_PERTURBATIONS: usize = 8;

impl Strategy for LocalSearch {
    fn name(&self) -> &'static str {
        match (self.iterated, self.neighbourhood) {
            (true, Neighbourhood::Hamming) => "ils",
            (true, Neighbourhood::Adjacent) => "ils-adjacent",
            (false, Neighbourhood::Hamming) => "mls",
            (false, Neighbourhood::Adjacent) => "mls-adjacent",
        }
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let mut rng = rng(self.seed);
        let mut session = Session::new(space, eval, run, DEFAULT_BUDGET);
        let mut current = match session.best(1).pop() {
            Some(best) => best,
            None => match random_start(&mut session, &mut rng) {
                Some(start) => start,
                None => return session.finish(),
            },
        };
        let mut best_optimum: Option<(Point, f64)> = None;
        let mut idle = 0;
        while !session.done() {
            let used = session.used();
            match self.climb_step(&mut session, &current.0, current.1, &mut rng) {
                Step::Moved(to) => {
                    current = to;
                    continue;
                }
                Step::Done => break,
                Step::Optimum => {}
            }
            if best_optimum.as_ref().is_none_or(|b| current.1 < b.1) {
                best_optimum = Some(current.clone());
            }
            idle = if session.used() == used { idle + 1 } else { 0 };
            let next = if self.iterated && idle < IDLE_PERTURBATIONS {
                let from = best_optimum.as_ref().expect("set above").0.clone();
                self.perturb(&mut session, from, &mut rng)
            } else {
                idle = 0;
                random_start(&mut session, &mut rng)
            };
            match next {
                Some(start) => current = start,
                None => break,
            }
        }
        session.finish()
    }
}

enum Step {
    Moved((Point, f64)),
    Optimum,
    Done,
}

impl LocalSearch {
    /// Looks for a cheaper neighbour of `at`, the neighbours in random order and in batches of
    /// the evaluator's width ([`Session::width`]), moving to the first one cheaper than `at`.
    /// A batch is promised to the evaluator, with the neighbours of its points (where the
    /// search may go next) hinted after it for the build workers left over, and evaluated in
    /// the order its builds finish ([`Session::first_ready`]): a live evaluator that builds
    /// that many at once waits for about one build per batch, not for its slowest. With a
    /// width of 1: each neighbour in turn, all of them hinted.
    fn climb_step(
        &self,
        session: &mut Session,
        at: &[i64],
        cost: f64,
        rng: &mut ChaCha8Rng,
    ) -> Step {
        let mut around = neighbours(session.space(), at, self.neighbourhood);
        around.shuffle(rng);
        let width = session.width();
        if width == 1 {
            session.upcoming(around.iter().cloned());
        }
        for batch in around.chunks(width) {
            let mut fresh = Vec::new();
            for n in batch {
                match session.cost(n) {
                    // Measured before: costs nothing.
                    Some(c) if c < cost => return Step::Moved((n.clone(), c)),
                    Some(_) => {}
                    // A refusal is never an improvement: skip what the driver's advice says it
                    // would refuse (learnt as the neighbours are measured).
                    None if session.likely_refused(n) => {}
                    None => fresh.push(n.clone()),
                }
            }
            if width > 1 {
                let next = interleaved(
                    batch
                        .iter()
                        .map(|n| neighbours(session.space(), n, self.neighbourhood))
                        .collect(),
                );
                session.promise_then_hint(fresh.iter().cloned(), next);
            }
            while !fresh.is_empty() {
                let n = fresh.remove(session.first_ready(&fresh));
                match session.evaluate(&n) {
                    None => return Step::Done,
                    Some(c) if c < cost => return Step::Moved((n, c)),
                    Some(_) => {}
                }
            }
        }
        Step::Optimum
    }

    /// [`PERTURBATION`] random moves from `from`, then the point's cost (measured if new).
    fn perturb(
        &self,
        session: &mut Session,
        mut from: Point,
        rng: &mut ChaCha8Rng,
    ) -> Option<(Point, f64)> {
        for _ in 0..PERTURBATION {
            match neighbours(session.space(), &from, self.neighbourhood).choose(rng) {
                Some(n) => from = n.clone(),
                None => break,
            }
        }
        match session.cost(&from) {
            Some(c) => Some((from, c)),
            None => session.evaluate(&from).map(|c| (from, c)),
        }
    }
}

/// The first of each list, then the second of each, and so on.
fn interleaved(lists: Vec<Vec<Point>>) -> Vec<Point> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| lists.iter().filter_map(move |l| l.get(i).cloned()))
        .collect()
}

/// A random point not evaluated yet, evaluated.
fn random_start(session: &mut Session, rng: &mut ChaCha8Rng) -> Option<(Point, f64)> {
    let p = session.fresh(rng)?;
    session.evaluate(&p).map(|c| (p, c))
}
