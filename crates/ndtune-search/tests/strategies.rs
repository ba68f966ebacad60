//! Strategies against replayed synthetic landscapes: what they may propose, and how well they do.

use ndtune_core::{Outcome, Timing};
use ndtune_search::{
    by_name, evaluate_strategy, Candidates, Evaluated, Evaluator, Point, Recorded, Trace,
    STRATEGY_NAMES,
};
use std::collections::HashSet;

/// A deterministic pseudo-random number in [0, 1) for a point and a salt (splitmix64).
fn hash01(point: &[i64], salt: u64) -> f64 {
    let mut h = salt.wrapping_add(0x9e37_79b9_7f4a_7c15);
    for &v in point {
        h = (h ^ v as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 31;
        h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 29;
    }
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// 16 x 12 x 10 points less those with a + b > 24 (1,890 candidates): a smooth bowl around
/// (11, 3, 6) with 5% noise; about 5% of the points fail at random and a corner (a >= 13,
/// b >= 8) is refused.
fn bowl() -> Recorded {
    let mut entries = Vec::new();
    for a in 0..16 {
        for b in 0..12 {
            for c in 0..10 {
                if a + b > 24 {
                    continue;
                }
                let p = vec![a, b, c];
                let outcome = if a >= 13 && b >= 8 {
                    Outcome::Refused {
                        error: "CL_OUT_OF_RESOURCES".into(),
                    }
                } else if hash01(&p, 1) < 0.05 {
                    Outcome::WrongResult {
                        detail: "fast but wrong".into(),
                    }
                } else {
                    let d = |v: i64, centre: f64, width: f64| ((v as f64 - centre) / width).powi(2);
                    let bowl = (0.5 * (d(a, 11.0, 4.0) + d(b, 3.0, 3.0) + d(c, 6.0, 3.0))).exp();
                    let noise = 1.0 + 0.05 * hash01(&p, 2);
                    Outcome::Measured(Timing::new(vec![bowl * noise], 1))
                };
                entries.push((p, outcome));
            }
        }
    }
    let names = ["a", "b", "c"].map(String::from).to_vec();
    Recorded::from_points(names, entries).unwrap()
}

/// Replays a recording and remembers every point it was asked for.
struct Spy {
    recorded: Recorded,
    asked: Vec<Point>,
}

impl Evaluator for Spy {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        self.asked.push(point.to_vec());
        self.recorded.evaluate(point)
    }
}

fn run(name: &str, seed: u64, budget: Option<usize>) -> (Candidates, Vec<Point>, Trace) {
    let recorded = bowl();
    let space = recorded.space().clone();
    let mut spy = Spy {
        recorded,
        asked: Vec::new(),
    };
    let trace = by_name(name, seed).unwrap().run(&space, &mut spy, budget);
    let traced: Vec<Point> = trace.steps.iter().map(|s| s.point.clone()).collect();
    assert_eq!(
        traced, spy.asked,
        "{name}: the trace lists exactly what was evaluated"
    );
    (space, spy.asked, trace)
}

fn distinct(points: &[Point]) -> usize {
    points.iter().collect::<HashSet<_>>().len()
}

#[test]
fn exhaustive_visits_every_point_once_from_every_part_of_the_space_early() {
    let (space, asked, trace) = run("exhaustive", 0, None);
    assert_eq!((asked.len(), distinct(&asked)), (space.len(), space.len()));
    assert!(asked.iter().all(|p| space.contains(p)));
    assert!(trace.steps.iter().all(|s| s.reused));
    // In the space's order the first 20 points all have a = 0; scattered, they meet most of
    // the 16 values of a.
    let firsts: HashSet<i64> = asked[..20].iter().map(|p| p[0]).collect();
    assert!(
        firsts.len() >= 10,
        "the first 20 points have a in {firsts:?}"
    );
    let (_, first, _) = run("exhaustive", 0, Some(10));
    assert_eq!(first, asked[..10]);
}

#[test]
fn random_samples_distinct_points_reproducibly_per_seed() {
    let (space, asked, _) = run("random", 7, Some(100));
    assert_eq!((asked.len(), distinct(&asked)), (100, 100));
    assert!(asked.iter().all(|p| space.contains(p)));
    assert_eq!(run("random", 7, Some(100)).1, asked);
    assert_ne!(run("random", 8, Some(100)).1, asked);
    let (_, all, _) = run("random", 7, None);
    assert_eq!((all.len(), distinct(&all)), (space.len(), space.len()));
}

#[test]
fn anneal_stays_in_the_space_never_repeats_and_keeps_to_the_budget() {
    for seed in 0..10 {
        for (budget, expected) in [(None, 100), (Some(0), 0), (Some(1), 1), (Some(300), 300)] {
            let (space, asked, _) = run("anneal", seed, budget);
            assert_eq!(asked.len(), expected, "seed {seed}, budget {budget:?}");
            assert_eq!(
                distinct(&asked),
                asked.len(),
                "seed {seed}: a point was evaluated twice"
            );
            assert!(
                asked.iter().all(|p| space.contains(p)),
                "seed {seed}: outside the space"
            );
        }
    }
    let (_, repeat, _) = run("anneal", 3, Some(50));
    assert_eq!(run("anneal", 3, Some(50)).1, repeat);
}

#[test]
fn every_strategy_can_spend_the_whole_space_even_with_isolated_points() {
    // Points that share no coordinate with another: no neighbours, so the walk restarts each time.
    let entries = (0..20).map(|i| {
        let p = vec![i, 100 - i, i * i];
        (
            p,
            Outcome::Measured(Timing::new(vec![1.0 + (i % 7) as f64], 1)),
        )
    });
    let names = ["x", "y", "z"].map(String::from).to_vec();
    let mut recorded = Recorded::from_points(names, entries).unwrap();
    let space = recorded.space().clone();
    for name in STRATEGY_NAMES {
        let trace = by_name(name, 5)
            .unwrap()
            .run(&space, &mut recorded, Some(1000));
        assert_eq!(trace.steps.len(), 20, "{name}");
        assert_eq!(trace.best().map(|(_, ms)| ms), Some(1.0), "{name}");
    }
}

#[test]
fn best_is_never_a_failure() {
    for name in STRATEGY_NAMES {
        for seed in 0..5 {
            let (_, _, trace) = run(name, seed, Some(150));
            let (point, ms) = trace.best().expect("150 points include measured ones");
            let step = trace.steps.iter().find(|s| &s.point == point).unwrap();
            assert_eq!(
                step.outcome.score_ms(),
                Some(ms),
                "{name}: best {point:?} is not measured"
            );
            let measured = trace.steps.iter().filter_map(|s| s.outcome.score_ms());
            assert!(measured.fold(f64::INFINITY, f64::min) >= ms);
        }
    }
}

#[test]
fn anneal_beats_random_on_a_noisy_bowl_with_a_tenth_of_the_budget() {
    let mut recorded = bowl();
    let space = recorded.space().clone();
    let budget = Some(space.len() / 10);
    let mut score = |name| evaluate_strategy(name, &space, &mut recorded, budget, 20).unwrap();
    let (anneal, random) = (score("anneal"), score("random"));
    println!("{anneal}\n{random}");
    assert!(
        anneal.mean() > random.mean() + 0.02,
        "anneal {:.3} vs random {:.3}",
        anneal.mean(),
        random.mean()
    );
}

/// Replays a recording as an evaluator that builds `width` configurations at once: remembers
/// what it was promised and hinted, and what it evaluated, promised or not.
struct Wide {
    recorded: Recorded,
    width: usize,
    promised: Vec<Point>,
    calls: Vec<(Vec<Point>, Vec<Point>)>,
    evaluated: Vec<(Point, bool)>,
}

impl Evaluator for Wide {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        let promised = self.promised.iter().any(|p| p == point);
        self.evaluated.push((point.to_vec(), promised));
        self.recorded.evaluate(point)
    }

    fn will_ask(&mut self, points: &[Point]) {
        self.will_ask_then(points, &[]);
    }

    fn will_ask_then(&mut self, asked: &[Point], hinted: &[Point]) {
        self.promised = asked.to_vec();
        self.calls.push((asked.to_vec(), hinted.to_vec()));
    }

    fn upcoming(&mut self, _points: &[Point]) {
        self.promised.clear();
    }

    fn width(&self) -> usize {
        self.width
    }

    /// The last build finishes first.
    fn first_ready(&mut self, points: &[Point]) -> usize {
        points.len() - 1
    }
}

