//! `auto`: the strategy a user gets without naming one. A space small enough to measure whole
//! is measured whole; a larger one is searched by the strategy that did best on the strategy
//! benchmark (BENCHMARKS.md, "Search strategies"), with a default budget: `bo`, or `parego` for
//! a campaign of several objectives (BENCHMARKS.md, "Pareto fronts"). In between, where
//! evaluations are measured live, the search's first evaluations tell how long the rest of the
//! space would take to measure: short enough, and it is measured whole after all.

use super::bayes::INITIAL;
use super::{by_name, Exhaustive};
use crate::{Budget, Decision, Evaluated, Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use ndtune_core::Outcome;
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

/// Spaces of at most this many valid configurations are measured whole: about a minute at the
/// 0.2 s a configuration an NVIDIA H100 took for SGEMM with its builds in parallel, a few on a
/// CPU device at PoCL's 0.4 s (BENCHMARKS.md, "Tuning against Kernel Tuner").
pub const AUTO_EXHAUSTIVE_UP_TO: u128 = 200;
/// Larger spaces, up to this many valid configurations, are measured whole too where the
/// search's first [`AUTO_PROBE`] live evaluations show that the others take at most
/// [`AUTO_EXHAUSTIVE_TIME`]: 60 ms a configuration, about the fastest a build and ten timed
/// runs go.
pub const AUTO_PROBE_UP_TO: u128 = 5000;
/// The evaluations that tell how long a configuration takes: the search's first batch.
pub const AUTO_PROBE: usize = INITIAL;
/// How long measuring the rest of a space may be expected to take for `auto` to measure it
/// whole. The estimate is cautious: the first evaluations wait for their builds, where a whole
/// space's builds overlap its launches.
pub const AUTO_EXHAUSTIVE_TIME: Duration = Duration::from_secs(300);
/// The strategy `auto` searches larger spaces with.
pub const AUTO_STRATEGY: &str = "bo";
/// The strategy `auto` searches larger spaces with where a campaign has several objectives.
pub const AUTO_FRONT_STRATEGY: &str = "parego";
/// The strategy `auto` runs where a campaign has a warm start and a patience (a sweep's later
/// sizes): a local search from the warm start.
pub const AUTO_CLIMB: &str = "ils-adjacent";
/// The evaluations `auto` spends on a larger space when given neither an evaluation nor a time
/// budget.
pub const AUTO_BUDGET: usize = 100;

/// What `auto` does on a space, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoChoice {
    pub strategy: &'static str,
    pub budget: Budget,
    /// The pruned space's size.
    pub configurations: u128,
    /// Whether `strategy` is provisional: its first [`AUTO_PROBE`] evaluations decide whether
    /// the space is measured whole instead.
    pub probe: bool,
}

/// What `auto` does on a space of `configurations` valid points given `budget`: every point
/// where there are at most [`AUTO_EXHAUSTIVE_UP_TO`] and the budget allows them all, else
/// [`AUTO_STRATEGY`] within the budget given, or [`AUTO_BUDGET`] evaluations without one; with
/// `live` evaluations and no budget, a space of at most [`AUTO_PROBE_UP_TO`] is probed. With
/// several `objectives` the search is [`AUTO_FRONT_STRATEGY`]'s.
pub fn auto_choice(
    configurations: u128,
    budget: Budget,
    live: bool,
    objectives: usize,
) -> AutoChoice {
    let all_allowed = budget
        .evaluations
        .is_none_or(|n| n as u128 >= configurations);
    if configurations <= AUTO_EXHAUSTIVE_UP_TO && all_allowed {
        return AutoChoice {
            strategy: "exhaustive",
            budget,
            configurations,
            probe: false,
        };
    }
    let unbudgeted = budget == Budget::default();
    AutoChoice {
        strategy: searcher(objectives),
        budget: Budget {
            evaluations: if unbudgeted {
                Some(AUTO_BUDGET)
            } else {
                budget.evaluations
            },
            time: budget.time,
        },
        configurations,
        probe: live && unbudgeted && configurations <= AUTO_PROBE_UP_TO,
    }
}

