//! The HTTP face of the service (axum on hyper): the routes, JSON bodies and errors, the
//! connection loop on TCP or a Unix socket, and the signals (SIGHUP reloads the model, SIGTERM and
//! SIGINT shut down gracefully) and the model file watch.
//!
//! Every refusal is a JSON `{"error": "..."}` with a 4xx status: a body that is not JSON (400), a
//! body of the wrong shape (422 where it parses but does not fit), a body over the limit (413, at
//! once where its `Content-Length` says so), a client too slow to send its body (408), no route
//! (404), a wrong method (405); a client too slow to send its headers is disconnected. A handler
//! that fails or panics answers 500 with the same body, and is counted.

use crate::scenario::ScenarioRequest;
use crate::service::{ConfigRequest, ObservedRun, ObservedScenario, Refusal, Service};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::FutureExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, UnixListener};

/// Where the service listens.
#[derive(Debug, Clone, PartialEq)]
pub enum Listen {
    /// `host:port`; port 0 picks a free one (the address is announced).
    Tcp(String),
    Unix(PathBuf),
}

/// How the HTTP side behaves.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub listen: Listen,
    /// Largest request body.
    pub max_body: usize,
    /// Longest time from a request's headers to its answer (a slow body gets 408).
    pub request_timeout: Duration,
    /// Longest time to send a request's headers; the connection is closed after it.
    pub header_timeout: Duration,
    /// How often the model file is checked for a new version.
    pub watch_interval: Duration,
    /// How long shutting down waits for requests in flight.
    pub shutdown_grace: Duration,
}

