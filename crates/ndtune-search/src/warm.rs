//! Warm starts: which configurations to measure first, learned from recordings of the same
//! kernel elsewhere (other devices, other constants).

use crate::{Point, Recorded};
use std::collections::HashMap;

/// The `count` points that did best across `others` (recordings over the same parameter names,
/// in the same order): each point scores the geometric mean, over the recordings that measured
/// it, of its cost (its time, or the objective's cost the recording was [`Recorded::costed`]
/// with) over that recording's best cost; a failure there counts as [`FAILED_RATIO`].
/// Only points measured in at least half of the recordings qualify. Best first; ties by point.
pub fn warm_start(others: &[&Recorded], count: usize) -> Vec<Point> {
    let mut logs: HashMap<&Point, (f64, usize)> = HashMap::new();
    for rec in others {
        let space = rec.space();
        let scores: Vec<Option<f64>> = space.points().iter().map(|p| rec.cost_of(p)).collect();
        let Some(best) = scores.iter().flatten().copied().reduce(f64::min) else {
            continue;
        };
        for (p, s) in space.points().iter().zip(scores) {
            let ratio = s.map_or(FAILED_RATIO, |s| s / best);
            let e = logs.entry(p).or_default();
            e.0 += ratio.ln();
            e.1 += 1;
        }
    }
    let quorum = others.len().div_ceil(2).max(1);
    let mut ranked: Vec<(f64, &Point)> = logs
        .into_iter()
        .filter(|(_, (_, n))| *n >= quorum)
        .map(|(p, (sum, n))| (sum / n as f64, p))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
    ranked
        .into_iter()
        .take(count)
        .map(|(_, p)| p.clone())
        .collect()
}

/// How many configurations a warm start measures first. On the strategy benchmark (learn on five
/// GPUs, tune the sixth; BENCHMARKS.md) 15 to 25 did alike at 25-200 evaluations and 10 or fewer
/// worse: a few more than the single best elsewhere pay for themselves where the devices differ.
pub const WARM_POINTS: usize = 15;

/// The ratio to the best that a failed configuration counts as in [`warm_start`].
pub const FAILED_RATIO: f64 = 10.0;

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_core::{Outcome, Timing};

    fn rec(times: &[(i64, Option<f64>)]) -> Recorded {
        let entries = times.iter().map(|&(x, t)| {
            let o = match t {
                Some(ms) => Outcome::Measured(Timing::new(vec![ms], 1)),
                None => Outcome::Crashed { detail: "".into() },
            };
            (vec![x], o)
        });
        Recorded::from_points(vec!["X".into()], entries).unwrap()
    }

    #[test]
    fn ranks_by_the_geometric_mean_of_relative_times() {
        let a = rec(&[
            (1, Some(1.0)),
            (2, Some(1.1)),
            (3, Some(4.0)),
            (4, Some(3.0)),
        ]);
        let b = rec(&[(1, None), (2, Some(2.0)), (3, Some(2.0)), (5, Some(9.0))]);
        // 1: sqrt(1 * 10) = 3.16; 2: sqrt(1.1 * 1); 3: sqrt(4 * 1); 4 and 5 in one recording of
        // two (quorum 1): 3 and 4.5.
        assert_eq!(
            warm_start(&[&a, &b], 10),
            vec![vec![2], vec![3], vec![4], vec![1], vec![5]]
        );
        assert_eq!(warm_start(&[&a, &b], 2), vec![vec![2], vec![3]]);
        assert!(warm_start(&[], 3).is_empty());
    }
}
