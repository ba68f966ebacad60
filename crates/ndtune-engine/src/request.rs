//! One tuning request, as every front end makes it: `ndtune tune` (one device, several, a sweep
//! over constants, `--captured`, `--worker`, `--pool`), `split`'s "tune first where missing" and
//! the Python package's `tune_kernel` build a [`TuneRequest`] and call [`run`]; nothing about
//! how to tune stays in a front end. [`run`] reads and checks every campaign's spec before
//! anything is measured, picks the devices ([`crate::devices`]), starts each device's
//! measurement worker while the devices are opened and the store is opened, and runs the
//! campaigns (or the pool) in turn, telling the front end what happens through
//! [`RequestEvent`]s. What it gives back ([`Ran`]) is every campaign's report, a sweep's bests,
//! a pool's account and where the wall time went ([`Wall`]); the front end prints it.

use crate::captured::Captured;
use crate::devices::{self, Picked};
use crate::kt_cache::KtCache;
use crate::pool::{Pool, PoolEvent, PoolReport};
use crate::share::{default_worker_id, Share};
use crate::wall::Wall;
use crate::{
    default_build_jobs, Best, CampaignError, DeviceReport, Event, Options, PerConfig, Processes,
    Tuning, Worker,
};
use ndtune_backend::{AnyDevice, Api};
use ndtune_bench::supervisor::Warming;
use ndtune_core::{Config, Constants};
use ndtune_metrics::{MetricDef, Objective};
use ndtune_spec::{Race, Spec, SpecError};
use ndtune_store::{Store, StoreError};
use std::path::PathBuf;
use std::time::Duration;

/// Why a request could not run, or stopped. Everything measured before is in the store.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Campaign(#[from] CampaignError),
    /// The request's parts do not go together (`--pool` with a sweep, `--worker` on two
    /// devices), or an option's value is wrong; the message names the option.
    #[error("{0}")]
    Invalid(String),
    /// The devices asked for are not there, or cannot be opened; the message names the option.
    #[error("{0}")]
    Device(String),
    #[error(transparent)]
    Pick(#[from] devices::PickError),
    /// A Kernel Tuner cache to continue from is of another campaign.
    #[error("{0}")]
    Cache(String),
    #[error(transparent)]
    KtFile(#[from] ndtune_store::kt::KtError),
}

/// Which devices to tune on.
#[derive(Debug, Clone)]
pub enum DeviceChoice {
    /// A selector as `--device` takes it (`None`: device 0); see [`devices::pick`].
    Selector(Option<String>),
    /// Kernel Tuner's numbering: these devices of OpenCL platform `platform` (Python's
    /// `device=` and `pool=`/`parallel=`).
    Numbered {
        platform: usize,
        devices: Vec<usize>,
    },
    /// Devices the front end already opened (`split`'s devices).
    Opened(Vec<AnyDevice>),
}

/// How the devices share the work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// A campaign of its own on each device, one after the other.
    Campaigns,
    /// One campaign shared by the identical devices, a worker process each ([`Pool`]).
    Pool,
    /// This process is one worker of a campaign shared through the store with workers on other
    /// devices or machines, named `id` (default: host, process and device).
    Worker { id: Option<String> },
}

/// How a live search goes: the strategy and where it stops.
#[derive(Debug, Clone)]
pub struct Search {
    /// A strategy name from [`ndtune_search::STRATEGY_NAMES`], or `auto`.
    pub strategy: String,
    pub budget: Option<usize>,
    pub time: Option<Duration>,
    /// Measure first what did best elsewhere; a sweep's campaigns always do.
    pub warm_start: bool,
    pub patience: Option<usize>,
    /// Measure these configurations instead of searching.
    pub configs: Vec<Config>,
    pub seed: u64,
    /// Build worker processes; `None`: [`default_build_jobs`] for the device.
    pub build_jobs: Option<usize>,
    pub advice_prior: bool,
    pub keep_timed_out: bool,
}

