//! Splitting one NDRange across heterogeneous devices (Erdem et al. 2018, §2.2).
//!
//! [`plan`] turns each device's best time and best work-group size into contiguous partitions of
//! the global range along one dimension: split factors from the devices' speeds (eq. 4), then
//! each device's share in whole work-groups of its own size. By default ([`Residue::Finish`]) the
//! group counts are those whose predicted finish time (Algorithm 1) is least; [`plan_with`] and
//! [`Residue::Paper`] keep the paper's rule, every share rounded down (eq. 5-8) and the residue
//! given to the device that needs the least extra work to cover it (eq. 9). Where the
//! work-group sizes are not multiples of each other the last partition overlaps its neighbour by
//! less than one of its work-groups: those items are computed twice and must agree.
//!
//! ```
//! let p = ndtune_split::plan(512, &[ndtune_split::Device { wg: 16, time_ms: 6.0 }, ndtune_split::Device { wg: 32, time_ms: 4.0 }]).unwrap();
//! assert_eq!(p.parts.iter().map(|q| q.size).sum::<u64>(), 512);
//! ```

mod plan;
pub mod runtime;
pub mod schedule;
pub mod study;
mod text;

pub use plan::{
    optimal_factors, plan, plan_factors, plan_with, Device, Part, Plan, PlanError, Residue,
};
pub use text::{PlanTable, ReportText};
