//! The extension's calls beside tuning, for python/ndtune/_api.py, each on the library the CLI
//! uses for the same thing:
//!
//! - [`run_kernel`]: one configuration of a spec run once in this process
//!   ([`ndtune_bench::evaluate::Bench::run_once`]), its buffers handed back.
//! - [`space`]: a spec's space pruned for a device without measuring
//!   ([`ndtune_engine::space::SpaceReport`], as `ndtune space --json`), with the first
//!   configurations where asked.
//! - [`store_results`]: every result a store holds ([`ndtune_report::stored`], as
//!   `ndtune show --json`).
//! - [`report`]: the HTML report of a store ([`ndtune_report`], as `ndtune report`).
//! - [`bench_strategies`]: strategies replayed on recorded spaces
//!   ([`ndtune_engine::strategy_bench`], as `ndtune bench-strategies --json`).
//! - [`best`]: the configuration of a kernel for a device and constants from a wisdom file
//!   ([`ndtune_wisdom::Runtime`], as `ndtune pick`; captured under `NDTUNE_CAPTURE`).
//! - [`collect`]: a stencil collection campaign measured into a store, and its CSV for
//!   learning ([`ndtune_collect`], as `ndtune collect` and `collect --export`).

use crate::{
    from_python, pick_device, spec_error, store_error, to_python, NdtuneError, WisdomError,
};
use ndtune_bench::evaluate::Bench;
use ndtune_core::{Config, Constants};
use ndtune_engine::space::SpaceReport;
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_store::Store;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{json, Value as Json};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

fn load(spec: &Path) -> PyResult<Spec> {
    Spec::load_with(spec, &Constants::new()).map_err(spec_error)
}

/// Runs `config` (a dict, parameter name to value) of `spec` once on device `device` of OpenCL
/// platform `platform`, unverified and untimed; returns each argument's buffer after the run
/// (`None` for a scalar). A failed build or a refused launch is an `NdtuneError` saying why.
#[pyfunction]
fn run_kernel(
    py: Python<'_>,
    spec: PathBuf,
    config: &Bound<'_, PyAny>,
    platform: usize,
    device: usize,
) -> PyResult<Vec<Option<Py<PyBytes>>>> {
    let spec = load(&spec)?;
    let config: Config = from_python("run_kernel's params", config)?;
    let point = spec
        .codec
        .point(&config)
        .map_err(|e| spec_error(format!("run_kernel: params: {e}")))?;
    let device = pick_device(spec.kernel.language, platform, device)?;
    let kernel = spec.kernel.name.clone();
    let ran = py.detach(|| Bench::new(spec, &device, 0).and_then(|mut b| b.run_once(&point)));
    let failed = |why: String| NdtuneError::new_err(format!("run_kernel `{kernel}`: {why}"));
    let buffers = ran
        .map_err(|f| failed(f.0))?
        .map_err(|outcome| match outcome.reason() {
            Some(why) => failed(format!("{}: {why}", outcome.kind())),
            None => failed(outcome.kind().to_string()),
        })?;
    Ok(buffers
        .into_iter()
        .map(|b| b.map(|bytes| PyBytes::new(py, &bytes).unbind()))
        .collect())
}

/// The space of `spec` pruned for device `device` of platform `platform` (Kernel Tuner's
/// numbers for the spec's language), as a dict: the
/// counts of [`SpaceReport`] and, where `limit` is given, `configs`: up to `limit` of the
/// configurations left, each parameter name to value.
#[pyfunction]
#[pyo3(signature = (spec, platform, device, limit=None))]
fn space(
    py: Python<'_>,
    spec: PathBuf,
    platform: usize,
    device: usize,
    limit: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let spec = load(&spec)?;
    let device = pick_device(spec.kernel.language, platform, device)?;
    let label = device.label();
    let pruning = spec
        .problem
        .prune(&[Target::from_profile(&label, device.profile())])
        .map_err(|e| spec_error(spec.locate(&e)))?;
    let mut out = serde_json::to_value(SpaceReport::new(&spec, Some(label), &pruning))
        .map_err(|e| NdtuneError::new_err(format!("the space's counts: {e}")))?;
    if let Some(limit) = limit {
        let mut configs = Vec::with_capacity(limit.min(1 << 16));
        if limit > 0 {
            pruning.space.for_each(|point| {
                configs.push(json!(spec.codec.config(point)));
                match configs.len() < limit {
                    true => ControlFlow::Continue(()),
                    false => ControlFlow::Break(()),
                }
            });
        }
        out["configs"] = Json::Array(configs);
    }
    to_python(py, &out)
}

