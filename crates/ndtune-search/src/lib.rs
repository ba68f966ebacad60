//! Search strategies over an evaluator. This crate owns:
//!
//! - [`SearchSpace`]: what a strategy may know about a space, implemented by [`Candidates`] (a
//!   listed space: replay) and by [`ValidSpace`] (any pruned space, counted and ranked, never
//!   listed), with [`neighbours`] (Hamming and adjacent) drawn from it.
//! - [`Evaluator`]: the one way a strategy learns how a point performs: its outcome and its
//!   cost ([`Evaluator::cost`]: the time by default, or what the user's objective makes it; a
//!   strategy only ever minimises a positive cost), and with several objectives a cost per
//!   objective ([`Evaluator::costs`]). Live evaluation on a device lives elsewhere;
//!   [`Recorded`] replays recorded outcomes (tests, `--replay`).
//! - [`Strategy`] and its implementations, picked by name with [`by_name`] (see
//!   [`STRATEGY_NAMES`]): exhaustive, random, simulated annealing (adjacent steps, or wide moves),
//!   a genetic algorithm, iterated and multi-start local search, a tree-ensemble surrogate and
//!   Bayesian optimisation with expected improvement, and for several objectives NSGA-II and
//!   ParEGO, whose runs' fronts [`Trace::front`] gives. Each records a [`Trace`], evaluates a point at most once per
//!   run, stops at its [`Budget`] (evaluations and/or time) or when it has nothing new to
//!   propose, and measures a [`Run`]'s warm-start points first.
//! - [`warm_start`]: the configurations to measure first, from recordings of the same kernel on
//!   other devices.
//! - [`evaluate_strategy`]: how close a strategy gets to a recording's optimum, over seeds.
//!
//! It must not touch a device, a file or a database: strategies only ask the evaluator.
//!
//! ```
//! use ndtune_core::{Outcome, Timing};
//! use ndtune_search::{by_name, Recorded};
//!
//! let ms = |t: f64| Outcome::Measured(Timing::new(vec![t], 1));
//! let mut recorded = Recorded::from_points(
//!     vec!["X".into()],
//!     [(vec![1], ms(3.0)), (vec![2], ms(1.0)), (vec![4], ms(2.0))],
//! )
//! .unwrap();
//! let space = recorded.space().clone();
//! let trace = by_name("exhaustive", 0).unwrap().run(&space, &mut recorded, None);
//! assert_eq!(trace.best(), Some((&vec![2], 1.0)));
//! ```

mod candidates;
mod gp;
mod recorded;
mod session;
mod space;
mod strategy;
mod warm;

pub use candidates::{Candidates, InvalidSpace};
pub use ndtune_space::lazy::ValidSpace;
pub use recorded::{evaluate_strategy, CompareError, Recorded, Summary, NOT_RECORDED};
pub use space::{neighbours, Neighbourhood, SearchSpace};
pub use strategy::{
    auto_choice, by_name, Anneal, Auto, AutoChoice, Bayes, Exhaustive, Genetic, Listed,
    LocalSearch, Nsga2, ParEgo, RandomSampling, Surrogate, UnknownStrategy, AUTO_BUDGET,
    AUTO_CLIMB, AUTO_EXHAUSTIVE_TIME, AUTO_EXHAUSTIVE_UP_TO, AUTO_PROBE, AUTO_PROBE_UP_TO,
    AUTO_STRATEGY, STRATEGY_NAMES,
};
pub use warm::{warm_start, FAILED_RATIO, WARM_POINTS};

use ndtune_core::Outcome;
use std::time::Duration;

/// A candidate: one valid configuration as values in the space's parameter order.
pub type Point = Vec<i64>;

/// Evaluates configurations: live on a device, or replayed from recorded results. Strategies see
/// only this.
pub trait Evaluator {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated;

    /// Whether `point` lies outside the space after all, by a restriction the evaluator knows
    /// and the space does not count (the Python package's restriction functions): it is never
    /// evaluated, does not use the budget, and strategies take it as a failure.
    fn excluded(&mut self, _point: &[i64]) -> bool {
        false
    }

    /// The points the strategy expects to ask for next, in that order: a live evaluator builds
    /// them ahead on its build workers. A hint, never a promise: each call replaces the previous
    /// one, and points never asked for cost only their builds. Adaptive strategies call it with their
    /// next batch; those that know their order promise it with [`Evaluator::will_ask`].
    fn upcoming(&mut self, _points: &[Point]) {}

