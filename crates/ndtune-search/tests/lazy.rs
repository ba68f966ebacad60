//! Every strategy on lazy spaces (pruned, never listed): what it proposes is valid, distinct,
//! within the budget and reproducible; warm starts come first; time budgets and exhausted spaces
//! end a run.

use ndtune_core::{Outcome, Timing};
use ndtune_search::{
    by_name, Budget, Evaluated, Evaluator, Point, Run, SearchSpace, ValidSpace, STRATEGY_NAMES,
};
use ndtune_space::domain::Domain;
use ndtune_space::problem::{ParamDecl, Problem};
use std::collections::HashSet;
use std::time::Duration;

fn lazy(params: &[(&str, Domain)], constraints: &[&str]) -> ValidSpace {
    let problem = Problem {
        params: params
            .iter()
            .map(|(n, d)| ParamDecl {
                name: n.to_string(),
                domain: d.clone(),
            })
            .collect(),
        constraints: constraints.iter().map(|c| c.to_string()).collect(),
        ..Problem::default()
    };
    ValidSpace::new(problem.prune(&[]).expect("a valid problem").space)
}

fn range(start: i64, end: i64) -> Domain {
    Domain::range(start, end, 1)
}

/// A Xgemm-like space: tiles, work-group sizes and vector widths coupled by divisibility and a
/// work-group size limit; a few thousand valid points.
fn tiles() -> ValidSpace {
    let pow2 = Domain::pow2;
    lazy(
        &[
            ("MWG", pow2(16, 128)),
            ("NWG", pow2(16, 128)),
            ("MDIMC", pow2(8, 32)),
            ("NDIMC", pow2(8, 32)),
            ("VWM", pow2(1, 8)),
            ("KWI", Domain::ints(&[2, 8])),
            ("UNROLL", range(0, 3)),
        ],
        &[
            "MWG % (MDIMC * VWM) == 0",
            "NWG % NDIMC == 0",
            "MDIMC * NDIMC <= 256",
        ],
    )
}

/// Scores points with a smooth bowl; one point in eleven fails to build. Records what it was
/// asked and what it was told comes next.
struct Bowl<'s> {
    space: &'s ValidSpace,
    asked: Vec<Point>,
    announced: Vec<Point>,
}

impl Evaluator for Bowl<'_> {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        self.asked.push(point.to_vec());
        let sum: i64 = point.iter().sum();
        let outcome = if sum % 11 == 0 {
            Outcome::BuildFailed {
                log: "error: too many registers".into(),
            }
        } else {
            let ms = point
                .iter()
                .enumerate()
                .map(|(p, &v)| {
                    let i = self.space.domain_index(p, v).unwrap() as f64;
                    (i - 1.5).powi(2)
                })
                .sum::<f64>();
            Outcome::Measured(Timing::new(vec![1.0 + ms], 1))
        };
        Evaluated {
            outcome,
            reused: false,
        }
    }

    fn upcoming(&mut self, points: &[Point]) {
        self.announced.extend_from_slice(points);
    }
}

fn bowl(space: &ValidSpace) -> Bowl<'_> {
    Bowl {
        space,
        asked: Vec::new(),
        announced: Vec::new(),
    }
}

#[test]
fn every_strategy_proposes_distinct_valid_points_reproducibly() {
    let space = tiles();
    let valid: HashSet<Point> = space.space().configs().into_iter().collect();
    assert_eq!(valid.len() as u128, space.len());
    for name in STRATEGY_NAMES {
        for seed in 0..3 {
            let mut eval = bowl(&space);
            let trace = by_name(name, seed)
                .unwrap()
                .run(&space, &mut eval, Some(120));
            assert_eq!(eval.asked.len(), 120, "{name} seed {seed}");
            let distinct: HashSet<&Point> = eval.asked.iter().collect();
            assert_eq!(distinct.len(), 120, "{name}: a point was evaluated twice");
            assert!(
                eval.asked
                    .iter()
                    .chain(&eval.announced)
                    .all(|p| valid.contains(p)),
                "{name}: proposed or announced a point outside the space"
            );
            assert!(!eval.announced.is_empty(), "{name} never called upcoming");
            assert!(trace.best().is_some(), "{name}");
            let mut again = bowl(&space);
            by_name(name, seed)
                .unwrap()
                .run(&space, &mut again, Some(120));
            assert_eq!(again.asked, eval.asked, "{name} is not reproducible");
        }
    }
}

