//! The tuning engine: one campaign measures a spec's pruned space on one device through a search
//! strategy, and keeps every outcome in the store the moment it is known. `ndtune tune`,
//! `collect` and `split` run campaigns through this crate; they only parse and print.
//!
//! - [`Campaign`]: spec + pruned space + device + store + [`Options`] (strategy, budget, seed,
//!   timeout, build jobs). [`Campaign::run`] resumes from what the store holds, reports progress
//!   as [`Event`]s to an [`Observer`], and returns a [`DeviceReport`].
//! - The measurement runs in a supervised worker process (`ndtune __worker`, see
//!   `ndtune_bench::supervisor`): a crash or a hang is an outcome, never the end of a campaign.
//! - With more than one build job, define sets are compiled ahead in build worker processes
//!   (`ndtune __builder`, see `ndtune_bench::builder`) in the order the strategy says it will ask
//!   for them ([`ndtune_search::Evaluator::upcoming`]); the measurement worker loads their program
//!   binaries. On a GPU builds overlap measurement; on a CPU device they are stopped for the
//!   worker's timed runs, so that they never disturb a timing.
//! - [`TimeSpent`] accounts for the campaign's whole wall time, from its preparation to the
//!   end of its workers: builds the campaign waited for count as their wall share, not as the
//!   sum over build workers (given beside it).
//! - The measurement worker starts first ([`Worker::start`] even before the campaign, so that
//!   its process and device start while the tuner discovers devices and prunes).
//! - Racing ([`Options::race`], `ndtune_bench::race`): a configuration that cannot be the best
//!   stops early, with the runs it got; every configuration that could be gets the protocol's.
//! - Build times are kept in the store (a study of kind `builds` per kernel and device), so
//!   that a later campaign starts the builds expected to take longest first.
//! - With [`Options::share`], the campaign is one worker's part of a campaign shared through
//!   the store with workers on other devices or machines ([`share`]); with [`Options::guard`],
//!   a campaign of its own claims what it measures, so that two processes tuning one campaign
//!   in one store never measure a configuration twice.
//! - A campaign is a [`group`]: the kernel with its constants, measured under one setup (the
//!   digest of everything else that can change a result, [`ndtune_spec::Spec::setup`]) on one
//!   device. Results are reused only within it; results of the same kernel source, constants
//!   and device under other setups are named in the report as not reused
//!   ([`DeviceReport::not_reused`]).
//! - With [`Options::warm_start`], the strategy first measures the configurations that did
//!   best for the same kernel on other devices, constants and setups in the store.
//! - The spec's metrics and objective ([`ndtune_metrics::Metrics`]) make each measurement's
//!   cost for the strategy, rank the report, and are kept in the store as definitions
//!   ([`Store::put_metrics`]); where they need the energy, the workers measure it, and a device
//!   without a power source is an error before anything is measured. With several objectives
//!   the report carries the Pareto front ([`front`]) and racing is off.
//! - The driver's advice on each build (`CL_KERNEL_WORK_GROUP_SIZE`, `CL_KERNEL_LOCAL_MEM_SIZE`)
//!   is kept per define set, so the strategy learns which launches go beyond it before they are
//!   measured ([`ndtune_search::Evaluator::exceeds_advice`]).
//!
//! - With a [`PerConfig`] ([`Campaign::run_with`]), the front end that runs the campaign works
//!   out in its own process what each configuration is before it is evaluated: excluded from
//!   the space, or its own code and global size (the Python package's functions of the
//!   parameters). The build workers build ahead what it does not exclude; where it generates
//!   code, that code, given to the build pool under a key that digests it (a node's shared
//!   build service cannot take it: the campaign stops and says so). The front end may
//!   also check each configuration's outputs itself ([`PerConfig::check`]: the Python
//!   package's `verify` function).
//!
//! - [`pool::Pool`]: one campaign shared by identical local devices, a worker process each.
//! - [`Tuning`]: one spec tuned on one device as every front end does it: pruned, its space's
//!   counts kept in the store, `auto` resolved, then the [`Campaign`].
//! - [`space::SpaceReport`]: what pruning made of a spec's space, constraint by constraint.
//! - [`coexec`]: co-execution's members as `ndtune split` starts them (each device's best, tuned
//!   first where missing; a twin in the other language) and its study kept in the store.
//! - [`strategy_bench`]: the strategy benchmark's recorded datasets and its runs over seeds and
//!   budgets (`ndtune bench-strategies`, Python's `ndtune.bench_strategies`), scored by the
//!   optimum or, with several objectives, by the hypervolume of the front found.
//!
//! It never parses a command line and never prints.

mod advice;
mod build_history;
mod captured;
pub mod coexec;
pub mod devices;
pub mod front;
pub mod kernel_check;
mod kt_cache;
mod live;
pub mod pool;
pub mod replay;
mod report;
pub mod request;
pub mod select;
pub use kt_cache::KtCache;
pub mod share;
pub mod space;
pub mod strategy_bench;
mod text;
pub mod tuning;
pub mod wall;

pub use report::{
    outcome_counts, Best, DeviceReport, EnergyReport, Failure, ObjectiveReport, OtherSetup, Ranked,
    TimeSpent, FAILURES_LISTED,
};
pub use request::{
    DeviceChoice, Mode, RaceChoice, Ran, RequestError, RequestEvent, Search, Swept, TuneRequest,
};
pub use share::Share;
pub use text::{sweep_table, ReportText};
pub use tuning::{resolve_strategy, Tuned, Tuning};