impl fmt::Display for AutoChoice {
    /// `bo, at most 100 evaluations: 6685184 configurations are more than the 200 measured
    /// whole`, and how to choose otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut limits = Vec::new();
        if let Some(n) = self.budget.evaluations {
            limits.push(format!("at most {n} evaluations"));
        }
        if let Some(t) = self.budget.time {
            limits.push(format!("at most {:.0} s", t.as_secs_f64()));
        }
        let limits = if limits.is_empty() {
            String::new()
        } else {
            format!(", {}", limits.join(" and "))
        };
        let n = self.configurations;
        if self.strategy == "exhaustive" {
            write!(
                f,
                "exhaustive{limits}: {n} configurations, few enough to measure them all (up to {AUTO_EXHAUSTIVE_UP_TO})"
            )
        } else if self.probe {
            write!(
                f,
                "{}{limits}, unless its first {AUTO_PROBE} evaluations show that the rest of the {n} configurations \
                 take at most {} to measure: then all of them; another with --strategy NAME, a search of a \
                 set length with --budget N or --time DURATION",
                self.strategy,
                minutes(AUTO_EXHAUSTIVE_TIME.as_secs_f64())
            )
        } else if n <= AUTO_EXHAUSTIVE_UP_TO {
            // Few enough to measure whole: the budget is what asks for fewer.
            write!(
                f,
                "{}{limits}: the budget allows fewer than the {n} configurations, so a search; \
                 another with --strategy NAME, all of them with a budget of at least {n}",
                self.strategy
            )
        } else {
            write!(
                f,
                "{}{limits}: {n} configurations are too many to measure all (more than {AUTO_EXHAUSTIVE_UP_TO}), so a search; \
                 another with --strategy NAME, a longer one with --budget N or --time DURATION",
                self.strategy
            )
        }
    }
}

/// The strategy [`auto_choice`] picks for the space, run with the budget it picks; a probed
/// space is measured whole or searched on as its first evaluations' time says.
#[derive(Debug, Clone, Copy)]
pub struct Auto {
    pub seed: u64,
}

impl Strategy for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        if let Some(patience) = run.patience.filter(|_| !run.warm.is_empty()) {
            return self.climb(space, eval, run, patience);
        }
        let choice = auto_choice(space.len(), run.budget, eval.measuring(), eval.objectives());
        if choice.probe {
            return self.probe(space, eval, run);
        }
        // Deferred to the search only for the two cases above: said here, where it was not
        // said before the run.
        eval.decided(at_most(choice.budget, space), &choice.to_string());
        let chosen = Run {
            budget: choice.budget,
            warm: run.warm.clone(),
            patience: run.patience,
        };
        let mut trace = by_name(choice.strategy, self.seed)
            .expect("auto picks a known strategy")
            .search(space, eval, &chosen);
        trace.decided = Some(Decision {
            strategy: choice.strategy,
            why: choice.to_string(),
        });
        trace
    }
}

impl Auto {
    /// A warm start with a patience: [`AUTO_CLIMB`] from the warm start's best. On a sweep of
    /// ten SGEMM sizes on an NVIDIA H200 the exhaustive order after the warm start, with a
    /// patience of 10, kept 0.78 of the sizes' own bests; the climb 0.99 at 0.27-0.32x the time
    /// of independent campaigns (BENCHMARKS.md, "A sweep that climbs").
    fn climb(
        &self,
        space: &dyn SearchSpace,
        eval: &mut dyn Evaluator,
        run: &Run,
        patience: usize,
    ) -> Trace {
        let start = match run.warm.len() {
            1 => "the configuration".to_string(),
            n => format!("the {n} configurations"),
        };
        let why = format!(
            "{AUTO_CLIMB}: a warm start with a patience, so a climb from {start} that did best \
             nearby until {patience} evaluations in a row find nothing better; another with \
             --strategy NAME"
        );
        eval.decided(at_most(run.budget, space), &why);
        let mut trace = by_name(AUTO_CLIMB, self.seed)
            .expect("a known strategy")
            .search(space, eval, run);
        trace.decided = Some(Decision {
            strategy: AUTO_CLIMB,
            why,
        });
        trace
    }

