//! The driver's advice a campaign has learnt, per build: what `CL_KERNEL_WORK_GROUP_SIZE` and
//! `CL_KERNEL_LOCAL_MEM_SIZE` said of each define set evaluated, so that the strategy can be
//! told before a configuration is measured whether its launch goes beyond them
//! ([`ndtune_search::Evaluator::exceeds_advice`]): configurations of one build differ only in
//! their launch, and a launch beyond the advice is likely to be refused.

use ndtune_core::{Advice, Outcome};
use ndtune_spec::{KernelSource, Spec};
use std::collections::HashMap;

/// A configuration's (a point's) value of something, or `None` where it has none.
type Of<'a, T> = Box<dyn Fn(&[i64]) -> T + 'a>;

pub(crate) struct AdviceBook<'a> {
    /// A point's define set: points with the same one share a build, and its advice.
    defines: Of<'a, String>,
    /// The work-items of a point's work-group (`None` without `[launch]`).
    work_group: Of<'a, Option<u64>>,
    /// The `__local` bytes a point declares (`[launch] local_mem`; 0 without).
    local_mem: Of<'a, u64>,
    /// The device's local memory, in bytes.
    device_local_mem: u64,
    known: HashMap<String, Advice>,
}

impl<'a> AdviceBook<'a> {
    pub fn new(
        defines: Of<'a, String>,
        work_group: Of<'a, Option<u64>>,
        local_mem: Of<'a, u64>,
        device_local_mem: u64,
    ) -> AdviceBook<'a> {
        AdviceBook {
            defines,
            work_group,
            local_mem,
            device_local_mem,
            known: HashMap::new(),
        }
    }

    /// The book for a spec's campaign of `source` on a device with `device_local_mem` bytes of
    /// local memory.
    pub fn for_spec(
        spec: &'a Spec,
        source: &'a KernelSource,
        device_local_mem: u64,
    ) -> AdviceBook<'a> {
        let launch = spec.problem.launch.as_ref();
        let local: Vec<_> = launch
            .iter()
            .flat_map(|l| &l.local)
            .filter_map(|e| spec.problem.int_expr(e).ok())
            .collect();
        let local_mem = launch
            .and_then(|l| l.local_mem.as_ref())
            .and_then(|e| spec.problem.int_expr(e).ok());
        AdviceBook::new(
            Box::new(move |p| spec.build_options(source, p)),
            Box::new(move |p| {
                if local.is_empty() {
                    return None;
                }
                local.iter().try_fold(1u64, |items, n| {
                    items.checked_mul(u64::try_from(n.eval(p)?).ok()?)
                })
            }),
            Box::new(move |p| {
                local_mem
                    .as_ref()
                    .and_then(|n| n.eval(p))
                    .and_then(|b| u64::try_from(b).ok())
                    .unwrap_or(0)
            }),
            device_local_mem,
        )
    }

    /// Keeps the advice `outcome` carries for `point`'s build.
    pub fn note(&mut self, point: &[i64], outcome: &Outcome) {
        if let Some(advice) = outcome.advice() {
            self.known.insert((self.defines)(point), advice);
        }
    }

    /// Whether `point`'s launch goes beyond its build's advice: a work-group above
    /// `CL_KERNEL_WORK_GROUP_SIZE`, or the build's own local memory with the declared more than
    /// the device has. `None` where its build's advice is not known.
    pub fn exceeds(&self, point: &[i64]) -> Option<bool> {
        let advice = self.known.get(&(self.defines)(point))?;
        let work_group = (self.work_group)(point)?;
        let local = advice
            .local_mem_bytes
            .saturating_add((self.local_mem)(point));
        Some(work_group > advice.work_group_size || local > self.device_local_mem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_core::Timing;

    /// Points (TILE, WG): TILE is the build's define, WG the launch's work-group; 100 bytes of
    /// local memory per work-item, on a device with 48 KiB.
    fn book() -> AdviceBook<'static> {
        AdviceBook::new(
            Box::new(|p| format!("-D TILE={}", p[0])),
            Box::new(|p| Some(p[1] as u64)),
            Box::new(|p| 100 * p[1] as u64),
            48 * 1024,
        )
    }

    fn advised(work_group_size: u64, local_mem_bytes: u64, launched: u64) -> Advice {
        Advice {
            work_group_size,
            local_mem_bytes,
            launched_work_group: launched,
        }
    }

    #[test]
    fn a_builds_advice_applies_to_every_launch_of_that_build() {
        let mut book = book();
        assert_eq!(book.exceeds(&[4, 256]), None, "nothing known yet");
        let mut timing = Timing::new(vec![1.0], 1);
        timing.advice = Some(advised(256, 0, 128));
        book.note(&[4, 128], &Outcome::Measured(timing));
        assert_eq!(book.exceeds(&[4, 256]), Some(false));
        assert_eq!(
            book.exceeds(&[4, 512]),
            Some(true),
            "above the work-group advice"
        );
        assert_eq!(book.exceeds(&[8, 512]), None, "another build");
        // A refusal's advice, from its text; the build's own 40 KiB of local memory plus the
        // declared 100 bytes a work-item exceed 48 KiB from 82 work-items on.
        let refused = Outcome::Refused {
            error: advised(1024, 40 * 1024, 1024).refusal("CL_OUT_OF_RESOURCES"),
        };
        book.note(&[8, 1024], &refused);
        assert_eq!(book.exceeds(&[8, 64]), Some(false));
        assert_eq!(
            book.exceeds(&[8, 96]),
            Some(true),
            "beyond the local memory"
        );
        book.note(&[16, 64], &Outcome::BuildFailed { log: "".into() });
        assert_eq!(
            book.exceeds(&[16, 64]),
            None,
            "a failed build advises nothing"
        );
    }
}