use live::Live;
use ndtune_backend::AnyDevice;
use ndtune_bench::builder::BuildPool;
use ndtune_bench::evaluate::Moment;
use ndtune_bench::node_builds::{self, Builds, ServiceKey};
use ndtune_bench::program_cache::ProgramCache;
use ndtune_bench::race::Noise;
use ndtune_bench::supervisor::{Supervisor, Warming};
use ndtune_bench::worker::{Generated, Job, OwnCheck};
use ndtune_core::{Codec, Config, Outcome, Timing, Value};
use ndtune_device::DeviceType;
use ndtune_metrics::{Inputs, Metrics};
use ndtune_search::{Budget, Point, Recorded, Run, ValidSpace, WARM_POINTS};
use ndtune_space::problem::Pruning;
use ndtune_spec::{KernelSource, Race, Spec};
use ndtune_store::{Group, Store, StoreError};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Why a campaign could not run or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Strategy(#[from] ndtune_search::UnknownStrategy),
    /// The spec cannot be tuned as it is (no source, no `[launch]`, a space too large).
    #[error("{0}")]
    Spec(String),
    /// A worker said the spec, the kernel or the reference is wrong, or the store failed mid-way;
    /// everything measured before is in the store.
    #[error("{label}: tuning `{kernel}` stopped: {why}")]
    Stopped {
        label: String,
        kernel: String,
        why: String,
    },
}

/// How the worker processes are started: this executable (or another ndtune) with the hidden
/// subcommands `__worker`, `__builder` and `__campaign` (a pool's worker), or a program that
/// serves them the same way given arguments before the subcommand (the Python package's
/// `python -m ndtune._worker`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Processes {
    exe: PathBuf,
    args: Vec<std::ffi::OsString>,
}

impl Processes {
    /// Workers are started from the ndtune executable at `exe`.
    pub fn new(exe: PathBuf) -> Processes {
        Processes {
            exe,
            args: Vec::new(),
        }
    }

    /// Workers are started as `exe ARGS... __worker` (and `__builder`).
    pub fn with_args(exe: PathBuf, args: Vec<std::ffi::OsString>) -> Processes {
        Processes { exe, args }
    }

    /// Workers are started from the running executable (which must be ndtune).
    pub fn current_exe() -> std::io::Result<Processes> {
        Ok(Processes::new(std::env::current_exe()?))
    }

    /// The command line that starts a worker, as text.
    fn describe(&self) -> String {
        format!("{:?} {:?}", self.exe, self.args)
    }

    fn command(&self, sub: &'static str) -> Box<dyn Fn() -> Command + Send + Sync> {
        let (exe, args) = (self.exe.clone(), self.args.clone());
        Box::new(move || {
            let mut c = Command::new(&exe);
            c.args(&args).arg(sub);
            c
        })
    }
}

/// How a campaign searches and measures. A pool sends it whole to its workers (all but the
/// sharing, which each worker sets for itself), so that a new option reaches them too.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// A strategy name from [`ndtune_search::STRATEGY_NAMES`].
    pub strategy: String,
    /// At most this many configurations (the strategy's default without, every configuration
    /// with only a time budget).
    pub budget: Option<usize>,
    /// Propose no configuration after this much time.
    pub time: Option<Duration>,
    /// Measure first the configurations that did best elsewhere ([`warm_points`]).
    pub warm_start: bool,
    /// Stop after this many evaluations in a row that found nothing better
    /// ([`ndtune_search::Run::patience`]).
    pub patience: Option<usize>,
    /// Measure these configurations instead of searching (`tune --config`);
    /// each must be valid in the pruned space.
    #[serde(default)]
    pub configs: Vec<Config>,
    /// Share the campaign with other workers through the store's claims.
    #[serde(skip)]
    pub share: Option<Share>,
    /// Without `share`: claim each configuration just before measuring it, as this worker, so
    /// that another process tuning the same campaign in the same store never measures it too
    /// (see [`share`]).
    #[serde(skip)]
    pub guard: Option<Share>,
    /// Seed of the strategy and of the input data.
    pub seed: u64,
    /// A fixed per-evaluation (and per-build) deadline; without it, deadlines adapt.
    pub timeout: Option<Duration>,
    /// Build worker processes; 1 builds in the measurement worker, one define set at a time.
    pub build_jobs: usize,
    /// Racing: how configurations that cannot be the best stop early (`None`: every
    /// configuration gets every run). The spec's `[measure]` gives it unless overridden.
    pub race: Option<Race>,
    /// Take the driver's advice as a prior that launches beyond it will be refused (see
    /// [`ndtune_search::Evaluator::exceeds_advice`]); off, strategies ignore the advice.
    pub advice_prior: bool,
    /// Keep stored `timed_out` outcomes (`--keep-timed-out`); by default a campaign measures
    /// them again, since a timeout may come from the machine's load rather than the
    /// configuration.
    #[serde(default)]
    pub keep_timed_out: bool,
    /// ndtune's cache folder for the program binaries the campaign keeps (as
    /// `$NDTUNE_CACHE_DIR`); `None`: the one the environment names ([`ndtune_core::cache`]).
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    pub processes: Processes,
}

/// The measurement worker of a campaign, started ahead of it so that its start-up (process,
/// driver, device, context) overlaps the tuner's own: device discovery, pruning, the store. A
/// campaign run with [`Campaign::run_handing_on`] gives it back with its build workers, for the
/// next campaign on the device (a sweep's): there both take the new job up in the processes
/// they have ([`Supervisor::switch`], [`BuildPool::switch`]) instead of starting again.
pub struct Worker {
    supervisor: Supervisor,
    builds: Option<(PoolKey, BuildPool)>,
}

