//! A campaign's report: the objective, the best configuration by it and the best few (and with
//! several objectives the Pareto front, [`crate::front`]), outcome counts, the first few
//! failures of each class (in the space's order) with why, whether outputs were verified, how to
//! keep what the platform model removed, how many configurations ran beyond the driver's queried
//! work-group size, whether the energy could be measured, and where the time went.

use ndtune_bench::supervisor::Evaluation;
use ndtune_core::{Codec, Config, Constants, Outcome, OutcomeKind, Timing};
use ndtune_metrics::{Inputs, Metrics, Values};
use ndtune_search::Trace;
use ndtune_spec::Spec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The best configuration by the objective.
#[derive(Debug, Clone, Serialize)]
pub struct Best {
    pub config: Config,
    pub time_ms: f64,
    pub median_ms: f64,
    pub min_ms: f64,
    pub rel_spread: f64,
    /// The objective's value (the time where it is the objective).
    pub objective: f64,
    /// The energy and power where they were measured, and every metric with a value.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
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

/// One of the best configurations by the objective.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub config: Config,
    pub time_ms: f64,
    /// The objective's value.
    pub objective: f64,
}

/// What the campaign optimised.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectiveReport {
    pub metric: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub higher_is_better: bool,
}

impl ObjectiveReport {
    /// The objective of `metrics`, with its unit.
    pub fn of(metrics: &Metrics) -> ObjectiveReport {
        let o = metrics.objective();
        ObjectiveReport {
            metric: o.metric.clone(),
            unit: metrics.unit(&o.metric).map(str::to_string),
            higher_is_better: o.higher_is_better,
        }
    }
}

/// Whether the device's energy and power could be read, and how or why not.
#[derive(Debug, Clone, Serialize)]
pub struct EnergyReport {
    /// The device has a power source ([`ndtune_energy::Meter`]).
    pub available: bool,
    /// This campaign measured the energy (its metrics need it).
    pub measured: bool,
    /// The source (`NVML GPU 0 at ...`), or why there is none.
    pub detail: String,
}

/// Where a campaign's wall time went, in seconds: the parts from `setup_s` to `shutdown_s` add
/// up to `campaign_s`, from the campaign's start to its workers' end.
///
/// `total_s` is wall time from asking the worker for a configuration to having its outcome,
/// summed over configurations; `build_s`, `launch_s`, `reference_s` and the overhead per
/// configuration divide it. `build_s` is the part spent on builds: waiting for the build workers
/// (their wall share; builds done while the device measured something else cost nothing here)
/// and loading or compiling programs in the measurement worker. `build_workers_s` is the build
/// workers' own time summed over workers, to compare.
#[derive(Debug, Serialize, Deserialize, Default, Clone, Copy)]
pub struct TimeSpent {
    /// The campaign's wall time: the sum of `setup_s`, `startup_waited_s`, `total_s`,
    /// `lost_s`, `store_s`, `search_s` and `shutdown_s`.
    pub campaign_s: f64,
    /// Preparing: reading what the store holds, warm-start points, the build pool.
    pub setup_s: f64,
    /// Starting the measurement worker (process start, device, context, and the inputs whose
    /// size no parameter changes put on the device), restarts included; it starts first, so
    /// most of it overlaps the rest...
    pub startup_s: f64,
    /// ...and this is what evaluations waited for it.
    pub startup_waited_s: f64,
    /// Measurement worker processes the campaign started, restarts included: none where it
    /// took up the one the campaign before it on the device left (a sweep's), in its process.
    #[serde(default)]
    pub workers_started: usize,
    /// Build worker processes the campaign's own build pool started: none where the campaign
    /// took up the build workers the campaign before left.
    #[serde(default)]
    pub builders_started: usize,
    pub total_s: f64,
    /// Computing reference outputs.
    pub reference_s: f64,
    /// The campaign's data put on the device, once per argument, size and reference: inputs
    /// generated and uploaded, expected outputs uploaded for the comparison on the device
    /// (inputs whose size no parameter changes go on the device as the worker starts: in
    /// `startup_s`).
    pub data_s: f64,
    pub build_s: f64,
    /// Build worker processes (1: builds in the measurement worker); of the node's build
    /// service where the campaign used one.
    pub build_jobs: usize,
    /// The campaign's part in its node's build service (`ndtune_bench::node_builds`), where it
    /// used one: `hosted` or `joined`; else its build workers were its own.
    pub node_builds: Option<ndtune_bench::node_builds::NodeRole>,
    pub build_workers_s: f64,
    /// How long the campaign held the build workers stopped while it evaluated on a CPU device
    /// (they would share its cores); it covers every timed launch.
    pub build_workers_stopped_s: f64,
    /// Kernel launches, waits included.
    pub launch_s: f64,
    /// Of the overhead: arguments on the device (inputs restored), and the outputs compared with
    /// the reference.
    pub prepare_s: f64,
    pub verify_s: f64,
    /// What is none of these (nor the data), per configuration: requests, buffers, arguments,
    /// verification.
    pub overhead_ms_per_config: f64,
    /// Waiting for evaluations that crashed or timed out (not in `total_s`).
    pub lost_s: f64,
    /// Committing outcomes to the store (and reading other workers' in a shared campaign).
    pub store_s: f64,
    /// The strategy's own time and the campaign's bookkeeping between evaluations.
    pub search_s: f64,
    /// Ending: keeping build times, stopping the measurement and build workers.
    pub shutdown_s: f64,
    /// Timed runs racing spared: configurations stopped early, and the runs they did not get.
    pub raced: usize,
    pub runs_spared: usize,
    #[serde(skip)]
    pub configs: usize,
}

