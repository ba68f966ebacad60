//! What pruning made of a spec's space, as `ndtune space --json` prints it, tuning keeps it in
//! the store for `ndtune report`, and Python's `ndtune.space` returns it: the declared, bounded
//! and pruned counts, and what each constraint removed; and the spaces of a spec on several
//! devices and their common space ([`spaces`]).

use crate::devices::Target;
use crate::kernel_check::{self, KernelCheck};
use crate::CampaignError;
use ndtune_space::problem::{Origin, Pruning, Target as PlatformTarget};
use ndtune_spec::Spec;
use serde::Serialize;
use std::collections::HashSet;

/// What one constraint removed: the configurations it was the first to reject.
#[derive(Debug, Clone, Serialize)]
pub struct Removal {
    pub constraint: String,
    /// `application` (the spec's constraints and restrictions) or `platform` (the device model).
    pub origin: &'static str,
    pub removed: u128,
}

/// The counts of one pruned space.
#[derive(Debug, Clone, Serialize)]
pub struct SpaceReport {
    pub kernel: String,
    /// The constants the spec was read with.
    pub constants: ndtune_core::Constants,
    pub device: Option<String>,
    pub declared: u128,
    pub bounded: u128,
    /// Configurations left.
    pub pruned: u128,
    /// Parameters in evaluation order.
    pub order: Vec<String>,
    pub constraints: Vec<Removal>,
    /// How to keep what eq. 2 or eq. 3 removed ([`Pruning::hints`]).
    pub hints: Vec<String>,
}

impl SpaceReport {
    /// The report of `pruning`, the space of `spec` on `device` (its label; none without one).
    pub fn new(spec: &Spec, device: Option<String>, pruning: &Pruning) -> SpaceReport {
        SpaceReport {
            kernel: spec.kernel.name.clone(),
            constants: spec.problem.constants.clone(),
            device,
            declared: pruning.stats.declared,
            bounded: pruning.bounded,
            pruned: pruning.stats.pruned,
            order: pruning
                .space
                .order()
                .into_iter()
                .map(String::from)
                .collect(),
            constraints: pruning
                .space
                .labels()
                .iter()
                .zip(&pruning.stats.removed)
                .zip(&pruning.origins)
                .map(|((label, removed), (origin, _))| Removal {
                    constraint: label.clone(),
                    origin: match origin {
                        Origin::User(_) => "application",
                        Origin::Platform(_) => "platform",
                    },
                    removed: *removed,
                })
                .collect(),
            hints: spec
                .problem
                .launch
                .as_ref()
                .map_or_else(Vec::new, |l| pruning.hints(l)),
        }
    }
}

/// Why the space of `spec` is empty on `label`: each constraint that removed configurations,
/// with how many would remain without it, and how to keep what the platform model removed.
pub fn empty_space(spec: &Spec, label: &str, pruning: &Pruning) -> String {
    let mut why: Vec<String> = pruning
        .emptied_by(&spec.problem)
        .into_iter()
        .map(|(c, removed, without)| {
            format!("  {c}\n    removed {removed}; without it {without} configurations remain")
        })
        .collect();
    if let Some(launch) = &spec.problem.launch {
        why.extend(pruning.hints(launch).iter().map(|h| format!("  hint: {h}")));
    }
    format!(
        "the space of `{}` is empty on {label}; the constraints that emptied it:\n{}",
        spec.kernel.name,
        why.join("\n")
    )
}

/// What `ndtune space --json` prints for one space: the counts and, on a live device, what
/// building each configuration found.
#[derive(Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub space: SpaceReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_check: Option<KernelCheck>,
}

/// `ndtune space --json` over several devices: the common space and each device's.
#[derive(Serialize)]
pub struct AllReport {
    #[serde(flatten)]
    pub common: Report,
    pub devices: Vec<Report>,
}

/// One pruned space: a device's, the common one, or the device-free one.
pub struct Pruned {
    pub label: Option<String>,
    pub pruning: Pruning,
    pub kernel_check: Option<KernelCheck>,
}

impl Pruned {
    /// Configurations left, less those the kernel check removed where it prunes.
    pub fn valid(&self) -> u128 {
        let removed = self
            .kernel_check
            .as_ref()
            .filter(|k| k.pruned_by_query)
            .map_or(0, |k| k.removed as u128);
        self.pruning.stats.pruned - removed
    }

