//! The bookkeeping every strategy shares: the budget (evaluations and time), the warm start, the
//! trace, the costs of the points evaluated, and never evaluating a point twice.

use crate::space::{Draws, SearchSpace};
use crate::{Evaluator, Point, Run, Step, Trace};
use ndtune_core::Outcome;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One run of a strategy: evaluates points through the evaluator and records them.
pub(crate) struct Session<'a> {
    space: &'a dyn SearchSpace,
    eval: &'a mut dyn Evaluator,
    budget: usize,
    started: Instant,
    time: Option<Duration>,
    /// The cost of every point evaluated: ln of the evaluator's cost, +inf for a failure.
    costs: HashMap<Point, f64>,
    /// Where the campaign has several objectives, the ln of each cost of every point measured
    /// with a value of each ([`Evaluator::costs`]).
    vectors: HashMap<Point, Vec<f64>>,
    trace: Trace,
    /// Made on the first call of [`Session::fresh`].
    draws: Option<Draws>,
    /// `run`'s patience, from the end of the warm start on.
    patience: Option<usize>,
    /// The lowest cost so far, and the evaluations since it was found.
    best: f64,
    since_best: usize,
}

impl<'a> Session<'a> {
    /// A session of at most `run`'s evaluations (`default_budget` where it sets none, every
    /// point where it sets only a time) and never more than there are points; then evaluates
    /// `run`'s warm-start points that are valid.
    pub fn new(
        space: &'a dyn SearchSpace,
        eval: &'a mut dyn Evaluator,
        run: &Run,
        default_budget: usize,
    ) -> Session<'a> {
        let wanted = match (run.budget.evaluations, run.budget.time) {
            (Some(n), _) => n,
            (None, Some(_)) => usize::MAX,
            (None, None) => default_budget,
        };
        let budget = usize::try_from(space.len()).map_or(wanted, |len| wanted.min(len));
        let mut session = Session {
            space,
            eval,
            budget,
            started: Instant::now(),
            time: run.budget.time,
            costs: HashMap::new(),
            vectors: HashMap::new(),
            trace: Trace::default(),
            draws: None,
            patience: None,
            best: f64::INFINITY,
            since_best: 0,
        };
        let warm: Vec<Point> = run
            .warm
            .iter()
            .filter(|p| space.contains(p))
            .cloned()
            .collect();
        session.promise(warm.iter().cloned());
        for p in warm {
            session.evaluate(&p);
        }
        session.patience = run.patience;
        session.since_best = 0;
        session
    }

    pub fn space(&self) -> &'a dyn SearchSpace {
        self.space
    }

    pub fn used(&self) -> usize {
        self.trace.steps.len()
    }

    /// The evaluations are spent, the time is up, or the patience ran out.
    pub fn done(&self) -> bool {
        self.used() >= self.budget
            || self.time.is_some_and(|t| self.started.elapsed() >= t)
            || self.patience.is_some_and(|p| self.since_best >= p)
    }

    /// How far through its budget the run is, 0 to 1 (by time where that ends it first).
    pub fn progress(&self) -> f64 {
        let by_count = if self.budget == usize::MAX {
            0.0
        } else {
            self.used() as f64 / self.budget.max(1) as f64
        };
        let by_time = self.time.map_or(0.0, |t| {
            self.started.elapsed().as_secs_f64() / t.as_secs_f64().max(1e-9)
        });
        by_count.max(by_time).min(1.0)
    }

    pub fn seen(&self, point: &[i64]) -> bool {
        self.costs.contains_key(point)
    }

    /// The cost of `point` if it was evaluated.
    pub fn cost(&self, point: &[i64]) -> Option<f64> {
        self.costs.get(point).copied()
    }

    /// Every point evaluated with its cost, in evaluation order.
    pub fn evaluated(&self) -> impl Iterator<Item = (&Point, f64)> + use<'_, 'a> {
        self.trace
            .steps
            .iter()
            .map(|s| (&s.point, self.costs[&s.point]))
    }

    /// How many objectives the evaluator's costs have ([`Evaluator::objectives`]).
    pub fn objectives(&self) -> usize {
        self.eval.objectives().max(1)
    }

    /// Every point evaluated, in evaluation order, with the ln of its cost per objective;
    /// `None` for a failure or a measurement an objective has no value for.
    pub fn evaluated_costs(
        &self,
    ) -> impl Iterator<Item = (&Point, Option<&Vec<f64>>)> + use<'_, 'a> {
        self.trace
            .steps
            .iter()
            .map(|s| (&s.point, self.vectors.get(&s.point)))
    }

    /// The `k` cheapest points evaluated, cheapest first (earliest on ties).
    pub fn best(&self, k: usize) -> Vec<(Point, f64)> {
        let mut all: Vec<(Point, f64)> = self.evaluated().map(|(p, c)| (p.clone(), c)).collect();
        all.sort_by(|a, b| a.1.total_cmp(&b.1));
        all.truncate(k);
        all
    }

    /// Evaluates `point` and returns its cost; `None`, evaluating nothing, if it was evaluated
    /// before or the run is done. A point the evaluator excludes costs +inf and no evaluation.
    pub fn evaluate(&mut self, point: &Point) -> Option<f64> {
        if self.done() || self.seen(point) {
            return None;
        }
        if self.eval.excluded(point) {
            self.costs.insert(point.clone(), f64::INFINITY);
            return Some(f64::INFINITY);
        }
        let evaluated = self.eval.evaluate(point);
        let cost = self.eval.cost(point, &evaluated.outcome);
        let costs = self.eval.costs(point, &evaluated.outcome);
        if let Some(costs) = &costs {
            self.vectors
                .insert(point.clone(), costs.iter().map(|c| c.ln()).collect());
        }
        let log_cost = cost.map_or(f64::INFINITY, f64::ln);
        if log_cost < self.best {
            self.best = log_cost;
            self.since_best = 0;
        } else {
            self.since_best += 1;
        }
        self.costs.insert(point.clone(), log_cost);
        self.trace.steps.push(Step {
            point: point.clone(),
            outcome: evaluated.outcome,
            reused: evaluated.reused,
            cost,
            costs,
        });
        Some(log_cost)
    }

    /// How likely `point` is to be refused at launch, from the driver's advice
    /// ([`Evaluator::exceeds_advice`]): 0 where the evaluator knows of no excess, else the
    /// share of this run's launches beyond their advice that were refused, starting from a
    /// prior of [`REFUSED_BEYOND_ADVICE`] (as many pseudo-launches as [`ADVICE_PRIOR_WEIGHT`]).
    pub fn refusal_risk(&mut self, point: &[i64]) -> f64 {
        if self.eval.exceeds_advice(point) != Some(true) {
            return 0.0;
        }
        let (mut refused, mut beyond) = (0.0, 0.0);
        for step in &self.trace.steps {
            if step.outcome.advice().is_some_and(|a| a.exceeded()) {
                beyond += 1.0;
                if matches!(step.outcome, Outcome::Refused { .. }) {
                    refused += 1.0;
                }
            }
        }
        (refused + REFUSED_BEYOND_ADVICE * ADVICE_PRIOR_WEIGHT) / (beyond + ADVICE_PRIOR_WEIGHT)
    }

    /// Whether `point` is more likely refused than not ([`Session::refusal_risk`]).
    pub fn likely_refused(&mut self, point: &[i64]) -> bool {
        self.refusal_risk(point) > 0.5
    }

    /// A uniformly random point not evaluated yet; `None` when every point was.
    pub fn fresh(&mut self, rng: &mut ChaCha8Rng) -> Option<Point> {
        let len = self.space.len();
        let draws = self.draws.get_or_insert_with(|| Draws::new(len, rng));
        while let Some(rank) = draws.next(rng) {
            let point = self
                .space
                .nth(rank)
                .expect("a rank below the space's length");
            if !self.costs.contains_key(&point) {
                return Some(point);
            }
        }
        None
    }

    /// Tells the evaluator which points come next (see [`Evaluator::upcoming`]), leaving out
    /// those evaluated already and those past the budget.
    pub fn upcoming(&mut self, points: impl IntoIterator<Item = Point>) {
        let points = self.unseen(points, self.sure());
        self.eval.upcoming(&points);
    }

    /// Tells the evaluator that these points will be evaluated next whatever the outcomes
    /// ([`Evaluator::will_ask`]), leaving out those evaluated already and those past the budget.
    pub fn promise(&mut self, points: impl IntoIterator<Item = Point>) {
        let points = self.unseen(points, self.sure());
        self.eval.will_ask(&points);
    }

    /// [`Session::promise`] of `asked`, and `hinted` built after them on the evaluator's
    /// workers left over ([`Evaluator::will_ask_then`]): no more of them than
    /// [`Session::width`] less the points promised, so that nothing waits behind them.
    pub fn promise_then_hint(
        &mut self,
        asked: impl IntoIterator<Item = Point>,
        hinted: impl IntoIterator<Item = Point>,
    ) {
        let asked = self.unseen(asked, self.sure());
        let spare = self.width().saturating_sub(asked.len());
        let hinted = self.unseen(hinted.into_iter().filter(|p| !asked.contains(p)), spare);
        self.eval.will_ask_then(&asked, &hinted);
    }

    /// How many evaluations cost about as much as one ([`Evaluator::width`]).
    pub fn width(&self) -> usize {
        self.eval.width().max(1)
    }

    /// Of `points` (none evaluated yet), the index of one the evaluator can evaluate first
    /// ([`Evaluator::first_ready`]).
    pub fn first_ready(&mut self, points: &[Point]) -> usize {
        match points.len() {
            0 | 1 => 0,
            n => self.eval.first_ready(points).min(n - 1),
        }
    }

    /// How many more evaluations are sure to come: the budget left, and with a patience, the
    /// evaluations before it runs out if none of them finds anything better.
    fn sure(&self) -> usize {
        let left = self.budget - self.used();
        self.patience
            .map_or(left, |p| left.min(p.saturating_sub(self.since_best)))
    }

    /// The first `most` of `points` not evaluated yet (no more than [`Session::sure`] are
    /// announced, so that nothing is built or measured ahead for evaluations a patience may
    /// never make).
    fn unseen(&self, points: impl IntoIterator<Item = Point>, most: usize) -> Vec<Point> {
        let mut kept: Vec<Point> = Vec::new();
        for p in points {
            if kept.len() >= most {
                break;
            }
            if !self.seen(&p) {
                kept.push(p);
            }
        }
        kept
    }

    /// Evaluates the points `next` yields, in order, until it ends or the run is done; keeps the
    /// evaluator told of the next [`WINDOW`] of them, as a promise ([`Evaluator::will_ask`]):
    /// `next` must not depend on the outcomes.
    pub fn evaluate_in_order(&mut self, mut next: impl FnMut(&mut Session<'a>) -> Option<Point>) {
        let mut ahead = std::collections::VecDeque::new();
        loop {
            let mut grew = false;
            if ahead.len() <= WINDOW / 2 {
                let before = ahead.len();
                while ahead.len() < WINDOW.min(self.budget - self.used()) {
                    match next(self) {
                        Some(p) => ahead.push_back(p),
                        None => break,
                    }
                }
                grew = ahead.len() > before || before == 0;
            }
            // With a patience, only the evaluations sure to come are promised: the next ones
            // are promised as they become sure.
            if grew || self.patience.is_some() {
                self.promise(ahead.iter().cloned());
            }
            let Some(p) = ahead.pop_front() else { break };
            if self.done() {
                break;
            }
            self.evaluate(&p);
        }
    }

    pub fn finish(self) -> Trace {
        self.trace
    }
}

/// The prior chance that a launch beyond the driver's advice is refused
/// ([`Session::refusal_risk`]), and its weight in launches.
pub(crate) const REFUSED_BEYOND_ADVICE: f64 = 0.9;
pub(crate) const ADVICE_PRIOR_WEIGHT: f64 = 4.0;

/// How many points [`Session::evaluate_in_order`] announces ahead.
pub(crate) const WINDOW: usize = 1024;
