//! Co-execution as a front end asks for it ([`Split`], checked by [`prepare`] and run by
//! [`Prepared::run`]; `ndtune split`): the spec's kernel, or its twin in the other language, on
//! each device picked among the devices of both languages, with that device's best
//! configuration from the store (tuned first where the store holds none), made into the split
//! runtime's members and studied; the study kept in the store for `ndtune report`.

use crate::{best_recorded, devices, group, outcome_counts, DeviceReport};
use ndtune_backend::{AnyDevice, Api};
use ndtune_core::text::show_constants;
use ndtune_core::Constants;
use ndtune_spec::Spec;
use ndtune_split::runtime::{twin_mismatch, CoExecutor, ExecError, Member};
use ndtune_split::study::{study, DeviceRow, Options, Report};
use ndtune_store::Store;
use std::path::Path;
use std::sync::Arc;

/// Why the front end could not tune a member's missing best.
pub type TuneFirstError = Box<dyn std::error::Error + Send + Sync>;

/// Why co-execution cannot start, or its study cannot be kept.
#[derive(Debug, thiserror::Error)]
pub enum CoexecError {
    /// The spec, its twin or the devices do not go together.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Spec(#[from] ndtune_spec::SpecError),
    #[error(transparent)]
    Store(#[from] ndtune_store::StoreError),
    #[error(transparent)]
    Campaign(#[from] crate::CampaignError),
    /// Tuning a device's missing best failed (the front end says why).
    #[error("{0}")]
    Tuning(TuneFirstError),
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// One co-execution: a spec (read with `overrides`), its twin where some devices run the other
/// language, the devices, and how the study runs.
pub struct Split<'a> {
    pub spec: &'a Spec,
    pub overrides: &'a Constants,
    /// The spec of the same kernel in the other language (`--twin`).
    pub twin: Option<&'a Path>,
    /// The devices, a comma list of selectors (`--devices`).
    pub devices: &'a str,
    /// The dimension split (default: the spec's `[split] dim`).
    pub dim: Option<usize>,
    /// Each device's part cut into this many slices (`--slices`).
    pub slices: Option<usize>,
    /// The seed of the stored bests' campaigns and of the input data.
    pub seed: u64,
    pub options: Options,
}

/// A [`Split`] checked, its twin read and its devices opened: ready to [`Prepared::run`].
pub struct Prepared<'a> {
    split: &'a Split<'a>,
    twin: Option<Arc<Spec>>,
    dim: usize,
    devices: Vec<AnyDevice>,
    labels: Vec<String>,
}

/// Checks `split` (its `[split]` section, the dimension, the twin) and picks and opens its
/// devices, before any store is opened or anything measured.
pub fn prepare<'a>(split: &'a Split<'a>) -> Result<Prepared<'a>, CoexecError> {
    let spec = split.spec;
    let section = spec.split.as_ref().ok_or_else(|| {
        spec.split_error(
            "no [split] section: say which buffers follow the split (see docs/split.md)".into(),
        )
    })?;
    let dims = spec.problem.launch.as_ref().map_or(0, |l| l.global.len());
    let dim = split.dim.unwrap_or(section.dim);
    if dim >= dims {
        return Err(CoexecError::Invalid(format!(
            "--dim {dim}: the launch of {} has {dims} dimension(s), 0 to {}",
            spec.path.display(),
            dims.saturating_sub(1)
        )));
    }
    let twin = split
        .twin
        .map(|path| twin(spec, path, split.overrides))
        .transpose()?;
    let languages: Vec<Api> = std::iter::once(spec.kernel.language)
        .chain(twin.as_ref().map(|t| t.kernel.language))
        .collect();
    let devices = pick_devices(&languages, split.devices)?;
    let labels = devices.iter().map(|d| d.label()).collect();
    Ok(Prepared {
        split,
        twin,
        dim,
        devices,
        labels,
    })
}

impl Prepared<'_> {
    /// Finds each device's best (`tune` tunes it first where `store` holds none), co-executes
    /// and studies (`progress` hears what it is doing), and keeps the study in `store`,
    /// verified or not: the report says which.
    pub fn run(
        self,
        store: &Store,
        tune: &mut dyn FnMut(&Path, &AnyDevice, &str) -> Result<DeviceReport, TuneFirstError>,
        progress: &mut dyn FnMut(String),
    ) -> Result<Report, CoexecError> {
        let Prepared {
            split,
            twin,
            dim,
            devices,
            labels,
        } = self;
        let spec = split.spec;
        let (members, mut rows) = members(
            spec,
            twin.as_ref(),
            &devices,
            &labels,
            store,
            split.seed,
            tune,
        )?;
        let inputs = ndtune_bench::data::spec_inputs(spec, &members[0].config, split.seed)
            .map_err(|e| CoexecError::Invalid(format!("{}: {e}", spec.path.display())))?;
        let mut exec = CoExecutor::new(spec, &members, &labels, dim, &inputs)?;
        if let Some(n) = split.slices {
            exec.slices(n)?;
        }
        let s = study(&mut exec, spec, &split.options, progress)?;
        for (i, row) in rows.iter_mut().enumerate() {
            row.wg = exec.work_groups()[i];
            row.single_ms = s.single_ms[i];
            row.single_kernel_ms = s.single_kernel_ms[i];
        }
        let report = Report {
            kernel: spec.kernel.name.clone(),
            constants: spec.problem.constants.clone(),
            dim,
            devices: rows,
            study: s,
        };
        keep(store, &report, &labels)?;
        Ok(report)
    }
}