/// What a build pool was started for: a campaign whose key differs starts its own.
struct PoolKey {
    source: KernelSource,
    kernel: String,
    device: (usize, ndtune_backend::Address, Option<(usize, usize)>),
    jobs: usize,
    timeout: Option<Duration>,
    prime: bool,
    program: String,
}

impl PartialEq for PoolKey {
    fn eq(&self, other: &PoolKey) -> bool {
        self.source.builds_alike(&other.source)
            && (
                &self.kernel,
                self.device,
                self.jobs,
                self.timeout,
                self.prime,
                &self.program,
            ) == (
                &other.kernel,
                other.device,
                other.jobs,
                other.timeout,
                other.prime,
                &other.program,
            )
    }
}

impl Worker {
    /// Starts the measurement worker for `job` (see [`job`]) from `processes`, with a fixed
    /// per-evaluation `timeout` or none: in the process of `warming` where it warms the job's
    /// API.
    pub fn start(
        job: Job,
        processes: &Processes,
        timeout: Option<Duration>,
        warming: Option<Warming>,
    ) -> Worker {
        let mut supervisor = Supervisor::new(processes.command("__worker"), job, timeout);
        match warming {
            Some(warming) => supervisor.start_warmed(warming),
            None => supervisor.start_ahead(),
        }
        Worker {
            supervisor,
            builds: None,
        }
    }

    /// This worker, kept from an earlier request, takes `job` up now
    /// ([`Supervisor::switch`]), as [`Worker::start`] starts one.
    pub fn take_up(mut self, job: Job) -> Worker {
        self.supervisor.switch(job);
        self.supervisor.start_ahead();
        self
    }
}

/// What a campaign's worker processes evaluate: `spec` (with `overrides`, its kernel read
/// as `source`) on device `index` (sub-device `sub`) with input data from `seed`, under the
/// spec's setup.
pub fn job(
    spec: &Spec,
    source: &KernelSource,
    overrides: &BTreeMap<String, ndtune_core::Value>,
    (index, at, sub): (usize, ndtune_backend::Address, Option<(usize, usize)>),
    seed: u64,
) -> Result<Job, CampaignError> {
    let setup = spec
        .setup(source, seed)
        .map_err(|e| CampaignError::Spec(e.to_string()))?;
    Ok(Job {
        spec: std::fs::canonicalize(&spec.path).unwrap_or_else(|_| spec.path.clone()),
        overrides: overrides.clone(),
        device: index,
        at: Some(at),
        sub,
        seed,
        energy: !spec.metrics.needing_energy().is_empty(),
        profile: None,
        setup: setup.digest,
    })
}

/// The kernel's source of a spec to tune (a spec for `ndtune space` alone may have none).
pub(crate) fn tunable_source(spec: &Spec) -> Result<KernelSource, CampaignError> {
    spec.kernel_source()
        .map_err(|e| CampaignError::Spec(e.to_string()))?
        .ok_or_else(|| {
            CampaignError::Spec(format!(
                "{}: [kernel] source is needed to tune",
                spec.path.display()
            ))
        })
}

/// The most build workers a campaign on a GPU (or a node's build service, for all the node's
/// workers together) starts by default. Each is a process with a context of its own on the GPU,
/// and NVIDIA's driver creates and destroys contexts one process at a time, host-wide (about
/// 0.11 s and 0.06 s each: `bench/cl_contexts.sh`), so many builders make every worker slower to
/// start; builds in threads of one process gain only ~1.8x, so more processes are what builds
/// in parallel. `bench/scale/sgemm-360.toml` cold on two H200s (32 cores; BENCHMARKS.md, "Claims
/// longest build first"): one GPU 26.9 s with 4 builders, 17.4 s with 8; two GPUs 18.9 s with 8
/// for the node, 20.2 s with 16. `examples/sgemm.toml` (short builds) on a 64-core node: 36.6 s
/// with 63 workers, 16.2 s with 15, 14.6 s with 7, 13.6 s with 4.
pub const GPU_BUILD_JOBS: usize = 8;

/// The default number of build workers of a campaign on `device`, or of the node's build
/// service for all its workers ([`ndtune_bench::node_builds`]): the cores less one for the
/// measurement (at least 2, 1 on one core), and on a GPU whose builds each hold a context on
/// it (OpenCL's) at most [`GPU_BUILD_JOBS`]. CUDA's builds (NVRTC) need no context: a CUDA
/// GPU's builds take the cores.
pub fn default_build_jobs(device: &dyn ndtune_backend::Device) -> usize {
    build_jobs_for(device.profile().device_type, device.builds_hold_context())
}

fn build_jobs_for(device_type: DeviceType, builds_hold_context: bool) -> usize {
    match device_type {
        DeviceType::Gpu | DeviceType::Accelerator | DeviceType::Custom if builds_hold_context => {
            build_jobs_by_cores().min(GPU_BUILD_JOBS)
        }
        _ => build_jobs_by_cores(),
    }
}

/// The most build workers this host runs for one campaign or one node's service: its cores
/// less one for the measurement (at least 2, 1 on one core).
fn build_jobs_by_cores() -> usize {
    match std::thread::available_parallelism().map_or(1, |n| n.get()) {
        1 => 1,
        // Even on two cores a build worker pays: it compiles (and on a CPU device primes) while
        // the measurement worker launches, where builds in the measurement worker come one after
        // another with the launches (conv2d on PoCL, 2 cores: 132 s instead of 213 s).
        cores => (cores - 1).max(2),
    }
}

