//! Stencil data collection (Cummins et al. 2016, §3.3, §5, §6): a campaign file names devices,
//! stencil kernels and datasets ([`CollectCampaign`]); every (device, kernel, dataset) scenario
//! gets a spec of its own (the stencil skeleton with WG_C x WG_R as launch-only parameters, so one
//! build serves every size) and its features ([`prepare`]), and is measured exhaustively, every
//! size by the whole protocol (no racing: learning needs every size's time), by the tuning engine
//! into the store with its [`ScenarioInfo`] ([`Scenario::measure`]). [`export`] writes the long
//! CSV that `ndtune learn` reads. `ndtune collect` and the Python package's `ndtune.collect` call
//! it; they resolve the campaign's device selectors, show progress and print.

use indexmap::IndexMap;
use ndtune_backend::AnyDevice;
use ndtune_engine::share::{default_worker_id, GUARD_LEASE};
use ndtune_engine::{
    default_build_jobs, group, CampaignError, Observer, Options, Processes, Share, Tuned, Tuning,
};
use ndtune_learn::collected::{self, ScenarioInfo};
use ndtune_learn::features::{scenario_features, Dataset};
use ndtune_metrics::{MetricDef, Objective, Place};
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_stencil::Stencil;
use ndtune_store::{Store, StoreError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// Why a collection cannot go on; what was measured before is in the store.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// The campaign file, a scenario or a file it names is wrong.
    #[error("{0}")]
    Campaign(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Tuning(#[from] CampaignError),
}

fn campaign_error(e: impl std::fmt::Display) -> CollectError {
    CollectError::Campaign(e.to_string())
}

/// A collection campaign file (docs/collect.md).
pub struct CollectCampaign {
    pub path: PathBuf,
    /// Device selectors (`ndtune devices`), `0` where the file names none.
    pub devices: Vec<String>,
    pub kernels: Vec<Stencil>,
    /// (rows, columns) of each dataset.
    pub datasets: Vec<(u64, u64)>,
    grid: Grid,
    measure: ndtune_stencil::Measure,
    /// The campaign's metrics and objective (a spec's `[metrics]` and `[objective]`): what the
    /// oracle analysis and the models learned from the collection rank sizes by; the time
    /// where it names none.
    objective: (Vec<MetricDef>, Vec<Objective>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCampaign {
    #[serde(default)]
    devices: Vec<String>,
    #[serde(default)]
    kernels: Vec<String>,
    synthetic: Option<RawSynthetic>,
    datasets: Option<Vec<[u64; 2]>>,
    #[serde(default)]
    grid: Grid,
    #[serde(default)]
    measure: ndtune_stencil::Measure,
    #[serde(default)]
    metrics: IndexMap<String, ndtune_spec::raw::RawMetric>,
    objective: Option<Spanned<ndtune_spec::raw::RawObjective>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSynthetic {
    seed: u64,
    count: usize,
}

/// The work-group grid: each axis a list, a stepped range or powers of two; by default even
/// sizes (multiples of 2, as the paper) up to the scenario's limit.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Grid {
    wc: Option<Axis>,
    wr: Option<Axis>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Axis {
    List(Vec<u64>),
    Range { range: [u64; 2], step: Option<u64> },
    Pow2 { pow2: [u64; 2] },
}

impl Axis {
    fn values(&self, limit: u64) -> Vec<u64> {
        let mut v: Vec<u64> = match self {
            Axis::List(v) => v.clone(),
            Axis::Range {
                range: [a, b],
                step,
            } => (*a..=*b)
                .step_by(step.unwrap_or(1).max(1) as usize)
                .collect(),
            Axis::Pow2 { pow2: [a, b] } => (0..63)
                .map(|k| 1u64 << k)
                .filter(|v| (*a..=*b).contains(v))
                .collect(),
        };
        v.retain(|&x| x >= 1 && x <= limit);
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl Grid {
    /// Both axes on a device whose stencil kernel allows `wmax` work-items per group.
    fn axes(&self, device: &AnyDevice, wmax: u64) -> (Vec<u64>, Vec<u64>) {
        let item = |d: usize| {
            device
                .profile()
                .max_work_item_sizes
                .get(d)
                .copied()
                .unwrap_or(1)
        };
        let axis = |a: &Option<Axis>, d: usize| {
            let limit = item(d).min(wmax);
            match a {
                Some(a) => a.values(limit),
                None => Axis::Range {
                    range: [2, limit],
                    step: Some(2),
                }
                .values(limit),
            }
        };
        (axis(&self.wc, 0), axis(&self.wr, 1))
    }
}

impl CollectCampaign {
    /// Reads and checks a campaign file; errors name the file, and the line and column where
    /// TOML locates them.
    pub fn load(path: &Path) -> Result<CollectCampaign, CollectError> {
        let text = ndtune_core::input::read_text(path, ndtune_core::input::CAMPAIGN)
            .map_err(|e| campaign_error(e.to_string()))?;
        let at = |span: Option<std::ops::Range<usize>>, message: &str| {
            let (line, col) = span.map_or((0, 0), |s| ndtune_core::text::line_col(&text, s.start));
            campaign_error(format!(
                "{}:{line}:{col}: {}",
                path.display(),
                message.trim()
            ))
        };
        let raw: RawCampaign = toml::from_str(&text).map_err(|e| at(e.span(), e.message()))?;
        let metrics = raw
            .metrics
            .iter()
            .map(|(name, m)| MetricDef::new(name, &m.expr, m.unit.as_deref()))
            .collect();
        let objective = raw
            .objective
            .as_ref()
            .map(|o| o.get_ref().objectives().map_err(|e| at(Some(o.span()), &e)))
            .transpose()?
            .unwrap_or_default();
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut kernels = Vec::new();
        for k in &raw.kernels {
            let stencil = if k.ends_with(".toml") {
                Stencil::load(&dir.join(k)).map_err(campaign_error)?
            } else {
                ndtune_stencil::reference(k).ok_or_else(|| {
                    let names = ndtune_stencil::reference_names();
                    let hint = ndtune_space::resolve::closest(k, names.iter().map(String::as_str))
                        .map(|n| format!(" (did you mean `{n}`?)"))
                        .unwrap_or_default();
                    campaign_error(format!(
                        "{}: unknown kernel `{k}`{hint}: a kernel is a reference stencil ({}) or a .stencil.toml file",
                        path.display(),
                        names.join(", ")
                    ))
                })?
            };
            kernels.push(stencil);
        }
        if let Some(s) = &raw.synthetic {
            kernels.extend(ndtune_stencil::generate(s.seed, s.count));
        }
        if kernels.is_empty() {
            return Err(campaign_error(format!("{}: the campaign names no kernel (kernels = [...] or synthetic = {{ seed, count }})", path.display())));
        }
        let datasets = match &raw.datasets {
            Some(d) => d.iter().map(|[r, c]| (*r, *c)).collect(),
            None => [512, 1024, 2048, 4096].iter().map(|&n| (n, n)).collect(),
        };
        Ok(CollectCampaign {
            path: path.to_path_buf(),
            devices: if raw.devices.is_empty() {
                vec!["0".into()]
            } else {
                raw.devices
            },
            kernels,
            datasets,
            grid: raw.grid,
            measure: raw.measure,
            objective: (metrics, objective),
        })
    }

    /// Opens the campaign's devices, picked by their selectors as every command picks devices
    /// ([`ndtune_engine::devices::pick`]: OpenCL devices, as the stencils are OpenCL kernels;
    /// each at most once, no device together with a sub-device of it).
    pub fn devices(&self) -> Result<Vec<AnyDevice>, CollectError> {
        use ndtune_engine::devices::{open_picked, pick_live};
        let fail = |e: ndtune_engine::devices::PickError| {
            campaign_error(format!("{}: devices: {e}", self.path.display()))
        };
        let picked = pick_live(
            Some(ndtune_backend::Api::OpenCl),
            Some(&self.devices.join(",")),
        )
        .map_err(fail)?;
        open_picked(&picked).map_err(fail)
    }
}

/// One scenario, ready to measure: a stencil on a dataset on a device.
pub struct Scenario<'d> {
    pub device: &'d AnyDevice,
    /// `kernel ROWSxCOLS @ device`.
    pub label: String,
    /// Its spec, written under the work directory.
    pub spec: Spec,
    pub info: ScenarioInfo,
}

/// Every scenario of `campaign` on `devices` (the campaign's, [`CollectCampaign::devices`]):
/// their files written under `work`, their W_max, grid and features worked out. Everything is
/// checked first: a bad scenario stops the collection before anything is measured.
pub fn prepare<'d>(
    campaign: &CollectCampaign,
    devices: &'d [AnyDevice],
    work: &Path,
) -> Result<Vec<Scenario<'d>>, CollectError> {
    let path = &campaign.path;
    let mut scenarios = Vec::new();
    for (d, device) in devices.iter().enumerate() {
        for stencil in &campaign.kernels {
            for &(rows, cols) in &campaign.datasets {
                stencil
                    .check(rows, cols)
                    .map_err(|e| campaign_error(format!("{}: {e}", path.display())))?;
                scenarios.push((d, device, stencil, rows, cols));
            }
        }
    }
    let mut limits: BTreeMap<(usize, String), u64> = BTreeMap::new();
    let mut prepared = Vec::new();
    for (d, device, stencil, rows, cols) in scenarios {
        let label = format!("{} {rows}x{cols} @ {}", stencil.name, device.label());
        let source = stencil.device_source();
        let key = (d, stencil.name.clone());
        let wmax = match limits.get(&key) {
            Some(&w) => w,
            None => {
                let w = kernel_wmax(device, &source).map_err(|e| {
                    campaign_error(format!(
                        "{}: stencil `{}`: {e}",
                        device.label(),
                        stencil.name
                    ))
                })?;
                limits.insert(key, w);
                w
            }
        };
        let (wc, wr) = campaign.grid.axes(device, wmax);
        let spec_path = (!wc.is_empty() && !wr.is_empty())
            .then(|| {
                stencil.write_scenario(
                    &work.join(&stencil.name),
                    &device_tag(device),
                    rows,
                    cols,
                    &wc,
                    &wr,
                    wmax,
                    &campaign.measure,
                )
            })
            .transpose()
            .map_err(|e| {
                campaign_error(format!(
                    "writing the files of {label} under {}: {e}",
                    work.display()
                ))
            })?;
        let legal = match &spec_path {
            None => None,
            Some(p) => {
                let mut spec = Spec::load(p).map_err(campaign_error)?;
                let (metrics, objective) = &campaign.objective;
                if !metrics.is_empty() || !objective.is_empty() {
                    let defs = spec
                        .metrics
                        .definitions()
                        .clone()
                        .with(metrics.clone(), objective.clone());
                    spec.set_metrics(defs).map_err(|e| {
                        let section = match e.place {
                            Place::Objective => "[objective]",
                            Place::Metric(_) => "[metrics]",
                        };
                        campaign_error(format!("{}: {section} {e}", path.display()))
                    })?;
                }
                let pruning = spec
                    .problem
                    .prune(&[Target::from_profile(&label, device.profile())])
                    .map_err(|e| campaign_error(spec.locate(&e)))?;
                (pruning.stats.pruned > 0).then_some(spec)
            }
        };
        let Some(spec) = legal else {
            return Err(campaign_error(format!(
                "{}: {label}: the work-group grid has no size within W_max = {wmax} and the device's limits (per dimension {:?}, local memory {} bytes)",
                path.display(),
                device.profile().max_work_item_sizes,
                device.profile().local_mem_size
            )));
        };
        let features = scenario_features(
            device.profile(),
            &source,
            "",
            &dataset_of(stencil, rows, cols),
        )
        .map_err(|e| campaign_error(format!("{label}: features: {e}")))?;
        let info = ScenarioInfo {
            label: label.clone(),
            kernel: stencil.name.clone(),
            device: device.label(),
            dataset: format!("{rows}x{cols}"),
            wc,
            wr,
            wmax,
            feature_names: features.names,
            features: features.values,
        };
        prepared.push(Scenario {
            device,
            label,
            spec,
            info,
        });
    }
    Ok(prepared)
}

/// How a scenario is measured besides what collection fixes (exhaustive, no racing, the
/// device's default build workers, its claims guarded).
pub struct Measuring {
    /// Seed of the input data.
    pub seed: u64,
    /// A fixed per-evaluation deadline; without it, deadlines adapt.
    pub timeout: Option<Duration>,
    /// The store's location (file or URL, as opened), for the guard's heartbeat: what is
    /// measured is claimed, so that another process collecting the same scenario in the same
    /// store never measures it too.
    pub store: OsString,
    /// The name the claims are made under, before the device's selector (`python:PID`);
    /// without it, the host's name and this process's id.
    pub worker: Option<String>,
    pub processes: Processes,
}

impl Scenario<'_> {
    /// Keeps the scenario's info in the store and measures every size of its grid, each by the
    /// whole protocol (learning needs every size's time: no racing), reusing what the store
    /// holds.
    pub fn measure(
        &self,
        store: &Store,
        how: &Measuring,
        observer: &mut dyn Observer,
    ) -> Result<Tuned, CollectError> {
        let source = self
            .spec
            .kernel_source()
            .map_err(campaign_error)?
            .ok_or_else(|| {
                campaign_error(format!(
                    "{}: the scenario's spec names no source",
                    self.label
                ))
            })?;
        let g = group(&self.spec, &source, how.seed, self.device, store)?;
        store.put_scenario(
            &g,
            &serde_json::to_value(&self.info).expect("scenario info serialises"),
        )?;
        let tuned = Tuning {
            spec: &self.spec,
            overrides: &BTreeMap::new(),
            device: self.device,
            label: &self.label,
            store,
            options: Options {
                strategy: "exhaustive".into(),
                budget: None,
                time: None,
                warm_start: false,
                patience: None,
                configs: Vec::new(),
                share: None,
                guard: Some(Share {
                    worker: match &how.worker {
                        Some(name) => format!("{name}:{}", self.device.selector()),
                        None => default_worker_id(self.device),
                    },
                    lease: GUARD_LEASE,
                    location: how.store.clone(),
                }),
                seed: how.seed,
                timeout: how.timeout,
                build_jobs: default_build_jobs(self.device.as_ref()),
                race: None,
                advice_prior: true,
                keep_timed_out: false,
                cache_dir: None,
                processes: how.processes.clone(),
            },
            worker: None,
        }
        .run(observer, None)?;
        Ok(tuned)
    }
}

/// Names a device in generated file names.
fn device_tag(device: &AnyDevice) -> String {
    match device.sub() {
        Some((k, n)) => format!("d{}-{k}of{n}", device.index()),
        None => format!("d{}", device.index()),
    }
}

/// The W_max of a stencil kernel on a device: the device's limit and the build's
/// CL_KERNEL_WORK_GROUP_SIZE (one build: the work-group size is no define).
fn kernel_wmax(device: &AnyDevice, source: &str) -> Result<u64, ndtune_backend::DeviceError> {
    let mut session = device.session()?;
    let kernel = session.kernel(source, "stencil", "")?;
    let limits = session.limits(&kernel)?;
    Ok(limits
        .work_group_size
        .min(device.profile().max_work_group_size))
}

/// The dataset features of a stencil on a `rows` x `cols` grid.
pub fn dataset_of(stencil: &Stencil, rows: u64, cols: u64) -> Dataset {
    let b = &stencil.border;
    Dataset {
        rows,
        cols,
        input: stencil.input.c_name().into(),
        output: stencil.output.c_name().into(),
        border: [b.north, b.south, b.east, b.west],
    }
}

/// Writes the long CSV that `ndtune learn` reads: one row per scenario and work-group size of
/// its grid (docs/collect.md), with the run time, or the cost of the collection's objective and
/// its name; how many rows, scenarios and features it wrote.
pub fn export(store: &Store, out: &Path) -> Result<(usize, usize, usize), CollectError> {
    let c = collected::read(store)?;
    // The run time, or the collection objective's cost and its name on every row.
    let objective = (c.objective != Objective::time())
        .then(|| format!("{} ({})", c.objective.metric, c.objective.direction()));
    let scenarios: Vec<ScenarioInfo> = c.scenarios.into_iter().map(|(_, info)| info).collect();
    let obs = c.observations;
    if scenarios.is_empty() {
        return Err(campaign_error(format!(
            "{}: no collected scenario to export",
            store.path().display()
        )));
    }
    let names = &scenarios[0].feature_names;
    if let Some(other) = scenarios.iter().find(|i| &i.feature_names != names) {
        return Err(campaign_error(format!(
            "{}: scenario `{}` has other features than `{}` (collected by another ndtune?): re-collect it",
            store.path().display(),
            other.label,
            scenarios[0].label
        )));
    }
    let mut text = String::new();
    let mut header = vec!["scenario", "device", "kernel", "dataset"];
    header.extend(names.iter().map(String::as_str));
    match objective {
        None => header.extend(["wg_c", "wg_r", "runtime_ms", "status"]),
        Some(_) => header.extend(["wg_c", "wg_r", "cost", "status", "objective"]),
    }
    text.push_str(
        &header
            .iter()
            .map(|h| csv_field(h))
            .collect::<Vec<_>>()
            .join(","),
    );
    text.push('\n');
    for o in &obs {
        let info = &scenarios[o.scenario];
        let mut row = vec![
            csv_field(&info.label),
            csv_field(&info.device),
            csv_field(&info.kernel),
            csv_field(&info.dataset),
        ];
        row.extend(info.features.iter().map(|v| v.to_string()));
        row.push(o.wg.0.to_string());
        row.push(o.wg.1.to_string());
        row.push(o.cost.map_or(String::new(), |t| t.to_string()));
        row.push(o.status.as_str().to_string());
        if let Some(objective) = &objective {
            row.push(csv_field(objective));
        }
        text.push_str(&row.join(","));
        text.push('\n');
    }
    std::fs::write(out, text)
        .map_err(|e| campaign_error(format!("cannot write {}: {e}", out.display())))?;
    Ok((obs.len(), scenarios.len(), names.len()))
}

/// A CSV field, quoted where it must be (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Why a name given for a stencil is none.
#[derive(Debug, thiserror::Error)]
pub enum StencilNameError {
    #[error(transparent)]
    File(#[from] ndtune_stencil::StencilError),
    #[error("{name}: a prediction needs the stencil's definition ({definition}: types and border), not only its OpenCL source")]
    SourceOnly { name: String, definition: String },
    #[error("{name}: neither a .stencil.toml file nor a reference stencil ({known})")]
    Unknown { name: String, known: String },
}

/// A stencil as a command names one: its definition (a `.toml` file), the OpenCL source that
/// `ndtune stencil gen` wrote beside its definition (`STEM.cl` with `STEM.stencil.toml`: the
/// source alone lacks the types and border the features need), or a reference stencil's name.
pub fn stencil_named(name: &str) -> Result<Stencil, StencilNameError> {
    if name.ends_with(".toml") {
        return Ok(Stencil::load(Path::new(name))?);
    }
    if let Some(stem) = name.strip_suffix(".cl") {
        let definition = format!("{stem}.stencil.toml");
        if !Path::new(&definition).exists() {
            return Err(StencilNameError::SourceOnly {
                name: name.to_string(),
                definition,
            });
        }
        return Ok(Stencil::load(Path::new(&definition))?);
    }
    ndtune_stencil::reference(name).ok_or_else(|| StencilNameError::Unknown {
        name: name.to_string(),
        known: ndtune_stencil::reference_names().join(", "),
    })
}

/// The features of `stencil` on a `rows` x `cols` grid on `profile`'s device (those the
/// collected data hold for a scenario), by name.
pub fn stencil_features(
    stencil: &Stencil,
    rows: u64,
    cols: u64,
    profile: &ndtune_device::DeviceProfile,
) -> Result<ndtune_learn::features::Features, ndtune_learn::features::FeatureError> {
    scenario_features(
        profile,
        &stencil.device_source(),
        "",
        &dataset_of(stencil, rows, cols),
    )
}
