//! `ndtune tune`: measure a spec's pruned space on one or more live devices with a search
//! strategy, through a supervised worker process, keeping every outcome in the store as it
//! happens; resume from the store; or replay recorded results (`--replay`).

use crate::cli::TuneArgs;
use crate::targets;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use ndtune_bench::supervisor::Supervisor;
use ndtune_bench::worker::Job;
use ndtune_cl::ClDevice;
use ndtune_core::{Config, Outcome, OutcomeKind, Timing};
use ndtune_search::{Candidates, Evaluated, Evaluator, Trace};
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_store::{Group, Record, ResultKey, Store};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::time::Duration;

/// The most configurations a live campaign holds in memory as candidates.
const MAX_CANDIDATES: u128 = 5_000_000;

#[derive(Serialize)]
struct Best {
    config: Config,
    time_ms: f64,
    median_ms: f64,
    min_ms: f64,
    rel_spread: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    gflops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gbytes_per_s: Option<f64>,
}

#[derive(Serialize)]
struct Ranked {
    config: Config,
    time_ms: f64,
}

/// Where the time of the configurations run now went, in seconds.
#[derive(Serialize, Default, Clone, Copy)]
struct TimeSpent {
    /// Wall time from the tuner's request to the worker's answer, summed.
    total_s: f64,
    /// Starting worker processes (process start, device discovery, OpenCL context).
    startup_s: f64,
    /// Computing reference outputs.
    reference_s: f64,
    /// Program builds.
    build_s: f64,
    /// Kernel launches, waits included.
    launch_s: f64,
    /// What is none of these, per configuration: requests, buffers, arguments, verification.
    overhead_ms_per_config: f64,
    /// Waiting for evaluations that crashed or timed out (not in `total_s`).
    lost_s: f64,
    #[serde(skip)]
    configs: usize,
}

impl TimeSpent {
    /// The per-configuration overhead: what the totals do not account for.
    fn recompute_overhead(&mut self) {
        if self.configs > 0 {
            let accounted = self.build_s + self.launch_s + self.reference_s;
            self.overhead_ms_per_config = (self.total_s - accounted) * 1e3 / self.configs as f64;
        }
    }

    fn add(&mut self, e: &ndtune_bench::supervisor::Evaluation) {
        let Some(c) = e.cost else {
            // A crash or a hang: its time is lost, not overhead.
            self.lost_s += e.round_trip_ms / 1e3;
            return;
        };
        self.total_s += e.round_trip_ms / 1e3;
        self.build_s += c.build_ms / 1e3;
        self.launch_s += c.launch_ms / 1e3;
        self.reference_s += c.reference_ms / 1e3;
        self.configs += 1;
        self.recompute_overhead();
    }
}

#[derive(Serialize)]
pub struct DeviceReport {
    device: String,
    kernel: String,
    strategy: String,
    best: Option<Best>,
    outcomes: BTreeMap<&'static str, u128>,
    /// Configurations run now.
    evaluated: usize,
    /// Configurations read back from the store.
    reused: usize,
    declared: u128,
    pruned: u128,
    /// The fastest measured configurations, fastest first.
    fastest: Vec<Ranked>,
    time: TimeSpent,
    #[serde(skip)]
    names: Vec<String>,
}

impl DeviceReport {
    /// `measured 5, pruned 0, ...`.
    pub fn outcome_summary(&self) -> String {
        outcome_counts(&self.outcomes)
    }

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

    /// The best configuration's time, where one was measured.
    pub fn best_ms(&self) -> Option<f64> {
        self.best.as_ref().map(|b| b.time_ms)
    }
}

/// Runs live evaluations for one device and commits each outcome to the store at once.
struct Live<'a> {
    supervisor: Supervisor,
    store: &'a Store,
    group: Group,
    candidates: &'a Candidates,
    existing: HashMap<Config, Outcome>,
    bar: ProgressBar,
    best_ms: Option<f64>,
    time: TimeSpent,
    /// Why the campaign stopped early; later points are not run.
    stopped: Option<anyhow::Error>,
}

