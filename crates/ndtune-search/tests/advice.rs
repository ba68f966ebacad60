//! The driver's advice as a prior: on a recording where every launch above its build's
//! `CL_KERNEL_WORK_GROUP_SIZE` was refused (as on the H100 for a CNN layer), strategies told
//! the advice spend at least a third fewer evaluations on refusals, and find as good a configuration.

use ndtune_core::{Advice, Outcome, Timing};
use ndtune_search::{by_name, Evaluated, Evaluator, Point, Recorded};
use std::collections::HashMap;

/// Work-group `LX x LY`, a sub-tile `T` and an unroll `U`; `T` and `U` are the build's defines.
/// The build's `CL_KERNEL_WORK_GROUP_SIZE` falls as the sub-tile grows (registers), and the
/// fastest configurations launch the largest work-groups their build allows, so a search
/// drawn to them meets the builds' limits: every launch above them is refused.
fn recording() -> Recorded {
    let sizes = [1i64, 2, 4, 8, 16, 32];
    let mut entries = Vec::new();
    for lx in sizes {
        for ly in sizes {
            for t in 1..=8i64 {
                for u in [1i64, 2, 4] {
                    let limit = [1024u64, 768, 512, 512, 384, 256, 256, 128][t as usize - 1]
                        / if u == 4 { 2 } else { 1 };
                    let launched = (lx * ly) as u64;
                    let advice = Advice {
                        work_group_size: limit,
                        local_mem_bytes: 0,
                        launched_work_group: launched,
                    };
                    let outcome = if launched > limit {
                        Outcome::Refused {
                            error: advice.refusal("CL_OUT_OF_RESOURCES"),
                        }
                    } else {
                        // Larger work-groups and sub-tiles are faster; square groups a little.
                        let items = (launched as f64).min(512.0);
                        let shape = 1.0 + 0.05 * ((lx as f64).log2() - (ly as f64).log2()).abs();
                        let unroll =
                            [1.0, 0.9, 0.85][[1, 2, 4].iter().position(|&x| x == u).unwrap()];
                        let ms = 100.0 / items.sqrt() / (t as f64).sqrt() * shape * unroll;
                        let mut timing = Timing::new(vec![ms], 1);
                        timing.advice = Some(advice);
                        Outcome::Measured(timing)
                    };
                    entries.push((vec![lx, ly, t, u], outcome));
                }
            }
        }
    }
    let names = ["LX", "LY", "T", "U"].map(String::from).to_vec();
    Recorded::from_points(names, entries).unwrap()
}

/// Replays the recording as a live campaign would: once one configuration of a build was
/// evaluated, its advice applies to every configuration of that build ([`advise`] on).
struct Driver {
    recorded: Recorded,
    advise: bool,
    /// The advice per build (T, U).
    builds: HashMap<(i64, i64), Advice>,
}

impl Evaluator for Driver {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        let evaluated = self.recorded.evaluate(point);
        if let Some(advice) = evaluated.outcome.advice() {
            self.builds.insert((point[2], point[3]), advice);
        }
        evaluated
    }

    fn exceeds_advice(&mut self, point: &[i64]) -> Option<bool> {
        let advice = self
            .builds
            .get(&(point[2], point[3]))
            .filter(|_| self.advise)?;
        Some((point[0] * point[1]) as u64 > advice.work_group_size)
    }
}

/// Over seeds 0..SEEDS with `budget` evaluations: refusals in all, and the mean fraction of the
/// optimum found.
const SEEDS: u64 = 8;

fn run(name: &str, advise: bool, budget: usize) -> (usize, f64) {
    let recorded = recording();
    let space = recorded.space().clone();
    let optimum = space
        .points()
        .iter()
        .filter_map(|p| recorded.outcome(p).unwrap().score_ms())
        .fold(f64::INFINITY, f64::min);
    let (mut refused, mut found) = (0, 0.0);
    for seed in 0..SEEDS {
        let mut driver = Driver {
            recorded: recorded.clone(),
            advise,
            builds: HashMap::new(),
        };
        let trace = by_name(name, seed)
            .unwrap()
            .run(&space, &mut driver, Some(budget));
        let points: Vec<&Point> = trace.steps.iter().map(|s| &s.point).collect();
        assert_eq!(points.len(), budget, "{name}");
        refused += trace
            .steps
            .iter()
            .filter(|s| matches!(s.outcome, Outcome::Refused { .. }))
            .count();
        found += trace.best().map_or(0.0, |(_, ms)| optimum / ms) / SEEDS as f64;
    }
    (refused, found)
}

#[test]
fn the_drivers_advice_spares_strategies_launches_it_would_refuse() {
    let space = recording();
    let refusals = space
        .space()
        .points()
        .iter()
        .filter(|p| matches!(space.outcome(p), Some(Outcome::Refused { .. })))
        .count();
    assert_eq!((space.space().len(), refusals), (864, 74));
    for name in ["bo", "forest", "anneal", "ils", "mls"] {
        let (blind, blind_found) = run(name, false, 50);
        let (told, told_found) = run(name, true, 50);
        println!(
            "{name}: {blind} refused, {blind_found:.3} of the optimum; with the advice {told} refused, {told_found:.3}"
        );
        assert!(
            told * 3 <= blind * 2,
            "{name}: {told} refusals with the advice against {blind} without"
        );
        assert!(
            told_found >= blind_found - 0.02,
            "{name}: {told_found:.3} of the optimum with the advice against {blind_found:.3}"
        );
    }
}
