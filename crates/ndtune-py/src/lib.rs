//! The Python extension `ndtune._ndtune`: what the `ndtune` package (python/) calls in Rust.
//! The package's Python code turns a Kernel Tuner style call into a spec directory; this crate
//! tunes that spec through the same engine the CLI runs ([`ndtune_engine::Campaign`]): pruning,
//! the build pipeline, the supervised worker and the store.
//!
//! - [`tune`]: one campaign on one device, a progress bar on stderr, the evaluated
//!   configurations as JSON; a Kernel Tuner cache read first (its entries become the store's)
//!   and written after. Where the call has functions of the parameters, the engine asks a
//!   Python callable about each configuration before it evaluates it ([`PyPerConfig`]).
//! - [`serve`]: the worker loops (`__worker`, `__builder`) for `python -m ndtune._worker`, which
//!   is how a campaign started from Python starts its workers.
//! - [`devices`]: the OpenCL devices as ndtune and Kernel Tuner number them.
//! - [`api`]: `run_kernel`, `space`, the store's results and its report.
//!
//! Errors cross as Python exceptions: `SpecError` (file, line and column in the message),
//! `DeviceError`, `StoreError`, `CampaignError`, all `NdtuneError`s. Ctrl-C between two
//! configurations stops the campaign's workers and raises `KeyboardInterrupt`; everything
//! measured is in the store and the same call goes on from there.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ndtune_bench::evaluate::Moment;
use ndtune_bench::worker::{Generated, OwnCheck};
use ndtune_cl::ClDevice;
use ndtune_core::{Config, Constants, Outcome};
use ndtune_engine::pool::{Pool, PoolEvent};
use ndtune_engine::{Event, Options, PerConfig, Processes, Share, Tuning};
use ndtune_metrics::Inputs;
use ndtune_spec::Spec;
use ndtune_store::kt::{read_kt_cache, write_kt_cache, KtHeader, MetricValues};
use ndtune_store::{Group, Record, ResultKey, Store};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde_json::{json, Value as Json};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod api;
mod schedule;

create_exception!(
    _ndtune,
    NdtuneError,
    PyException,
    "Every error ndtune raises."
);
create_exception!(
    _ndtune,
    SpecError,
    NdtuneError,
    "The call or its spec cannot be tuned as given; the message names the file, line and column."
);
create_exception!(
    _ndtune,
    DeviceError,
    NdtuneError,
    "No OpenCL device, or not the one asked for."
);
create_exception!(
    _ndtune,
    StoreError,
    NdtuneError,
    "The results store or a cache file cannot be read or written."
);
create_exception!(
    _ndtune,
    CampaignError,
    NdtuneError,
    "A campaign stopped: a worker said the kernel or its reference is wrong."
);

create_exception!(
    _ndtune,
    WisdomError,
    NdtuneError,
    "A wisdom file gives no configuration: it cannot be used (missing, corrupt, newer, no such kernel) or none of its configurations fits; keep your own."
);

fn spec_error(e: impl std::fmt::Display) -> PyErr {
    SpecError::new_err(e.to_string())
}

fn store_error(e: impl std::fmt::Display) -> PyErr {
    StoreError::new_err(e.to_string())
}

/// Serves `__worker` or `__builder` on stdin/stdout until the campaign ends; the exit status.
#[pyfunction]
fn serve(py: Python<'_>, sub: &str) -> PyResult<i32> {
    match sub {
        "__worker" => Ok(py.detach(ndtune_bench::worker::serve)),
        "__builder" => Ok(py.detach(ndtune_bench::builder::serve)),
        "__campaign" => Ok(py.detach(ndtune_engine::pool::serve)),
        other => Err(NdtuneError::new_err(format!(
            "ndtune._worker serves __worker, __builder or __campaign, not `{other}`"
        ))),
    }
}