const STOPPED: &str = "campaign stopped";

impl Evaluator for Live<'_> {
    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        let config = self.candidates.config(point);
        self.bar.inc(1);
        if let Some(outcome) = self.existing.get(&config) {
            return Evaluated {
                outcome: outcome.clone(),
                reused: true,
            };
        }
        let stopped = || Evaluated {
            outcome: Outcome::Pruned {
                constraint: STOPPED.into(),
            },
            reused: false,
        };
        if self.stopped.is_some() {
            return stopped();
        }
        let started_at = ndtune_store::now_ms();
        let outcome = match self.supervisor.evaluate(point) {
            Ok(e) => {
                self.time.add(&e);
                e.outcome
            }
            Err(fatal) => {
                self.stopped = Some(anyhow!(fatal));
                return stopped();
            }
        };
        let record = Record {
            key: ResultKey {
                device: self.group.device.clone(),
                kernel: self.group.kernel.clone(),
                source_hash: self.group.source_hash.clone(),
                constants: self.group.constants.clone(),
                config,
            },
            outcome: outcome.clone(),
            ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
            started_at,
            finished_at: ndtune_store::now_ms(),
        };
        if let Err(e) = self.store.insert(&record) {
            self.stopped = Some(anyhow!(e).context("cannot record a result"));
            return stopped();
        }
        if let Some(ms) = outcome.score_ms() {
            if self.best_ms.is_none_or(|b| ms < b) {
                self.best_ms = Some(ms);
                self.bar.set_message(format!("best {ms:.4} ms"));
            }
        }
        Evaluated {
            outcome,
            reused: false,
        }
    }
}

pub fn run(args: &TuneArgs) -> Result<()> {
    if let Some(path) = &args.replay {
        return crate::cmd_replay::run(args, path);
    }
    let spec_path = args
        .spec
        .as_ref()
        .ok_or_else(|| anyhow!("tune needs a spec file (or --replay PATH)"))?;
    let overrides: BTreeMap<String, i64> = args.campaign.set.iter().cloned().collect();
    let spec = Spec::load_with(spec_path, &overrides)?;
    let source = spec
        .kernel_source()?
        .ok_or_else(|| anyhow!("{}: [kernel] source is needed to tune", spec.path.display()))?;
    ndtune_search::by_name(&args.campaign.strategy, args.campaign.seed)?;
    let devices = targets::live_devices(args.device.as_deref())?;
    let store = Store::open(&args.campaign.db)?;
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut reports = Vec::new();
    for device in &devices {
        reports.push(tune_device(
            args,
            &spec,
            &source,
            &overrides,
            device,
            &targets::label(device),
            &store,
            &progress,
        )?);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "devices": reports }))?
        );
    } else {
        for r in &reports {
            print_report(r, &args.campaign.db);
        }
    }
    Ok(())
}

fn worker_command() -> Result<Box<dyn Fn() -> Command + Send>> {
    let exe =
        std::env::current_exe().context("cannot find the ndtune executable to start workers")?;
    Ok(Box::new(move || {
        let mut c = Command::new(&exe);
        c.arg("__worker");
        c
    }))
}

/// The store's campaign of a spec's kernel on a device (registering the device).
pub(crate) fn group(spec: &Spec, source: &str, device: &ClDevice, store: &Store) -> Result<Group> {
    Ok(Group {
        device: store.put_device(&device.profile)?,
        kernel: spec.kernel.name.clone(),
        source_hash: ndtune_store::source_hash(source),
        constants: spec.problem.constants.clone(),
    })
}

/// The fastest measured configuration of a campaign in the store, with its timing.
pub(crate) fn best_recorded(store: &Store, g: &Group) -> Result<Option<(Config, Timing)>> {
    let mut best: Option<(Config, Timing)> = None;
    for r in store.records(&g.device, &g.kernel, &g.source_hash, &g.constants)? {
        if let Outcome::Measured(t) = r.outcome {
            if t.score_ms().is_finite()
                && best
                    .as_ref()
                    .is_none_or(|(_, b)| t.score_ms() < b.score_ms())
            {
                best = Some((r.key.config, t));
            }
        }
    }
    Ok(best)
}