/// What happens during a campaign, for progress displays.
#[derive(Debug)]
pub enum Event<'a> {
    /// The campaign starts and evaluates at most `total` configurations.
    Started { total: usize },
    /// One configuration was evaluated now or read back from the store (`reused`); the best
    /// value of the objective so far (the time, by default); where it was evaluated now, where
    /// its time went.
    Evaluated {
        config: &'a Config,
        outcome: &'a Outcome,
        reused: bool,
        best: Option<f64>,
        phases: Option<Phases>,
    },
    /// Something worth knowing that does not stop the campaign.
    Warning(String),
}

/// Where the time of one evaluation went, in milliseconds, split as Kernel Tuner's results split
/// it (`compile_time`, `verification_time`, `benchmark_time`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Phases {
    /// Waiting for its build, then building or loading its program.
    pub compile_ms: f64,
    /// Its reference outputs, its arguments put on the device, and its outputs compared.
    pub verification_ms: f64,
    /// Its launches: the verified run, warm-up and timed runs.
    pub benchmark_ms: f64,
}

/// What the front end that runs a campaign works out for each configuration, in its own process,
/// before the configuration is evaluated or read back from the store.
pub trait PerConfig {
    /// `Ok(None)`: the configuration is excluded from the space (never evaluated, not counted
    /// in the budget, not reported); else what it runs, where not the spec's. An error stops
    /// the campaign.
    fn configure(&mut self, config: &Config) -> Result<Option<Generated>, String>;

    /// Whether [`PerConfig::configure`] may give a configuration code of its own. The build
    /// workers build ahead either way (the points it excludes left out): the spec's source, or
    /// the code it gives for each point the strategy announces, under a key naming that code.
    fn generates_code(&self) -> bool;

    /// The outputs the front end checks itself after each measured configuration's
    /// verification run, and where they are written; `None`: it checks none.
    fn own_check(&self) -> Option<&OwnCheck>;

    /// Checks a configuration's outputs, given their files by argument name: why they are
    /// wrong (the configuration is `wrong_result`), or `None` where they are right. An error
    /// stops the campaign.
    fn check(&mut self, outputs: &BTreeMap<String, PathBuf>) -> Result<Option<String>, String>;

    /// The names of the front end's observers of the timed runs (Kernel Tuner's
    /// `BenchmarkObserver`s); empty where it has none. A stored result that none of them
    /// watched is measured again.
    fn observers(&self) -> Vec<String>;

    /// Calls the observers' hooks for `moment` of `config`'s timed runs. An error stops the
    /// campaign.
    fn observe(&mut self, config: &Config, moment: Moment) -> Result<(), String>;

    /// What the observers give for the timed runs just over, by observer.
    fn observed(&mut self) -> Result<BTreeMap<String, serde_json::Value>, String>;
}

/// Receives a campaign's [`Event`]s.
pub trait Observer {
    fn event(&mut self, event: Event<'_>);
}

impl<F: FnMut(Event<'_>)> Observer for F {
    fn event(&mut self, event: Event<'_>) {
        self(event)
    }
}

/// One campaign: a spec's pruned space on one device.
pub struct Campaign<'a> {
    pub spec: &'a Spec,
    /// Constants replaced on the command line (`--set`), passed on to the workers.
    pub overrides: &'a BTreeMap<String, ndtune_core::Value>,
    pub device: &'a AnyDevice,
    /// How the device is named in messages.
    pub label: &'a str,
    /// The spec's space pruned for this device.
    pub pruning: Pruning,
    pub store: &'a Store,
    pub options: Options,
    /// The measurement worker, where it was started ahead ([`Worker::start`]); else the
    /// campaign starts it first thing.
    pub worker: Option<Worker>,
}