/// The OpenCL devices, as JSON: each with ndtune's index, Kernel Tuner's platform and device
/// numbers, and its profile (`probe`: whole, a kernel built on each device for its preferred
/// work-group size multiple; else without it, and without making any device context).
#[pyfunction]
#[pyo3(signature = (probe = true))]
fn devices(probe: bool) -> PyResult<String> {
    let found = if probe {
        ndtune_cl::discover()
    } else {
        ndtune_cl::discover_unprobed()
    }
    .map_err(|e| DeviceError::new_err(e.to_string()))?;
    let mut per_platform: BTreeMap<usize, usize> = BTreeMap::new();
    let list: Vec<Json> = found
        .iter()
        .map(|d| {
            let n = per_platform.entry(d.platform_index).or_default();
            let entry = json!({
                "index": d.index,
                "platform": d.platform_index,
                "device": *n,
                "name": d.profile.name,
                "profile": d.profile,
            });
            *n += 1;
            entry
        })
        .collect();
    Ok(Json::Array(list).to_string())
}

/// Kernel Tuner's numbering: device `device` of platform `platform`, opened alone.
fn pick_device(platform: usize, device: usize) -> PyResult<ClDevice> {
    let found = ndtune_cl::discover_unprobed().map_err(|e| DeviceError::new_err(e.to_string()))?;
    let on_platform: Vec<&ClDevice> = found
        .iter()
        .filter(|d| d.platform_index == platform)
        .collect();
    if on_platform.is_empty() {
        return Err(DeviceError::new_err(format!(
            "platform={platform}: there is no OpenCL platform {platform} with a device (ndtune.devices() lists them)"
        )));
    }
    let index = on_platform.get(device).map(|d| d.index).ok_or_else(|| {
        DeviceError::new_err(format!(
            "device={device}: platform {platform} has {} devices, numbered from 0",
            on_platform.len()
        ))
    })?;
    ndtune_cl::open(index).map_err(|e| DeviceError::new_err(e.to_string()))
}

/// How messages and the pruning name a device.
/// A progress bar named `prefix`, hidden where `quiet`.
fn progress_bar(quiet: bool, prefix: String) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new(0)
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(prefix);
    bar
}

/// What the Python side asks of one campaign (`_kt.py` sends it as JSON).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    spec: PathBuf,
    db: String,
    /// The command line that serves the worker loops (`python -P -m ndtune._worker`).
    worker: Vec<String>,
    /// Kernel Tuner's numbering: device `device` of OpenCL platform `platform`.
    platform: usize,
    device: usize,
    /// An ndtune strategy name.
    strategy: String,
    budget: Option<usize>,
    /// Seconds.
    time_limit: Option<f64>,
    seed: u64,
    build_jobs: Option<usize>,
    warm_start: bool,
    /// Seconds per evaluation.
    timeout: Option<f64>,
    quiet: bool,
    /// A Kernel Tuner cache to continue from and write, and the header to write it with
    /// (`kernel_name`, `problem_size`, `tune_params_keys`, `tune_params`).
    cache: Option<(PathBuf, Json)>,
    /// The outputs the callable's `check` verifies (Kernel Tuner's `verify`), and where they
    /// are written.
    check: Option<OwnCheck>,
    /// Tune on these devices of `platform` at once, one campaign shared among them
    /// ([`ndtune_engine::pool`]); `device` is the first.
    #[serde(default)]
    pool: Option<Vec<usize>>,
}

/// The Python side's functions of the parameters, asked about each configuration (as JSON)
/// before the engine evaluates it: `None` excludes it, else `(source, global)`, each `None`
/// where the spec's stands. Where the call checks outputs, its `check` method gets the files of
/// a configuration's outputs (JSON: argument name to path) and returns why they are wrong, or
/// `None`. The first exception the callable raises stops the campaign and is
/// raised again once the campaign has ended.
struct PyPerConfig<'py> {
    callable: Bound<'py, PyAny>,
    check: Option<OwnCheck>,
    /// The callable's `generates`: whether it may give a configuration code of its own (true
    /// where it does not say).
    generates: bool,
    /// The callable's `observers`: the names of the observers of the timed runs whose hooks its
    /// `observe(moment, config)` calls (`config` as JSON at `start`) and whose results its
    /// `observed()` gives, as JSON, by observer; none where it does not say.
    observers: Vec<String>,
    raised: Option<PyErr>,
}

