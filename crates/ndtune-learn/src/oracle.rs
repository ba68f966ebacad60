//! What exhaustive measurements say per scenario and over a set of scenarios (Cummins et al.
//! 2016, §3.1 and §6): the legal sizes W_legal(s), the safe sizes W_safe (legal everywhere), the
//! oracle (fastest size) of each scenario, the baseline (the safe size with the best geometric
//! mean of performance relative to the oracle), the human expert's size, and the spread between
//! the best and the worst size.
//!
//! A size is legal in a scenario when it was measured there (ran and gave the right result):
//! sizes the driver refused, that crashed, hung or gave wrong results, and sizes beyond the
//! scenario's W_max are not legal.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A work-group size (columns, rows).
pub type Wg = (u64, u64);

/// The sides a work-group size may have: positive, and small enough that the product of two and
/// any arithmetic on it stay exact (OpenCL's limits are far below).
pub const WG_SIDE: std::ops::RangeInclusive<u64> = 1..=u32::MAX as u64;

/// The run times in milliseconds a measurement may have: positive, from a picosecond to 30
/// years, so that the ratio of two (a speedup, a performance relative to the oracle) is finite.
pub const RUNTIME_MS: std::ops::RangeInclusive<f64> = 1e-9..=1e12;

/// How one size fared in one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Measured,
    Refused,
    /// Beyond the scenario's W_max (device or kernel limits): never run.
    Illegal,
    WrongResult,
    BuildFailed,
    Crashed,
    TimedOut,
}

impl Status {
    pub const ALL: [Status; 7] = [
        Status::Measured,
        Status::Refused,
        Status::Illegal,
        Status::WrongResult,
        Status::BuildFailed,
        Status::Crashed,
        Status::TimedOut,
    ];

    /// The status named `s` (as [`Status::as_str`] writes it).
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Measured => "measured",
            Status::Refused => "refused",
            Status::Illegal => "illegal",
            Status::WrongResult => "wrong_result",
            Status::BuildFailed => "build_failed",
            Status::Crashed => "crashed",
            Status::TimedOut => "timed_out",
        }
    }
}

/// A tuning outcome as a status: a pruned size is beyond the scenario's limits.
impl From<ndtune_core::OutcomeKind> for Status {
    fn from(kind: ndtune_core::OutcomeKind) -> Status {
        use ndtune_core::OutcomeKind as K;
        match kind {
            K::Measured => Status::Measured,
            K::Pruned => Status::Illegal,
            K::BuildFailed => Status::BuildFailed,
            K::Refused => Status::Refused,
            K::WrongResult => Status::WrongResult,
            K::Crashed => Status::Crashed,
            K::TimedOut => Status::TimedOut,
        }
    }
}

/// One (scenario, size) observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub scenario: usize,
    pub wg: Wg,
    pub status: Status,
    /// Set exactly when measured: what learning minimises for this size, its run time in
    /// milliseconds or the cost of the collection's objective ([`ndtune_metrics::Objective::cost`]:
    /// the value where lower is better, its reciprocal where higher is).
    pub cost: Option<f64>,
}

/// Per-scenario figures.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioStats {
    pub scenario: usize,
    pub legal: usize,
    pub refused: usize,
    pub illegal: usize,
    /// The legal size of least cost (fastest, unless the collection has another objective) and
    /// its cost; None where nothing was measured.
    pub oracle: Option<(Wg, f64)>,
    /// Highest over lowest legal cost.
    pub spread: Option<f64>,
}

/// The baseline size.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    pub wg: Wg,
    /// Geometric mean over the scenarios it is legal in of oracle time / its time.
    pub performance: f64,
    /// Legal in every scenario (from W_safe); false: W_safe is empty and this is the best of the
    /// sizes measured in the most scenarios.
    pub safe: bool,
    /// Scenarios it is legal in.
    pub scenarios: usize,
}

/// A fixed size's standing, e.g. the human expert's 32x4.
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    pub wg: Wg,
    pub legal_in: usize,
    /// Geometric mean of oracle time / its time where legal; None where legal nowhere.
    pub performance: Option<f64>,
}

/// Over all scenarios.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub scenarios: Vec<ScenarioStats>,
    pub safe: Vec<Wg>,
    pub baseline: Option<Baseline>,
    pub expert: Standing,
    pub distinct_oracles: usize,
    /// Mean over scenarios of worst / best legal time (the paper: 15.14x).
    pub mean_spread: Option<f64>,
}

/// The human expert's size of the paper (§7.4).
pub const EXPERT: Wg = (32, 4);

