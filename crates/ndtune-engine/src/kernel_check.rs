//! The driver's per-build advice on a live device. `CL_KERNEL_WORK_GROUP_SIZE` depends on each
//! build (on an H100 the matmul built with a 1x1 tile reports 256, with a 32x32 tile more), so
//! every valid configuration is built with its own defines and counted when its work-group
//! exceeds its own build's answer. That answer is advice, not a limit (NVIDIA's driver launches
//! such work-groups): the configurations are removed only on request (`--prune-by-query`).
//! Builds are costly, so this runs only for spaces up to a cap (`ndtune space --kernel-check`).

use ndtune_backend::{AnyDevice, DeviceError};
use ndtune_space::problem::Pruning;
use ndtune_spec::{KernelSource, Spec};
use serde::Serialize;
use std::collections::HashSet;
use std::ops::ControlFlow;

/// What checking each configuration's build found.
#[derive(Serialize, Default)]
pub struct KernelCheck {
    /// Configurations built and checked.
    pub checked: usize,
    /// Configurations whose work-group exceeds their build's `CL_KERNEL_WORK_GROUP_SIZE`.
    pub removed: usize,
    /// Whether they were removed from the space (`--prune-by-query`), or only counted.
    pub pruned_by_query: bool,
    /// Configurations whose build failed (kept: tuning records them as build failures).
    pub build_failed: usize,
    /// The smallest and largest `CL_KERNEL_WORK_GROUP_SIZE` seen.
    pub work_group_size_range: Option<(u64, u64)>,
    #[serde(skip)]
    pub removed_configs: HashSet<Vec<i64>>,
}

/// Why the configurations could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The spec's `[launch] local` cannot be read.
    #[error("{0}")]
    Spec(String),
    /// The device failed otherwise than by refusing a build.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Builds every configuration of `pruning` on `device` (at most `cap` of them; `None` beyond),
/// telling `starting` how many it builds before it starts.
pub fn check(
    spec: &Spec,
    source: &KernelSource,
    device: &AnyDevice,
    pruning: &Pruning,
    cap: u128,
    starting: impl FnOnce(u128),
) -> Result<Option<KernelCheck>, CheckError> {
    let Some(launch) = &spec.problem.launch else {
        return Ok(None);
    };
    if pruning.stats.pruned > cap || pruning.stats.pruned == 0 {
        return Ok(None);
    }
    let local = launch
        .local
        .iter()
        .map(|src| spec.problem.int_expr(src))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CheckError::Spec(format!("{}: [launch] local: {e}", spec.path.display())))?;
    let mut result = KernelCheck::default();
    starting(pruning.stats.pruned);
    let mut failure = None;
    pruning.space.for_each(|config| {
        result.checked += 1;
        match device.kernel_limits(
            &source.text,
            &spec.kernel.name,
            &spec.build_options(source, config),
        ) {
            Ok(k) => {
                let (lo, hi) = result.work_group_size_range.unwrap_or((u64::MAX, 0));
                result.work_group_size_range =
                    Some((lo.min(k.work_group_size), hi.max(k.work_group_size)));
                let size: Option<i64> = local
                    .iter()
                    .try_fold(1i64, |acc, n| acc.checked_mul(n.eval(config)?));
                if size.is_none_or(|s| s as u64 > k.work_group_size) {
                    result.removed += 1;
                    result.removed_configs.insert(config.to_vec());
                }
            }
            Err(DeviceError::Build { .. }) => result.build_failed += 1,
            Err(e) => {
                failure = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(Some(result)),
    }
}