    /// The configurations the kernel check removed from the space, where it prunes.
    pub fn excluded(&self) -> Option<&HashSet<Vec<i64>>> {
        self.kernel_check
            .as_ref()
            .filter(|k| k.pruned_by_query)
            .map(|k| &k.removed_configs)
    }

    pub fn report(self, spec: &Spec) -> Report {
        let valid = self.valid();
        let mut space = SpaceReport::new(spec, self.label, &self.pruning);
        space.pruned = valid;
        Report {
            space,
            kernel_check: self.kernel_check,
        }
    }
}

/// The spaces of a spec on its devices: each device's, and the one that is listed and summed
/// up: the common space across several devices (`all`: even one), else none (the device's own
/// is), or with no device the device-free space.
pub struct Spaces {
    pub per_device: Vec<Pruned>,
    pub shared: Option<Pruned>,
}

/// How [`spaces`] checks each configuration's own build on a live device
/// ([`crate::kernel_check`]).
pub struct BuildCheck {
    /// Build each configuration of spaces up to this size.
    pub cap: u128,
    /// Remove what exceeds its build's work-group size instead of only counting it.
    pub prune_by_query: bool,
}

/// Prunes `spec`'s space on each of `devices` (their builds checked on live ones, `starting`
/// told the device and how many before), and the common space where there are several or
/// `all`; the error locates the constraint in the spec.
pub fn spaces(
    spec: &Spec,
    devices: &[Target],
    all: bool,
    check: &BuildCheck,
    starting: &mut dyn FnMut(&str, u128),
) -> Result<Spaces, CampaignError> {
    let source = match devices.iter().any(|d| d.live.is_some()) {
        true => spec
            .kernel_source()
            .map_err(|e| CampaignError::Spec(e.to_string()))?,
        false => None,
    };
    let prune = |targets: &[PlatformTarget]| {
        spec.problem
            .prune(targets)
            .map_err(|e| CampaignError::Spec(spec.locate(&e).to_string()))
    };
    let mut per_device = Vec::new();
    for d in devices {
        let pruning = prune(&[PlatformTarget::from_profile(&d.label, &d.profile)])?;
        let kernel_check = match (&d.live, &source) {
            (Some(device), Some(src)) => {
                let name = device.profile().name.clone();
                kernel_check::check(spec, src, device, &pruning, check.cap, |n| {
                    starting(&name, n)
                })
                .map_err(|e| CampaignError::Spec(e.to_string()))?
                .map(|mut k| {
                    k.pruned_by_query = check.prune_by_query;
                    k
                })
            }
            _ => None,
        };
        per_device.push(Pruned {
            label: Some(d.label.clone()),
            pruning,
            kernel_check,
        });
    }
    let shared = match devices.len() {
        0 => Some(Pruned {
            label: None,
            pruning: prune(&[])?,
            kernel_check: None,
        }),
        1 if !all => None,
        _ => {
            let targets: Vec<PlatformTarget> = devices
                .iter()
                .map(|d| PlatformTarget::from_profile(&d.label, &d.profile))
                .collect();
            // A configuration whose own build is too small on any device is out of the common
            // space.
            let removed_configs: HashSet<Vec<i64>> = per_device
                .iter()
                .filter_map(|p| p.kernel_check.as_ref())
                .flat_map(|k| k.removed_configs.iter().cloned())
                .collect();
            let kernel_check = (!removed_configs.is_empty()).then(|| KernelCheck {
                removed: removed_configs.len(),
                removed_configs,
                pruned_by_query: check.prune_by_query,
                ..KernelCheck::default()
            });
            Some(Pruned {
                label: Some("common".into()),
                pruning: prune(&targets)?,
                kernel_check,
            })
        }
    };
    Ok(Spaces { per_device, shared })
}

impl Spaces {
    /// The space listed and summed up.
    pub fn listed(&self) -> &Pruned {
        self.shared.as_ref().unwrap_or_else(|| &self.per_device[0])
    }

    /// Why a space is empty, naming what emptied it, where one is.
    pub fn empty(&self, spec: &Spec) -> Option<String> {
        self.per_device
            .iter()
            .chain(self.shared.iter())
            .find(|p| p.valid() == 0)
            .map(|p| empty_space(spec, p.label.as_deref().unwrap_or("no device"), &p.pruning))
    }
}
