//! The Python extension `ndtune._ndtune`: what the `ndtune` package (python/) calls in Rust.
//! The package's Python code turns a Kernel Tuner style call into a spec directory: its
//! kernel files and arrays, and the spec as a dict of the spec file's sections, which
//! [`write_spec`] writes as `spec.toml` and validates (Python writes no TOML). This crate
//! tunes that spec as a [`ndtune_engine::TuneRequest`], the request the CLI makes: pruning, the
//! build pipeline, the supervised worker and the store, a pool for `parallel=`, a Kernel Tuner
//! cache continued and written.
//!
//! - [`tune`]: one campaign on one device, a progress bar on stderr, the evaluated
//!   configurations as Python objects; a Kernel Tuner cache read first (its entries become the store's)
//!   and written after. Where the call has functions of the parameters, the engine asks a
//!   Python callable about each configuration before it evaluates it ([`PyPerConfig`]).
//! - [`serve`]: the worker loops (`__worker`, `__builder`) for `python -m ndtune._worker`, which
//!   is how a campaign started from Python starts its workers.
//! - [`devices`]: the OpenCL devices as ndtune and Kernel Tuner number them.
//! - [`api`]: `run_kernel`, `space`, the store's results and its report.
//!
//! Everything crosses as Python objects, never as text to parse: calls take dicts that
//! deserialize into the engine's types (pythonize) and hand back dicts and lists.
//! Errors cross as Python exceptions: `SpecError` (file, line and column in the message),
//! `DeviceError`, `StoreError`, `CampaignError`, all `NdtuneError`s. Ctrl-C between two
//! configurations stops the campaign's workers and raises `KeyboardInterrupt`; everything
//! measured is in the store and the same call goes on from there.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ndtune_backend::{AnyDevice, Api};
use ndtune_bench::evaluate::Moment;
use ndtune_bench::worker::{Generated, OwnCheck};
use ndtune_core::{Config, Constants};
use ndtune_engine::pool::PoolEvent;
use ndtune_engine::{
    DeviceChoice, Event, KtCache, Mode, PerConfig, Processes, RequestError, RequestEvent, Search,
    TuneRequest,
};
use ndtune_metrics::Inputs;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

mod api;
mod kept_workers;
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

/// A value as Python objects (dicts in the value's order, lists, numbers, strings, `None`):
/// what the calls hand back.
fn to_python<T: serde::Serialize + ?Sized>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    pythonize::pythonize(py, value)
        .map(Bound::unbind)
        .map_err(|e| NdtuneError::new_err(format!("a result as Python objects: {e}")))
}

/// Python objects as the typed value a call takes; an error names `what` they were for.
fn from_python<T: serde::de::DeserializeOwned>(
    what: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    pythonize::depythonize(value).map_err(|e| SpecError::new_err(format!("{what}: {e}")))
}

/// Writes the spec `document` (a dict of the spec file's sections, as its TOML holds them:
/// docs/spec.md) as `directory/spec.toml` and validates it ([`ndtune_spec::Spec::write_document`]);
/// returns the file's path. The package writes the kernel's files and arrays there first.
#[pyfunction]
fn write_spec(directory: PathBuf, document: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let document: toml::Table = from_python("the spec document", document)?;
    ndtune_spec::Spec::write_document(&directory, &document)
        .map(|spec| spec.path)
        .map_err(spec_error)
}