impl PyPerConfig<'_> {
    /// Keeps the first exception; the campaign stops with its message.
    fn raised(&mut self, e: PyErr) -> String {
        let why = format!("a function of the parameters raised {e}");
        self.raised.get_or_insert(e);
        why
    }
}

impl PerConfig for PyPerConfig<'_> {
    fn configure(&mut self, config: &Config) -> Result<Option<Generated>, String> {
        let config = serde_json::to_string(config).expect("a configuration is JSON");
        let answer = self
            .callable
            .call1((config,))
            .and_then(|a| a.extract::<Option<(Option<String>, Option<Vec<usize>>)>>());
        match answer {
            Ok(answer) => Ok(answer.map(|(source, global)| Generated { source, global })),
            Err(e) => Err(self.raised(e)),
        }
    }

    fn generates_code(&self) -> bool {
        self.generates
    }

    fn own_check(&self) -> Option<&OwnCheck> {
        self.check.as_ref()
    }

    fn check(&mut self, outputs: &BTreeMap<String, PathBuf>) -> Result<Option<String>, String> {
        let outputs = serde_json::to_string(outputs).expect("paths are JSON");
        self.callable
            .call_method1("check", (outputs,))
            .and_then(|a| a.extract::<Option<String>>())
            .map_err(|e| self.raised(e))
    }

    fn observers(&self) -> Vec<String> {
        self.observers.clone()
    }

    fn observe(&mut self, config: &Config, moment: Moment) -> Result<(), String> {
        let config = match moment {
            Moment::Start => Some(serde_json::to_string(config).expect("a configuration is JSON")),
            _ => None,
        };
        let moment = serde_json::to_value(moment).expect("a moment is JSON");
        self.callable
            .call_method1("observe", (moment.as_str(), config))
            .map(drop)
            .map_err(|e| self.raised(e))
    }

    fn observed(&mut self) -> Result<BTreeMap<String, Json>, String> {
        let values = self
            .callable
            .call_method0("observed")
            .and_then(|a| a.extract::<String>())
            .map_err(|e| self.raised(e))?;
        serde_json::from_str(&values)
            .map_err(|e| format!("the observers' results are no JSON object: {e}"))
    }
}

/// Ctrl-C reaches Python's handler, which only notes it: where it was pressed and `seen` holds
/// nothing yet, keeps the `KeyboardInterrupt` there and stops the campaign's workers as a
/// signal to the CLI does (what was measured stays).
pub(crate) fn look_for_ctrl_c(py: Python<'_>, seen: &mut Option<PyErr>) {
    if seen.is_none() {
        if let Err(e) = py.check_signals() {
            *seen = Some(e);
            ndtune_bench::children::stop(libc::SIGINT);
        }
    }
}

/// Tunes a spec as `call` (JSON, [`Call`]) says, keeping every outcome in the store; with
/// `per_config`, a callable asked about each configuration first ([`PyPerConfig`]). Returns
/// JSON: `results` (each evaluated configuration: `config`, `outcome` as the store keeps it,
/// `reused`, `metrics`: each of the spec's metrics and its value), `report` (the engine's report) and `device` (its profile).
#[pyfunction]
#[pyo3(signature = (call, per_config=None))]
fn tune(py: Python<'_>, call: &str, per_config: Option<Bound<'_, PyAny>>) -> PyResult<String> {
    let call: Call = serde_json::from_str(call)
        .map_err(|e| NdtuneError::new_err(format!("the call to _ndtune.tune: {e}")))?;
    let mut per_config = per_config.map(|callable| PyPerConfig {
        generates: callable
            .getattr("generates")
            .and_then(|g| g.extract::<bool>())
            .unwrap_or(true),
        observers: callable
            .getattr("observers")
            .and_then(|o| o.extract::<Vec<String>>())
            .unwrap_or_default(),
        callable,
        check: call.check.clone(),
        raised: None,
    });
    let ran = run(py, &call, per_config.as_mut());
    if let Some(e) = per_config.and_then(|p| p.raised) {
        return Err(e);
    }
    ran.map(|j| j.to_string())
}