impl Campaign<'_> {
    /// Runs the campaign: configurations the store holds are reused, the others measured and
    /// committed one by one. Returns the campaign's report.
    pub fn run(self, observer: &mut dyn Observer) -> Result<DeviceReport, CampaignError> {
        self.run_with(observer, None)
    }

    /// [`Campaign::run`], with what `per_config` works out for each configuration. A campaign
    /// with one is not shared ([`Options::share`]): other workers could not ask it.
    pub fn run_with(
        self,
        observer: &mut dyn Observer,
        per_config: Option<&mut dyn PerConfig>,
    ) -> Result<DeviceReport, CampaignError> {
        self.run_handing_on(observer, per_config, false)
            .map(|(report, _)| report)
    }

    /// [`Campaign::run_with`]; to `hand_on` its workers, giving back the measurement worker
    /// and the build workers for the next campaign on the device ([`Worker`]).
    pub fn run_handing_on(
        self,
        observer: &mut dyn Observer,
        per_config: Option<&mut dyn PerConfig>,
        hand_on: bool,
    ) -> Result<(DeviceReport, Option<Worker>), CampaignError> {
        if per_config.is_some() && self.options.share.is_some() {
            return Err(CampaignError::Spec(
                "a campaign whose configurations a front end works out cannot be shared".into(),
            ));
        }
        let started = Instant::now();
        let spec = self.spec;
        let source = tunable_source(spec)?;
        let job = job(
            spec,
            &source,
            self.overrides,
            (
                self.device.index(),
                self.device.address(),
                self.device.sub(),
            ),
            self.options.seed,
        )?;
        // The worker starts first: it opens its device (or takes the job up in the process a
        // campaign before left) while the campaign prepares.
        let (mut supervisor, kept_builds) = match self.worker {
            Some(mut w) => {
                w.supervisor.switch(job.clone());
                (w.supervisor, w.builds)
            }
            None => (
                Supervisor::new(
                    self.options.processes.command("__worker"),
                    job.clone(),
                    self.options.timeout,
                ),
                None,
            ),
        };
        supervisor.start_ahead();
        // A named strategy is checked before the space is counted; listed configurations
        // (`Listed`) once it is, against it.
        let named = if self.options.configs.is_empty() {
            Some(ndtune_search::by_name(
                &self.options.strategy,
                self.options.seed,
            )?)
        } else {
            None
        };
        let (declared, valid) = (self.pruning.stats.declared, self.pruning.stats.pruned);
        let (label, kernel) = (self.label, spec.kernel.name.clone());
        let stopped = |why: String| CampaignError::Stopped {
            label: label.to_string(),
            kernel: kernel.clone(),
            why,
        };
        let hints = spec
            .problem
            .launch
            .as_ref()
            .map_or_else(Vec::new, |l| self.pruning.hints(l));
        // Walked without listing it: any space the pruner counts can be tuned.
        let space = ValidSpace::new(self.pruning.space);
        let codec = space.codec();
        let mut strategy = match named {
            Some(strategy) => strategy,
            None => Box::new(ndtune_search::Listed {
                points: listed_points(&self.options.configs, &codec, &space, label)?,
            }),
        };
        let group = group(spec, &source, self.options.seed, self.device, self.store)?;
        let metrics = &spec.metrics;
        let energy = energy_report(self.device, metrics)
            .map_err(|why| CampaignError::Spec(format!("{label}: {why}; nothing was measured")))?;
        self.store.put_metrics(&group, metrics.definitions())?;
        // Racing decides by time: it applies where time is the only objective (whatever metrics
        // are recorded besides: a raced configuration's are computed from the runs it got). With
        // several, a configuration slower than the best may still be on the front.
        let race = self.options.race.filter(|_| {
            *metrics.objective() == ndtune_metrics::Objective::time() && !metrics.several()
        });
        let mut noise = Noise::default();
        let mut existing: HashMap<Config, Outcome> = HashMap::new();
        let mut measure_again = HashSet::new();
        let from_the_power_source = metrics.power_source_quantities();
        let observers = per_config.as_ref().map_or_else(Vec::new, |p| p.observers());
        for r in self.store.records(&group)? {
            // A result measured without the energy (or a sensor's reading) its metrics now need,
            // or without one of the front end's observers watching, is measured again.
            if lacks_readings(&r.outcome, &from_the_power_source, &observers) {
                measure_again.insert(r.key.config);
                continue;
            }
            if matches!(r.outcome, Outcome::TimedOut { .. }) && !self.options.keep_timed_out {
                measure_again.insert(r.key.config);
                continue;
            }
            if let Outcome::Measured(t) = &r.outcome {
                // A timing raced under another rule (or none now) is measured again: its score
                // is not what this campaign's protocol would store.
                let rule = t.raced.map(|r| Race {
                    margin: r.margin,
                    confidence: r.confidence,
                });
                if rule.is_some() && rule != race {
                    measure_again.insert(r.key.config);
                    continue;
                }
                noise.add(t);
            }
            existing.insert(r.key.config, r.outcome);
        }
        let not_reused = other_setups(self.store, &group)?;
        let setup = group.setup.clone();
        // A CPU device measures with the build workers stopped; they prime what they build
        // (a launch), since PoCL compiles for each work-group size at the first launch.
        let cpu = self.device.profile().device_type == DeviceType::Cpu;
        let history = build_history::load(self.store, &group, codec.names());
        let pool_key = PoolKey {
            source: source.clone(),
            kernel: spec.kernel.name.clone(),
            device: (job.device, self.device.address(), job.sub),
            jobs: self.options.build_jobs,
            timeout: self.options.timeout,
            prime: cpu,
            program: self.options.processes.describe(),
        };
        let build_job = job.for_builds(self.device.profile());
        let kept_builds = kept_builds
            .filter(|(key, _)| *key == pool_key)
            .map(|(_, pool)| {
                pool.switch(&build_job, &history);
                pool
            });
        let own_pool = || {
            BuildPool::new(
                self.options.processes.command("__builder"),
                &build_job,
                self.options.build_jobs,
                self.options.timeout,
                cpu,
                ProgramCache::open(
                    self.options.cache_dir.as_deref(),
                    self.device.profile(),
                    &source,
                    &spec.kernel.name,
                ),
                &history,
            )
        };
        let pool = if self.options.build_jobs <= 1 {
            None
        } else if self.options.share.is_some() && node_builds::wanted() {
            // The workers of one node share its builders (see `ndtune_bench::node_builds`).
            let key = ServiceKey {
                job: &build_job,
                device_kind: &ndtune_store::fingerprint(self.device.profile()),
                prime: cpu,
                timeout: self.options.timeout,
                program: &self.options.processes.describe(),
            };
            match Builds::join(&key, own_pool).map_err(|e| stopped(e.0))? {
                Some(builds) => Some(builds),
                None => Some(Builds::Own(own_pool().map_err(|e| stopped(e.0))?)),
            }
        } else if let Some(pool) = kept_builds {
            Some(Builds::Own(pool))
        } else {
            Some(Builds::Own(own_pool().map_err(|e| stopped(e.0))?))
        };
        // Listed configurations are measured as given: a warm start has nothing to add.
        let warm = if self.options.warm_start && self.options.configs.is_empty() {
            let points = warm_points(self.store, &group, &codec, metrics)?;
            observer.event(Event::Warning(format!(
                "warm start: {} configurations that did best for this kernel elsewhere come first",
                points.len()
            )));
            points
        } else {
            Vec::new()
        };
        let claims = self
            .options
            .share
            .clone()
            .map(|share| share::Claims::start(share, share::claims_ahead(self.options.build_jobs)))
            .transpose()?;
        let guard = match (&claims, &self.options.guard) {
            (None, Some(share)) => Some(share::Guard::start(share.clone())?),
            _ => None,
        };
        let total = self
            .options
            .budget
            .map_or(valid, |b| (b as u128).min(valid))
            .try_into()
            .unwrap_or(usize::MAX);
        observer.event(Event::Started { total });
        let mut advice =
            advice::AdviceBook::for_spec(spec, &source, self.device.profile().local_mem_size);
        for (config, outcome) in &existing {
            if let Ok(point) = codec.point(config) {
                advice.note(&point, outcome);
            }
        }
        let mut live = Live {
            supervisor,
            width: if pool.is_some() {
                self.options.build_jobs
            } else {
                1
            },
            pool,
            pause_builds: cpu,
            build_key: Box::new({
                let source = source.clone();
                // On a CPU device a build is primed with its launch sizes: they are in the key.
                let sizes: Vec<_> = spec
                    .problem
                    .launch
                    .iter()
                    .filter(|_| cpu)
                    .flat_map(|l| l.global.iter().chain(&l.local))
                    .filter_map(|e| spec.problem.int_expr(e).ok())
                    .collect();
                move |point: &[i64]| {
                    let mut key = spec.build_options(&source, point);
                    for n in &sizes {
                        key.push_str(&format!("\u{0}{:?}", n.eval(point)));
                    }
                    key
                }
            }),
            store: self.store,
            group,
            codec: &codec,
            existing,
            observer,
            metrics,
            best: None,
            phases: Phases::default(),
            racing: live::Racing {
                rule: race,
                runs: spec.measure.runs,
                noise,
                best_ms: None,
            },
            time: TimeSpent {
                build_jobs: self.options.build_jobs,
                setup_s: started.elapsed().as_secs_f64(),
                ..TimeSpent::default()
            },
            unavailable_told: false,
            stopped: None,
            waiting_for: None,
            claims,
            guard,
            measure_again,
            measured_ahead: Default::default(),
            promised: Vec::new(),
            // Scouts find a near-best configuration early for racing; not where a time limit
            // would let them run past it, nor where a front end works out each configuration.
            scouting: race.is_some() && self.options.time.is_none() && per_config.is_none(),
            advice,
            advice_prior: self.options.advice_prior,
            // Reborrowed for the campaign's own lifetime.
            per_config: per_config.map(|p| p as &mut dyn PerConfig),
            configured: HashMap::new(),
            build_times: None,
        };
        let run = Run {
            budget: Budget {
                evaluations: self.options.budget,
                time: self.options.time,
            },
            warm,
            patience: self.options.patience,
        };
        let mut trace = strategy.search(&space, &mut live, &run);
        if let Some(p) = self.options.patience {
            let measured = trace.steps.len();
            if measured < total {
                live.observer.event(Event::Warning(format!(
                    "stopped after {p} evaluations in a row found nothing better (patience): \
                     {measured} of {total} configurations evaluated"
                )));
            }
        }
        let stopped_early = live.stopped.take();
        let constants = live.group.constants.clone();
        let (time, kept) = live.finish(started, hand_on);
        let worker = kept.map(|(supervisor, pool)| Worker {
            supervisor,
            builds: pool.map(|pool| (pool_key, pool)),
        });
        // Stopped by a signal, the campaign still sums up what it measured (the caller exits
        // with the signal's status); stopped by an error, it fails.
        let interrupted = match stopped_early {
            Some(why) if ndtune_bench::children::stopping().is_some() => Some(why),
            Some(why) => return Err(stopped(why)),
            None => None,
        };
        trace.steps.retain(|s| !live::asked_after_stop(&s.outcome));
        let mut report = report::report(
            spec,
            &constants,
            self.label,
            &self.options.strategy,
            &codec,
            &trace,
            (declared, valid),
            energy,
            time,
        );
        report.setup = setup;
        report.not_reused = not_reused;
        report.hints = hints;
        report.interrupted = interrupted;
        Ok((report, worker))
    }
}