    /// The search's first [`AUTO_PROBE`] evaluations, timed; then the whole space or the rest
    /// of the search, which takes the first evaluations as they were.
    fn probe(&self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let started = Instant::now();
        let mut memo = Memo {
            inner: eval,
            known: HashMap::new(),
        };
        let first_run = Run {
            budget: Budget {
                evaluations: Some(AUTO_PROBE),
                time: None,
            },
            warm: run.warm.clone(),
            patience: run.patience,
        };
        let searcher = searcher(memo.objectives());
        let first = by_name(searcher, self.seed)
            .expect("a known strategy")
            .search(space, &mut memo, &first_run);
        let probe = Probe {
            evaluations: first.steps.len(),
            fresh: first.steps.iter().filter(|s| !s.reused).count(),
            seconds: started.elapsed().as_secs_f64(),
            unmeasured: (0..space.len())
                .filter_map(|rank| space.nth(rank))
                .filter(|p| !memo.stored(p))
                .count() as u128,
            configurations: space.len(),
        };
        let (whole, why) = probe.decide(searcher);
        let (strategy, budget, total): (&'static str, _, u128) = if whole {
            ("exhaustive", Budget::default(), space.len())
        } else {
            let budget = Budget {
                evaluations: Some(AUTO_BUDGET),
                time: None,
            };
            (searcher, budget, at_most(budget, space))
        };
        memo.inner.decided(total, &why);
        let rest = Run {
            budget,
            warm: first.steps.into_iter().map(|s| s.point).collect(),
            patience: run.patience,
        };
        let mut trace = if whole {
            Exhaustive.search(space, &mut memo, &rest)
        } else {
            by_name(searcher, self.seed)
                .expect("a known strategy")
                .search(space, &mut memo, &rest)
        };
        trace.decided = Some(Decision { strategy, why });
        trace
    }
}

/// The strategy `auto` searches a larger space with for a campaign of `objectives` objectives.
fn searcher(objectives: usize) -> &'static str {
    if objectives > 1 {
        AUTO_FRONT_STRATEGY
    } else {
        AUTO_STRATEGY
    }
}

/// How many points a search of `space` within `budget` evaluates at most.
fn at_most(budget: Budget, space: &dyn SearchSpace) -> u128 {
    budget
        .evaluations
        .map_or(space.len(), |n| (n as u128).min(space.len()))
}

/// What a probe saw: its evaluations, those measured now (not from a store), the seconds they
/// took, and the configurations of the space that neither it nor the store measured.
#[derive(Debug, Clone, Copy)]
struct Probe {
    evaluations: usize,
    fresh: usize,
    seconds: f64,
    unmeasured: u128,
    configurations: u128,
}

