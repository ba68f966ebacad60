//! A campaign's report: the best configuration and the fastest few, outcome counts, the first
//! few failures of each class with why, whether outputs were verified, how to keep what the
//! platform model removed, how many configurations ran beyond the driver's queried work-group
//! size, and where the time went.

use ndtune_bench::supervisor::Evaluation;
use ndtune_core::{Codec, Config, Outcome, OutcomeKind, Timing};
use ndtune_search::Trace;
use ndtune_spec::Spec;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct Best {
    pub config: Config,
    pub time_ms: f64,
    pub median_ms: f64,
    pub min_ms: f64,
    pub rel_spread: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbytes_per_s: Option<f64>,
}

/// One failed configuration and why, in one line ([`Outcome::reason`]).
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub config: Config,
    pub reason: String,
}

/// How many failed configurations of each outcome class a report lists.
pub const FAILURES_LISTED: usize = 3;

/// Results of the same kernel source with the same constants on the same device under another
/// setup: a campaign of its own, not reused.
#[derive(Debug, Clone, Serialize)]
pub struct OtherSetup {
    pub setup: String,
    pub results: u64,
    /// What differs from that setup to this campaign's, one `path: old -> new` line each.
    pub differences: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub config: Config,
    pub time_ms: f64,
}

/// Where the wall time of the configurations evaluated now went, in seconds.
///
/// `total_s` is wall time from asking for a configuration to having its outcome, summed over
/// configurations. `build_s` is the part of it spent on builds: waiting for the build workers
/// (their wall share; builds done while the device measured something else cost nothing here)
/// and loading or compiling programs in the measurement worker. `build_workers_s` is the build
/// workers' own time summed over workers, to compare.
#[derive(Debug, Serialize, Default, Clone, Copy)]
pub struct TimeSpent {
    pub total_s: f64,
    /// Starting the measurement worker (process start, device discovery, OpenCL context).
    pub startup_s: f64,
    /// Computing reference outputs.
    pub reference_s: f64,
    pub build_s: f64,
    /// Build worker processes (1: builds in the measurement worker).
    pub build_jobs: usize,
    pub build_workers_s: f64,
    /// Kernel launches, waits included.
    pub launch_s: f64,
    /// Of the overhead: arguments on the device (inputs restored), and the outputs read back and
    /// compared with the reference.
    pub prepare_s: f64,
    pub verify_s: f64,
    /// What is none of these, per configuration: requests, buffers, arguments, verification.
    pub overhead_ms_per_config: f64,
    /// Waiting for evaluations that crashed or timed out (not in `total_s`).
    pub lost_s: f64,
    #[serde(skip)]
    pub configs: usize,
}

impl TimeSpent {
    /// The per-configuration overhead: what the totals do not account for.
    fn recompute_overhead(&mut self) {
        if self.configs > 0 {
            let accounted = self.build_s + self.launch_s + self.reference_s;
            self.overhead_ms_per_config = (self.total_s - accounted) * 1e3 / self.configs as f64;
        }
    }

    /// One evaluation in the worker, after `wait_s` waiting for its build.
    pub(crate) fn add(&mut self, e: &Evaluation, wait_s: f64) {
        let Some(c) = e.cost else {
            // A crash or a hang: its time is lost, not overhead.
            self.lost_s += wait_s + e.round_trip_ms / 1e3;
            return;
        };
        self.total_s += wait_s + e.round_trip_ms / 1e3;
        self.build_s += wait_s + c.build_ms / 1e3;
        self.launch_s += c.launch_ms / 1e3;
        self.reference_s += c.reference_ms / 1e3;
        self.prepare_s += c.prepare_ms / 1e3;
        self.verify_s += c.verify_ms / 1e3;
        self.configs += 1;
        self.recompute_overhead();
    }

    /// Waiting for builds with nothing to measure meanwhile.
    pub(crate) fn add_wait(&mut self, wait_s: f64) {
        self.total_s += wait_s;
        self.build_s += wait_s;
        self.recompute_overhead();
    }

    /// A configuration whose build failed in a build worker, after `wait_s` waiting for it.
    pub(crate) fn add_build_outcome(&mut self, wait_s: f64) {
        self.total_s += wait_s;
        self.build_s += wait_s;
        self.configs += 1;
        self.recompute_overhead();
    }
}