impl Default for Search {
    fn default() -> Search {
        Search {
            strategy: "auto".into(),
            budget: None,
            time: None,
            warm_start: false,
            patience: None,
            configs: Vec::new(),
            seed: 1,
            build_jobs: None,
            advice_prior: true,
            keep_timed_out: false,
        }
    }
}

/// Racing as asked for, over the spec's `[measure]` rule: `on`/`off`, a margin, a confidence
/// (`None`: the spec's).
#[derive(Debug, Clone, Copy, Default)]
pub struct RaceChoice {
    pub on: Option<bool>,
    pub margin: Option<f64>,
    pub confidence: Option<f64>,
}

impl RaceChoice {
    /// The racing rule over the spec's (`spec`, from `[measure]`); a margin or a confidence
    /// given turns racing on. Errors name the option as the command line spells it.
    pub fn rule(&self, spec: Option<Race>) -> Result<Option<Race>, String> {
        let tuned = self.margin.is_some() || self.confidence.is_some();
        match self.on {
            Some(false) if tuned => {
                Err("--race off: --race-margin and --race-confidence have nothing to set".into())
            }
            Some(false) => Ok(None),
            None if !tuned => Ok(spec),
            _ => {
                let base = spec.unwrap_or_default();
                Race::new(
                    self.margin.unwrap_or(base.margin),
                    self.confidence.unwrap_or(base.confidence),
                )
                .map(Some)
                .map_err(|why| format!("--{}", why.replacen('_', "-", 1)))
            }
        }
    }
}

/// Everything a tuning run needs; [`run`] runs it.
#[derive(Debug, Clone)]
pub struct TuneRequest {
    /// The spec file.
    pub spec: PathBuf,
    /// Each campaign's constants over the spec's (a sweep: several sets, the campaigns
    /// warm-starting each other); one empty set: the spec's own.
    pub sweep: Vec<Constants>,
    /// Tune what programs asked for at run time instead of `sweep`: the captured questions
    /// in this folder (`NDTUNE_CAPTURE`), on the devices asked for that this machine has.
    pub captured: Option<PathBuf>,
    /// Metrics added to the spec's (one of the same name replaces the spec's), and the
    /// objectives, where given (not empty: they replace the spec's).
    pub metrics: Vec<MetricDef>,
    pub objectives: Vec<Objective>,
    pub devices: DeviceChoice,
    pub mode: Mode,
    /// The store: an SQLite file or a PostgreSQL connection string.
    pub store: PathBuf,
    /// How long to keep connecting again to a PostgreSQL store that went away.
    pub db_retry: Duration,
    pub search: Search,
    pub race: RaceChoice,
    /// A fixed per-evaluation deadline; without it, deadlines adapt.
    pub timeout: Option<Duration>,
    /// How long a claim outlives a worker that stopped beating.
    pub lease: Duration,
    /// How the worker processes start.
    pub processes: Processes,
    /// A Kernel Tuner cache file that the (one) campaign continues from and is written to.
    pub kt_cache: Option<KtCache>,
    /// Who tunes, as claims name it in the store: `NAME:INDEX` per device and `NAME` for a
    /// pool (default: host, process and device, [`default_worker_id`]).
    pub name: Option<String>,
    /// ndtune's cache folder for kept program binaries; `None`: `$NDTUNE_CACHE_DIR`, else the
    /// user's ([`ndtune_core::cache`]).
    pub cache_dir: Option<PathBuf>,
}

impl TuneRequest {
    /// A request to tune `spec` on device 0 with the defaults of `ndtune tune`, its workers
    /// started from `processes`.
    pub fn new(spec: PathBuf, store: PathBuf, processes: Processes) -> TuneRequest {
        TuneRequest {
            spec,
            sweep: vec![Constants::new()],
            captured: None,
            metrics: Vec::new(),
            objectives: Vec::new(),
            devices: DeviceChoice::Selector(None),
            mode: Mode::Campaigns,
            store,
            db_retry: Duration::from_secs(60),
            search: Search::default(),
            race: RaceChoice::default(),
            timeout: None,
            lease: crate::share::GUARD_LEASE,
            processes,
            kt_cache: None,
            name: None,
            cache_dir: None,
        }
    }
}

