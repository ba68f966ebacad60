//! Replaying recorded outcomes, and scoring strategies against a replay.

use crate::strategy::{by_name, Exhaustive, UnknownStrategy};
use crate::{time_cost, Candidates, Evaluated, Evaluator, InvalidSpace, Point, Strategy};
use ndtune_core::{Codec, Config, Outcome};
use std::fmt;

/// Recorded outcomes replayed as an evaluator: a recorded point evaluates to its outcome, marked
/// reused, and costs its time, or what [`Recorded::costed`] made it cost.
///
/// A point the recording lacks evaluates to `Outcome::Pruned { constraint: "not in the
/// recording" }`, not reused: a brute-force recording covers every valid point, so a point
/// outside it is one the recorded space excludes. A strategy run on [`Recorded::space`] never
/// asks for one.
#[derive(Debug, Clone)]
pub struct Recorded {
    space: Candidates,
    outcomes: Vec<Outcome>,
    /// Each point's costs, one per objective, where [`Recorded::costed`] or
    /// [`Recorded::costed_each`] set them; else its time.
    costs: Option<Vec<Option<Vec<f64>>>>,
    /// How many objectives the costs have.
    objectives: usize,
}

/// The constraint named by the outcome of a point that a [`Recorded`] lacks.
pub const NOT_RECORDED: &str = "not in the recording";

impl Recorded {
    /// A recording of points, each with one value per name in the same order.
    pub fn from_points(
        names: Vec<String>,
        entries: impl IntoIterator<Item = (Point, Outcome)>,
    ) -> Result<Recorded, InvalidSpace> {
        let (points, outcomes) = entries.into_iter().unzip();
        Ok(Recorded {
            space: Candidates::new(names, points)?,
            outcomes,
            costs: None,
            objectives: 1,
        })
    }

    /// A recording of configurations, each setting exactly the parameters of `codec`, held
    /// as `codec` says (give a live space's codec to compare points with that space's).
    pub fn from_configs(
        codec: Codec,
        entries: impl IntoIterator<Item = (Config, Outcome)>,
    ) -> Result<Recorded, InvalidSpace> {
        let entries = entries
            .into_iter()
            .map(|(config, outcome)| Ok((codec.point(&config)?, outcome)))
            .collect::<Result<Vec<_>, InvalidSpace>>()?;
        let (points, outcomes) = entries.into_iter().unzip();
        Ok(Recorded {
            space: Candidates::with_codec(codec, points)?,
            outcomes,
            costs: None,
            objectives: 1,
        })
    }

    /// A recording of configurations over `names`, held as their values suggest
    /// ([`Codec::infer`]).
    pub fn infer(
        names: Vec<String>,
        entries: Vec<(Config, Outcome)>,
    ) -> Result<Recorded, InvalidSpace> {
        let codec = Codec::infer(names, entries.iter().map(|(c, _)| c));
        Recorded::from_configs(codec, entries)
    }

    /// Every recorded point, failures included, in the order recorded.
    pub fn space(&self) -> &Candidates {
        &self.space
    }

    pub fn outcome(&self, point: &[i64]) -> Option<&Outcome> {
        self.space.index_of(point).map(|i| &self.outcomes[i])
    }

    /// This recording with each configuration's cost given by `cost` (an objective's, see
    /// [`Evaluator::cost`]) instead of its time.
    pub fn costed(self, cost: impl Fn(&Config, &Outcome) -> Option<f64>) -> Recorded {
        self.costed_each(1, |c, o| cost(c, o).map(|c| vec![c]))
    }

    /// This recording with each configuration's costs, one per each of `objectives`
    /// objectives, given by `costs` (see [`Evaluator::costs`]).
    pub fn costed_each(
        mut self,
        objectives: usize,
        costs: impl Fn(&Config, &Outcome) -> Option<Vec<f64>>,
    ) -> Recorded {
        let costs = self
            .space
            .points()
            .iter()
            .zip(&self.outcomes)
            .map(|(p, o)| costs(&self.space.config(p), o))
            .collect();
        self.costs = Some(costs);
        self.objectives = objectives;
        self
    }

    /// The cost of a recorded point ([`Evaluator::cost`]: its first objective's); `None` for a
    /// failure or a point the recording lacks.
    pub fn cost_of(&self, point: &[i64]) -> Option<f64> {
        self.costs_of(point).map(|c| c[0])
    }