/// The configuration of `kernel` from the wisdom file `wisdom` for device `device` of OpenCL
/// platform `platform` (`cuda`: CUDA device `device` by ordinal) at `constants` (a dict, name
/// to value), as `ndtune pick --json`'s `pick` (a dict); with `prefer`, from the tuned front (`ndtune pick
/// --prefer`). Each file is opened once per process (again where it changed), each device read
/// once.
#[pyfunction]
#[pyo3(signature = (wisdom, kernel, constants, platform, device, prefer=None, cuda=false))]
#[allow(clippy::too_many_arguments)]
fn best(
    py: Python<'_>,
    wisdom: PathBuf,
    kernel: &str,
    constants: &Bound<'_, PyAny>,
    platform: usize,
    device: usize,
    prefer: Option<&str>,
    cuda: bool,
) -> PyResult<Py<PyAny>> {
    let api = if cuda {
        ndtune_backend::Api::Cuda
    } else {
        ndtune_backend::Api::OpenCl
    };
    let prefer = prefer
        .map(ndtune_wisdom::Preference::parse)
        .transpose()
        .map_err(|e| WisdomError::new_err(format!("best: {e}")))?;
    use ndtune_wisdom::Runtime;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    type Opened = HashMap<(PathBuf, Option<std::time::SystemTime>), Arc<Runtime>>;
    static OPENED: Mutex<Option<Opened>> = Mutex::new(None);
    type Profiles = HashMap<(ndtune_backend::Api, usize, usize), ndtune_device::DeviceProfile>;
    static PROFILES: Mutex<Option<Profiles>> = Mutex::new(None);
    let constants: Constants = from_python("best: constants", constants)?;
    let profile = {
        let mut profiles = PROFILES.lock().unwrap_or_else(|p| p.into_inner());
        let profiles = profiles.get_or_insert_with(HashMap::new);
        match profiles.get(&(api, platform, device)) {
            Some(p) => p.clone(),
            None => {
                let p = pick_device(api, platform, device)?.profile().clone();
                profiles.insert((api, platform, device), p.clone());
                p
            }
        }
    };
    let modified = std::fs::metadata(&wisdom).and_then(|m| m.modified()).ok();
    let runtime = {
        let mut opened = OPENED.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            opened
                .get_or_insert_with(HashMap::new)
                .entry((wisdom.clone(), modified))
                .or_insert_with(|| Arc::new(Runtime::open(&wisdom))),
        )
    };
    let pick = py
        .detach(|| runtime.pick_preferring(kernel, &profile, &constants, prefer.as_ref()))
        .map_err(|e| WisdomError::new_err(e.to_string()))?;
    to_python(py, &pick)
}

/// Every result the store at `location` holds: a list of `ndtune show --json`'s objects.
#[pyfunction]
fn store_results(py: Python<'_>, location: &str) -> PyResult<Py<PyAny>> {
    let rows = py.detach(|| {
        let store = Store::open_read_only(location).map_err(store_error)?;
        let mut rows = Vec::new();
        for campaign in ndtune_report::stored::campaigns(&store).map_err(store_error)? {
            let metrics = campaign.metrics(&store).map_err(store_error)?;
            let constants = &campaign.group.constants;
            rows.extend(campaign.records.iter().map(|r| {
                let values = ndtune_report::stored::metric_values(&metrics, constants, r);
                ndtune_report::stored::json(&campaign.device_name, r, &values)
            }));
        }
        Ok::<_, PyErr>(rows)
    })?;
    to_python(py, &rows)
}

/// Writes the HTML report of the store at `location` to `out`, as `ndtune report` does; returns
/// the path written.
#[pyfunction]
fn report(py: Python<'_>, location: &str, out: PathBuf) -> PyResult<PathBuf> {
    py.detach(|| {
        let store = Store::open_read_only(location).map_err(store_error)?;
        let report = ndtune_report::Report::read(&store).map_err(store_error)?;
        let written = ndtune_report::write(&report, &out, ndtune_report::Format::Html)
            .map_err(store_error)?;
        Ok(written.path)
    })
}