impl HttpOptions {
    pub fn new(listen: Listen) -> HttpOptions {
        HttpOptions {
            listen,
            max_body: 1 << 20,
            request_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(5),
            watch_interval: Duration::from_millis(500),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        (status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

/// A JSON body parsed with serde_json's own messages (line and column), whatever the content
/// type says; syntax errors are 400, well-formed bodies of the wrong shape 422.
struct JsonBody<T>(T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Refusal;

    async fn from_request(req: Request, state: &S) -> Result<Self, Refusal> {
        let bytes = Bytes::from_request(req, state).await.map_err(|r| Refusal {
            status: r.status().as_u16(),
            message: r.body_text(),
        })?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            // serde_json calls some shape errors syntax (an array longer than a fixed-size
            // one is "trailing characters"): a body that is valid JSON is a shape error.
            let valid_json = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok();
            let status = match e.classify() {
                serde_json::error::Category::Data => 422,
                _ if valid_json => 422,
                _ => 400,
            };
            Refusal {
                status,
                message: format!("request body: {e}"),
            }
        })
    }
}

/// The routes of the service.
pub fn router(service: Arc<Service>, options: &HttpOptions) -> Router {
    Router::new()
        .route("/v1/predict", post(predict))
        .route("/v1/observe", post(observe))
        .route("/v1/config", post(config))
        .route("/v1/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(options.max_body))
        .layer(middleware::from_fn_with_state(
            options.max_body,
            refuse_oversized,
        ))
        .layer(middleware::from_fn_with_state(
            options.request_timeout,
            answer_in_time,
        ))
        .layer(middleware::from_fn_with_state(
            service.clone(),
            contain_panics,
        ))
        .layer(middleware::from_fn_with_state(service.clone(), measure))
        .with_state(service)
}

/// 413 before the body is read where `Content-Length` says it is over the limit (the body
/// limit alone would wait for it, or for the request timeout).
async fn refuse_oversized(State(max_body): State<usize>, req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    match announced {
        Some(n) if n > max_body as u64 => Refusal {
            status: 413,
            message: format!(
                "a request body of {n} bytes is over the length limit of {max_body} bytes (--max-body)"
            ),
        }
        .into_response(),
        _ => next.run(req).await,
    }
}

/// 408 where the answer is not ready within `--request-timeout` (a body that does not arrive).
async fn answer_in_time(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => Refusal {
            status: 408,
            message: format!(
                "no answer within {:.1} s (--request-timeout): the request body did not arrive in time",
                limit.as_secs_f64()
            ),
        }
        .into_response(),
    }
}

/// A handler that panics answers 500 `{"error": ...}` (rather than dropping the connection) and
/// is counted (`ndtune_panics_total`, `/v1/health`).
async fn contain_panics(State(service): State<Arc<Service>>, req: Request, next: Next) -> Response {
    match std::panic::AssertUnwindSafe(next.run(req))
        .catch_unwind()
        .await
    {
        Ok(response) => response,
        Err(panic) => {
            service.metrics.panics.inc();
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Refusal::internal(format!("the service failed on this request: {what}")).into_response()
        }
    }
}

/// Counts every answer by endpoint and status, with its latency.
async fn measure(State(service): State<Arc<Service>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let endpoint = match req.uri().path() {
        "/v1/predict" => "/v1/predict",
        "/v1/observe" => "/v1/observe",
        "/v1/config" => "/v1/config",
        "/v1/health" => "/v1/health",
        "/metrics" => "/metrics",
        _ => "other",
    };
    let response = next.run(req).await;
    service.metrics.record(
        endpoint,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

async fn predict(
    State(service): State<Arc<Service>>,
    JsonBody(req): JsonBody<ScenarioRequest>,
) -> Result<Response, Refusal> {
    let started = Instant::now();
    let answer = if service.resolver().compiles(&req) {
        // clang runs for a kernel not seen yet: off the threads that answer other requests.
        let s = service.clone();
        tokio::task::spawn_blocking(move || s.predict(&req, started))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    } else {
        service.predict(&req, started)
    }?;
    Ok(Json(answer).into_response())
}

async fn config(
    State(service): State<Arc<Service>>,
    JsonBody(req): JsonBody<ConfigRequest>,
) -> Result<Response, Refusal> {
    // A first question prunes the kernel's space for the device: off the answering threads.
    let pick = tokio::task::spawn_blocking(move || service.config(&req))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
    Ok(Json(pick).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObserveBody {
    /// The id a prediction answered, or the scenario itself.
    scenario: serde_json::Value,
    local: [u64; 2],
    runtime_ms: Option<f64>,
    #[serde(default)]
    refused: bool,
}

async fn observe(
    State(service): State<Arc<Service>>,
    JsonBody(body): JsonBody<ObserveBody>,
) -> Result<Response, Refusal> {
    let runtime_ms = match (body.runtime_ms, body.refused) {
        (Some(t), false) => Some(t),
        (None, true) => None,
        _ => {
            return Err(Refusal::bad_request(
                "give either `runtime_ms` or `\"refused\": true`",
            ))
        }
    };
    let scenario = match body.scenario {
        serde_json::Value::String(id) => ObservedScenario::Id(id),
        value @ serde_json::Value::Object(_) => ObservedScenario::Request(Box::new(
            serde_json::from_value(value)
                .map_err(|e| Refusal::unprocessable(format!("`scenario`: {e}")))?,
        )),
        _ => {
            return Err(Refusal::bad_request(
                "`scenario`: the id a prediction answered, or a scenario object",
            ))
        }
    };
    let run = ObservedRun {
        local: body.local,
        runtime_ms,
    };
    let needs_blocking = match &scenario {
        ObservedScenario::Request(r) => service.resolver().compiles(r),
        ObservedScenario::Id(_) => false,
    } || service.stores();
    let answer = if needs_blocking {
        // The store commits to disk; clang may run.
        let s = service.clone();
        tokio::task::spawn_blocking(move || s.observe(&scenario, &run))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    } else {
        service.observe(&scenario, &run)
    }?;
    Ok(Json(answer).into_response())
}

/// `ok`, or `degraded` while the model in use fails predictions; the model serving and where it
/// came from, the observations learnt from and rejected (by reason), the last retraining's
/// result, failed predictions and panics.
async fn health(State(service): State<Arc<Service>>) -> Response {
    let current = service.current();
    let failures = current.failures.load(std::sync::atomic::Ordering::Relaxed);
    let panics = service.metrics.panics.get();
    let wisdom = service.wisdom().map(|w| w.health());
    let wisdom_ok = wisdom.as_ref().is_none_or(|w| w.status == "ok");
    Json(serde_json::json!({
        "status": if failures == 0 && wisdom_ok { "ok" } else { "degraded" },
        "wisdom": wisdom,
        "model": {
            "path": service.model_path(),
            "kind": current.model.classifier.kind().name(),
            "version": current.version,
            "origin": current.origin(),
            "features": current.model.feature_names.len(),
            "classes": current.model.classes.len(),
            "training_rows": current.model.training.len(),
            "learnt_observations": current.learnt,
            "failed_predictions": failures,
        },
        "observations": service.observation_count(),
        "rejected_observations": service.rejected(),
        "last_retrain": service.last_retrain(),
        "panics": panics,
        "uptime_s": service.uptime_s(),
    }))
    .into_response()
}

async fn metrics(State(service): State<Arc<Service>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        service.metrics.encode(),
    )
        .into_response()
}

async fn method_not_allowed(req: Request) -> Refusal {
    Refusal {
        status: 405,
        message: format!(
            "method {} is not allowed on {}: POST /v1/predict, POST /v1/observe, POST /v1/config, GET /v1/health, GET /metrics",
            req.method(),
            req.uri().path()
        ),
    }
}

async fn not_found(req: Request) -> Refusal {
    Refusal {
        status: 404,
        message: format!(
            "no route {} {}: POST /v1/predict, POST /v1/observe, POST /v1/config, GET /v1/health, GET /metrics",
            req.method(),
            req.uri().path()
        ),
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// Serves until SIGTERM or SIGINT, then waits for the requests in flight. `announce` receives the
/// address once listening (`http://host:port` or `unix:/path`).
pub async fn serve(
    service: Arc<Service>,
    options: HttpOptions,
    announce: impl FnOnce(String),
) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let listener = match &options.listen {
        Listen::Tcp(addr) => Listener::Tcp(TcpListener::bind(addr).await?),
        Listen::Unix(path) => Listener::Unix(bind_unix(path).await?, path.clone()),
    };
    announce(match &listener {
        Listener::Tcp(l) => format!("http://{}", l.local_addr()?),
        Listener::Unix(_, p) => format!("unix:{}", p.display()),
    });
    let app = router(service.clone(), &options);
    take_signals();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    tokio::spawn(reload_on_hangup(
        service.clone(),
        signal(SignalKind::hangup())?,
    ));
    tokio::spawn(watch_model_file(service.clone(), options.watch_interval));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout);
    loop {
        tokio::select! {
            accepted = accept(&listener) => {
                let stream = match accepted {
                    Ok(s) => s,
                    // Out of file descriptors, a connection reset before accept: keep serving.
                    Err(e) => {
                        eprintln!("serve: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                match stream {
                    Stream::Tcp(s) => {
                        let conn = builder.serve_connection(TokioIo::new(s), service);
                        tokio::spawn(graceful.watch(conn));
                    }
                    Stream::Unix(s) => {
                        let conn = builder.serve_connection(TokioIo::new(s), service);
                        tokio::spawn(graceful.watch(conn));
                    }
                }
            }
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
        }
    }
    drop(listener_cleanup(listener));
    eprintln!(
        "serve: shutting down: {} connection(s) to finish",
        graceful.count()
    );
    if tokio::time::timeout(options.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!(
            "serve: connections still open after {:.0} s: closed",
            options.shutdown_grace.as_secs_f64()
        );
    }
    Ok(())
}

/// Gives SIGHUP, SIGINT and SIGTERM their default action before the service handles them. An
/// OpenCL driver that compiled a kernel in this process (PoCL, through LLVM) leaves LLVM's
/// handlers installed, which re-raise these signals to kill the process; Tokio would call them
/// after its own, so the service would die instead of reloading or shutting down gracefully.
fn take_signals() {
    for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        // SAFETY: setting a standard disposition; Tokio installs its handler right after.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

enum Stream {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

async fn accept(listener: &Listener) -> std::io::Result<Stream> {
    match listener {
        Listener::Tcp(l) => {
            let (s, _) = l.accept().await?;
            // Small request, small answer: send at once.
            s.set_nodelay(true)?;
            Ok(Stream::Tcp(s))
        }
        Listener::Unix(l, _) => Ok(Stream::Unix(l.accept().await?.0)),
    }
}

/// Binds a Unix socket, replacing a stale socket file that no service answers on, but never a
/// live one or a file that is not a socket.
async fn bind_unix(path: &std::path::Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ));
        }
        if tokio::net::UnixStream::connect(path).await.is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("{}: another service is listening there", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    UnixListener::bind(path)
}

/// Stops listening; a Unix socket's file is removed.
fn listener_cleanup(listener: Listener) -> std::io::Result<()> {
    match listener {
        Listener::Tcp(_) => Ok(()),
        Listener::Unix(l, path) => {
            drop(l);
            std::fs::remove_file(path)
        }
    }
}

async fn reload_on_hangup(service: Arc<Service>, mut hangup: tokio::signal::unix::Signal) {
    while hangup.recv().await.is_some() {
        reload(&service, "SIGHUP").await;
        reload_wisdom(&service, "SIGHUP").await;
    }
}

async fn reload_wisdom(service: &Arc<Service>, why: &str) {
    if service.wisdom().is_none() {
        return;
    }
    let s = service.clone();
    let reloaded = tokio::task::spawn_blocking(move || s.wisdom().map(|w| w.reload())).await;
    let path = service
        .wisdom()
        .map(|w| w.path().display().to_string())
        .unwrap_or_default();
    match reloaded {
        Ok(Some(Ok(()))) => eprintln!("serve: {why}: wisdom loaded from {path}"),
        Ok(Some(Err(e))) => eprintln!("serve: {why}: the wisdom {path} cannot be used: {e}"),
        Ok(None) => {}
        Err(e) => eprintln!("serve: {why}: wisdom reload failed: {e}"),
    }
}

async fn reload(service: &Arc<Service>, why: &str) {
    let s = service.clone();
    match tokio::task::spawn_blocking(move || s.reload()).await {
        Ok(Ok(version)) => eprintln!(
            "serve: {why}: model version {version} loaded from {}",
            service.model_path().display()
        ),
        Ok(Err(e)) => eprintln!("serve: {why}: the model in use is kept: {e}"),
        Err(e) => eprintln!("serve: {why}: reload failed: {e}"),
    }
}

async fn watch_model_file(service: Arc<Service>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        if service.model_file_changed() {
            reload(&service, "model file changed").await;
        }
        if service.wisdom().is_some_and(|w| w.changed()) {
            reload_wisdom(&service, "wisdom file changed").await;
        }
    }
}
