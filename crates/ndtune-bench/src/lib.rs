//! Measuring configurations on a device, robustly.
//!
//! - [`evaluate::Bench`] runs inside a worker process: builds each configuration once per define
//!   set, fills the arguments deterministically, verifies one run against the reference of
//!   `[verify]` (a built-in host reference, a C host reference ([`host_c`]), a reference kernel or a
//!   reference configuration's outputs) and times the
//!   runs of `[measure]` with OpenCL profiling events.
//! - [`worker`] is that process's protocol (JSON lines on stdin/stdout).
//! - [`supervisor::Supervisor`] runs the worker, times each evaluation out, records a crash or a
//!   hang as an outcome and restarts the worker, so a broken configuration never ends a campaign.
//!
//! The store, the strategies and the command line are elsewhere; this crate only measures.

pub mod data;
pub mod evaluate;
pub mod host_c;
pub mod supervisor;
pub mod verify;
pub mod worker;