/// Adds these calls to the extension module.
/// Replays each of `strategies` with seeds `0..seeds` at each of `budgets` on the datasets of
/// `recordings` (Kernel Tuner caches, CLTune CSV files, ndtune stores); with `warm`, each
/// dataset's runs first measure that many best configurations of the other datasets of the
/// same kernel. Returns a dict: `datasets` (id, configurations, optimum_ms, warm_points) and
/// `results` (per dataset and strategy: the mean fraction of the optimum per budget, the median
/// evaluations to 90% and 95% of it).
#[pyfunction]
#[pyo3(signature = (recordings, strategies, budgets, seeds, warm=None))]
fn bench_strategies(
    py: Python<'_>,
    recordings: Vec<PathBuf>,
    strategies: Vec<String>,
    budgets: Vec<usize>,
    seeds: u64,
    warm: Option<usize>,
) -> PyResult<Py<PyAny>> {
    use ndtune_engine::strategy_bench;
    let out = py.detach(|| {
        let fail = |e: strategy_bench::BenchError| NdtuneError::new_err(e.to_string());
        let mut datasets = Vec::new();
        for path in &recordings {
            datasets.extend(strategy_bench::datasets(path).map_err(fail)?);
        }
        let (infos, results) =
            strategy_bench::bench_all(&datasets, &strategies, &budgets, seeds, warm, |_| {})
                .map_err(fail)?;
        Ok::<_, PyErr>(json!({ "datasets": infos, "results": results }))
    })?;
    to_python(py, &out)
}

/// Runs the stencil collection campaign file `campaign` into the store `db` (its scenarios'
/// files under `work`), its measurement and build workers started as `worker` says; with
/// `export`, then writes the long CSV there. Returns a list: per scenario its label, outcome
/// counts, configurations evaluated now and reused, and the best time.
#[pyfunction]
#[pyo3(signature = (campaign, db, work, seed, worker, quiet, export=None))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one by one
fn collect(
    py: Python<'_>,
    campaign: PathBuf,
    db: String,
    work: PathBuf,
    seed: u64,
    worker: Vec<String>,
    quiet: bool,
    export: Option<PathBuf>,
) -> PyResult<Py<PyAny>> {
    use ndtune_collect::{CollectCampaign, CollectError, Measuring};
    use ndtune_engine::{Event, Processes};
    let fail = |e: CollectError| match e {
        CollectError::Campaign(why) => spec_error(why),
        CollectError::Store(e) => store_error(e),
        CollectError::Tuning(e) => crate::CampaignError::new_err(e.to_string()),
    };
    let plan = CollectCampaign::load(&campaign).map_err(fail)?;
    let devices = plan.devices().map_err(fail)?;
    let store = Store::open(&db).map_err(store_error)?;
    let scenarios = ndtune_collect::prepare(&plan, &devices, &work).map_err(fail)?;
    let (exe, args) = worker
        .split_first()
        .ok_or_else(|| NdtuneError::new_err("the worker command is empty"))?;
    let processes = Processes::with_args(exe.into(), args.iter().map(Into::into).collect());
    let mut done = Vec::new();
    for scenario in &scenarios {
        let how = Measuring {
            seed,
            timeout: None,
            store: db.clone().into(),
            worker: Some(format!("python:{}", std::process::id())),
            processes: processes.clone(),
        };
        let bar = crate::progress_bar(quiet, scenario.label.clone());
        let mut interrupted = None;
        let mut observer = |event: Event<'_>| match event {
            Event::Started { total } => bar.set_length(total as u64),
            Event::Evaluated { .. } => {
                bar.inc(1);
                crate::look_for_ctrl_c(py, &mut interrupted);
            }
            Event::Warning(message) => bar.println(format!("{}: {message}", scenario.label)),
        };
        let measured = scenario.measure(&store, &how, &mut observer);
        bar.finish_and_clear();
        ndtune_bench::children::carry_on();
        if let Some(e) = interrupted {
            return Err(e);
        }
        let report = measured.map_err(fail)?.report;
        done.push(json!({
            "label": scenario.label, "outcomes": report.outcomes, "evaluated": report.evaluated,
            "reused": report.reused, "best_ms": report.best_ms(),
        }));
    }
    if let Some(out) = export {
        ndtune_collect::export(&store, &out).map_err(fail)?;
    }
    to_python(py, &done)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(collect, m)?)?;
    m.add_function(wrap_pyfunction!(best, m)?)?;
    m.add_function(wrap_pyfunction!(run_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(space, m)?)?;
    m.add_function(wrap_pyfunction!(store_results, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(bench_strategies, m)?)?;
    Ok(())
}