/// Whether `device` has a power source and whether the campaign measures the energy (its
/// metrics need it); an error naming the metrics that need it where the device has none.
fn energy_report(device: &AnyDevice, metrics: &Metrics) -> Result<EnergyReport, String> {
    let needing = metrics.needing_energy();
    match ndtune_bench::energy::meter(device) {
        Ok(meter) => Ok(EnergyReport {
            available: true,
            measured: !needing.is_empty(),
            detail: meter.describe().to_string(),
        }),
        Err(why) if needing.is_empty() => Ok(EnergyReport {
            available: false,
            measured: false,
            detail: why.to_string(),
        }),
        Err(why) => Err(format!(
            "{why}; and {} `{}` {} them",
            if needing.len() == 1 {
                "the metric"
            } else {
                "the metrics"
            },
            needing.join("`, `"),
            if needing.len() == 1 { "needs" } else { "need" }
        )),
    }
}

/// A measurement without one of the `needed` quantities of the power source (or with an
/// energy read before the lead-in, which read low), or that one of the `observers` did not
/// watch.
fn lacks_readings(outcome: &Outcome, needed: &[&str], observers: &[String]) -> bool {
    let Outcome::Measured(t) = outcome else {
        return false;
    };
    let unobserved = observers
        .iter()
        .any(|o| !t.observed.as_ref().is_some_and(|by| by.contains_key(o)));
    let read_low = t.energy.as_ref().is_some_and(|e| e.lead_in_ms.is_none());
    unobserved
        || (read_low && !needed.is_empty())
        || ndtune_metrics::measured(t)
            .iter()
            .any(|(q, v)| v.is_none() && needed.contains(q))
}