/// The kernel of `spec` in the other language, read from `path` with `overrides`: refused where
/// it is in the same language or differs from `spec` otherwise ([`twin_mismatch`]).
fn twin(spec: &Spec, path: &Path, overrides: &Constants) -> Result<Arc<Spec>, CoexecError> {
    let twin = Spec::load_with(path, overrides)?;
    if twin.kernel.language == spec.kernel.language {
        return Err(CoexecError::Invalid(format!(
            "--twin {}: its kernel is {} as {}'s is; a twin is the kernel in the other language",
            path.display(),
            twin.kernel.language,
            spec.path.display()
        )));
    }
    match twin_mismatch(spec, &twin) {
        Some(why) => Err(CoexecError::Invalid(format!("--twin {why}"))),
        None => Ok(Arc::new(twin)),
    }
}

/// The devices `list` names, picked as every command picks devices ([`devices::pick`]: each
/// at most once, no device together with a part of it) among those of `languages`, opened;
/// co-execution needs two at least.
fn pick_devices(languages: &[Api], list: &str) -> Result<Vec<AnyDevice>, CoexecError> {
    let picked = devices::pick_live_for(languages, list)
        .map_err(|e| CoexecError::Invalid(format!("--devices {e}")))?;
    if picked.len() < 2 {
        return Err(CoexecError::Invalid(format!(
            "--devices {list}: co-execution needs at least two devices, and {} {} picked",
            picked.len(),
            if picked.len() == 1 { "is" } else { "are" }
        )));
    }
    devices::open_picked(&picked)
        .map_err(|e| CoexecError::Invalid(format!("--devices {list}: {e}")))
}

/// Co-execution's members: on each of `devices` (labelled `labels`), `spec`'s kernel or `twin`
/// where the device runs the twin's language, with the device's best configuration stored for
/// it under `seed`; where the store holds none, `tune` tunes the member's spec file on the
/// device first (the front end's request, with its progress) and gives its report. Each
/// member's row of the study's table comes with it.
fn members(
    spec: &Spec,
    twin: Option<&Arc<Spec>>,
    devices: &[AnyDevice],
    labels: &[String],
    store: &Store,
    seed: u64,
    tune: &mut dyn FnMut(&Path, &AnyDevice, &str) -> Result<DeviceReport, TuneFirstError>,
) -> Result<(Vec<Member>, Vec<DeviceRow>), CoexecError> {
    let needed = |s: &Spec| {
        s.kernel_source()?.ok_or_else(|| {
            CoexecError::Invalid(format!("{}: [kernel] source is needed", s.path.display()))
        })
    };
    let source = needed(spec)?;
    let twin_source = twin.map(|t| needed(t)).transpose()?;
    let mut members = Vec::new();
    let mut rows = Vec::new();
    for (device, label) in devices.iter().zip(labels) {
        let twin = twin.filter(|t| t.kernel.language == device.api());
        let (own_spec, own_source) = match (twin, &twin_source) {
            (Some(t), Some(s)) => (t.as_ref(), s),
            _ => (spec, &source),
        };
        let g = group(own_spec, own_source, seed, device, store)?;
        let mut best = best_recorded(store, &g)?;
        if best.is_none() {
            let report = tune(&own_spec.path, device, label).map_err(CoexecError::Tuning)?;
            best = best_recorded(store, &g)?;
            if best.is_none() {
                return Err(CoexecError::Invalid(format!(
                    "{label} cannot run `{}`: tuning measured and verified no configuration ({})",
                    spec.kernel.name,
                    outcome_counts(&report.outcomes)
                )));
            }
        }
        let (config, timing) = best.expect("tuned above");
        let values: Vec<i64> = spec.codec.point(&config).map_err(|e| {
            CoexecError::Invalid(format!(
                "{label}: the stored best configuration does not fit the spec ({e}); re-tune"
            ))
        })?;
        rows.push(DeviceRow {
            device: label.clone(),
            config,
            tuned_ms: timing.score_ms(),
            wg: 0,
            single_ms: 0.0,
            single_kernel_ms: 0.0,
        });
        members.push(Member {
            device: device.clone(),
            config: values,
            twin: twin.cloned(),
        });
    }
    Ok((members, rows))
}

/// Keeps a co-execution study in the store (kind `split`, named by kernel, constants and the
/// devices' `labels`), verified or not: `ndtune report` draws it and says which.
fn keep(store: &Store, report: &Report, labels: &[String]) -> Result<(), CoexecError> {
    let body = serde_json::to_value(report)
        .map_err(|e| CoexecError::Invalid(format!("the study does not fit JSON: {e}")))?;
    store.put_study(&ndtune_store::Study {
        kind: "split".into(),
        name: format!(
            "{}{} on {}",
            report.kernel,
            show_constants(&report.constants),
            labels.join(" + ")
        ),
        body,
        created_at: ndtune_store::now_ms(),
    })?;
    Ok(())
}