    /// The costs of a recorded point, one per objective ([`Evaluator::costs`]).
    pub fn costs_of(&self, point: &[i64]) -> Option<Vec<f64>> {
        let i = self.space.index_of(point)?;
        match &self.costs {
            Some(costs) => costs[i].clone(),
            None => time_cost(&self.outcomes[i]).map(|c| vec![c]),
        }
    }
}

impl Evaluator for Recorded {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        match self.outcome(point) {
            Some(outcome) => Evaluated {
                outcome: outcome.clone(),
                reused: true,
            },
            None => Evaluated {
                outcome: Outcome::Pruned {
                    constraint: NOT_RECORDED.to_string(),
                },
                reused: false,
            },
        }
    }

    fn cost(&self, point: &[i64], _outcome: &Outcome) -> Option<f64> {
        self.cost_of(point)
    }

    fn costs(&self, point: &[i64], _outcome: &Outcome) -> Option<Vec<f64>> {
        self.costs_of(point)
    }

    fn objectives(&self) -> usize {
        self.objectives
    }
}

/// How close a strategy got to the optimum over several seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub strategy: &'static str,
    pub budget: Option<usize>,
    /// The lowest cost among the candidates (the time, by default), found by evaluating them
    /// all.
    pub optimum_ms: f64,
    /// For seeds 0, 1, ...: optimum / best cost found, 1.0 when the run found the optimum and
    /// 0.0 when it measured nothing.
    pub relative: Vec<f64>,
}

impl Summary {
    /// The mean of [`Summary::relative`] (NaN without runs).
    pub fn mean(&self) -> f64 {
        self.relative.iter().sum::<f64>() / self.relative.len() as f64
    }

    /// How many runs found the optimum.
    pub fn hits(&self) -> usize {
        self.relative.iter().filter(|&&r| r >= 1.0).count()
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let budget = self.budget.map_or("default".to_string(), |b| b.to_string());
        write!(
            f,
            "{}: {:.3} of the optimum ({:.4} ms), mean of {} seeds with budget {budget}; found it {} times",
            self.strategy,
            self.mean(),
            self.optimum_ms,
            self.relative.len(),
            self.hits(),
        )
    }
}

/// Why [`evaluate_strategy`] could not score a strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareError {
    UnknownStrategy(UnknownStrategy),
    /// No candidate has a measured outcome, so there is no optimum to compare with.
    NothingMeasured,
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareError::UnknownStrategy(e) => e.fmt(f),
            CompareError::NothingMeasured => f.write_str("no candidate was measured"),
        }
    }
}

impl std::error::Error for CompareError {}

