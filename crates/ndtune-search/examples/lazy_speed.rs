//! How fast the lazy space and the strategies are: the first count, unrank, rank, neighbours, and
//! each strategy's time per proposal with an evaluator that costs nothing. By default on
//! bench/spaces/huge-ranges.toml (10^21 declared, 3,468,065 valid); given a spec file, on its
//! pruned space (examples/xgemm-space.toml: CLBlast's xgemm, 6,685,184 valid). Figures for
//! BENCHMARKS.md:
//! `cargo run --release -p ndtune-search --example lazy_speed [SPEC]`.

use ndtune_core::{Outcome, Timing};
use ndtune_search::{
    by_name, neighbours, Evaluated, Evaluator, Neighbourhood, SearchSpace, ValidSpace,
    STRATEGY_NAMES,
};
use ndtune_space::domain::Domain;
use ndtune_space::problem::{ParamDecl, Problem};
use std::time::Instant;

struct Free;

impl Evaluator for Free {
    fn evaluate(&mut self, p: &[i64]) -> Evaluated {
        // A made-up landscape over the first three parameters.
        let ms = 1.0 + ((p[0] * p[1]) as f64 - 4e6).abs() / 1e6 + (p[2] % 7) as f64;
        Evaluated {
            outcome: Outcome::Measured(Timing::new(vec![ms], 1)),
            reused: false,
        }
    }
}

fn main() {
    let problem = match std::env::args().nth(1) {
        Some(path) => {
            ndtune_spec::Spec::load(std::path::Path::new(&path))
                .unwrap_or_else(|e| panic!("{e}"))
                .problem
        }
        None => huge_ranges(),
    };
    let t = Instant::now();
    let space = ValidSpace::new(problem.prune(&[]).unwrap().space);
    measure(space, t);
}

/// bench/spaces/huge-ranges.toml.
fn huge_ranges() -> Problem {
    let range = |end: i64| Domain::range(1, end, 1);
    Problem {
        params: [("X", 1_000_000), ("Y", 1_000_000_000), ("Z", 1_000_000)]
            .into_iter()
            .map(|(n, end)| ParamDecl {
                name: n.into(),
                domain: range(end),
            })
            .collect(),
        constraints: vec![
            "X * Y <= 10000000".into(),
            "Y >= X".into(),
            "Y <= 2 * X".into(),
            "Z * 1000 <= X * Y && X * Y < (Z + 1) * 1000".into(),
        ],
        ..Problem::default()
    }
}

fn measure(space: ValidSpace, t: Instant) {
    println!(
        "prune and count: {} valid in {:.3} s",
        space.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    space.nth(space.len() / 2);
    println!(
        "first unrank (fills the root's counts): {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let n = 10_000u128;
    let step = space.len() / n;
    let t = Instant::now();
    let points: Vec<_> = (0..n).map(|i| space.nth(i * step + 7).unwrap()).collect();
    let per = t.elapsed().as_secs_f64() / n as f64;
    println!("unrank, 10,000 spread ranks: {:.1} us each", per * 1e6);
    let t = Instant::now();
    for p in &points {
        space.rank(p).unwrap();
    }
    println!(
        "rank: {:.1} us each",
        t.elapsed().as_secs_f64() / n as f64 * 1e6
    );
    for kind in [Neighbourhood::Hamming, Neighbourhood::Adjacent] {
        let t = Instant::now();
        let mut found = 0;
        for p in points.iter().take(1000) {
            found += neighbours(&space, p, kind).len();
        }
        println!(
            "{kind:?} neighbours: {:.1} us per point ({:.1} neighbours)",
            t.elapsed().as_secs_f64() / 1000.0 * 1e6,
            found as f64 / 1000.0
        );
    }
    for name in STRATEGY_NAMES {
        let t = Instant::now();
        let trace = by_name(name, 1).unwrap().run(&space, &mut Free, Some(1000));
        println!(
            "{name}: {:.3} ms per proposal over {} evaluations",
            t.elapsed().as_secs_f64() / trace.steps.len() as f64 * 1e3,
            trace.steps.len()
        );
    }
}