/// The BLAKE3 (64 hex digits) of `head` and then the bytes of `array` (a C-contiguous NumPy
/// array, found through its `__array_interface__`: the limited API of Python 3.8 has no buffer
/// protocol), hashed on every core with the GIL released: the name of an array's data file, for
/// a call's 3 GB input in a fraction of a second where `hashlib`'s SHA-256 took two.
#[pyfunction]
fn digest(py: Python<'_>, head: &[u8], array: &Bound<'_, PyAny>) -> PyResult<String> {
    let interface = array.getattr("__array_interface__")?;
    let (address, _read_only): (usize, bool) = interface.get_item("data")?.extract()?;
    if !interface.get_item("strides")?.is_none() {
        return Err(SpecError::new_err(
            "digest: the array must be C-contiguous (numpy.ascontiguousarray)",
        ));
    }
    let length: usize = array.getattr("nbytes")?.extract()?;
    let bytes: &[u8] = if length == 0 {
        &[]
    } else {
        // SAFETY: NumPy's interface gives the address of the array's `nbytes` contiguous bytes
        // (strides None: C order); `array` is held by the caller until this returns.
        unsafe { std::slice::from_raw_parts(address as *const u8, length) }
    };
    Ok(py.detach(|| ndtune_core::text::blake3_hex(&[head, bytes])))
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

/// What CUDA kernels are built with in this process, as a dict: `nvrtc` (its `version` and the
/// `library` loaded, or the `error` why none loads), `nvcc` (`version` and `path`, or None), the
/// toolkit's `headers` folders NVRTC searches and the `toolkit_roots` looked in, in order. Needs
/// no driver.
#[pyfunction]
fn cuda_compilers(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let nvrtc = match ndtune_cuda::nvrtc::library()
        .and_then(|library| Ok((ndtune_cuda::nvrtc::version()?, library)))
    {
        Ok((version, library)) => json!({"version": version, "library": library}),
        Err(e) => json!({"error": e.to_string()}),
    };
    let nvcc = ndtune_cuda::nvcc::find()
        .map(|n| json!({"version": n.version, "path": n.path}))
        .unwrap_or(Json::Null);
    to_python(
        py,
        &json!({
            "nvrtc": nvrtc,
            "nvcc": nvcc,
            "headers": ndtune_cuda::nvrtc::toolkit_headers(),
            "toolkit_roots": ndtune_cuda::toolkit_roots(),
        }),
    )
}

/// The devices, as a list of dicts: each with ndtune's index, Kernel Tuner's platform and device
/// numbers, and its profile (`probe`: whole, a kernel built on each device for its preferred
/// work-group size multiple; else without it, and without making any device context).
#[pyfunction]
#[pyo3(signature = (probe = true))]
fn devices(py: Python<'_>, probe: bool) -> PyResult<Py<PyAny>> {
    let found = if probe {
        ndtune_backend::discover()
    } else {
        ndtune_backend::discover_unprobed()
    }
    .map_err(|e| DeviceError::new_err(e.to_string()))?;
    // Kernel Tuner's numbers: per OpenCL platform, and CUDA's ordinals.
    let mut per_platform: BTreeMap<(&str, usize), usize> = BTreeMap::new();
    let list: Vec<Json> = found
        .iter()
        .map(|d| {
            let api = match d.api() {
                Api::OpenCl => "opencl",
                Api::Cuda => "cuda",
            };
            let n = per_platform.entry((api, d.platform_index())).or_default();
            let entry = json!({
                "index": d.index(),
                "api": api,
                "platform": d.platform_index(),
                "device": *n,
                "name": d.profile().name,
                "profile": d.profile(),
            });
            *n += 1;
            entry
        })
        .collect();
    to_python(py, &list)
}

/// Kernel Tuner's `parallel=`: the numbers of device `device` of platform `platform` and of the
/// devices there identical to it ([`ndtune_engine::devices::parallel`]); all of them, or the
/// first `count`; among the devices of `language` (`opencl` or `cuda`).
#[pyfunction]
#[pyo3(signature = (platform, device, count = None, language = "opencl"))]
fn parallel_devices(
    platform: usize,
    device: usize,
    count: Option<usize>,
    language: &str,
) -> PyResult<Vec<usize>> {
    use ndtune_engine::devices::{parallel_here, ParallelError};
    let api = if language == "cuda" {
        Api::Cuda
    } else {
        Api::OpenCl
    };
    parallel_here(api, platform, device, count).map_err(|e| match e {
        ParallelError::Device(m) => DeviceError::new_err(m),
        ParallelError::Count(m) => SpecError::new_err(format!("tune_kernel: {m}")),
    })
}

/// Kernel Tuner's numbering: device `device` of platform `platform` among the devices of
/// `language`, opened alone.
fn pick_device(language: Api, platform: usize, device: usize) -> PyResult<AnyDevice> {
    use ndtune_engine::devices::{open_picked, pick_numbered};
    let fail = |e: ndtune_engine::devices::PickError| DeviceError::new_err(e.to_string());
    let picked = pick_numbered(language, platform, &[device]).map_err(fail)?;
    let mut opened = open_picked(&picked).map_err(fail)?;
    Ok(opened.remove(0))
}

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

/// What the Python side asks of one campaign (`_kt.py` hands it over as a dict).
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
    /// A Kernel Tuner cache to continue from and write, and its header's `kernel_name`,
    /// `problem_size`, `tune_params_keys` and `tune_params`.
    cache: Option<KtCache>,
    /// The outputs the callable's `check` verifies (Kernel Tuner's `verify`), and where they
    /// are written.
    check: Option<OwnCheck>,
    /// Tune on these devices of `platform` at once, one campaign shared among them
    /// ([`ndtune_engine::pool`]); `device` is the first.
    #[serde(default)]
    pool: Option<Vec<usize>>,
}