/// Derives every figure from the observations of `scenarios` scenarios (indices `0..scenarios`).
pub fn analyse(scenarios: usize, obs: &[Observation]) -> Analysis {
    let mut times: Vec<HashMap<Wg, f64>> = vec![HashMap::new(); scenarios];
    let mut stats: Vec<ScenarioStats> = (0..scenarios)
        .map(|scenario| ScenarioStats {
            scenario,
            legal: 0,
            refused: 0,
            illegal: 0,
            oracle: None,
            spread: None,
        })
        .collect();
    for o in obs {
        let s = &mut stats[o.scenario];
        match (o.status, o.cost) {
            (Status::Measured, Some(t)) if t.is_finite() && t > 0.0 => {
                s.legal += 1;
                times[o.scenario].insert(o.wg, t);
            }
            (Status::Refused, _) => s.refused += 1,
            (Status::Illegal, _) => s.illegal += 1,
            _ => {}
        }
    }
    for (s, t) in stats.iter_mut().zip(&times) {
        let best = t
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(b.0)));
        let worst = t
            .values()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        if let (Some((&wg, &ms)), Some(worst)) = (best, worst) {
            s.oracle = Some((wg, ms));
            s.spread = Some(worst / ms);
        }
    }
    // Scenarios with no measurement at all say nothing about safety.
    let informative: Vec<usize> = (0..scenarios).filter(|&i| !times[i].is_empty()).collect();
    let perf = |wg: Wg, among: &[usize]| -> Option<f64> {
        let logs: Vec<f64> = among
            .iter()
            .filter_map(|&i| {
                let oracle = stats[i].oracle?.1;
                times[i].get(&wg).map(|t| (oracle / t).ln())
            })
            .collect();
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    };
    let mut safe: Vec<Wg> = match informative.first() {
        None => vec![],
        Some(&first) => times[first]
            .keys()
            .copied()
            .filter(|wg| informative.iter().all(|&i| times[i].contains_key(wg)))
            .collect(),
    };
    safe.sort();
    let best_of = |candidates: &[Wg], safe: bool| -> Option<Baseline> {
        candidates
            .iter()
            .filter_map(|&wg| {
                let legal_in: Vec<usize> = informative
                    .iter()
                    .copied()
                    .filter(|&i| times[i].contains_key(&wg))
                    .collect();
                perf(wg, &legal_in).map(|p| Baseline {
                    wg,
                    performance: p,
                    safe,
                    scenarios: legal_in.len(),
                })
            })
            .max_by(|a, b| {
                a.performance
                    .total_cmp(&b.performance)
                    .then(b.wg.cmp(&a.wg))
            })
    };
    let baseline = if !safe.is_empty() {
        best_of(&safe, true)
    } else {
        // No size is legal everywhere: the best of those legal in the most scenarios.
        let mut count: BTreeMap<Wg, usize> = BTreeMap::new();
        for t in &times {
            for wg in t.keys() {
                *count.entry(*wg).or_default() += 1;
            }
        }
        let most = count.values().copied().max().unwrap_or(0);
        let widest: Vec<Wg> = count
            .into_iter()
            .filter(|&(_, n)| n == most)
            .map(|(wg, _)| wg)
            .collect();
        best_of(&widest, false)
    };
    let expert_in: Vec<usize> = informative
        .iter()
        .copied()
        .filter(|&i| times[i].contains_key(&EXPERT))
        .collect();
    let oracles: BTreeSet<Wg> = stats.iter().filter_map(|s| s.oracle.map(|o| o.0)).collect();
    let spreads: Vec<f64> = stats.iter().filter_map(|s| s.spread).collect();
    Analysis {
        expert: Standing {
            wg: EXPERT,
            legal_in: expert_in.len(),
            performance: perf(EXPERT, &expert_in),
        },
        safe,
        baseline,
        distinct_oracles: oracles.len(),
        mean_spread: (!spreads.is_empty())
            .then(|| spreads.iter().sum::<f64>() / spreads.len() as f64),
        scenarios: stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(scenario: usize, wg: Wg, ms: f64) -> Observation {
        Observation {
            scenario,
            wg,
            status: Status::Measured,
            cost: Some(ms),
        }
    }

    fn other(scenario: usize, wg: Wg, status: Status) -> Observation {
        Observation {
            scenario,
            wg,
            status,
            cost: None,
        }
    }

    #[test]
    fn oracle_safe_baseline_expert_and_spread() {
        let obs = vec![
            m(0, (4, 4), 2.0),
            m(0, (32, 4), 1.0),
            m(0, (64, 4), 4.0),
            m(1, (4, 4), 3.0),
            other(1, (32, 4), Status::Refused),
            m(1, (64, 4), 1.0),
            other(1, (128, 8), Status::Illegal),
        ];
        let a = analyse(2, &obs);
        assert_eq!(a.scenarios[0].oracle, Some(((32, 4), 1.0)));
        assert_eq!(a.scenarios[1].oracle, Some(((64, 4), 1.0)));
        assert_eq!(a.scenarios[0].spread, Some(4.0));
        assert_eq!(
            (
                a.scenarios[1].legal,
                a.scenarios[1].refused,
                a.scenarios[1].illegal
            ),
            (2, 1, 1)
        );
        assert_eq!(a.safe, vec![(4, 4), (64, 4)]);
        // 4x4: sqrt(1/2 * 1/3) = 0.408; 64x4: sqrt(1/4 * 1) = 0.5.
        let b = a.baseline.unwrap();
        assert_eq!(b.wg, (64, 4));
        assert!((b.performance - 0.5).abs() < 1e-12 && b.safe && b.scenarios == 2);
        assert_eq!(a.expert.legal_in, 1);
        assert_eq!(a.expert.performance, Some(1.0));
        assert_eq!(a.distinct_oracles, 2);
        assert!((a.mean_spread.unwrap() - 3.5).abs() < 1e-12);
    }

    #[test]
    fn with_no_safe_size_the_baseline_comes_from_the_most_covered_sizes() {
        let obs = vec![
            m(0, (2, 2), 1.0),
            m(0, (8, 8), 4.0),
            m(1, (4, 4), 1.0),
            m(1, (2, 2), 2.0),
            m(2, (8, 8), 1.0),
            m(2, (4, 4), 3.0),
        ];
        let a = analyse(3, &obs);
        assert!(a.safe.is_empty());
        // Every size is legal in two scenarios; (2,2) has the best geometric mean, sqrt(1 * 1/2).
        let b = a.baseline.unwrap();
        assert_eq!((b.wg, b.safe, b.scenarios), ((2, 2), false, 2));
        assert!((b.performance - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(a.expert.performance, None);
    }
}