    /// Like [`Evaluator::upcoming`], and a promise: the strategy will ask for every one of these
    /// points, whatever the outcomes, so a live evaluator may measure them in the order their
    /// builds finish, before they are asked for. Exhaustive search, random sampling and warm
    /// starts promise; adaptive strategies only hint.
    fn will_ask(&mut self, points: &[Point]) {
        self.upcoming(points)
    }

    /// [`Evaluator::will_ask`] for `asked`, and `hinted` built after them as
    /// [`Evaluator::upcoming`]'s points are: what a strategy may ask for next, built by workers
    /// that would otherwise wait. By default only the promise.
    fn will_ask_then(&mut self, asked: &[Point], _hinted: &[Point]) {
        self.will_ask(asked)
    }

    /// How many evaluations cost about as much as one: a live evaluator builds that many
    /// configurations at once (its build workers), so a strategy that asks for a batch of this
    /// many at a time waits for about one build per batch. 1 for a replay.
    fn width(&self) -> usize {
        1
    }

    /// Of `points` (promised), the index of one that can be evaluated now without waiting for
    /// its build, waiting until one can where none can yet: a live evaluator's first build to
    /// finish. By default the first.
    fn first_ready(&mut self, _points: &[Point]) -> usize {
        0
    }

    /// What the driver's advice says of `point` before it is measured: `Some(true)` where the
    /// work-group it launches is above its build's `CL_KERNEL_WORK_GROUP_SIZE` (or its local
    /// memory, the build's own with the declared, above the device's), as queried when another
    /// configuration of the same build was evaluated; `Some(false)` where it is within; `None`
    /// where the evaluator does not know. A launch beyond the advice is likely, not certain,
    /// to be refused (NVIDIA's driver launches some): strategies take it as a prior.
    fn exceeds_advice(&mut self, _point: &[i64]) -> Option<bool> {
        None
    }

    /// What strategies minimise for an evaluated point: a positive, finite cost, lower is
    /// better: the objective's value, or its reciprocal where higher is better
    /// (`ndtune_metrics::Objective::cost`). `None`, the worst cost, for a failure and for a
    /// measurement whose objective has no value. By default the time: the score in ms.
    fn cost(&self, _point: &[i64], outcome: &Outcome) -> Option<f64> {
        time_cost(outcome)
    }

    /// The costs of an evaluated point, one per objective where a campaign has several (each
    /// positive and finite, lower is better; the first is [`Evaluator::cost`]); `None` where
    /// one has no value. Front strategies (`nsga2`, `parego`) search by these, the others by
    /// the first. By default the one cost.
    fn costs(&self, point: &[i64], outcome: &Outcome) -> Option<Vec<f64>> {
        self.cost(point, outcome).map(|c| vec![c])
    }

    /// How many objectives [`Evaluator::costs`] gives.
    fn objectives(&self) -> usize {
        1
    }

    /// Whether evaluations are measured now on a device, taking real time (not replayed), so
    /// that a strategy may judge by how long they take (`auto` does).
    fn measuring(&self) -> bool {
        false
    }

    /// Whether evaluating `point` would read its outcome back from a store rather than
    /// measure it.
    fn stored(&mut self, _point: &[i64]) -> bool {
        false
    }

    /// A strategy that decides during the run what it runs (`auto`) tells the evaluator: it
    /// now evaluates at most `total` points, for the reason `why` (for the user).
    fn decided(&mut self, _total: u128, _why: &str) {}
}

/// The default cost ([`Evaluator::cost`]): a measured score in ms, positive and finite.
pub fn time_cost(outcome: &Outcome) -> Option<f64> {
    outcome.score_ms().filter(|ms| ms.is_finite() && *ms > 0.0)
}

/// The result of one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    pub outcome: Outcome,
    /// Whether the outcome was reused from a store rather than run now.
    pub reused: bool,
}

/// What a run may spend: evaluations, time, or both (it stops at the first reached). Without
/// either, each strategy has its default number of evaluations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    pub evaluations: Option<usize>,
    /// Wall-clock time from the start of the run; a run with a time budget is only as
    /// reproducible as the evaluator's speed.
    pub time: Option<Duration>,
}

