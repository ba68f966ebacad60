//! The strategies and their names.

mod anneal;

pub use anneal::Anneal;

use crate::session::Session;
use crate::{Candidates, Evaluator, Strategy, Trace};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// The names [`by_name`] knows.
pub const STRATEGY_NAMES: [&str; 3] = ["exhaustive", "random", "anneal"];

/// The strategy called `name`; `seed` drives its randomness (ignored by `exhaustive`).
pub fn by_name(name: &str, seed: u64) -> Result<Box<dyn Strategy>, UnknownStrategy> {
    match name {
        "exhaustive" => Ok(Box::new(Exhaustive)),
        "random" => Ok(Box::new(RandomSampling { seed })),
        "anneal" => Ok(Box::new(Anneal { seed })),
        _ => Err(UnknownStrategy(name.to_string())),
    }
}

/// A strategy name that [`by_name`] does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStrategy(pub String);

impl fmt::Display for UnknownStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown strategy `{}`; valid: {}",
            self.0,
            STRATEGY_NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownStrategy {}

/// The random generator of a run: the same seed gives the same run.
fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Every candidate in order (brute force, as in Erdem et al.); with a budget, the first ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exhaustive;

impl Strategy for Exhaustive {
    fn name(&self) -> &'static str {
        "exhaustive"
    }

    fn run(
        &mut self,
        space: &Candidates,
        eval: &mut dyn Evaluator,
        budget: Option<usize>,
    ) -> Trace {
        let mut session = Session::new(space, eval, budget.unwrap_or(space.len()));
        session.upcoming(0..session.budget());
        for i in 0..session.budget() {
            session.evaluate(i);
        }
        session.finish()
    }
}

/// Uniform sampling without replacement: `budget` distinct candidates (all without a budget), in
/// random order.
#[derive(Debug, Clone, Copy)]
pub struct RandomSampling {
    pub seed: u64,
}

impl Strategy for RandomSampling {
    fn name(&self) -> &'static str {
        "random"
    }

    fn run(
        &mut self,
        space: &Candidates,
        eval: &mut dyn Evaluator,
        budget: Option<usize>,
    ) -> Trace {
        let mut session = Session::new(space, eval, budget.unwrap_or(space.len()));
        let picks = rand::seq::index::sample(&mut rng(self.seed), space.len(), session.budget());
        session.upcoming(picks.iter());
        for i in picks {
            session.evaluate(i);
        }
        session.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for name in STRATEGY_NAMES {
            assert_eq!(by_name(name, 1).unwrap().name(), name);
        }
        let err = by_name("genetic", 1).err().unwrap();
        assert_eq!(
            err.to_string(),
            "unknown strategy `genetic`; valid: exhaustive, random, anneal"
        );
    }
}
