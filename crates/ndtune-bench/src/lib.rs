//! Measuring configurations on a device, robustly.
//!
//! - [`evaluate::Bench`] runs inside a worker process: builds each configuration once per define
//!   set (or loads a build worker's program binary), fills the arguments deterministically,
//!   verifies one run against the reference of `[verify]` (a built-in host reference, a C host
//!   reference ([`host_c`]), a reference kernel or a reference configuration's outputs) and by
//!   its C host check ([`host_c`]), and times
//!   the runs of `[measure]` with OpenCL profiling events; on a GPU it compares the outputs on
//!   the device ([`device_check`]). Where a campaign's metrics need it, it also reads the
//!   energy the device draws over the timed runs ([`energy`]).
//! - [`worker`] is that process's protocol (JSON lines on stdin/stdout), shared with the build
//!   workers; [`process`] runs such a child.
//! - [`supervisor::Supervisor`] runs the worker, times each evaluation out, records a crash or a
//!   hang as an outcome and restarts the worker, so a broken configuration never ends a campaign.
//! - [`race`] stops the timing of a configuration that cannot be the best (limits the engine
//!   computes from the campaign's best score and measurement noise, compared in the worker).
//! - [`builder::BuildPool`] compiles define sets ahead of measurement in build worker processes,
//!   so that builds run in parallel and, on a GPU, while the worker measures.
//! - [`children`] makes every such child process end with its campaign, however it ends
//!   (SIGKILL, SIGTERM, Ctrl-C, a panic, a normal exit).
//!
//! The store, the strategies and the command line are elsewhere; this crate only measures.

pub mod builder;
pub mod children;
pub mod data;
pub mod device_check;
pub mod energy;
pub mod evaluate;
pub mod host_c;
pub mod node_builds;
pub mod process;
pub mod program_cache;
pub mod race;
pub mod supervisor;
pub mod verify;
pub mod worker;