/// Runs the strategy called `name` with seeds `0..repeats` on `space` and compares the best each
/// run found with the optimum. The optimum comes from evaluating every candidate, so `eval`
/// should replay recorded results (a [`Recorded`]), not run them.
pub fn evaluate_strategy(
    name: &str,
    space: &Candidates,
    eval: &mut dyn Evaluator,
    budget: Option<usize>,
    repeats: u64,
) -> Result<Summary, CompareError> {
    let strategy = by_name(name, 0)
        .map_err(CompareError::UnknownStrategy)?
        .name();
    let optimum_ms = Exhaustive
        .run(space, eval, None)
        .best()
        .map(|(_, ms)| ms)
        .ok_or(CompareError::NothingMeasured)?;
    let relative = (0..repeats)
        .map(|seed| {
            let mut run = by_name(name, seed).expect("the name was known above");
            let found = run.run(space, eval, budget).best().map(|(_, ms)| ms);
            found.map_or(0.0, |ms| optimum_ms / ms)
        })
        .collect();
    Ok(Summary {
        strategy,
        budget,
        optimum_ms,
        relative,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_core::Timing;

    fn ms(t: f64) -> Outcome {
        Outcome::Measured(Timing::new(vec![t], 1))
    }

    #[test]
    fn identifiers_and_reals_are_held_as_indices() {
        use ndtune_core::Value;
        let config = |t: &str, a: f64| -> Config {
            [
                ("T".to_string(), Value::from(t)),
                ("A".to_string(), Value::Real(a)),
            ]
            .into()
        };
        let recorded = Recorded::infer(
            vec!["T".into(), "A".into()],
            vec![
                (config("half", 0.5), ms(2.0)),
                (config("float", 2.5), ms(1.0)),
            ],
        )
        .unwrap();
        // Identifiers in the order they first appear, reals ascending: half = 0, float = 1;
        // 0.5 = 0, 2.5 = 1.
        assert_eq!(recorded.space().points(), &[vec![0, 0], vec![1, 1]]);
        assert_eq!(recorded.space().config(&[1, 1]), config("float", 2.5));
    }

    #[test]
    fn replays_recorded_outcomes_and_prunes_the_rest() {
        let config = |a: i64, b: i64| ndtune_core::int_config([("A", a), ("B", b)]);
        let mut recorded = Recorded::from_configs(
            Codec::ints(vec!["B".into(), "A".into()]),
            [
                (config(1, 2), ms(5.0)),
                (config(3, 4), Outcome::BuildFailed { log: "e".into() }),
            ],
        )
        .unwrap();
        assert_eq!(recorded.space().points(), &[vec![2, 1], vec![4, 3]]);
        assert_eq!(
            recorded.evaluate(&[2, 1]),
            Evaluated {
                outcome: ms(5.0),
                reused: true
            }
        );
        assert_eq!(
            recorded.evaluate(&[1, 2]),
            Evaluated {
                outcome: Outcome::Pruned {
                    constraint: NOT_RECORDED.into()
                },
                reused: false
            }
        );
        let missing = Recorded::from_configs(
            Codec::ints(vec!["A".into(), "C".into()]),
            [(config(1, 2), ms(1.0))],
        );
        assert_eq!(
            missing.unwrap_err(),
            InvalidSpace::UnknownParameter("B".into())
        );
    }

    #[test]
    fn a_costed_recording_makes_strategies_follow_the_objective() {
        // Times 1, 2, 4 ms; a "rate" of X / time is highest for X = 4 (1.0), lowest for X = 1.
        let entries = [(vec![1], ms(1.0)), (vec![2], ms(2.0)), (vec![4], ms(4.0))];
        let mut fastest = Recorded::from_points(vec!["X".into()], entries.clone()).unwrap();
        let space = fastest.space().clone();
        let by_time = Exhaustive.run(&space, &mut fastest, None);
        assert_eq!(by_time.best(), Some((&vec![1], 1.0)));
        let rate = |c: &Config, o: &Outcome| {
            let x = c["X"].as_f64()?;
            let rate = x * x / o.score_ms()?;
            Some(1.0 / rate)
        };
        let mut by_rate = Recorded::from_points(vec!["X".into()], entries)
            .unwrap()
            .costed(rate);
        let trace = Exhaustive.run(&space, &mut by_rate, None);
        assert_eq!(trace.best(), Some((&vec![4], 0.25)));
        assert_eq!(trace.steps[0].cost, Some(1.0));
        let crashed = by_rate.evaluate(&[5]);
        assert_eq!(by_rate.cost(&[5], &crashed.outcome), None, "not recorded");
        let summary = evaluate_strategy("exhaustive", &space, &mut by_rate, Some(1), 1).unwrap();
        assert_eq!((summary.optimum_ms, summary.relative), (0.25, vec![0.25]));
        // A warm start ranks by the cost too.
        assert_eq!(crate::warm_start(&[&by_rate], 1), vec![vec![4]]);
    }

    #[test]
    fn scores_strategies_relative_to_the_optimum() {
        let mut recorded = Recorded::from_points(
            vec!["X".into()],
            [
                (vec![0], Outcome::Crashed { detail: "".into() }),
                (vec![1], ms(2.0)),
                (vec![2], ms(4.0)),
            ],
        )
        .unwrap();
        let space = recorded.space().clone();
        // Exhaustive's first two of three: X = 0 and X = 2 (its scattered order).
        let first_two = evaluate_strategy("exhaustive", &space, &mut recorded, Some(2), 3).unwrap();
        assert_eq!(first_two.relative, vec![0.5; 3]);
        assert_eq!((first_two.optimum_ms, first_two.hits()), (2.0, 0));
        let all = evaluate_strategy("random", &space, &mut recorded, None, 2).unwrap();
        assert_eq!((all.mean(), all.hits()), (1.0, 2));
        let nothing = evaluate_strategy("random", &space, &mut recorded, Some(1), 0).unwrap();
        assert!(nothing.mean().is_nan());
        assert_eq!(
            evaluate_strategy("annealing", &space, &mut recorded, None, 1),
            Err(CompareError::UnknownStrategy(UnknownStrategy(
                "annealing".into()
            )))
        );
        let failures = Recorded::from_points(
            vec!["X".into()],
            [(vec![0], Outcome::TimedOut { seconds: 1.0 })],
        );
        let mut failures = failures.unwrap();
        let space = failures.space().clone();
        assert_eq!(
            evaluate_strategy("random", &space, &mut failures, None, 1),
            Err(CompareError::NothingMeasured)
        );
    }
}
