//! A load generator for `ndtune serve`: CLIENTS threads, each with its own kept-alive
//! connection, POST the same body for SECONDS at RATE requests per second in all (paced, or as
//! fast as answers come with --rate 0). Latency is measured from the moment a request was due,
//! so a slow answer also counts against the requests queued behind it (no coordinated
//! omission). Prints a JSON summary.
//!
//! cargo run --release -p ndtune-serve --example loadgen -- --address 127.0.0.1:8080 \
//!     --body request.json --clients 16 --seconds 60 --rate 1000

use clap::Parser;
use ndtune_serve::client::{Address, Client};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// HOST:PORT, http://HOST:PORT or unix:PATH.
    #[arg(long)]
    address: String,
    /// The JSON body of every request.
    #[arg(long)]
    body: std::path::PathBuf,
    #[arg(long, default_value = "/v1/predict")]
    path: String,
    #[arg(long, default_value_t = 16)]
    clients: usize,
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Requests per second over all clients; 0: each client sends as soon as it has an answer.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
}

/// One client's latencies (µs) and errors.
struct Run {
    latencies: Vec<u64>,
    errors: Vec<String>,
}

fn client(args: &Args, index: usize, body: &[u8], start: Instant, end: Instant) -> Run {
    let address = Address::parse(&args.address).expect("a valid --address");
    let mut client = Client::new(address, Duration::from_secs(10));
    // Each client's share of the rate, its first request offset so clients interleave.
    let interval =
        (args.rate > 0.0).then(|| Duration::from_secs_f64(args.clients as f64 / args.rate));
    let mut due = start
        + interval.map_or(Duration::ZERO, |i| {
            i.mul_f64(index as f64 / args.clients as f64)
        });
    let mut run = Run {
        latencies: Vec::new(),
        errors: Vec::new(),
    };
    while due < end {
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let sent = if interval.is_some() {
            due
        } else {
            Instant::now()
        };
        match client.request("POST", &args.path, Some(body)) {
            Ok(r) if r.status == 200 => run.latencies.push(sent.elapsed().as_micros() as u64),
            Ok(r) => run.errors.push(format!(
                "HTTP {}: {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            )),
            Err(e) => run.errors.push(e.to_string()),
        }
        due = match interval {
            Some(i) => due + i,
            None => Instant::now(),
        };
    }
    run
}

fn main() {
    let args = Args::parse();
    let body = std::fs::read(&args.body).unwrap_or_else(|e| {
        eprintln!("error: {}: {e}", args.body.display());
        std::process::exit(2)
    });
    let start = Instant::now() + Duration::from_millis(100);
    let end = start + Duration::from_secs_f64(args.seconds);
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.clients)
            .map(|i| {
                let (args, body) = (&args, &body);
                s.spawn(move || client(args, i, body, start, end))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a client thread"))
            .collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut latencies: Vec<u64> = runs
        .iter()
        .flat_map(|r| r.latencies.iter().copied())
        .collect();
    let errors: Vec<&String> = runs.iter().flat_map(|r| &r.errors).collect();
    latencies.sort_unstable();
    let q = |p: f64| -> u64 {
        if latencies.is_empty() {
            return 0;
        }
        latencies[((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1]
    };
    let summary = serde_json::json!({
        "clients": args.clients,
        "seconds": elapsed,
        "target_rate": args.rate,
        "requests": latencies.len() + errors.len(),
        "ok": latencies.len(),
        "errors": errors.len(),
        "first_errors": errors.iter().take(3).collect::<Vec<_>>(),
        "rate": latencies.len() as f64 / elapsed,
        "latency_us": {"p50": q(0.50), "p90": q(0.90), "p99": q(0.99), "p999": q(0.999),
                       "max": latencies.last().copied().unwrap_or(0)},
    });
    println!("{}", serde_json::to_string_pretty(&summary).expect("json"));
    if !errors.is_empty() {
        std::process::exit(1);
    }
}
