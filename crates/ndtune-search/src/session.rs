//! The bookkeeping every strategy shares: the budget, the trace, and never evaluating twice.

use crate::{Candidates, Evaluator, Step, Trace};
use ndtune_core::Outcome;

/// One run of a strategy: evaluates candidates by index through the evaluator and records them.
pub(crate) struct Session<'a> {
    space: &'a Candidates,
    eval: &'a mut dyn Evaluator,
    budget: usize,
    seen: Vec<bool>,
    trace: Trace,
}

impl<'a> Session<'a> {
    /// A session of at most `budget` evaluations (never more than there are candidates).
    pub fn new(space: &'a Candidates, eval: &'a mut dyn Evaluator, budget: usize) -> Session<'a> {
        Session {
            space,
            eval,
            budget: budget.min(space.len()),
            seen: vec![false; space.len()],
            trace: Trace::default(),
        }
    }

    pub fn budget(&self) -> usize {
        self.budget
    }

    pub fn used(&self) -> usize {
        self.trace.steps.len()
    }

    pub fn done(&self) -> bool {
        self.used() >= self.budget
    }

    pub fn seen(&self, i: usize) -> bool {
        self.seen[i]
    }

    /// Evaluates candidate `i` and returns its outcome; `None`, evaluating nothing, if `i` was
    /// evaluated before or the budget is spent.
    pub fn evaluate(&mut self, i: usize) -> Option<&Outcome> {
        if self.done() || self.seen[i] {
            return None;
        }
        self.seen[i] = true;
        let point = &self.space.points()[i];
        let evaluated = self.eval.evaluate(point);
        self.trace.steps.push(Step {
            point: point.clone(),
            outcome: evaluated.outcome,
            reused: evaluated.reused,
        });
        self.trace.steps.last().map(|s| &s.outcome)
    }

    /// Tells the evaluator which candidates come next (see [`Evaluator::upcoming`]), leaving out
    /// those evaluated already and those past the budget.
    pub fn upcoming(&mut self, indices: impl IntoIterator<Item = usize>) {
        let left = self.budget - self.used();
        let points: Vec<_> = indices
            .into_iter()
            .filter(|&i| !self.seen[i])
            .take(left)
            .map(|i| self.space.points()[i].clone())
            .collect();
        self.eval.upcoming(&points);
    }

    pub fn finish(self) -> Trace {
        self.trace
    }
}
