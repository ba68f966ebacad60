//! How long one compiled constraint takes to evaluate, against the tree-walking interpreter.
//!
//! `cargo run --release -p ndtune-space --example eval_speed`
//!
//! Each constraint of the xgemm space is evaluated over rotating parameter values (so branches do
//! not settle on one outcome); the figure is wall time per evaluation, single-threaded.

use ndtune_space::compile::pred;
use ndtune_space::expr::Expr;
use ndtune_space::resolve::{resolve, Scope, Type};
use std::hint::black_box;
use std::time::Instant;

const PARAMS: [&str; 10] = [
    "MWG", "NWG", "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB", "KWI", "VWM", "VWN",
];
const CONSTRAINTS: [&str; 8] = [
    "KWG % KWI == 0",
    "MWG % (MDIMC * VWM) == 0",
    "NWG % (NDIMC * VWN) == 0",
    "MWG % (MDIMA * VWM) == 0",
    "NWG % (NDIMB * VWN) == 0",
    "(MDIMC * NDIMC) % MDIMA != 0 || KWG % ((MDIMC * NDIMC) / MDIMA) == 0",
    "(MDIMC * NDIMC) % NDIMB != 0 || KWG % ((MDIMC * NDIMC) / NDIMB) == 0",
    "MDIMC * NDIMC <= 1024",
];

fn main() {
    let scope = Scope {
        params: PARAMS.iter().map(|s| s.to_string()).collect(),
        ..Scope::default()
    };
    // 64 configurations drawn from the xgemm domains.
    let domains: [&[i64]; 10] = [
        &[16, 32, 64, 128, 256],
        &[16, 32, 64, 128, 256],
        &[16, 32, 64],
        &[4, 8, 16, 32],
        &[4, 8, 16, 32],
        &[4, 8, 16, 32],
        &[4, 8, 16, 32],
        &[1, 2, 4, 8],
        &[1, 2, 4, 8],
        &[1, 2, 4, 8],
    ];
    let configs: Vec<Vec<i64>> = (0..64usize)
        .map(|i| {
            domains
                .iter()
                .enumerate()
                .map(|(p, d)| d[(i * (p + 3) + i / 7) % d.len()])
                .collect()
        })
        .collect();
    const N: usize = 4_000_000;
    println!("{:>10} {:>12}  constraint", "compiled", "interpreted");
    for src in CONSTRAINTS {
        let node = resolve(&Expr::parse(src).unwrap(), src, &scope, Type::Bool).unwrap();
        let compiled = pred(&node);
        let time = |f: &dyn Fn(&[i64]) -> bool| {
            let start = Instant::now();
            let mut hits = 0usize;
            for i in 0..N {
                hits += f(black_box(&configs[i & 63])) as usize;
            }
            black_box(hits);
            start.elapsed().as_secs_f64() * 1e9 / N as f64
        };
        let c = time(&|v| compiled(v));
        let t = time(&|v| node.holds(v));
        println!("{c:>8.1} ns {t:>9.1} ns  {src}");
    }
}