fn run(py: Python<'_>, call: &Call, per_config: Option<&mut PyPerConfig<'_>>) -> PyResult<Json> {
    let overrides = Constants::new();
    let spec = Spec::load_with(&call.spec, &overrides).map_err(spec_error)?;
    let source = spec
        .kernel_source()
        .map_err(spec_error)?
        .ok_or_else(|| spec_error(format!("{}: no kernel source", call.spec.display())))?;
    let pool = call
        .pool
        .as_ref()
        .map(|numbers| {
            numbers
                .iter()
                .map(|&d| pick_device(call.platform, d))
                .collect::<PyResult<Vec<_>>>()
        })
        .transpose()?;
    // A pool's first device is the one asked for.
    let device = match (&pool, &call.pool) {
        (Some(devices), Some(numbers)) if numbers.first() == Some(&call.device) => {
            devices[0].clone()
        }
        _ => pick_device(call.platform, call.device)?,
    };
    let label = device.label();
    let store = Store::open(&call.db).map_err(store_error)?;
    let group = ndtune_engine::group(&spec, &source, call.seed, &device, &store)
        .map_err(|e| CampaignError::new_err(e.to_string()))?;
    let header = call
        .cache
        .as_ref()
        .map(|(path, header)| kt_header(path, header, &device, &spec))
        .transpose()?;
    if let (Some((path, _)), Some(header)) = (&call.cache, &header) {
        continue_from_cache(path, header, &store, &group)?;
    }
    let (exe, args) = call
        .worker
        .split_first()
        .ok_or_else(|| NdtuneError::new_err("the worker command is empty"))?;
    let bar = progress_bar(call.quiet, spec.kernel.name.clone());
    let objective = &spec.metrics.objective().metric;
    let unit = spec.metrics.unit(objective).unwrap_or_default();
    let mut results: Vec<Json> = Vec::new();
    // Ctrl-C is looked for whenever the campaign reports (a configuration done, a pool's
    // progress): a notebook's interrupt signals this process alone, not a pool's workers.
    let interrupted: RefCell<Option<PyErr>> = RefCell::new(None);
    let look_for_ctrl_c = || look_for_ctrl_c(py, &mut interrupted.borrow_mut());
    let options = Options {
        strategy: call.strategy.clone(),
        budget: call.budget,
        time: call.time_limit.map(Duration::from_secs_f64),
        warm_start: call.warm_start,
        patience: None,
        configs: Vec::new(),
        share: None,
        guard: Some(Share {
            worker: format!("python:{}:{}", std::process::id(), device.index),
            lease: ndtune_engine::share::GUARD_LEASE,
            location: call.db.clone().into(),
        }),
        seed: call.seed,
        timeout: call.timeout.map(Duration::from_secs_f64),
        build_jobs: call
            .build_jobs
            .unwrap_or_else(|| ndtune_engine::default_build_jobs(device.profile.device_type)),
        race: spec.measure.race,
        advice_prior: true,
        keep_timed_out: false,
        processes: Processes::with_args(exe.into(), args.iter().map(Into::into).collect()),
    };
    // Pruned, its space recorded and `auto` resolved as `ndtune tune` does; a pool's workers
    // share the campaign through the store, and its last pass reads every result back.
    let tuning = Tuning {
        spec: &spec,
        overrides: &overrides,
        device: &device,
        label: &label,
        store: &store,
        options: options.clone(),
        worker: None,
    };
    // The campaign holds the GIL (the store is not `Sync`): Python threads wait while it runs.
    let report = {
        let mut observer = |event: Event<'_>| match event {
            Event::Started { total } => bar.set_length(total as u64),
            Event::Evaluated {
                config,
                outcome,
                reused,
                best,
                phases,
            } => {
                // Every metric's value (null where it has none), as Kernel Tuner puts them in
                // its results.
                let values = spec
                    .metrics
                    .evaluate(&Inputs::new(&group.constants, config, outcome));
                let metrics: serde_json::Map<String, Json> = values
                    .metrics
                    .into_iter()
                    .map(|(name, v)| (name, json!(v)))
                    .collect();
                // When it was evaluated or read back, as Kernel Tuner stamps each result.
                let at_ms = ndtune_store::now_ms();
                results.push(json!({
                    "config": config, "outcome": outcome, "reused": reused, "metrics": metrics,
                    "phases": phases, "at_ms": at_ms,
                }));
                bar.inc(1);
                if let Some(v) = best {
                    bar.set_message(format!("best {objective} {v:.4} {unit}"));
                }
                look_for_ctrl_c();
            }
            Event::Warning(message) => bar.println(format!("{label}: {message}")),
        };
        match &pool {
            None => tuning
                .run(&mut observer, per_config.map(|p| p as &mut dyn PerConfig))
                .map(|tuned| (tuned.report, Json::Null)),
            Some(devices) => {
                let mut on = |event: PoolEvent<'_>| match event {
                    PoolEvent::Started { total, .. } => {
                        bar.set_length(total.try_into().unwrap_or(u64::MAX))
                    }
                    PoolEvent::Progress { results, .. } => {
                        bar.set_position(results);
                        look_for_ctrl_c();
                    }
                    PoolEvent::Said { label, line } => bar.println(format!("{label}: {line}")),
                    // The last pass reads every result back, counting them again.
                    PoolEvent::LastPass => bar.set_position(0),
                };
                Pool {
                    spec: &spec,
                    overrides: &overrides,
                    devices,
                    store: &store,
                    location: call.db.clone().into(),
                    db_retry: Duration::from_secs(60),
                    options: Options {
                        guard: None,
                        build_jobs: call.build_jobs.unwrap_or_else(|| {
                            ndtune_engine::default_build_jobs(devices[0].profile.device_type)
                        }),
                        ..options
                    },
                    lease: ndtune_engine::share::GUARD_LEASE,
                    id: format!("python:{}", std::process::id()),
                }
                .run(&mut on, &mut observer)
                .map(|p| {
                    // Each worker's own account (the report's `time` is the last pass's), and
                    // how each ended.
                    let pool = json!({"wall_s": p.wall_s, "workers": p.accounts, "ends": p.ends});
                    (p.report, pool)
                })
            }
        }
    };
    bar.finish_and_clear();
    ndtune_bench::children::carry_on();
    if let (Some((path, _)), Some(header)) = (&call.cache, &header) {
        let records = store.records(&group).map_err(store_error)?;
        if !records.is_empty() {
            let metrics: MetricValues = records
                .iter()
                .filter_map(|r| {
                    let shown = spec
                        .metrics
                        .evaluate(&Inputs::new(&group.constants, &r.key.config, &r.outcome))
                        .shown();
                    (!shown.is_empty()).then(|| (r.key.config.clone(), shown))
                })
                .collect();
            write_kt_cache(path, header, &records, &metrics).map_err(store_error)?;
        }
    }
    if let Some(e) = interrupted.into_inner() {
        return Err(e);
    }
    let (report, pool) = report.map_err(|e| CampaignError::new_err(e.to_string()))?;
    let (opencl_c_version, platform_version) = device
        .versions()
        .map_err(|e| DeviceError::new_err(e.to_string()))?;
    Ok(json!({
        "results": results, "report": report, "pool": pool, "device": device.profile,
        "opencl_c_version": opencl_c_version, "platform_version": platform_version,
    }))
}