/// The store's campaign of a spec's kernel read from `source` on a device, with input data
/// drawn with `seed`: its setup is [`Spec::setup`]'s. Registers the device and the setup.
pub fn group(
    spec: &Spec,
    source: &KernelSource,
    seed: u64,
    device: &AnyDevice,
    store: &Store,
) -> Result<Group, CampaignError> {
    let setup = spec
        .setup(source, seed)
        .map_err(|e| CampaignError::Spec(e.to_string()))?;
    store.put_setup(&setup)?;
    Ok(Group {
        device: store.put_device(device.profile())?,
        kernel: spec.kernel.name.clone(),
        source_hash: ndtune_store::source_hash(&source.text),
        setup: setup.digest,
        constants: spec.problem.constants.clone(),
    })
}

/// The campaigns of `group`'s problem under other setups, with their results and what differs
/// from their setup to `group`'s: results a campaign of `group` does not reuse.
pub fn other_setups(store: &Store, group: &Group) -> Result<Vec<OtherSetup>, StoreError> {
    store
        .other_setups(group)?
        .into_iter()
        .map(|g| {
            Ok(OtherSetup {
                results: store.campaign_status(&g)?.results,
                differences: store.setup_differences(&g.setup, &group.setup)?,
                setup: g.setup,
            })
        })
        .collect()
}

/// The points of `configs` (`tune --config`), each checked against the pruned `space` of the
/// device `label`: an error says which configuration is not in it, and why.
fn listed_points(
    configs: &[Config],
    codec: &Codec,
    space: &ValidSpace,
    label: &str,
) -> Result<Vec<Point>, CampaignError> {
    configs
        .iter()
        .map(|config| {
            let shown = || {
                let pairs: Vec<String> = config.iter().map(|(k, v)| format!("{k}={v}")).collect();
                pairs.join(",")
            };
            let point = codec
                .point(config)
                .map_err(|e| CampaignError::Spec(format!("--config {}: {e}", shown())))?;
            match space.why_not(&point) {
                None => Ok(point),
                Some(why) => Err(CampaignError::Spec(format!(
                    "--config {}: not a configuration of the space on {label}: {why}",
                    shown()
                ))),
            }
        })
        .collect()
}

/// The [`WARM_POINTS`] configurations (as points of `codec`) that did best by `metrics`'
/// objective (the geometric mean of each one's cost relative to each campaign's best, its
/// metrics computed with that campaign's constants), in the store's other campaigns of the same
/// kernel (other devices, constants, setups or sources) over the same parameters
/// ([`ndtune_search::warm_start`]), after the [`NEAREST_POINTS`] best of the nearest campaign
/// ([`campaign_distance`]): a prior of where to look, never a result reused.
pub fn warm_points(
    store: &Store,
    group: &Group,
    codec: &Codec,
    metrics: &Metrics,
) -> Result<Vec<Point>, StoreError> {
    let mut others = Vec::new();
    for g in store.groups()? {
        if g == *group || g.kernel != group.kernel {
            continue;
        }
        let records = store.records(&g)?;
        let entries = records.into_iter().map(|r| (r.key.config, r.outcome));
        // Campaigns over other parameters (another spec of the same source) cannot say.
        if let Ok(recorded) = Recorded::from_configs(codec.clone(), entries) {
            let constants = &g.constants;
            let costed = recorded.costed(|c, o| metrics.cost(&Inputs::new(constants, c, o)));
            others.push((campaign_distance(group, &g), costed));
        }
    }
    let nearest = others
        .iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| ndtune_search::warm_start(&[r], NEAREST_POINTS))
        .unwrap_or_default();
    let all: Vec<&Recorded> = others.iter().map(|(_, r)| r).collect();
    let mut points = nearest;
    for p in ndtune_search::warm_start(&all, WARM_POINTS) {
        if points.len() >= WARM_POINTS {
            break;
        }
        if !points.contains(&p) {
            points.push(p);
        }
    }
    Ok(points)
}

/// How many of the nearest campaign's best configurations a warm start measures first.
pub const NEAREST_POINTS: usize = 5;

/// How far campaign `b` is from `a` for a warm start: over their constants, `|ln(x/y)|` for
/// two positive numbers (a size twice as large is as far as one half as large), 0 for equal
/// values and 10 for any other difference (another type, a missing constant); another device
/// adds 1000, so a campaign on the same device comes first.
pub fn campaign_distance(a: &Group, b: &Group) -> f64 {
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Real(r) => Some(*r),
        Value::Text(_) => None,
    };
    let names: std::collections::BTreeSet<&String> =
        a.constants.keys().chain(b.constants.keys()).collect();
    let constants: f64 = names
        .into_iter()
        .map(|n| match (a.constants.get(n), b.constants.get(n)) {
            (Some(x), Some(y)) if x == y => 0.0,
            (Some(x), Some(y)) => match (number(x), number(y)) {
                (Some(x), Some(y)) if x > 0.0 && y > 0.0 => (x / y).ln().abs(),
                _ => 10.0,
            },
            _ => 10.0,
        })
        .sum();
    constants + if a.device == b.device { 0.0 } else { 1000.0 }
}