#[test]
fn local_search_on_a_wide_evaluator_climbs_in_promised_batches() {
    let optimum = |r: &Recorded| {
        r.space()
            .points()
            .iter()
            .filter_map(|p| r.cost_of(p))
            .fold(f64::INFINITY, f64::min)
    };
    for name in ["ils", "ils-adjacent", "mls"] {
        let (mut reached, mut promised, mut total) = (Vec::new(), 0, 0);
        for seed in 0..10 {
            let recorded = bowl();
            let space = recorded.space().clone();
            let best = optimum(&recorded);
            let mut wide = Wide {
                recorded,
                width: 6,
                promised: Vec::new(),
                calls: Vec::new(),
                evaluated: Vec::new(),
            };
            let trace = by_name(name, seed)
                .unwrap()
                .run(&space, &mut wide, Some(100));
            assert_eq!(trace.steps.len(), 100, "{name}: the whole budget");
            let points: Vec<&Point> = wide.evaluated.iter().map(|(p, _)| p).collect();
            assert_eq!(
                points.iter().collect::<HashSet<_>>().len(),
                points.len(),
                "{name}, seed {seed}: a point evaluated twice"
            );
            for (asked, hinted) in &wide.calls {
                assert!(
                    asked.len() + hinted.len() <= 6 || hinted.is_empty(),
                    "{name}: hints beyond the workers left over: {} + {}",
                    asked.len(),
                    hinted.len()
                );
                assert!(hinted.iter().all(|h| !asked.contains(h)));
            }
            promised += wide.evaluated.iter().filter(|(_, p)| *p).count();
            total += wide.evaluated.len();
            let found = trace
                .steps
                .iter()
                .filter_map(|s| s.outcome.score_ms())
                .fold(f64::INFINITY, f64::min);
            reached.push(best / found);
        }
        // Only the starts (random, or perturbed) are asked for alone.
        assert!(
            promised as f64 >= 0.75 * total as f64,
            "{name}: {promised} of {total} evaluations promised"
        );
        let mean = reached.iter().sum::<f64>() / reached.len() as f64;
        assert!(
            mean >= 0.9,
            "{name}: {mean:.3} of the optimum in 100 evaluations"
        );
    }
}
