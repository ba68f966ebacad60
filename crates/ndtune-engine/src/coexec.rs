//! Co-execution as a front end starts it (`ndtune split`): the spec's kernel, or its twin in the
//! other language, on each device picked among the devices of both languages, with that
//! device's best configuration from the store (tuned first where the store holds none), made
//! into the split runtime's members; and the study kept in the store for `ndtune report`.

use crate::{best_recorded, devices, group, outcome_counts, DeviceReport};
use ndtune_backend::{AnyDevice, Api};
use ndtune_core::text::show_constants;
use ndtune_core::Constants;
use ndtune_spec::Spec;
use ndtune_split::runtime::{twin_mismatch, Member};
use ndtune_split::study::{DeviceRow, Report};
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
}

/// The kernel of `spec` in the other language, read from `path` with `overrides`: refused where
/// it is in the same language or differs from `spec` otherwise ([`twin_mismatch`]).
pub fn twin(spec: &Spec, path: &Path, overrides: &Constants) -> Result<Arc<Spec>, CoexecError> {
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
pub fn pick_devices(languages: &[Api], list: &str) -> Result<Vec<AnyDevice>, CoexecError> {
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
pub fn members(
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
pub fn keep(store: &Store, report: &Report, labels: &[String]) -> Result<(), CoexecError> {
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