impl TimeSpent {
    /// Closes the account of a campaign that took `campaign_s`, the last `shutdown_s` of it
    /// ending it: the strategy's time is what no other part accounts for.
    pub(crate) fn close(&mut self, shutdown_s: f64, campaign_s: f64) {
        self.shutdown_s = shutdown_s;
        self.campaign_s = campaign_s;
        let parts = self.setup_s
            + self.startup_waited_s
            + self.total_s
            + self.lost_s
            + self.store_s
            + self.shutdown_s;
        self.search_s = (campaign_s - parts).max(0.0);
    }

    /// The per-configuration overhead: what the totals do not account for.
    fn recompute_overhead(&mut self) {
        if self.configs > 0 {
            let accounted = self.build_s + self.launch_s + self.reference_s + self.data_s;
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
        self.data_s += c.data_ms / 1e3;
        self.prepare_s += c.prepare_ms / 1e3;
        self.verify_s += c.verify_ms / 1e3;
        if let Outcome::Measured(Timing {
            raced: Some(r),
            times_ms,
            ..
        }) = &e.outcome
        {
            self.raced += 1;
            // A stop on the first run spared every timed run (its one time is that run).
            let timed = if r.cold { 0 } else { times_ms.len() };
            self.runs_spared += (r.planned as usize).saturating_sub(timed);
        }
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
#[derive(Debug, Clone, Serialize)]
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
    pub objective: ObjectiveReport,
    /// The unit of each measured quantity and metric that has one.
    pub units: BTreeMap<String, String>,
    /// The best measured configurations by the objective (at most five), best first.
    pub top: Vec<Ranked>,
    /// With several objectives, the front of the configurations measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub front: Option<crate::front::FrontReport>,
    /// Per failed outcome class (build_failed, refused, wrong_result, crashed, timed_out), the
    /// first [`FAILURES_LISTED`] configurations in the order evaluated, with why.
    pub failures: BTreeMap<&'static str, Vec<Failure>>,
    /// Whether outputs were checked (`[verify]`); without, results are timed only.
    pub verified: bool,
    /// How to keep what the platform model removed ([`ndtune_space::problem::Pruning::hints`]).
    pub hints: Vec<String>,
    pub energy: EnergyReport,
    pub time: TimeSpent,
    /// The spec's parameter names, in declaration order.
    #[serde(skip)]
    pub names: Vec<String>,
    /// Why the campaign stopped before its end, where a signal stopped it (SIGTERM, SIGINT):
    /// this report then sums up what was measured until then.
    pub interrupted: Option<String>,
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

    /// A value of the objective with the precision of a table (its unit is in
    /// [`DeviceReport::objective`]).
    pub fn format_objective(value: f64) -> String {
        if value != 0.0 && (value.abs() >= 1e5 || value.abs() < 1e-3) {
            format!("{value:.4e}")
        } else {
            format!("{value:.4}")
        }
    }
}

/// The per-device summary of a run's trace: its measured configurations ranked by the
/// objective's cost, their metrics computed from their measurements.
#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
    spec: &Spec,
    constants: &Constants,
    label: &str,
    strategy: &str,
    codec: &Codec,
    trace: &Trace,
    (declared, pruned): (u128, u128),
    energy: EnergyReport,
    time: TimeSpent,
) -> DeviceReport {
    let metrics: &Metrics = &spec.metrics;
    let mut outcomes: BTreeMap<&'static str, u128> =
        OutcomeKind::ALL.iter().map(|k| (k.as_str(), 0)).collect();
    for step in &trace.steps {
        *outcomes.entry(step.outcome.kind().as_str()).or_default() += 1;
    }
    *outcomes.entry(OutcomeKind::Pruned.as_str()).or_default() += declared - pruned;
    let reused = trace.steps.iter().filter(|s| s.reused).count();
    let config = |p: &Vec<i64>| -> Config { codec.config(p) };
    let mut failures: BTreeMap<&'static str, Vec<Failure>> = BTreeMap::new();
    // The first of each class in the space's order (points hold each parameter's value, its
    // domain ascending), not the search's: the same list whatever order they were measured in.
    let mut failed: Vec<_> = trace
        .steps
        .iter()
        .filter_map(|s| Some((s, s.outcome.reason()?)))
        .collect();
    failed.sort_by(|(a, _), (b, _)| a.point.cmp(&b.point));
    for (step, reason) in failed {
        let listed = failures.entry(step.outcome.kind().as_str()).or_default();
        if listed.len() < FAILURES_LISTED {
            listed.push(Failure {
                config: config(&step.point),
                reason,
            });
        }
    }
    // Measured configurations with an objective's value, by its cost (best first).
    let mut ranked: Vec<(Config, &ndtune_core::Timing, Values, f64)> = trace
        .steps
        .iter()
        .filter_map(|s| {
            let Outcome::Measured(t) = &s.outcome else {
                return None;
            };
            let config = codec.config(&s.point);
            let values = metrics.evaluate(&Inputs::new(constants, &config, &s.outcome));
            let cost = metrics.objective().cost(values.objective?)?;
            Some((config, t, values, cost))
        })
        .collect();
    ranked.sort_by(|a, b| a.3.total_cmp(&b.3));
    let value = |v: &Values| v.objective.expect("ranked configurations have a value");
    let best = ranked.first().map(|(config, t, values, _)| Best {
        config: config.clone(),
        time_ms: t.score_ms(),
        median_ms: t.median_ms(),
        min_ms: t.min_ms(),
        rel_spread: t.rel_spread(),
        objective: value(values),
        metrics: values.shown(),
    });
    let units = metrics.units();
    let front = crate::front::front_of(
        metrics,
        trace.steps.iter().filter_map(|s| {
            let Outcome::Measured(t) = &s.outcome else {
                return None;
            };
            let config = codec.config(&s.point);
            let values = metrics.evaluate(&Inputs::new(constants, &config, &s.outcome));
            Some((config, t.score_ms(), metrics.objective_values(&values)?))
        }),
    );
    DeviceReport {
        device: label.to_string(),
        kernel: spec.kernel.name.clone(),
        constants: spec.problem.constants.clone(),
        setup: String::new(),
        // What `auto` ran, where it decided during the run.
        strategy: trace
            .decided
            .as_ref()
            .map_or(strategy, |d| d.strategy)
            .to_string(),
        best,
        outcomes,
        evaluated: trace.steps.len() - reused,
        reused,
        not_reused: Vec::new(),
        declared,
        pruned,
        above_queried_work_group: trace
            .steps
            .iter()
            .filter(|s| match &s.outcome {
                Outcome::Measured(t) => t.advice.is_some_and(|a| a.exceeded()),
                _ => false,
            })
            .count(),
        objective: ObjectiveReport::of(metrics),
        units,
        top: ranked
            .iter()
            .take(5)
            .map(|(config, t, values, _)| Ranked {
                config: config.clone(),
                time_ms: t.score_ms(),
                objective: value(values),
            })
            .collect(),
        front,
        energy,
        failures,
        verified: spec.verify.is_some(),
        hints: Vec::new(),
        time,
        names: codec.names().to_vec(),
        interrupted: None,
    }
}

/// `measured 5, pruned 0, ...`: counts by outcome kind, in the taxonomy's order.
pub fn outcome_counts<N: std::fmt::Display>(counts: &BTreeMap<&'static str, N>) -> String {
    OutcomeKind::ALL
        .iter()
        .filter_map(|k| counts.get(k.as_str()).map(|n| format!("{k} {n}")))
        .collect::<Vec<_>>()
        .join(", ")
}