/// How to run a strategy: its budget, and points to measure first (a warm start: the best
/// configurations of the same kernel elsewhere). Warm points outside the space are skipped; the
/// strategy then starts from what they measured (population, surrogate, starting point).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    pub budget: Budget,
    pub warm: Vec<Point>,
    /// Stop after this many evaluations in a row (after the warm start) that found nothing
    /// cheaper than the best so far: with a warm start from a near problem, the best is
    /// usually among the first few, and the rest of the budget confirms it.
    pub patience: Option<usize>,
}

/// A search strategy: deterministic for its seed (with an evaluation budget), it never evaluates
/// a point twice nor a point outside `space`, and every outcome but a measurement counts as the
/// worst cost, never as an error.
pub trait Strategy {
    fn name(&self) -> &'static str;

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace;

    /// Whether the strategy's choices never depend on its evaluation budget, so that the
    /// first N evaluations of a run with a larger budget are the run with budget N (a
    /// benchmark of several budgets may run it once).
    fn anytime(&self) -> bool {
        false
    }

    /// [`Strategy::search`] with at most `budget` evaluations (`None`: the strategy's default)
    /// and no warm start.
    fn run(
        &mut self,
        space: &dyn SearchSpace,
        eval: &mut dyn Evaluator,
        budget: Option<usize>,
    ) -> Trace {
        let run = Run {
            budget: Budget {
                evaluations: budget,
                time: None,
            },
            warm: Vec::new(),
            patience: None,
        };
        self.search(space, eval, &run)
    }
}

/// One evaluation of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub point: Point,
    pub outcome: Outcome,
    /// Copied from [`Evaluated::reused`].
    pub reused: bool,
    /// [`Evaluator::cost`] of the outcome.
    pub cost: Option<f64>,
    /// [`Evaluator::costs`] of the outcome: one per objective.
    pub costs: Option<Vec<f64>>,
}

/// The evaluations of one run, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    pub steps: Vec<Step>,
    /// What a strategy that picks another (`auto`) ran, and why; `None` for the others.
    pub decided: Option<Decision>,
}

/// The strategy `auto` ran and why, in words for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub strategy: &'static str,
    pub why: String,
}

impl Trace {
    /// The point of the lowest cost and its cost (with the default objective: the fastest and
    /// its score in ms); the earliest on ties. A failure has no cost and is never the best.
    pub fn best(&self) -> Option<(&Point, f64)> {
        let mut best: Option<(&Point, f64)> = None;
        for step in &self.steps {
            let Some(cost) = step.cost else { continue };
            if best.is_none_or(|(_, b)| cost < b) {
                best = Some((&step.point, cost));
            }
        }
        best
    }

    /// The steps on the Pareto front of their costs ([`Evaluator::costs`]), in evaluation
    /// order: with one objective, the best (the earliest of equals).
    pub fn front(&self) -> Vec<&Step> {
        let measured: Vec<&Step> = self.steps.iter().filter(|s| s.costs.is_some()).collect();
        let points: Vec<Vec<f64>> = measured
            .iter()
            .map(|s| s.costs.clone().expect("measured"))
            .collect();
        ndtune_core::pareto::front(&points)
            .into_iter()
            .map(|i| measured[i])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_core::Timing;

    fn step(point: i64, outcome: Outcome) -> Step {
        Step {
            point: vec![point],
            cost: time_cost(&outcome),
            costs: time_cost(&outcome).map(|c| vec![c]),
            outcome,
            reused: false,
        }
    }

    #[test]
    fn best_is_the_fastest_measured_point_and_never_a_failure() {
        let ms = |t: f64| Outcome::Measured(Timing::new(vec![t], 1));
        let trace = Trace {
            steps: vec![
                step(0, ms(3.0)),
                step(
                    1,
                    Outcome::WrongResult {
                        detail: "fast but wrong".into(),
                    },
                ),
                step(2, Outcome::Measured(Timing::new(vec![], 1))),
                step(3, ms(2.0)),
                step(4, Outcome::TimedOut { seconds: 0.0 }),
                step(5, ms(2.0)),
            ],
            decided: None,
        };
        assert_eq!(trace.best(), Some((&vec![3], 2.0)));
        let failures = Trace {
            steps: vec![step(1, Outcome::Refused { error: "x".into() })],
            decided: None,
        };
        assert_eq!(failures.best(), None);
        assert_eq!(Trace::default().best(), None);
        assert_eq!(time_cost(&Outcome::Crashed { detail: "".into() }), None);
        assert_eq!(time_cost(&ms(0.0)), None, "a cost is positive");
    }
}
