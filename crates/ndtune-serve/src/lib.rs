//! `ndtune serve`: a prediction service that programs ask for a work-group size at run time and
//! report back what they measured (Cummins et al. 2016 §5 runs its autotuner as such a daemon;
//! online learning is the paper's future work).
//!
//! This crate owns:
//! - [`service`]: the model in use (swapped atomically, never blocking predictions), predictions,
//!   observations kept in the store, retraining in the background;
//! - [`scenario`]: the scenario a client describes (features, or a device, kernel and dataset)
//!   and its features; [`limits`]: which sizes are legal for it;
//! - [`http`]: the HTTP API (`POST /v1/predict`, `POST /v1/observe`, `POST /v1/config`, `GET /v1/health`,
//!   `GET /metrics`) on TCP or a Unix socket, signals and the model file watch; [`metrics`];
//! - [`wisdom`]: the wisdom `POST /v1/config` answers from, reloaded as the model is;
//! - [`client`]: a blocking HTTP client of the service (the C API and the load generator use it).
//!
//! It never touches OpenCL: live devices reach it as profiles.

pub mod client;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod scenario;
pub mod service;
pub mod wisdom;

pub use http::{HttpOptions, Listen};
pub use service::{Options, Service};

/// Runs the service on its own Tokio runtime until SIGTERM or SIGINT; `announce` receives the
/// address once it listens.
pub fn run(
    options: Options,
    http: HttpOptions,
    announce: impl FnOnce(String),
) -> Result<(), String> {
    let service = Service::new(options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("ndtune-serve")
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime
        .block_on(http::serve(service, http.clone(), announce))
        .map_err(|e| match &http.listen {
            Listen::Tcp(a) => format!("{a}: {e}"),
            Listen::Unix(p) => format!("{}: {e}", p.display()),
        })
}
