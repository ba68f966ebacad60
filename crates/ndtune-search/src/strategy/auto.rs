//! `auto`: the strategy a user gets without naming one. A space small enough to measure whole
//! is measured whole; a larger one is searched by the strategy that did best on the strategy
//! benchmark (BENCHMARKS.md, "Search strategies"), with a default budget.

use super::by_name;
use crate::{Budget, Evaluator, Run, SearchSpace, Strategy, Trace};
use std::fmt;

/// Spaces of at most this many valid configurations are measured whole: about a minute at the
/// 0.2 s a configuration an NVIDIA H100 took for SGEMM with its builds in parallel, a few on a
/// CPU device at PoCL's 0.4 s (BENCHMARKS.md, "Tuning against Kernel Tuner").
pub const AUTO_EXHAUSTIVE_UP_TO: u128 = 200;
/// The strategy `auto` searches larger spaces with.
pub const AUTO_STRATEGY: &str = "bo";
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
}

/// What `auto` does on a space of `configurations` valid points given `budget`: every point
/// where there are at most [`AUTO_EXHAUSTIVE_UP_TO`] and the budget allows them all, else
/// [`AUTO_STRATEGY`] within the budget given, or [`AUTO_BUDGET`] evaluations without one.
pub fn auto_choice(configurations: u128, budget: Budget) -> AutoChoice {
    let all_allowed = budget
        .evaluations
        .is_none_or(|n| n as u128 >= configurations);
    if configurations <= AUTO_EXHAUSTIVE_UP_TO && all_allowed {
        return AutoChoice {
            strategy: "exhaustive",
            budget,
            configurations,
        };
    }
    let evaluations = match budget {
        Budget {
            evaluations: None,
            time: None,
        } => Some(AUTO_BUDGET),
        _ => budget.evaluations,
    };
    AutoChoice {
        strategy: AUTO_STRATEGY,
        budget: Budget {
            evaluations,
            time: budget.time,
        },
        configurations,
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

/// The strategy [`auto_choice`] picks for the space, run with the budget it picks.
#[derive(Debug, Clone, Copy)]
pub struct Auto {
    pub seed: u64,
}

impl Strategy for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        let choice = auto_choice(space.len(), run.budget);
        let run = Run {
            budget: choice.budget,
            warm: run.warm.clone(),
        };
        by_name(choice.strategy, self.seed)
            .expect("auto picks a known strategy")
            .search(space, eval, &run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn small_spaces_are_measured_whole_and_large_ones_searched_within_a_budget() {
        let none = Budget::default();
        let small = auto_choice(AUTO_EXHAUSTIVE_UP_TO, none);
        assert_eq!((small.strategy, small.budget), ("exhaustive", none));
        let large = auto_choice(6_685_184, none);
        assert_eq!(large.strategy, AUTO_STRATEGY);
        assert_eq!(large.budget.evaluations, Some(AUTO_BUDGET));
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
        assert_eq!(auto_choice(120, fifty).strategy, AUTO_STRATEGY);
        assert_eq!(auto_choice(120, fifty).budget, fifty);
        // A time budget alone: the search goes on until then.
        let hour = Budget {
            evaluations: None,
            time: Some(Duration::from_secs(3600)),
        };
        assert_eq!(auto_choice(1 << 40, hour).budget, hour);
        assert_eq!(auto_choice(10, hour).strategy, "exhaustive");
    }
}