#[test]
fn strategies_search_a_space_of_ten_to_the_twenty_one_declared_points() {
    // bench/spaces/huge-ranges.toml.
    let space = lazy(
        &[
            ("X", range(1, 1_000_000)),
            ("Y", range(1, 1_000_000_000)),
            ("Z", range(1, 1_000_000)),
        ],
        &[
            "X * Y <= 10000000",
            "Y >= X",
            "Y <= 2 * X",
            "Z * 1000 <= X * Y && X * Y < (Z + 1) * 1000",
        ],
    );
    assert_eq!(space.len(), 3_468_065);
    struct Product;
    impl Evaluator for Product {
        fn evaluate(&mut self, p: &[i64]) -> Evaluated {
            let ms = 1.0 + ((p[0] * p[1]) as f64 - 4e6).abs() / 1e6;
            Evaluated {
                outcome: Outcome::Measured(Timing::new(vec![ms], 1)),
                reused: false,
            }
        }
    }
    for name in STRATEGY_NAMES {
        let trace = by_name(name, 1)
            .unwrap()
            .run(&space, &mut Product, Some(40));
        assert_eq!(trace.steps.len(), 40, "{name}");
        assert!(
            trace.steps.iter().all(|s| space.contains(&s.point)),
            "{name}"
        );
    }
}

#[test]
fn random_draws_are_uniform_over_the_valid_points() {
    // 15 valid points of 64 declared; the first draw of 3,000 seeds.
    let space = lazy(
        &[("A", range(0, 7)), ("B", range(0, 7))],
        &["A * B <= 4", "A + B >= 2"],
    );
    let n = space.len() as usize;
    let mut counts = std::collections::HashMap::<Point, usize>::new();
    let draws = 3000;
    for seed in 0..draws {
        let mut eval = bowl(&space);
        by_name("random", seed)
            .unwrap()
            .run(&space, &mut eval, Some(1));
        *counts.entry(eval.asked.remove(0)).or_default() += 1;
    }
    assert_eq!(counts.len(), n);
    let expected = draws as f64 / n as f64;
    let chi2: f64 = counts
        .values()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    // 14 degrees of freedom: P(chi2 > 36.1) = 0.001.
    assert!(chi2 < 36.1, "chi2 {chi2:.1} over {n} points: {counts:?}");
}

#[test]
fn warm_start_points_are_measured_first_and_invalid_ones_skipped() {
    let space = tiles();
    let good = space.nth(17).unwrap();
    let also = space.nth(900).unwrap();
    let invalid = vec![16, 16, 32, 32, 1, 2, 0];
    assert!(!space.contains(&invalid));
    for name in STRATEGY_NAMES {
        let mut eval = bowl(&space);
        let run = Run {
            budget: Budget {
                evaluations: Some(30),
                time: None,
            },
            warm: vec![good.clone(), invalid.clone(), also.clone()],
            patience: None,
        };
        by_name(name, 4).unwrap().search(&space, &mut eval, &run);
        assert_eq!(eval.asked[..2], [good.clone(), also.clone()], "{name}");
        assert_eq!(eval.asked.len(), 30, "{name}");
    }
}

#[test]
fn time_budgets_end_runs_and_exhausted_spaces_end_them_too() {
    let space = lazy(&[("A", range(0, 9)), ("B", range(0, 9))], &["A <= B"]);
    for name in STRATEGY_NAMES {
        let mut eval = bowl(&space);
        let no_time = Run {
            budget: Budget {
                evaluations: None,
                time: Some(Duration::ZERO),
            },
            warm: Vec::new(),
            patience: None,
        };
        let trace = by_name(name, 2)
            .unwrap()
            .search(&space, &mut eval, &no_time);
        assert!(trace.steps.is_empty(), "{name}");
        let an_hour = Run {
            budget: Budget {
                evaluations: None,
                time: Some(Duration::from_secs(3600)),
            },
            warm: Vec::new(),
            patience: None,
        };
        let trace = by_name(name, 2)
            .unwrap()
            .search(&space, &mut eval, &an_hour);
        assert_eq!(trace.steps.len(), 55, "{name}: every point, then a stop");
    }
}

#[test]
fn patience_ends_a_run_once_that_many_evaluations_found_nothing_better() {
    let space = tiles();
    // One of the bowl's cheapest points (nothing is strictly cheaper), as a warm start.
    let mut probe = bowl(&space);
    let cost = |eval: &mut Bowl<'_>, p: &Point| {
        let outcome = eval.evaluate(p).outcome;
        eval.cost(p, &outcome).unwrap_or(f64::INFINITY)
    };
    let best = (0..space.len())
        .filter_map(|rank| space.nth(rank))
        .map(|p| (cost(&mut probe, &p), p))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap()
        .1;
    for name in STRATEGY_NAMES {
        let run = |patience| Run {
            budget: Budget {
                evaluations: Some(100),
                time: None,
            },
            warm: vec![best.clone()],
            patience,
        };
        let mut eval = bowl(&space);
        by_name(name, 3)
            .unwrap()
            .search(&space, &mut eval, &run(Some(5)));
        assert_eq!(eval.asked[0], best, "{name}");
        assert_eq!(
            eval.asked.len(),
            1 + 5,
            "{name}: the warm point, then 5 no better"
        );
        let mut eval = bowl(&space);
        by_name(name, 3)
            .unwrap()
            .search(&space, &mut eval, &run(None));
        assert_eq!(eval.asked.len(), 100, "{name}");
    }
}