/// The summary of one campaign on one device.
#[derive(Debug, Serialize)]
pub struct DeviceReport {
    pub device: String,
    pub kernel: String,
    /// The problem's constants.
    pub constants: ndtune_core::Constants,
    /// The digest of the campaign's setup.
    pub setup: String,
    pub strategy: String,
    pub best: Option<Best>,
    pub outcomes: BTreeMap<&'static str, u128>,
    /// Configurations run now.
    pub evaluated: usize,
    /// Configurations read back from the store.
    pub reused: usize,
    /// Results of this problem under other setups, which were not reused.
    pub not_reused: Vec<OtherSetup>,
    pub declared: u128,
    pub pruned: u128,
    /// Measured configurations whose work-group exceeds the build's queried
    /// `CL_KERNEL_WORK_GROUP_SIZE`: the driver launched them all the same.
    pub above_queried_work_group: usize,
    /// The fastest measured configurations, fastest first.
    pub fastest: Vec<Ranked>,
    /// Per failed outcome class (build_failed, refused, wrong_result, crashed, timed_out), the
    /// first [`FAILURES_LISTED`] configurations in the order evaluated, with why.
    pub failures: BTreeMap<&'static str, Vec<Failure>>,
    /// Whether outputs were checked (`[verify]`); without, results are timed only.
    pub verified: bool,
    /// How to keep what the platform model removed ([`ndtune_space::problem::Pruning::hints`]).
    pub hints: Vec<String>,
    pub time: TimeSpent,
    /// The spec's parameter names, in declaration order.
    #[serde(skip)]
    pub names: Vec<String>,
}

impl DeviceReport {
    /// Configurations evaluated now, per second of everything but launches (builds, buffers,
    /// references, verification, the worker round trip), and the overhead per configuration
    /// (everything but builds, launches and references) in ms.
    pub fn throughput(&self) -> (usize, f64, f64) {
        let t = &self.time;
        let besides_launches = (t.total_s - t.launch_s).max(1e-9);
        (
            self.evaluated,
            self.evaluated as f64 / besides_launches,
            t.overhead_ms_per_config,
        )
    }

    /// Whether nothing could be measured: an empty space, or every configuration failed.
    pub fn measured_nothing(&self) -> bool {
        self.outcomes
            .get(OutcomeKind::Measured.as_str())
            .is_none_or(|&n| n == 0)
    }

    /// The best configuration's time, where one was measured.
    pub fn best_ms(&self) -> Option<f64> {
        self.best.as_ref().map(|b| b.time_ms)
    }
}

/// The per-device summary of a run's trace.
pub(crate) fn report(
    spec: &Spec,
    label: &str,
    strategy: &str,
    codec: &Codec,
    trace: &Trace,
    (declared, pruned): (u128, u128),
    time: TimeSpent,
) -> DeviceReport {
    let mut outcomes: BTreeMap<&'static str, u128> =
        OutcomeKind::ALL.iter().map(|k| (k.as_str(), 0)).collect();
    for step in &trace.steps {
        *outcomes.entry(step.outcome.kind().as_str()).or_default() += 1;
    }
    *outcomes.entry(OutcomeKind::Pruned.as_str()).or_default() += declared - pruned;
    let reused = trace.steps.iter().filter(|s| s.reused).count();
    let config = |p: &Vec<i64>| -> Config { codec.config(p) };
    let mut failures: BTreeMap<&'static str, Vec<Failure>> = BTreeMap::new();
    for step in &trace.steps {
        if let Some(reason) = step.outcome.reason() {
            let listed = failures.entry(step.outcome.kind().as_str()).or_default();
            if listed.len() < FAILURES_LISTED {
                listed.push(Failure {
                    config: config(&step.point),
                    reason,
                });
            }
        }
    }
    let mut measured: Vec<(&Vec<i64>, &Timing)> = trace
        .steps
        .iter()
        .filter_map(|s| match &s.outcome {
            Outcome::Measured(t) if t.score_ms().is_finite() => Some((&s.point, t)),
            _ => None,
        })
        .collect();
    measured.sort_by(|a, b| a.1.score_ms().total_cmp(&b.1.score_ms()));
    let rate = |expr: &Option<ndtune_space::resolve::Node>, p: &Vec<i64>, ms: f64| {
        expr.as_ref()
            .and_then(|n| n.eval(p))
            .map(|units| units as f64 / (ms * 1e6))
    };
    let best = measured.first().map(|(p, t)| Best {
        config: config(p),
        time_ms: t.score_ms(),
        median_ms: t.median_ms(),
        min_ms: t.min_ms(),
        rel_spread: t.rel_spread(),
        gflops: rate(&spec.measure.flops, p, t.score_ms()),
        gbytes_per_s: rate(&spec.measure.bytes, p, t.score_ms()),
    });
    DeviceReport {
        device: label.to_string(),
        kernel: spec.kernel.name.clone(),
        constants: spec.problem.constants.clone(),
        setup: String::new(),
        strategy: strategy.to_string(),
        best,
        outcomes,
        evaluated: trace.steps.len() - reused,
        reused,
        not_reused: Vec::new(),
        declared,
        pruned,
        above_queried_work_group: measured
            .iter()
            .filter(|(_, t)| t.advice.is_some_and(|a| a.exceeded()))
            .count(),
        fastest: measured
            .iter()
            .take(5)
            .map(|(p, t)| Ranked {
                config: config(p),
                time_ms: t.score_ms(),
            })
            .collect(),
        failures,
        verified: spec.verify.is_some(),
        hints: Vec::new(),
        time,
        names: codec.names().to_vec(),
    }
}