/// Tunes a spec on one device, committing every outcome to `store`; the report of the campaign.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tune_device(
    args: &TuneArgs,
    spec: &Spec,
    source: &str,
    overrides: &BTreeMap<String, i64>,
    device: &ClDevice,
    label: &str,
    store: &Store,
    progress: &MultiProgress,
) -> Result<DeviceReport> {
    let label = label.to_string();
    let pruning = spec
        .problem
        .prune(&[Target::from_profile(&label, &device.profile)])
        .map_err(|e| spec.locate(&e))?;
    if pruning.stats.pruned > MAX_CANDIDATES {
        bail!("{label}: {} configurations remain after pruning; add constraints (at most {MAX_CANDIDATES})", pruning.stats.pruned);
    }
    let names: Vec<String> = spec.problem.params.iter().map(|p| p.name.clone()).collect();
    let candidates = Candidates::new(names.clone(), pruning.space.configs())?;
    let group = group(spec, source, device, store)?;
    record_space(spec, &label, &pruning, &group, store)?;
    let existing: HashMap<Config, Outcome> = store
        .records(
            &group.device,
            &group.kernel,
            &group.source_hash,
            &group.constants,
        )?
        .into_iter()
        .map(|r| (r.key.config, r.outcome))
        .collect();
    let job = Job {
        spec: std::fs::canonicalize(&spec.path).unwrap_or_else(|_| spec.path.clone()),
        overrides: overrides.clone(),
        device: device.index,
        sub: device.sub,
        seed: args.campaign.seed,
    };
    let timeout = args.timeout.map(Duration::from_secs_f64);
    let total = args
        .campaign
        .budget
        .map_or(candidates.len(), |b| b.min(candidates.len()));
    let bar = progress.add(ProgressBar::new(total as u64));
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.clone());
    let mut live = Live {
        supervisor: Supervisor::new(worker_command()?, job, timeout),
        store,
        group,
        candidates: &candidates,
        existing,
        bar,
        best_ms: None,
        time: TimeSpent::default(),
        stopped: None,
    };
    let mut strategy = ndtune_search::by_name(&args.campaign.strategy, args.campaign.seed)?;
    let trace = strategy.run(&candidates, &mut live, args.campaign.budget);
    live.bar.finish();
    if let Some(e) = live.stopped.take() {
        return Err(e.context(format!("{label}: tuning `{}` stopped", spec.kernel.name)));
    }
    let space = (pruning.stats.declared, pruning.stats.pruned);
    // Round trips exclude starting workers, which is accounted on its own.
    live.time.startup_s = live.supervisor.startup_s;
    Ok(report(
        spec,
        &label,
        &args.campaign.strategy,
        &names,
        &trace,
        space,
        live.time,
    ))
}

/// Keeps a tuned space's pruning counts (Erdem Tables 1-2) in the store for `ndtune report`: a
/// study of kind `space` per (kernel, constants, device), its body `ndtune space --json`'s
/// report with the device's fingerprint and the constants.
fn record_space(
    spec: &Spec,
    label: &str,
    pruning: &ndtune_space::problem::Pruning,
    group: &Group,
    store: &Store,
) -> Result<()> {
    let space = serde_json::to_value(crate::cmd_space::report(
        spec,
        Some(label.to_string()),
        pruning,
        pruning.stats.pruned,
        None,
    ))
    .context("the pruning counts do not fit JSON")?;
    store.put_study(&ndtune_store::Study {
        kind: "space".into(),
        name: format!(
            "{}{} on {}",
            group.kernel,
            show_constants(&group.constants),
            group.device
        ),
        body: serde_json::json!({
            "device": group.device,
            "constants": group.constants,
            "space": space,
        }),
        created_at: ndtune_store::now_ms(),
    })?;
    Ok(())
}

