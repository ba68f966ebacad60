//! A genetic algorithm over valid points (after Kernel Tuner's `genetic_algorithm`).

use super::rng;
use crate::session::Session;
use crate::space::{neighbours, Neighbourhood};
use crate::{Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::seq::IndexedRandom;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// A (μ + λ) genetic algorithm with μ = λ = [`POPULATION`].
///
/// - Population: the best warm-start points, filled up with random points.
/// - Generation: λ children, each from two parents picked by binary tournaments: uniform
///   crossover, then each parameter mutated to a random domain value with probability
///   1 / parameters. A child outside the space is repaired to a random valid Hamming neighbour
///   of it (one parameter changed); children evaluated before or twice in a generation are
///   dropped and the shortfall is filled with random points, so every generation brings new
///   points and the run stops only at its budget or when the space is exhausted.
/// - Survival: the best μ of parents and children; failures cost +inf and die first.
///
/// Each generation is announced to the evaluator before it is measured. The default budget is
/// min(points, 100).
#[derive(Debug, Clone, Copy)]
pub struct Genetic {
    pub seed: u64,
}

/// μ and λ (Kernel Tuner's `popsize` default); `nsga2`'s population and children too.
pub const POPULATION: usize = 20;
const DEFAULT_BUDGET: usize = 100;

impl Strategy for Genetic {
    fn name(&self) -> &'static str {
        "ga"
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let mut rng = rng(self.seed);
        let mut session = Session::new(space, eval, run, DEFAULT_BUDGET);
        let mut population = session.best(POPULATION);
        let mut first = Vec::new();
        while population.len() + first.len() < POPULATION {
            match session.fresh(&mut rng) {
                Some(p) => first.push(p),
                None => break,
            }
        }
        measure(&mut session, first, &mut population);
        while !session.done() && !population.is_empty() {
            let children = generation(&mut session, POPULATION, &mut rng, |rng| {
                breed(space, &population, rng)
            });
            if children.is_empty() {
                break;
            }
            measure(&mut session, children, &mut population);
            population.sort_by(|a, b| a.1.total_cmp(&b.1));
            population.truncate(POPULATION);
        }
        session.finish()
    }
}

/// Up to `count` children not evaluated before, each from `breed` (a child, valid or `None`),
/// leaving out those the driver's advice says are likely refused; where `breed` gives too few
/// in ten tries a child, random points fill the generation, so that every generation brings new
/// points until the space is exhausted.
pub(super) fn generation(
    session: &mut Session,
    count: usize,
    rng: &mut ChaCha8Rng,
    mut breed: impl FnMut(&mut ChaCha8Rng) -> Option<Point>,
) -> Vec<Point> {
    let mut children: Vec<Point> = Vec::with_capacity(count);
    for _ in 0..count * 10 {
        if children.len() == count {
            break;
        }
        let child = breed(rng).filter(|c| !session.seen(c) && !children.contains(c));
        if let Some(c) = child.filter(|c| !session.likely_refused(c)) {
            children.push(c);
        }
    }
    while children.len() < count {
        match session.fresh(rng) {
            Some(p) if !children.contains(&p) => children.push(p),
            Some(_) => {}
            None => break,
        }
    }
    children
}

/// Announces `points`, evaluates them and adds them with their costs to `population`.
fn measure(session: &mut Session, points: Vec<Point>, population: &mut Vec<(Point, f64)>) {
    session.upcoming(points.iter().cloned());
    for p in points {
        if let Some(cost) = session.evaluate(&p) {
            population.push((p, cost));
        }
    }
}

/// One child of two tournament winners, valid or `None`.
fn breed(
    space: &dyn SearchSpace,
    population: &[(Point, f64)],
    rng: &mut ChaCha8Rng,
) -> Option<Point> {
    let a = tournament(population, rng);
    let b = tournament(population, rng);
    offspring(space, a, b, rng)
}

/// A child of `a` and `b`, valid or `None`: uniform crossover, then each parameter mutated to a
/// random domain value with probability 1 / parameters; outside the space, a random valid
/// Hamming neighbour of it.
pub(super) fn offspring(
    space: &dyn SearchSpace,
    a: &[i64],
    b: &[i64],
    rng: &mut ChaCha8Rng,
) -> Option<Point> {
    let n = a.len();
    let mut child: Point = (0..n)
        .map(|p| if rng.random_bool(0.5) { a[p] } else { b[p] })
        .collect();
    for (p, v) in child.iter_mut().enumerate() {
        if rng.random_bool(1.0 / n as f64) {
            *v = space.domain_value(p, rng.random_range(0..space.domain_len(p)));
        }
    }
    if space.contains(&child) {
        return Some(child);
    }
    neighbours(space, &child, Neighbourhood::Hamming)
        .choose(rng)
        .cloned()
}

/// The better of two members drawn at random.
fn tournament<'p>(population: &'p [(Point, f64)], rng: &mut ChaCha8Rng) -> &'p Point {
    let a = population.choose(rng).expect("a population");
    let b = population.choose(rng).expect("a population");
    if b.1 < a.1 {
        &b.0
    } else {
        &a.0
    }
}