/// What a request tells its front end as it runs.
pub enum RequestEvent<'a> {
    /// The campaign of `spec` on the device labelled `label` (a pool: `pool of N`) starts; its
    /// events follow.
    Campaign { label: &'a str, spec: &'a Spec },
    /// An event of the campaign that started last (or of the pool, labelled `pool of N`).
    Event { label: &'a str, event: Event<'a> },
    /// A pool's progress.
    Pool(PoolEvent<'a>),
    /// Something worth knowing about the request itself (a captured device not here).
    Note(String),
}

/// One campaign of a sweep, as its closing table shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Swept {
    pub constants: Constants,
    pub device: String,
    pub setup: String,
    pub best: Option<Best>,
}

/// What a request did.
pub struct Ran {
    /// Each campaign's report, in sweep order, each set of constants' devices in turn (a
    /// pool: its one campaign).
    pub reports: Vec<DeviceReport>,
    /// A sweep's campaigns and their bests (several sets of constants).
    pub sweep: Option<Vec<Swept>>,
    /// A pool's account (its campaign's report is `reports[0]`).
    pub pool: Option<PoolReport>,
    /// Where the wall time went.
    pub time: Wall,
    /// The devices tuned on, opened.
    pub devices: Vec<AnyDevice>,
    /// Where the store is, for the front end's hints.
    pub store: PathBuf,
    /// Why the request failed after it ran, where it did: a campaign was interrupted by a
    /// signal, or a device measured nothing (each such device's reason on a line).
    pub failure: Option<String>,
}

/// The measurement and build workers a front end that lives on (a Python session) keeps from
/// one request to the next ([`run_keeping`]): the next request's campaign on the same device,
/// with workers that would start the same way, takes its job up in those processes (the
/// device's session, and the inputs it shares with the job before, stay open:
/// `Supervisor::switch`) instead of starting them again. Dropped, the workers end.
#[derive(Default)]
pub struct KeptWorkers {
    /// What the workers were started with (all by one request): their command, fixed deadline,
    /// the cache folder asked for and the environment they inherited (a session that changed
    /// a variable since, `NDTUNE_CACHE_DIR` say, gets workers that see it).
    started_with: Option<StartedWith>,
    workers: Vec<Worker>,
}

#[derive(PartialEq)]
struct StartedWith {
    processes: Processes,
    timeout: Option<Duration>,
    cache_dir: Option<PathBuf>,
    environment: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl StartedWith {
    fn now(request: &TuneRequest) -> StartedWith {
        StartedWith {
            processes: request.processes.clone(),
            timeout: request.timeout,
            cache_dir: request.cache_dir.clone(),
            environment: std::env::vars_os().collect(),
        }
    }
}

impl KeptWorkers {
    /// Whether no worker is kept.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// The kept worker that can take `job` up under `request`, if one can.
    fn take(&mut self, request: &TuneRequest, job: &ndtune_bench::worker::Job) -> Option<Worker> {
        if self.started_with.as_ref() != Some(&StartedWith::now(request)) {
            return None;
        }
        let at = self
            .workers
            .iter()
            .position(|w| w.supervisor.job().same_device(job))?;
        Some(self.workers.swap_remove(at))
    }