impl Probe {
    /// Whether to measure the space whole, and why, in words for the user.
    /// `searcher`: the strategy that searches on.
    fn decide(&self, searcher: &str) -> (bool, String) {
        let Probe {
            evaluations: first,
            fresh,
            unmeasured,
            configurations: n,
            ..
        } = *self;
        let limit = minutes(AUTO_EXHAUSTIVE_TIME.as_secs_f64());
        let search = format!("{searcher}, at most {AUTO_BUDGET} evaluations");
        let how =
            "--strategy exhaustive measures all, --budget N or --time DURATION searches longer";
        if unmeasured == 0 {
            return (
                true,
                format!("exhaustive: the store holds each of the {n} configurations its first {first} evaluations did not measure"),
            );
        }
        if fresh == 0 {
            return (
                false,
                format!(
                    "{search}: its first {first} evaluations came from the store, so how long the {unmeasured} \
                     configurations it lacks take is unknown; {how}"
                ),
            );
        }
        let each = self.seconds / fresh as f64;
        let estimate = each * unmeasured as f64;
        if estimate <= AUTO_EXHAUSTIVE_TIME.as_secs_f64() {
            (
                true,
                format!(
                    "exhaustive: its first {first} evaluations took {each:.2} s each, so the {unmeasured} configurations \
                     not measured yet take about {}, at most {limit}: all {n} are measured",
                    minutes(estimate)
                ),
            )
        } else {
            (
                false,
                format!(
                    "{search}: its first {first} evaluations took {each:.2} s each, so the {unmeasured} configurations \
                     not measured yet would take about {}, more than {limit}; {how}",
                    minutes(estimate)
                ),
            )
        }
    }
}

/// `4.2 min` or `35 s`.
fn minutes(seconds: f64) -> String {
    if seconds >= 60.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{seconds:.0} s")
    }
}

/// An evaluator that keeps what it evaluated: the rest of a probed run takes the first
/// evaluations as they were, never running or announcing them again.
struct Memo<'e> {
    inner: &'e mut dyn Evaluator,
    known: HashMap<Point, Evaluated>,
}

impl Memo<'_> {
    fn unknown(&self, points: &[Point]) -> Vec<Point> {
        points
            .iter()
            .filter(|p| !self.known.contains_key(*p))
            .cloned()
            .collect()
    }
}