/// The header of the Kernel Tuner cache the Python side describes (`kernel_name`,
/// `problem_size`, `tune_params_keys`, `tune_params`), on `device`, with the spec's metrics and
/// objective.
fn kt_header(path: &Path, header: &Json, device: &ClDevice, spec: &Spec) -> PyResult<KtHeader> {
    let field = |name: &str| {
        header
            .get(name)
            .cloned()
            .ok_or_else(|| NdtuneError::new_err(format!("cache header lacks `{name}`")))
    };
    let parse = |e: serde_json::Error| {
        NdtuneError::new_err(format!("{}: cache header: {e}", path.display()))
    };
    Ok(KtHeader {
        device_name: device.profile.name.clone(),
        kernel_name: serde_json::from_value(field("kernel_name")?).map_err(parse)?,
        problem_size: field("problem_size")?,
        tune_params_keys: serde_json::from_value(field("tune_params_keys")?).map_err(parse)?,
        tune_params: serde_json::from_value(field("tune_params")?).map_err(parse)?,
        objective: spec.metrics.objective().metric.clone(),
        objective_higher_is_better: Some(spec.metrics.objective().higher_is_better),
        metrics: spec.metrics.definitions().metrics.clone(),
    })
}

/// Continues from a Kernel Tuner cache, as Kernel Tuner does: its entries that the store does
/// not hold yet become the campaign's records, so they are reused and not measured again. A
/// cache of another kernel, device or parameter space is refused, as Kernel Tuner refuses it.
fn continue_from_cache(
    path: &Path,
    header: &KtHeader,
    store: &Store,
    group: &Group,
) -> PyResult<()> {
    if !path.exists() {
        return Ok(());
    }
    let cache = read_kt_cache(path).map_err(store_error)?;
    for (what, theirs, ours) in [
        (
            "kernel_name",
            &cache.header.kernel_name,
            &header.kernel_name,
        ),
        (
            "device_name",
            &cache.header.device_name,
            &header.device_name,
        ),
    ] {
        if theirs != ours {
            return Err(StoreError::new_err(format!(
                "{}: the cache's {what} is `{theirs}`, this call's `{ours}`: give another cache file",
                path.display()
            )));
        }
    }
    if cache.header.tune_params != header.tune_params
        || cache.header.tune_params_keys != header.tune_params_keys
    {
        return Err(StoreError::new_err(format!(
            "{}: the cache's tune_params differ from this call's: give another cache file",
            path.display()
        )));
    }
    let known: std::collections::HashSet<Config> = store
        .records(group)
        .map_err(store_error)?
        .into_iter()
        .map(|r| r.key.config)
        .collect();
    let now = ndtune_store::now_ms();
    for (config, outcome) in cache.entries {
        // A cache entry of a configuration this spec prunes carries no measurement.
        if known.contains(&config) || matches!(outcome, Outcome::Pruned { .. }) {
            continue;
        }
        store
            .insert(&Record {
                key: ResultKey::new(group, config),
                outcome,
                ndtune_version: format!("Kernel Tuner cache {}", path.display()),
                started_at: now,
                finished_at: now,
            })
            .map_err(store_error)?;
    }
    Ok(())
}

#[pymodule]
fn _ndtune(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    api::register(m)?;
    m.add_class::<schedule::Schedule>()?;
    m.add("NdtuneError", py.get_type::<NdtuneError>())?;
    m.add("SpecError", py.get_type::<SpecError>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("CampaignError", py.get_type::<CampaignError>())?;
    m.add("WisdomError", py.get_type::<WisdomError>())?;
    Ok(())
}