/// The Python side's functions of the parameters, asked about each configuration (a dict)
/// before the engine evaluates it: `None` excludes it, else `(source, global)`, each `None`
/// where the spec's stands. Where the call checks outputs, its `check` method gets the files of
/// a configuration's outputs (a dict: argument name to path) and returns why they are wrong, or
/// `None`. The first exception the callable raises stops the campaign and is
/// raised again once the campaign has ended.
struct PyPerConfig<'py> {
    callable: Bound<'py, PyAny>,
    check: Option<OwnCheck>,
    /// The callable's `generates`: whether it may give a configuration code of its own (true
    /// where it does not say).
    generates: bool,
    /// The callable's `observers`: the names of the observers of the timed runs whose hooks its
    /// `observe(moment, config)` calls (`config` a dict at `start`) and whose results its
    /// `observed()` gives, a dict by observer; none where it does not say.
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
        let answer = to_python(self.callable.py(), config)
            .and_then(|config| self.callable.call1((config,)))
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
        to_python(self.callable.py(), outputs)
            .and_then(|outputs| self.callable.call_method1("check", (outputs,)))
            .and_then(|a| a.extract::<Option<String>>())
            .map_err(|e| self.raised(e))
    }

    fn observers(&self) -> Vec<String> {
        self.observers.clone()
    }

    fn observe(&mut self, config: &Config, moment: Moment) -> Result<(), String> {
        let py = self.callable.py();
        let config = match moment {
            Moment::Start => Some(to_python(py, config)),
            _ => None,
        };
        let moment = serde_json::to_value(moment).expect("a moment is JSON");
        config
            .transpose()
            .and_then(|config| {
                self.callable
                    .call_method1("observe", (moment.as_str(), config))
            })
            .map(drop)
            .map_err(|e| self.raised(e))
    }

    fn observed(&mut self) -> Result<BTreeMap<String, Json>, String> {
        let values = self
            .callable
            .call_method0("observed")
            .map_err(|e| self.raised(e))?;
        pythonize::depythonize(&values)
            .map_err(|e| format!("the observers' results are no dict of numbers and strings: {e}"))
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

/// Tunes a spec as `call` (a dict, [`Call`]) says, keeping every outcome in the store; with
/// `per_config`, a callable asked about each configuration first ([`PyPerConfig`]). Returns
/// a dict: `results` (each evaluated configuration: `config`, `outcome` as the store keeps it,
/// `reused`, `metrics`: each of the spec's metrics and its value), `report` (the engine's report) and `device` (its profile).
#[pyfunction]
#[pyo3(signature = (call, per_config=None))]
fn tune(
    py: Python<'_>,
    call: &Bound<'_, PyAny>,
    per_config: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let call: Call = from_python("the call to _ndtune.tune", call)?;
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
    ran.and_then(|j| to_python(py, &j))
}

fn run(py: Python<'_>, call: &Call, per_config: Option<&mut PyPerConfig<'_>>) -> PyResult<Json> {
    let (exe, args) = call
        .worker
        .split_first()
        .ok_or_else(|| NdtuneError::new_err("the worker command is empty"))?;
    let processes = Processes::with_args(exe.into(), args.iter().map(Into::into).collect());
    let mut request = TuneRequest::new(call.spec.clone(), call.db.clone().into(), processes);
    // A pool's first device is the one asked for.
    request.devices = DeviceChoice::Numbered {
        platform: call.platform,
        devices: call.pool.clone().unwrap_or_else(|| vec![call.device]),
    };
    if call.pool.is_some() {
        request.mode = Mode::Pool;
    }
    request.search = Search {
        strategy: call.strategy.clone(),
        budget: call.budget,
        time: call.time_limit.map(Duration::from_secs_f64),
        warm_start: call.warm_start,
        seed: call.seed,
        build_jobs: call.build_jobs,
        ..Search::default()
    };
    request.timeout = call.timeout.map(Duration::from_secs_f64);
    request.kt_cache = call.cache.clone();
    request.name = Some(format!("python:{}", std::process::id()));
    let bar = progress_bar(call.quiet, String::new());
    let mut results: Vec<Json> = Vec::new();
    // Ctrl-C is looked for whenever the campaign reports (a configuration done, a pool's
    // progress): a notebook's interrupt signals this process alone, not a pool's workers.
    let mut interrupted: Option<PyErr> = None;
    // The campaign's metrics and constants, and how its best is shown.
    let mut campaign: Option<(ndtune_metrics::Metrics, Constants, String, String)> = None;
    // The campaign holds the GIL (the store is not `Sync`): Python threads wait while it runs.
    let ran = {
        let mut observer = |event: RequestEvent<'_>| match event {
            RequestEvent::Campaign { spec, .. } => {
                bar.set_prefix(spec.kernel.name.clone());
                let objective = spec.metrics.objective().metric.clone();
                let unit = spec
                    .metrics
                    .unit(&objective)
                    .unwrap_or_default()
                    .to_string();
                campaign = Some((
                    spec.metrics.clone(),
                    spec.problem.constants.clone(),
                    objective,
                    unit,
                ));
            }
            RequestEvent::Event { label, event } => match event {
                Event::Started { total } => bar.set_length(total as u64),
                Event::Evaluated {
                    config,
                    outcome,
                    reused,
                    best,
                    phases,
                } => {
                    let Some((metrics, constants, objective, unit)) = &campaign else {
                        return;
                    };
                    // Every metric's value (null where it has none), as Kernel Tuner puts them
                    // in its results.
                    let values = metrics.evaluate(&Inputs::new(constants, config, outcome));
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
                    look_for_ctrl_c(py, &mut interrupted);
                }
                Event::Warning(message) => bar.println(format!("{label}: {message}")),
            },
            RequestEvent::Pool(event) => match event {
                PoolEvent::Started { total, .. } => {
                    bar.set_length(total.try_into().unwrap_or(u64::MAX))
                }
                PoolEvent::Progress { results, .. } => {
                    bar.set_position(results);
                    look_for_ctrl_c(py, &mut interrupted);
                }
                PoolEvent::Said { label, line } => bar.println(format!("{label}: {line}")),
                // The last pass reads every result back, counting them again.
                PoolEvent::LastPass => bar.set_position(0),
            },
            RequestEvent::Note(line) => bar.println(line),
        };
        let mut kept = kept_workers::take();
        let ran = ndtune_engine::request::run_keeping(
            &request,
            Some(&mut kept),
            &mut observer,
            per_config.map(|p| p as &mut dyn PerConfig),
        );
        kept_workers::keep(kept);
        ran
    };
    bar.finish_and_clear();
    ndtune_bench::children::carry_on();
    if let Some(e) = interrupted {
        return Err(e);
    }
    let ran = ran.map_err(request_error)?;
    let device = &ran.devices[0];
    // Each pool worker's own account (the report's `time` is the last pass's), and how each
    // ended.
    let pool = ran.pool.as_ref().map_or(
        Json::Null,
        |p| json!({"wall_s": p.wall_s, "workers": p.accounts, "ends": p.ends}),
    );
    let (opencl_c_version, platform_version) = device
        .versions()
        .map_err(|e| DeviceError::new_err(e.to_string()))?;
    Ok(json!({
        "results": results, "report": ran.reports[0], "time": ran.time, "pool": pool,
        "device": device.profile(),
        "opencl_c_version": opencl_c_version, "platform_version": platform_version,
    }))
}

