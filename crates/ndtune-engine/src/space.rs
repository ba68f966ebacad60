//! What pruning made of a spec's space, as `ndtune space --json` prints it, tuning keeps it in
//! the store for `ndtune report`, and Python's `ndtune.space` returns it: the declared, bounded
//! and pruned counts, and what each constraint removed.

use ndtune_space::problem::{Origin, Pruning};
use ndtune_spec::Spec;
use serde::Serialize;

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
