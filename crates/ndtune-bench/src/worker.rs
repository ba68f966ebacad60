//! The worker process: evaluates configurations for the supervisor, one JSON line each way.
//!
//! The supervisor writes one [`Job`] line, then one [`Request`] line per configuration; the worker
//! answers [`Response::Ready`] once its device is open, then one [`Response::Outcome`] per request,
//! or [`Response::Fatal`] and exits when the spec, the kernel or the reference is wrong.

use crate::evaluate::{Bench, Cost, Fatal};
use ndtune_core::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// What a worker evaluates: a spec (with constant overrides) on one device.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub spec: PathBuf,
    pub overrides: BTreeMap<String, i64>,
    /// Index of the device in `ndtune devices` order.
    pub device: usize,
    /// Sub-device K of N equal partitions of that device, if one.
    pub sub: Option<(usize, usize)>,
    /// Seed of the input data.
    pub seed: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Evaluate(Vec<i64>),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    Ready { device: String },
    Outcome { outcome: Outcome, cost: Cost },
    Fatal(String),
}

fn open(job: &Job) -> Result<Bench, Fatal> {
    let spec = ndtune_spec::Spec::load_with(&job.spec, &job.overrides)
        .map_err(|e| Fatal(e.to_string()))?;
    let mut devices = ndtune_cl::discover().map_err(|e| Fatal(e.to_string()))?;
    if job.device >= devices.len() {
        return Err(Fatal(format!(
            "no device {} (found {})",
            job.device,
            devices.len()
        )));
    }
    let device = devices.swap_remove(job.device);
    let device = match job.sub {
        Some((k, n)) => device.sub_device(k, n).map_err(|e| Fatal(e.to_string()))?,
        None => device,
    };
    Bench::new(spec, &device, job.seed)
}

fn send(out: &mut impl Write, r: &Response) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Runs the worker on stdin/stdout until stdin closes; the process exit code.
pub fn serve() -> i32 {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout().lock();
    let job: Job = match lines.next().map(|l| l.map(|l| serde_json::from_str(&l))) {
        Some(Ok(Ok(job))) => job,
        _ => {
            let _ = send(
                &mut out,
                &Response::Fatal("the worker got no valid job line".into()),
            );
            return 2;
        }
    };
    let mut bench = match open(&job) {
        Ok(b) => b,
        Err(f) => {
            let _ = send(&mut out, &Response::Fatal(f.0));
            return 1;
        }
    };
    let device = ndtune_cl::discover()
        .ok()
        .and_then(|d| d.get(job.device).map(|d| d.profile.name.clone()));
    if send(
        &mut out,
        &Response::Ready {
            device: device.unwrap_or_default(),
        },
    )
    .is_err()
    {
        return 1;
    }
    for line in lines {
        let Ok(line) = line else { return 1 };
        let response = match serde_json::from_str::<Request>(&line) {
            Ok(Request::Evaluate(config)) => match bench.evaluate_costed(&config) {
                Ok((outcome, cost)) => Response::Outcome { outcome, cost },
                Err(f) => Response::Fatal(f.0),
            },
            Err(e) => Response::Fatal(format!("the worker got a malformed request: {e}")),
        };
        let fatal = matches!(response, Response::Fatal(_));
        if send(&mut out, &response).is_err() || fatal {
            return 1;
        }
    }
    0
}