/// The per-device summary of a run's trace.
fn report(
    spec: &Spec,
    label: &str,
    strategy: &str,
    names: &[String],
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
    let mut measured: Vec<(&Vec<i64>, &ndtune_core::Timing)> = trace
        .steps
        .iter()
        .filter_map(|s| match &s.outcome {
            Outcome::Measured(t) if t.score_ms().is_finite() => Some((&s.point, t)),
            _ => None,
        })
        .collect();
    measured.sort_by(|a, b| a.1.score_ms().total_cmp(&b.1.score_ms()));
    let config =
        |p: &Vec<i64>| -> Config { names.iter().cloned().zip(p.iter().copied()).collect() };
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
        strategy: strategy.to_string(),
        best,
        outcomes,
        evaluated: trace.steps.len() - reused,
        reused,
        declared,
        pruned,
        fastest: measured
            .iter()
            .take(5)
            .map(|(p, t)| Ranked {
                config: config(p),
                time_ms: t.score_ms(),
            })
            .collect(),
        time,
        names: names.to_vec(),
    }
}

/// `measured 5, pruned 0, ...` in the taxonomy's order.
pub(crate) fn outcome_counts<N: std::fmt::Display>(counts: &BTreeMap<&'static str, N>) -> String {
    OutcomeKind::ALL
        .iter()
        .filter_map(|k| counts.get(k.as_str()).map(|n| format!("{k} {n}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` N=128 K=3` (with a leading space), or nothing where there are no constants.
pub(crate) fn show_constants(constants: &BTreeMap<String, i64>) -> String {
    constants.iter().map(|(k, v)| format!(" {k}={v}")).collect()
}

/// `A=1 B=2` in the spec's parameter order.
pub(crate) fn show_config(names: &[String], config: &Config) -> String {
    names
        .iter()
        .map(|n| format!("{n}={}", config.get(n).map_or("?".into(), i64::to_string)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn print_report(r: &DeviceReport, db: &std::path::Path) {
    println!(
        "{} — `{}` ({} strategy, {} of {} valid configurations)",
        r.device,
        r.kernel,
        r.strategy,
        r.evaluated + r.reused,
        r.pruned
    );
    match &r.best {
        Some(b) => {
            let mut rates = String::new();
            if let Some(g) = b.gflops {
                rates.push_str(&format!(", {g:.2} GFLOP/s"));
            }
            if let Some(g) = b.gbytes_per_s {
                rates.push_str(&format!(", {g:.2} GB/s"));
            }
            println!(
                "  best       {}: {:.4} ms (median {:.4}, min {:.4}, spread {:.1}%){rates}",
                show_config(&r.names, &b.config),
                b.time_ms,
                b.median_ms,
                b.min_ms,
                b.rel_spread * 100.0
            );
        }
        None => println!("  best       none: no configuration was measured and verified"),
    }
    println!("  outcomes   {}", outcome_counts(&r.outcomes));
    println!(
        "  evaluated  {} now, {} reused from {}",
        r.evaluated,
        r.reused,
        db.display()
    );
    if r.evaluated > 0 {
        let t = &r.time;
        println!(
            "  time       {:.2} s: worker start {:.2} s, reference {:.2} s, builds {:.2} s, launches {:.2} s, \
             overhead {:.2} ms per configuration",
            t.total_s + t.startup_s + t.lost_s,
            t.startup_s,
            t.reference_s,
            t.build_s,
            t.launch_s,
            t.overhead_ms_per_config
        );
        if t.lost_s > 0.0 {
            println!(
                "             {:.2} s waiting for evaluations that crashed or timed out",
                t.lost_s
            );
        }
    }
    if r.fastest.len() > 1 {
        println!("  fastest    {:>10}  configuration", "ms");
        for f in &r.fastest {
            println!(
                "             {:>10.4}  {}",
                f.time_ms,
                show_config(&r.names, &f.config)
            );
        }
    }
}