impl Evaluator for Memo<'_> {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        if let Some(known) = self.known.get(point) {
            return known.clone();
        }
        let evaluated = self.inner.evaluate(point);
        self.known.insert(point.to_vec(), evaluated.clone());
        evaluated
    }

    fn excluded(&mut self, point: &[i64]) -> bool {
        !self.known.contains_key(point) && self.inner.excluded(point)
    }

    fn upcoming(&mut self, points: &[Point]) {
        let points = self.unknown(points);
        self.inner.upcoming(&points);
    }

    fn will_ask(&mut self, points: &[Point]) {
        let points = self.unknown(points);
        self.inner.will_ask(&points);
    }

    fn will_ask_then(&mut self, asked: &[Point], hinted: &[Point]) {
        let (asked, hinted) = (self.unknown(asked), self.unknown(hinted));
        self.inner.will_ask_then(&asked, &hinted);
    }

    fn width(&self) -> usize {
        self.inner.width()
    }

    fn first_ready(&mut self, points: &[Point]) -> usize {
        match points.iter().position(|p| self.known.contains_key(p)) {
            Some(i) => i,
            None => self.inner.first_ready(points),
        }
    }

    fn exceeds_advice(&mut self, point: &[i64]) -> Option<bool> {
        self.inner.exceeds_advice(point)
    }

    fn cost(&self, point: &[i64], outcome: &Outcome) -> Option<f64> {
        self.inner.cost(point, outcome)
    }

    fn costs(&self, point: &[i64], outcome: &Outcome) -> Option<Vec<f64>> {
        self.inner.costs(point, outcome)
    }

    fn objectives(&self) -> usize {
        self.inner.objectives()
    }

    fn measuring(&self) -> bool {
        self.inner.measuring()
    }

    fn stored(&mut self, point: &[i64]) -> bool {
        self.known.contains_key(point) || self.inner.stored(point)
    }

    fn decided(&mut self, total: u128, why: &str) {
        self.inner.decided(total, why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bayes;
    use crate::Candidates;
    use ndtune_core::Timing;
    use std::collections::HashSet;

    #[test]
    fn small_spaces_are_measured_whole_and_large_ones_searched_within_a_budget() {
        let none = Budget::default();
        let small = auto_choice(AUTO_EXHAUSTIVE_UP_TO, none, true, 1);
        assert_eq!((small.strategy, small.budget), ("exhaustive", none));
        let large = auto_choice(6_685_184, none, true, 1);
        assert_eq!(large.strategy, AUTO_STRATEGY);
        assert_eq!(large.budget.evaluations, Some(AUTO_BUDGET));
        assert!(!large.probe);
        let text = large.to_string();
        assert!(
            text.contains("6685184 configurations") && text.contains("--strategy"),
            "{text}"
        );
        // A budget smaller than the space: a search within it, not the first points in order.
        let fifty = Budget {
            evaluations: Some(50),
            time: None,
        };
        assert_eq!(auto_choice(120, fifty, true, 1).strategy, AUTO_STRATEGY);
        assert_eq!(auto_choice(120, fifty, true, 1).budget, fifty);
        // The budget is why, not the space's size.
        assert_eq!(
            auto_choice(
                54,
                Budget {
                    evaluations: Some(3),
                    time: None
                },
                true,
                1
            )
            .to_string(),
            "bo, at most 3 evaluations: the budget allows fewer than the 54 configurations, so a \
             search; another with --strategy NAME, all of them with a budget of at least 54"
        );
        assert!(
            !auto_choice(1000, fifty, true, 1).probe,
            "a budget given is kept"
        );
        // A time budget alone: the search goes on until then.
        let hour = Budget {
            evaluations: None,
            time: Some(Duration::from_secs(3600)),
        };
        assert_eq!(auto_choice(1 << 40, hour, true, 1).budget, hour);
        assert_eq!(auto_choice(10, hour, true, 1).strategy, "exhaustive");
        // In between, live evaluations probe; replayed ones (no time to judge by) do not.
        let between = auto_choice(504, none, true, 1);
        assert!(between.probe && between.strategy == AUTO_STRATEGY);
        assert!(
            between.to_string().contains("unless its first"),
            "{between}"
        );
        assert!(!auto_choice(504, none, false, 1).probe);
    }

    #[test]
    fn a_probe_measures_whole_what_takes_a_few_minutes_and_searches_what_would_take_long() {
        let probe = |seconds: f64, fresh: usize, unmeasured: u128| Probe {
            evaluations: 10,
            fresh,
            seconds,
            unmeasured,
            configurations: 504,
        };
        // 0.5 s each, 494 more: about 4 minutes.
        let (whole, why) = probe(5.0, 10, 494).decide(AUTO_STRATEGY);
        assert!(whole, "{why}");
        assert!(
            why.contains("0.50 s each") && why.contains("4.1 min"),
            "{why}"
        );
        // 2 s each: about 16 minutes.
        let (whole, why) = probe(20.0, 10, 494).decide(AUTO_STRATEGY);
        assert!(!whole && why.contains("more than 5.0 min"), "{why}");
        // Reused evaluations cost nothing: the time is per evaluation measured now.
        assert!(!probe(5.0, 1, 494).decide(AUTO_STRATEGY).0);
        // All from the store and the rest unknown: a search, as the first run did.
        let (whole, why) = probe(0.01, 0, 494).decide(AUTO_STRATEGY);
        assert!(!whole && why.contains("came from the store"), "{why}");
        // The store holds the whole space: nothing left to measure.
        assert!(probe(0.01, 0, 0).decide(AUTO_STRATEGY).0);
    }

    /// A live evaluator of a space 0..n, as quick as can be: the cost is the value.
    struct Quick {
        asked: Vec<Point>,
        decided: Option<(u128, String)>,
    }

    impl Evaluator for Quick {
        fn evaluate(&mut self, point: &[i64]) -> Evaluated {
            self.asked.push(point.to_vec());
            Evaluated {
                outcome: Outcome::Measured(Timing::new(vec![1.0 + point[0] as f64], 1)),
                reused: false,
            }
        }
        fn measuring(&self) -> bool {
            true
        }
        fn decided(&mut self, total: u128, why: &str) {
            self.decided = Some((total, why.to_string()));
        }
    }

    fn line(n: i64) -> Candidates {
        Candidates::new(vec!["X".into()], (0..n).map(|x| vec![x]).collect()).unwrap()
    }

    #[test]
    fn a_warm_start_with_a_patience_climbs_from_it_and_without_either_the_space_is_measured() {
        let space = line(150);
        let mut quick = Quick {
            asked: Vec::new(),
            decided: None,
        };
        // Costs rise with the value: from a warm start at 40, the climb walks down to 0 and
        // stops a patience after it, far short of the 150 points.
        let run = Run {
            warm: vec![vec![40]],
            patience: Some(3),
            ..Run::default()
        };
        let trace = Auto { seed: 1 }.search(&space, &mut quick, &run);
        let decided = trace.decided.as_ref().unwrap();
        assert_eq!(decided.strategy, AUTO_CLIMB);
        assert_eq!(
            decided.why,
            "ils-adjacent: a warm start with a patience, so a climb from the configuration that \
             did best nearby until 3 evaluations in a row find nothing better; another with \
             --strategy NAME"
        );
        assert_eq!(quick.decided.as_ref().unwrap().1, decided.why);
        assert_eq!(quick.asked[0], vec![40], "the warm start first");
        assert_eq!(trace.best(), Some((&vec![0], 1.0)));
        assert!(trace.steps.len() < 100, "{} evaluations", trace.steps.len());
        // A patience with nothing to start from (a sweep's first size): measured whole.
        for run in [
            Run {
                patience: Some(3),
                ..Run::default()
            },
            Run {
                warm: vec![vec![40]],
                ..Run::default()
            },
        ] {
            let mut quick = Quick {
                asked: Vec::new(),
                decided: None,
            };
            let trace = Auto { seed: 1 }.search(&space, &mut quick, &run);
            assert_eq!(trace.decided.as_ref().unwrap().strategy, "exhaustive");
            assert!(quick.decided.unwrap().1.starts_with("exhaustive"));
        }
    }

    #[test]
    fn a_quick_space_is_measured_whole_and_a_search_after_a_probe_runs_no_point_twice() {
        let space = line(300);
        let mut quick = Quick {
            asked: Vec::new(),
            decided: None,
        };
        let trace = Auto { seed: 1 }.search(&space, &mut quick, &Run::default());
        assert_eq!(trace.steps.len(), 300);
        let distinct: HashSet<&Point> = quick.asked.iter().collect();
        assert_eq!(
            (quick.asked.len(), distinct.len()),
            (300, 300),
            "each point once"
        );
        assert_eq!(trace.best(), Some((&vec![0], 1.0)));
        assert_eq!(trace.decided.as_ref().unwrap().strategy, "exhaustive");
        assert_eq!(quick.decided.as_ref().unwrap().0, 300);

        // The search that goes on after a probe takes the first evaluations from what it
        // keeps, within its budget: a hundred distinct evaluations, none run twice.
        let mut searched = Quick {
            asked: Vec::new(),
            decided: None,
        };
        let trace = {
            let mut memo = Memo {
                inner: &mut searched,
                known: HashMap::new(),
            };
            let first = Bayes { seed: 1 }.search(
                &space,
                &mut memo,
                &Run {
                    budget: Budget {
                        evaluations: Some(AUTO_PROBE),
                        time: None,
                    },
                    warm: Vec::new(),
                    patience: None,
                },
            );
            let rest = Run {
                budget: Budget {
                    evaluations: Some(AUTO_BUDGET),
                    time: None,
                },
                warm: first.steps.into_iter().map(|s| s.point).collect(),
                patience: None,
            };
            Bayes { seed: 1 }.search(&space, &mut memo, &rest)
        };
        assert_eq!(trace.steps.len(), AUTO_BUDGET);
        assert_eq!(
            searched.asked.len(),
            AUTO_BUDGET,
            "the first ten are not run again"
        );
    }
}
