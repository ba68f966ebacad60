//! How long verifying one configuration's output takes on the host: a 16 MiB float output (the
//! GPU benchmark's 2048² SGEMM) compared with its reference by `compare_bytes`, the median of
//! 21 comparisons.
//!
//! ```sh
//! cargo run --release -p ndtune-bench --example verify_speed
//! ```

use ndtune_bench::verify::{compare_bytes, Want};
use ndtune_spec::ElemType;
use std::time::Instant;

fn main() {
    let n = 2048 * 2048;
    let expected: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 * 0.25).collect();
    let want = Want::new(expected.clone(), ElemType::Float);
    let actual: Vec<u8> = expected
        .iter()
        .flat_map(|&e| (e as f32).to_ne_bytes())
        .collect();
    let mut times: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            compare_bytes("C", &want, ElemType::Float, &actual, 1e-4, 2e-3).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    println!(
        "compare_bytes, {n} floats (16 MiB), {threads} threads: median {:.2} ms (min {:.2}, max {:.2})",
        times[10], times[0], times[20]
    );
}