/// The fastest measured configuration of a campaign in the store, with its timing.
pub fn best_recorded(store: &Store, g: &Group) -> Result<Option<(Config, Timing)>, StoreError> {
    let mut best: Option<(Config, Timing)> = None;
    for r in store.records(g)? {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_store::{Record, ResultKey};

    #[test]
    fn a_stored_result_is_measured_again_where_it_lacks_what_the_campaign_reads() {
        let energy = |lead_in_ms, temperature_c| ndtune_core::Energy {
            joules: 0.2,
            watts: 400.0,
            runs: 100,
            window_ms: 200.0,
            samples: 40,
            source: "nvml energy counter".into(),
            lead_in_ms,
            temperature_c,
            core_clock_mhz: None,
            mem_clock_mhz: None,
        };
        let measured = |e: Option<ndtune_core::Energy>, watched: &[&str]| {
            let mut t = Timing::new(vec![1.0], 1);
            t.energy = e.map(Box::new);
            t.observed = (!watched.is_empty()).then(|| {
                Box::new(
                    watched
                        .iter()
                        .map(|w| (w.to_string(), serde_json::json!({})))
                        .collect(),
                )
            });
            Outcome::Measured(t)
        };
        let none: [String; 0] = [];
        let counter = ["m.Counter".to_string()];
        // Time alone needs nothing more.
        assert!(!lacks_readings(&measured(None, &[]), &[], &none));
        // The energy, where it is needed; read before the lead-in, it read low.
        assert!(lacks_readings(&measured(None, &[]), &["energy_j"], &none));
        assert!(lacks_readings(
            &measured(Some(energy(None, None)), &[]),
            &["energy_j"],
            &none
        ));
        assert!(!lacks_readings(
            &measured(Some(energy(None, None)), &[]),
            &[],
            &none
        ));
        let read = Some(energy(Some(100.0), None));
        assert!(!lacks_readings(
            &measured(read.clone(), &[]),
            &["energy_j"],
            &none
        ));
        // A sensor the campaign reads.
        assert!(lacks_readings(
            &measured(read.clone(), &[]),
            &["temperature_c"],
            &none
        ));
        let warm = Some(energy(Some(100.0), Some(45.0)));
        assert!(!lacks_readings(
            &measured(warm, &[]),
            &["temperature_c"],
            &none
        ));
        // An observer that did not watch the runs.
        assert!(lacks_readings(&measured(None, &[]), &[], &counter));
        assert!(lacks_readings(&measured(None, &["m.Other"]), &[], &counter));
        assert!(!lacks_readings(
            &measured(None, &["m.Counter"]),
            &[],
            &counter
        ));
        // Only a measurement is measured again.
        let refused = Outcome::Refused {
            error: "-54".into(),
        };
        assert!(!lacks_readings(&refused, &["energy_j"], &counter));
    }

    fn group(device: &str, n: i64) -> Group {
        Group {
            device: device.into(),
            kernel: "scale".into(),
            source_hash: "s".into(),
            setup: "u".into(),
            constants: ndtune_core::int_config([("N", n)]),
        }
    }

    /// Stores `ms` per TX value as the campaign `g`'s results.
    fn campaign(store: &Store, g: &Group, ms: &[(i64, f64)]) {
        for &(tx, t) in ms {
            store
                .insert(&Record {
                    key: ResultKey {
                        device: g.device.clone(),
                        kernel: g.kernel.clone(),
                        source_hash: g.source_hash.clone(),
                        setup: g.setup.clone(),
                        constants: g.constants.clone(),
                        config: ndtune_core::int_config([("TX", tx)]),
                    },
                    outcome: Outcome::Measured(Timing::new(vec![t], 1)),
                    ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
                    started_at: 0,
                    finished_at: 1,
                })
                .unwrap();
        }
    }

    #[test]
    fn a_warm_start_measures_the_nearest_campaigns_best_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.db")).unwrap();
        // N=32 on this device likes TX=4; N=4096 here and N=64 on another device like others,
        // and together they outvote N=32.
        campaign(
            &store,
            &group("d", 32),
            &[(4, 1.0), (8, 2.0), (16, 3.0), (64, 4.0)],
        );
        campaign(
            &store,
            &group("d", 4096),
            &[(4, 9.0), (8, 1.0), (16, 2.0), (64, 3.0)],
        );
        campaign(
            &store,
            &group("e", 64),
            &[(4, 9.0), (8, 1.1), (16, 2.0), (64, 3.0)],
        );
        let codec = Codec::ints(vec!["TX".into()]);
        let points = warm_points(&store, &group("d", 64), &codec, &Metrics::time()).unwrap();
        assert_eq!(points[0], vec![4], "{points:?}");
        assert_eq!(points.len(), 4);
        // Far above every size here, N=4096 is the nearest: its best leads.
        let far = warm_points(&store, &group("d", 100_000), &codec, &Metrics::time()).unwrap();
        assert_eq!(far[0], vec![8], "{far:?}");
    }

    #[test]
    fn campaigns_are_as_far_apart_as_the_ratio_of_their_sizes_and_another_device_is_farther() {
        let d = |a: &Group, b: &Group| campaign_distance(a, b);
        assert_eq!(d(&group("d", 64), &group("d", 64)), 0.0);
        let half = d(&group("d", 64), &group("d", 32));
        assert!((half - 2f64.ln()).abs() < 1e-12);
        assert_eq!(half, d(&group("d", 64), &group("d", 128)));
        assert!(d(&group("d", 64), &group("d", 1 << 20)) < d(&group("d", 64), &group("e", 64)));
    }
}