    /// Ends every worker kept.
    fn clear(&mut self) {
        self.workers.clear();
        self.started_with = None;
    }
}

/// Runs `request`, telling `observer` what happens; `per_config` (one device, one campaign) is
/// asked about each configuration first ([`PerConfig`]).
pub fn run(
    request: &TuneRequest,
    observer: &mut dyn FnMut(RequestEvent<'_>),
    per_config: Option<&mut dyn PerConfig>,
) -> Result<Ran, RequestError> {
    run_keeping(request, None, observer, per_config)
}

/// [`run`], taking up the workers `kept` holds where they fit and, where the request's
/// campaigns ended as they should, keeping theirs there for the next request (a pool's
/// workers are processes of their own: none is kept).
pub fn run_keeping(
    request: &TuneRequest,
    mut kept: Option<&mut KeptWorkers>,
    observer: &mut dyn FnMut(RequestEvent<'_>),
    per_config: Option<&mut dyn PerConfig>,
) -> Result<Ran, RequestError> {
    let mut wall = Wall::new();
    let captured = request
        .captured
        .as_deref()
        .map(|dir| Captured::plan(dir, request, observer))
        .transpose()?;
    let sweep = match &captured {
        Some(c) => c.sweep.clone(),
        None => request.sweep.clone(),
    };
    if sweep.is_empty() {
        return Err(RequestError::Invalid(
            "a request needs a set of constants".into(),
        ));
    }
    wall.lap();
    // Every combination's spec is checked before anything is measured.
    let specs = sweep
        .iter()
        .map(|overrides| load_spec(request, overrides))
        .collect::<Result<Vec<Spec>, RequestError>>()?;
    ndtune_search::by_name(&request.search.strategy, request.search.seed)
        .map_err(CampaignError::from)?;
    // The racing flags are checked before any worker starts.
    request
        .race
        .rule(specs[0].measure.race)
        .map_err(RequestError::Invalid)?;
    wall.spec_s += wall.lap();
    if request.mode == Mode::Pool && sweep.len() > 1 {
        return Err(RequestError::Invalid(format!(
            "--pool runs one campaign, and --set gives {} combinations of values: start a pool for each",
            sweep.len()
        )));
    }
    // The measurement worker's process starts before the devices are found, and loads and
    // initialises the driver of the spec's API while this process does the same to find them;
    // it takes its job once the device is picked. Not where the devices come opened, where a
    // kept worker may take the job up, nor for a pool (its workers start their own).
    let mut warming = (request.mode != Mode::Pool
        && !matches!(request.devices, DeviceChoice::Opened(_))
        && kept.as_deref().is_none_or(KeptWorkers::is_empty))
    .then(|| {
        Warming::start(
            request.processes.command("__worker")(),
            specs[0].kernel.language,
        )
    })
    .flatten();
    let picked = pick(request, specs[0].kernel.language, captured.as_ref())?;
    let count = match (&picked, &request.devices) {
        (Some(picked), _) => picked.len(),
        (None, DeviceChoice::Opened(devices)) => devices.len(),
        (None, _) => 0,
    };
    if matches!(request.mode, Mode::Worker { .. }) && count > 1 {
        let named = match &request.devices {
            DeviceChoice::Selector(Some(sel)) => format!("--device {sel} names {count}"),
            _ => format!("{count} are asked for"),
        };
        return Err(RequestError::Invalid(format!(
            "--worker measures on one device, {named}: start a worker per device, or use --pool"
        )));
    }
    // Each device's measurement worker for the first campaign starts now, while its device is
    // opened and its space pruned here (a pool's workers are processes of their own).
    let mut workers: Vec<Option<Worker>> = Vec::new();
    if request.mode != Mode::Pool {
        let source = specs[0].kernel_source()?.expect("checked on loading");
        for p in picked.iter().flatten() {
            let job = crate::job(
                &specs[0],
                &source,
                &sweep[0],
                (p.index, p.at, p.sub),
                request.search.seed,
            )?;
            let worker = match kept.as_deref_mut().and_then(|k| k.take(request, &job)) {
                Some(worker) => worker.take_up(job),
                None => Worker::start(job, &request.processes, request.timeout, warming.take()),
            };
            workers.push(Some(worker));
        }
    }
    // A warmed process that no device took ends now.
    drop(warming);
    // What was kept and did not fit ends now, before this request opens its devices.
    if let Some(kept) = kept.as_deref_mut() {
        kept.clear();
    }
    let devices = match (&request.devices, picked) {
        (DeviceChoice::Opened(devices), _) => devices.clone(),
        (_, Some(picked)) => devices::open_picked(&picked)?,
        (_, None) => unreachable!("only opened devices are not picked"),
    };
    workers.resize_with(devices.len(), || None);
    wall.discovery_s += wall.lap();
    let store = Store::open(&request.store)?.reconnect_for(request.db_retry);
    wall.store_s += wall.lap();
    let mut ran = Ran {
        reports: Vec::new(),
        sweep: None,
        pool: None,
        time: Wall::default(),
        devices: Vec::new(),
        store: store.path().to_path_buf(),
        failure: None,
    };
    // A Kernel Tuner cache's entries are the campaign's before it starts, and its records are
    // written back once it ended, however it ended.
    let cached = match &request.kt_cache {
        Some(cache) => {
            let source = specs[0].kernel_source()?.expect("checked on loading");
            let group = crate::group(&specs[0], &source, request.search.seed, &devices[0], &store)?;
            cache.continue_from(&devices[0], &specs[0], &store, &group)?;
            Some((cache, group))
        }
        None => None,
    };
    let campaigns = Campaigns {
        request,
        specs: &specs,
        sweep: &sweep,
        devices: &devices,
        store: &store,
        captured: captured.as_ref(),
    };
    let keeping = kept.is_some() && request.mode == Mode::Campaigns;
    let outcome = match request.mode {
        Mode::Pool => campaigns.pool(&mut ran, &mut wall, observer),
        _ => campaigns.each(
            &mut workers,
            keeping,
            &mut ran,
            &mut wall,
            observer,
            per_config,
        ),
    };
    // Workers of campaigns that ended as they should are kept; a stop or an error may have
    // left them in any state.
    if let (Some(kept), true) = (kept, keeping && outcome.is_ok() && ran.failure.is_none()) {
        kept.workers = workers.into_iter().flatten().collect();
        kept.started_with = Some(StartedWith::now(request));
    }
    if let Some((cache, group)) = cached {
        cache.write(&devices[0], &specs[0], &store, &group)?;
    }
    outcome?;
    // A sweep ends with the best of each of its campaigns.
    if sweep.len() > 1 {
        ran.sweep = Some(
            ran.reports
                .iter()
                .map(|r| Swept {
                    constants: r.constants.clone(),
                    device: r.device.clone(),
                    setup: r.setup.clone(),
                    best: r.best.clone(),
                })
                .collect(),
        );
    }
    ran.time = wall.close().clone();
    ran.devices = devices;
    Ok(ran)
}

/// The campaigns of a request, ready to run: its specs (one per set of constants), its devices
/// opened, its store.
struct Campaigns<'a> {
    request: &'a TuneRequest,
    specs: &'a [Spec],
    sweep: &'a [Constants],
    devices: &'a [AnyDevice],
    store: &'a Store,
    captured: Option<&'a Captured>,
}

impl Campaigns<'_> {
    /// A campaign per set of constants and device, each device's with the measurement worker
    /// started for it where there is one (the first set's); a sweep's campaigns on a device
    /// hand their measurement and build workers on, each to the next, and the last ones to
    /// `workers` where `keeping` them for the next request.
    fn each(
        &self,
        workers: &mut [Option<Worker>],
        keeping: bool,
        ran: &mut Ran,
        wall: &mut Wall,
        observer: &mut dyn FnMut(RequestEvent<'_>),
        mut per_config: Option<&mut dyn PerConfig>,
    ) -> Result<(), RequestError> {
        let mut why: Vec<String> = Vec::new();
        for (at, (spec, overrides)) in self.specs.iter().zip(self.sweep).enumerate() {
            let last = at + 1 == self.sweep.len();
            for (device, worker) in self.devices.iter().zip(workers.iter_mut()) {
                // A signal stopped the campaign before: the others are not started.
                if ran.reports.iter().any(|r| r.interrupted.is_some()) {
                    break;
                }
                if self
                    .captured
                    .as_ref()
                    .is_some_and(|c| !c.asked(overrides, device.profile()))
                {
                    continue; // its worker waits for the device's next campaign
                }
                let label = device.label();
                observer(RequestEvent::Campaign {
                    label: &label,
                    spec,
                });
                let mut events = |event: Event<'_>| {
                    observer(RequestEvent::Event {
                        label: &label,
                        event,
                    })
                };
                // The campaigns of a sweep warm-start each other: the nearest tuned
                // constants' best first.
                let options = options(self.request, spec, device, self.sweep.len() > 1)?;
                let tuning = Tuning {
                    spec,
                    overrides,
                    device,
                    label: &label,
                    store: self.store,
                    options,
                    worker: worker.take(),
                };
                let per_config = per_config.as_mut().map(|p| &mut **p as &mut dyn PerConfig);
                let (tuned, kept) =
                    tuning.run_handing_on(&mut events, per_config, keeping || !last)?;
                *worker = kept;
                wall.lap();
                wall.prune_s += tuned.prune_s;
                wall.campaigns_s += tuned.report.time.campaign_s;
                why.extend(nothing_measured(spec, &tuned.report, device));
                ran.reports.push(tuned.report);
            }
        }
        ran.failure = match ran.reports.iter().find_map(|r| r.interrupted.as_ref()) {
            Some(why) => Some(why.clone()),
            None => (!why.is_empty()).then(|| why.join("\n")),
        };
        Ok(())
    }

    /// The one campaign, shared by the pool of identical devices.
    fn pool(
        &self,
        ran: &mut Ran,
        wall: &mut Wall,
        observer: &mut dyn FnMut(RequestEvent<'_>),
    ) -> Result<(), RequestError> {
        let pool = run_pool(
            self.request,
            &self.specs[0],
            &self.sweep[0],
            self.devices,
            self.store,
            observer,
        )?;
        wall.campaigns_s += wall.lap();
        ran.failure = nothing_measured(&self.specs[0], &pool.report, &self.devices[0]);
        ran.reports.push(pool.report.clone());
        ran.pool = Some(pool);
        Ok(())
    }
}

/// The spec with `overrides` and the request's metrics, checked to be tunable.
fn load_spec(request: &TuneRequest, overrides: &Constants) -> Result<Spec, RequestError> {
    let mut spec = Spec::load_with(&request.spec, overrides)?;
    if !request.metrics.is_empty() || !request.objectives.is_empty() {
        let defs = spec
            .metrics
            .definitions()
            .clone()
            .with(request.metrics.clone(), request.objectives.clone());
        spec.set_metrics(defs)
            .map_err(|e| RequestError::Invalid(format!("--metric/--objective: {e}")))?;
    }
    if spec.kernel_source()?.is_none() {
        return Err(RequestError::Invalid(format!(
            "{}: [kernel] source is needed to tune",
            spec.path.display()
        )));
    }
    Ok(spec)
}

/// The devices the request picks, by name, before any is opened; `None` for devices the front
/// end opened.
fn pick(
    request: &TuneRequest,
    language: Api,
    captured: Option<&Captured>,
) -> Result<Option<Vec<Picked>>, RequestError> {
    let picked = match (&request.devices, captured) {
        (DeviceChoice::Opened(_), _) => return Ok(None),
        (_, Some(c)) => devices::pick_live(Some(language), Some(&c.devices)),
        (DeviceChoice::Selector(selector), None) => {
            devices::pick_live(Some(language), selector.as_deref())
        }
        (DeviceChoice::Numbered { platform, devices }, None) => {
            devices::pick_numbered(language, *platform, devices)
        }
    };
    picked.map(Some).map_err(|e| match &request.devices {
        DeviceChoice::Selector(Some(_)) => RequestError::Device(format!("--device {e}")),
        DeviceChoice::Selector(None) => RequestError::Device(e.to_string()),
        _ => RequestError::Pick(e),
    })
}

/// The engine's options for a campaign of `spec` on `device`; `swept`: one of a sweep's.
fn options(
    request: &TuneRequest,
    spec: &Spec,
    device: &AnyDevice,
    swept: bool,
) -> Result<Options, RequestError> {
    let s = &request.search;
    let (share, guard) = match &request.mode {
        Mode::Worker { id } => (
            Some(Share {
                worker: id.clone().unwrap_or_else(|| default_worker_id(device)),
                lease: request.lease,
                location: request.store.clone().into(),
            }),
            None,
        ),
        _ => (
            None,
            Some(Share {
                worker: match &request.name {
                    Some(name) => format!("{name}:{}", device.index()),
                    None => default_worker_id(device),
                },
                lease: request.lease,
                location: request.store.clone().into(),
            }),
        ),
    };
    Ok(Options {
        strategy: s.strategy.clone(),
        budget: s.budget,
        time: s.time,
        warm_start: s.warm_start || swept,
        patience: s.patience,
        configs: s.configs.clone(),
        share,
        guard,
        seed: s.seed,
        timeout: request.timeout,
        build_jobs: s
            .build_jobs
            .unwrap_or_else(|| default_build_jobs(device.as_ref())),
        race: request
            .race
            .rule(spec.measure.race)
            .map_err(RequestError::Invalid)?,
        advice_prior: s.advice_prior,
        keep_timed_out: s.keep_timed_out,
        cache_dir: request.cache_dir.clone(),
        processes: request.processes.clone(),
    })
}

/// The request's one campaign, shared by the identical `devices` of a pool.
fn run_pool(
    request: &TuneRequest,
    spec: &Spec,
    overrides: &Constants,
    devices: &[AnyDevice],
    store: &Store,
    observer: &mut dyn FnMut(RequestEvent<'_>),
) -> Result<PoolReport, RequestError> {
    let mut options = options(request, spec, &devices[0], false)?;
    options.guard = None;
    let label = format!("pool of {}", devices.len());
    observer(RequestEvent::Campaign {
        label: &label,
        spec,
    });
    // One observer for both kinds of events, which the pool reports through two.
    let observer = std::cell::RefCell::new(observer);
    let mut on = |event: PoolEvent<'_>| (observer.borrow_mut())(RequestEvent::Pool(event));
    let mut events = |event: Event<'_>| {
        (observer.borrow_mut())(RequestEvent::Event {
            label: &label,
            event,
        })
    };
    let pool = Pool {
        spec,
        overrides,
        devices,
        store,
        location: request.store.clone().into(),
        db_retry: request.db_retry,
        options,
        lease: request.lease,
        id: request
            .name
            .clone()
            .unwrap_or_else(|| default_worker_id(&devices[0])),
    }
    .run(&mut on, &mut events)?;
    Ok(pool)
}

/// Why nothing could be measured on `device` (an empty space, or every configuration evaluated
/// failed), where that is so: a campaign that measured something succeeded, however much else
/// failed.
pub fn nothing_measured(spec: &Spec, r: &DeviceReport, device: &AnyDevice) -> Option<String> {
    if !r.measured_nothing() {
        return None;
    }
    if r.pruned == 0 {
        let target = ndtune_space::problem::Target::from_profile(&r.device, device.profile());
        return Some(match spec.problem.prune(&[target]) {
            Ok(pruning) => crate::space::empty_space(spec, &r.device, &pruning),
            Err(e) => spec.locate(&e).to_string(),
        });
    }
    // A budget that ran out before the first configuration (`--time 0s`) is what was asked.
    let tried = r.evaluated + r.reused;
    (tried > 0).then(|| {
        format!(
            "nothing could be measured on {}: all {tried} configurations evaluated failed ({}); the first of each kind are listed above",
            r.device,
            crate::outcome_counts(&r.outcomes)
        )
    })
}