/// A request's error as the Python exception of its kind.
fn request_error(e: RequestError) -> PyErr {
    let message = e.to_string();
    match e {
        RequestError::Spec(_) | RequestError::Invalid(_) => SpecError::new_err(message),
        RequestError::Store(_) | RequestError::Cache(_) | RequestError::KtFile(_) => {
            StoreError::new_err(message)
        }
        RequestError::Device(_) | RequestError::Pick(_) => DeviceError::new_err(message),
        RequestError::Campaign(_) => CampaignError::new_err(message),
    }
}

#[pymodule]
fn _ndtune(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // NVIDIA's toolkit as Python packages install it, which Kernel Tuner's cuda-python finds
    // too: named before anything of CUDA loads, here and in every worker (each imports this).
    let folders: Vec<PathBuf> = py
        .import("sys")?
        .getattr("path")?
        .try_iter()?
        .filter_map(|entry| entry.ok()?.extract::<PathBuf>().ok())
        .filter(|folder| !folder.as_os_str().is_empty())
        .collect();
    ndtune_cuda::look_in_python_packages(folders);
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(parallel_devices, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_compilers, m)?)?;
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    m.add_function(wrap_pyfunction!(write_spec, m)?)?;
    m.add_function(wrap_pyfunction!(digest, m)?)?;
    m.add_function(wrap_pyfunction!(kept_workers::release_workers, m)?)?;
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
