//! One build service per node: the workers of one shared campaign on identical devices of one
//! host (`tune --pool`, `tune --worker`s started side by side, by hand or by `srun`) share one
//! [`BuildPool`] instead of starting build workers each. On NVIDIA's driver every process that
//! opens a context on the host's GPUs makes the others' start-up, shutdown and builds slower
//! (BENCHMARKS.md, "Build workers on a GPU host"); with a service per node, a node of G GPUs
//! holds G measurement contexts and the node's builders, not G times the builders.
//!
//! - The first worker to take the node's lock (a file in the user's private cache folder,
//!   named by a hash of the host, the campaign's job without its device, the device kind and
//!   the build settings) hosts the service: its [`BuildPool`], served on a Unix socket beside
//!   the lock. The others find the lock taken and connect ([`Builds::join`]).
//! - Each worker sends the builds it expects to need (its claims, [`Builds::plan`]); the pool's
//!   queue takes the workers' plans in turn, so that no worker waits behind another's whole
//!   plan. A define set is built once for the node (the build key), its binary written where
//!   every worker of the user on this host reads it. Binaries of one device kind load on every
//!   device of that kind; one a device refuses is compiled by its measurement worker.
//! - The service runs the host campaign's number of build jobs (`--build-jobs`) for the whole
//!   node, whatever the number of workers it serves: on NVIDIA's driver every process with a
//!   context slows the others, and a node's builds went no faster with more builders than 8
//!   (BENCHMARKS.md, "Claims longest build first").
//! - Pausing (a CPU device times its kernel with the builds stopped) holds while any worker
//!   asks for it.
//! - The host keeps serving after its own campaign ends, until the last worker it serves has
//!   gone (a stopped host does not wait). A worker that loses the service gets
//!   [`Built::Unavailable`]: its measurement worker builds what it needs itself.

use crate::builder::{BuildPool, Built};
use crate::evaluate::Fatal;
use crate::worker::{Generated, Job};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The environment variable that turns the node's build service off (`0`): each worker of a
/// shared campaign then starts build workers of its own (to compare, or where a host's
/// devices of one kind would rather not share binaries).
pub const ENV: &str = "NDTUNE_NODE_BUILDS";

/// Whether the workers of a node share its build service (unless [`ENV`] is `0`).
pub fn wanted() -> bool {
    std::env::var_os(ENV).is_none_or(|v| v != "0")
}

/// How long a worker that finds the lock taken waits for the host's socket to appear.
const HOST_STARTS: Duration = Duration::from_secs(30);

/// One build, as a campaign asks for it: its build key and a configuration with that key.
pub type Build = (String, Vec<i64>);

/// Where a campaign's programs are built.
pub enum Builds {
    /// Its own build workers.
    Own(BuildPool),
    /// The node's service, hosted in this process.
    Host(Host),
    /// The node's service, hosted by another worker.
    Joined(Client),
}

/// A campaign's part in its node's build service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    Hosted,
    Joined,
}

/// What identifies a node's build service: everything a build depends on but the device's
/// index (the devices are of one kind).
#[derive(Debug, Serialize)]
pub struct ServiceKey<'a> {
    /// The campaign's job; its device (index, address, sub-device) is left out of the key.
    pub job: &'a Job,
    /// The device kind (`ndtune_store::fingerprint`).
    pub device_kind: &'a str,
    pub prime: bool,
    pub timeout: Option<Duration>,
    /// The command line that starts build workers.
    pub program: &'a str,
}

impl ServiceKey<'_> {
    fn digest(&self) -> String {
        let job = Job {
            device: 0,
            at: None,
            sub: None,
            profile: None,
            ..self.job.clone()
        };
        let keyed = serde_json::json!({
            "host": ndtune_core::host_name(),
            "job": job,
            "device_kind": self.device_kind,
            "prime": self.prime,
            "timeout": self.timeout,
            "program": self.program,
        });
        let hash = Sha256::digest(keyed.to_string().as_bytes());
        ndtune_core::text::hex(&hash[..8])
    }
}

impl Builds {
    /// The node's service for `key`: joined where another worker hosts it, else hosted here
    /// with the pool `make` starts. `None` where there is no private folder for its socket, or
    /// the worker that holds the node's lock does not serve within [`HOST_STARTS`]: the
    /// campaign then builds on its own.
    pub fn join(
        key: &ServiceKey<'_>,
        make: impl FnOnce() -> Result<BuildPool, Fatal>,
    ) -> Result<Option<Builds>, Fatal> {
        let Some(dir) = ndtune_core::cache::folder("node-builds").map_err(Fatal)? else {
            return Ok(None);
        };
        let name = key.digest();
        sweep_stale(&dir, &name);
        let socket = dir.join(format!("{name}.sock"));
        let deadline = Instant::now() + HOST_STARTS;
        loop {
            if let Some(lock) = Lock::take(&dir.join(format!("{name}.lock")))? {
                let pool = make()?;
                return Host::start(pool, lock, &socket).map(|h| Some(Builds::Host(h)));
            }
            // Another worker holds the lock: it hosts, or is about to.
            if let Ok(stream) = UnixStream::connect(&socket) {
                return Ok(Some(Builds::Joined(Client::new(stream)?)));
            }
            if Instant::now() > deadline {
                return Ok(None); // a host that neither serves nor ends: build alone
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The builds expected next, in order (see [`BuildPool::plan`]); on a node, this worker's
    /// part of the node's queue.
    pub fn plan(&self, builds: Vec<Build>, any_order: bool) {
        match self {
            Builds::Own(pool) => pool.plan(builds, any_order),
            Builds::Host(h) => h.service.plan(LOCAL, builds, any_order),
            Builds::Joined(c) => drop(c.ask(&Request::Plan { builds, any_order })),
        }
    }

    /// See [`BuildPool::hurry`].
    pub fn hurry(&self, builds: Vec<Build>) {
        match self {
            Builds::Own(pool) => pool.hurry(builds),
            Builds::Host(h) => h.service.pool.hurry(builds),
            Builds::Joined(c) => drop(c.ask(&Request::Hurry { builds })),
        }
    }

    /// See [`BuildPool::wait`].
    pub fn wait(&self, key: &str, config: &[i64]) -> Built {
        let (key, config) = (key.to_string(), config.to_vec());
        match self {
            Builds::Own(pool) => pool.wait(&key, &config),
            Builds::Host(h) => h.service.pool.wait(&key, &config),
            Builds::Joined(c) => match c.ask(&Request::Wait { key, config }) {
                Ok(Response::Built(built)) => built,
                Ok(other) => Built::Unavailable(format!("the node's build service said {other:?}")),
                Err(why) => Built::Unavailable(why),
            },
        }
    }

    /// See [`BuildPool::first_done`].
    pub fn first_done(&self, key: &str, config: &[i64], others: &[&str]) -> Option<usize> {
        match self {
            Builds::Own(pool) => pool.first_done(key, config, others),
            Builds::Host(h) => h.service.pool.first_done(key, config, others),
            Builds::Joined(c) => {
                let request = Request::FirstDone {
                    key: key.to_string(),
                    config: config.to_vec(),
                    others: others.iter().map(|k| k.to_string()).collect(),
                };
                match c.ask(&request) {
                    Ok(Response::FirstDone(i)) => i,
                    // [`Builds::wait`] then says why.
                    _ => None,
                }
            }
        }
    }

    /// See [`BuildPool::pause`]: on a node, until no worker asks for it.
    pub fn pause(&self) {
        match self {
            Builds::Own(pool) => pool.pause(),
            Builds::Host(h) => h.service.pause(LOCAL, true),
            Builds::Joined(c) => drop(c.ask(&Request::Pause(true))),
        }
    }

    /// See [`BuildPool::provide`]; whether the builds take it: a worker's own pool and a
    /// hosted service do, a joined service builds only the spec's source (a front end that
    /// generates code tunes alone).
    pub fn provide(&self, key: &str, generated: Generated) -> bool {
        match self {
            Builds::Own(pool) => pool.provide(key, generated),
            Builds::Host(h) => h.service.pool.provide(key, generated),
            Builds::Joined(_) => return false,
        }
        true
    }

    /// See [`BuildPool::resume`].
    pub fn resume(&self) {
        match self {
            Builds::Own(pool) => pool.resume(),
            Builds::Host(h) => h.service.pause(LOCAL, false),
            Builds::Joined(c) => drop(c.ask(&Request::Pause(false))),
        }
    }

    /// See [`BuildPool::busy_s`]: on a node, the node's builders'.
    pub fn busy_s(&self) -> f64 {
        match self {
            Builds::Own(pool) => pool.busy_s(),
            Builds::Host(h) => h.service.pool.busy_s(),
            Builds::Joined(c) => match c.ask(&Request::Busy) {
                Ok(Response::Busy(s)) => s,
                _ => 0.0,
            },
        }
    }

    /// See [`BuildPool::started`]: of its own pool; none where it uses the node's.
    pub fn started(&self) -> usize {
        match self {
            Builds::Own(pool) => pool.started(),
            Builds::Host(_) | Builds::Joined(_) => 0,
        }
    }

    /// See [`BuildPool::build_times`]: on a node, every build of the node's.
    pub fn build_times(&self) -> Vec<(Vec<i64>, f64)> {
        match self {
            Builds::Own(pool) => pool.build_times(),
            Builds::Host(h) => h.service.pool.build_times(),
            Builds::Joined(c) => match c.ask(&Request::Times) {
                Ok(Response::Times(t)) => t,
                _ => Vec::new(),
            },
        }
    }

    /// Whether this campaign hosts or joined its node's service (else it builds on its own).
    pub fn node_role(&self) -> Option<NodeRole> {
        match self {
            Builds::Own(_) => None,
            Builds::Host(_) => Some(NodeRole::Hosted),
            Builds::Joined(_) => Some(NodeRole::Joined),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
enum Request {
    Plan {
        builds: Vec<Build>,
        any_order: bool,
    },
    Hurry {
        builds: Vec<Build>,
    },
    Wait {
        key: String,
        config: Vec<i64>,
    },
    FirstDone {
        key: String,
        config: Vec<i64>,
        others: Vec<String>,
    },
    Pause(bool),
    Busy,
    Times,
}

#[derive(Debug, Serialize, Deserialize)]
enum Response {
    Done,
    Built(Built),
    FirstDone(Option<usize>),
    Busy(f64),
    Times(Vec<(Vec<i64>, f64)>),
}

/// The client id of the hosting worker's own campaign.
const LOCAL: u64 = 0;

/// The pool and what each of its workers asked for.
struct Service {
    pool: BuildPool,
    clients: Mutex<Clients>,
    changed: Condvar,
}

#[derive(Default)]
struct Clients {
    plans: BTreeMap<u64, (Vec<Build>, bool)>,
    pausing: BTreeSet<u64>,
    /// Connected workers (the host's own campaign not counted).
    connected: usize,
    next: u64,
}

impl Service {
    fn lock(&self) -> MutexGuard<'_, Clients> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces `client`'s plan; the pool's queue takes every worker's plan in turn.
    fn plan(&self, client: u64, builds: Vec<Build>, any_order: bool) {
        let mut c = self.lock();
        if builds.is_empty() {
            c.plans.remove(&client);
        } else {
            c.plans.insert(client, (builds, any_order));
        }
        self.replan(&c);
    }

    fn replan(&self, c: &Clients) {
        let any_order = c.plans.values().all(|(_, any)| *any);
        let longest = c.plans.values().map(|(b, _)| b.len()).max().unwrap_or(0);
        let merged = (0..longest).flat_map(|i| c.plans.values().filter_map(move |(b, _)| b.get(i)));
        self.pool.plan(merged.cloned(), any_order);
    }

    fn pause(&self, client: u64, pause: bool) {
        let mut c = self.lock();
        let was = !c.pausing.is_empty();
        if pause {
            c.pausing.insert(client);
        } else {
            c.pausing.remove(&client);
        }
        match (was, !c.pausing.is_empty()) {
            (false, true) => self.pool.pause(),
            (true, false) => self.pool.resume(),
            _ => {}
        }
    }

    /// `client` has gone: its plan and its pause go with it.
    fn leave(&self, client: u64) {
        self.pause(client, false);
        let mut c = self.lock();
        c.plans.remove(&client);
        self.replan(&c);
        if client != LOCAL {
            c.connected -= 1;
        }
        self.changed.notify_all();
    }

    fn answer(&self, client: u64, request: Request) -> Response {
        match request {
            Request::Plan { builds, any_order } => {
                self.plan(client, builds, any_order);
                Response::Done
            }
            Request::Hurry { builds } => {
                self.pool.hurry(builds);
                Response::Done
            }
            Request::Wait { key, config } => Response::Built(self.pool.wait(&key, &config)),
            Request::FirstDone {
                key,
                config,
                others,
            } => {
                let others: Vec<&str> = others.iter().map(String::as_str).collect();
                Response::FirstDone(self.pool.first_done(&key, &config, &others))
            }
            Request::Pause(pause) => {
                self.pause(client, pause);
                Response::Done
            }
            Request::Busy => Response::Busy(self.pool.busy_s()),
            Request::Times => Response::Times(self.pool.build_times()),
        }
    }
}

/// The node's service, hosted by this process: ends when this campaign and every worker it
/// serves are done.
pub struct Host {
    service: Arc<Service>,
    socket: PathBuf,
    acceptor: Option<JoinHandle<()>>,
    /// Held for the service's life (removed with it): whoever takes it next hosts anew.
    lock: Option<Lock>,
}

impl Host {
    fn start(pool: BuildPool, lock: Lock, socket: &Path) -> Result<Host, Fatal> {
        // A socket left by a host that died: the lock is ours, so nobody serves on it.
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket).map_err(|e| {
            Fatal(format!(
                "cannot serve the node's builds on {}: {e}",
                socket.display()
            ))
        })?;
        let service = Arc::new(Service {
            pool,
            clients: Mutex::new(Clients {
                next: LOCAL + 1,
                ..Clients::default()
            }),
            changed: Condvar::new(),
        });
        let acceptor = {
            let service = Arc::clone(&service);
            std::thread::spawn(move || accept(&listener, &service))
        };
        Ok(Host {
            service,
            socket: socket.to_path_buf(),
            acceptor: Some(acceptor),
            lock: Some(lock),
        })
    }
}

/// Serves each worker that connects on a thread of its own, until the host closes.
fn accept(listener: &UnixListener, service: &Arc<Service>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let client = {
            let mut c = service.lock();
            if c.next == u64::MAX {
                return; // closing: the host's own wake-up call
            }
            c.next += 1;
            c.connected += 1;
            c.next - 1
        };
        let service = Arc::clone(service);
        std::thread::spawn(move || {
            serve(stream, &service, client);
            service.leave(client);
        });
    }
}

fn serve(stream: UnixStream, service: &Service, client: u64) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let Ok(request) = serde_json::from_str::<Request>(&line) else {
            return;
        };
        let answer = serde_json::to_string(&service.answer(client, request)).expect("serialises");
        if writeln!(writer, "{answer}").is_err() {
            return;
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.service.leave(LOCAL);
        // The workers it serves may still wait for builds: serve them to their end, unless the
        // campaign is being stopped.
        let mut c = self.service.lock();
        while c.connected > 0 && crate::children::stopping().is_none() {
            c = self
                .service
                .changed
                .wait_timeout(c, Duration::from_millis(200))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        c.next = u64::MAX;
        drop(c);
        // Wakes the acceptor, which sees the host closing. A worker that connects meanwhile
        // finds the service gone and builds on its own.
        if let (Ok(_), Some(acceptor)) = (UnixStream::connect(&self.socket), self.acceptor.take()) {
            let _ = acceptor.join();
        }
        let _ = std::fs::remove_file(&self.socket);
        if let Some(lock) = self.lock.take() {
            lock.remove();
        }
    }
}

/// A worker's connection to the service another worker hosts; one question at a time.
pub struct Client {
    stream: Mutex<(BufReader<UnixStream>, UnixStream)>,
}

impl Client {
    fn new(stream: UnixStream) -> Result<Client, Fatal> {
        let writer = stream
            .try_clone()
            .map_err(|e| Fatal(format!("cannot talk to the node's build service: {e}")))?;
        Ok(Client {
            stream: Mutex::new((BufReader::new(stream), writer)),
        })
    }

    fn ask(&self, request: &Request) -> Result<Response, String> {
        let mut s = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        let lost = |e: &dyn std::fmt::Display| format!("the node's build service is gone: {e}");
        let line = serde_json::to_string(request).expect("serialises");
        writeln!(s.1, "{line}").map_err(|e| lost(&e))?;
        let mut answer = String::new();
        match s.0.read_line(&mut answer) {
            Ok(0) => Err(lost(&"it closed the connection")),
            Ok(_) => serde_json::from_str(&answer).map_err(|e| lost(&e)),
            Err(e) => Err(lost(&e)),
        }
    }
}

/// An exclusive lock on a file (flock(2)), held while the value lives. Whoever holds it may
/// remove the file ([`Lock::remove`]): a taker checks that the file it locked is still the one
/// at the path, so a lock file removed under a waiting process is never held by two.
struct Lock {
    file: std::fs::File,
    path: PathBuf,
}

impl Lock {
    /// The lock on `path`, or `None` where another process holds it.
    fn take(path: &Path) -> Result<Option<Lock>, Fatal> {
        use std::os::unix::fs::MetadataExt;
        loop {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)
                .map_err(|e| Fatal(format!("cannot open {}: {e}", path.display())))?;
            // SAFETY: flock(2) on a file this function opened.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                return match std::io::Error::last_os_error() {
                    e if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
                    e => Err(Fatal(format!("cannot lock {}: {e}", path.display()))),
                };
            }
            let locked = file.metadata().map(|m| (m.dev(), m.ino())).ok();
            let there = std::fs::metadata(path).map(|m| (m.dev(), m.ino())).ok();
            if locked.is_some() && locked == there {
                return Ok(Some(Lock {
                    file,
                    path: path.to_path_buf(),
                }));
            }
            // Removed (or replaced) by its holder meanwhile: lock the file there now.
        }
    }

    /// Removes the lock's file, then lets go of it.
    fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
        drop(self.file);
    }
}

/// Removes what services that ended without cleaning up (killed) left in `dir`: each
/// `NAME.lock` that nobody holds, with its `NAME.sock`, other than `keep`'s.
fn sweep_stale(dir: &Path, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let (Some(stem), Some("lock")) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|s| s.to_str()),
        ) else {
            continue;
        };
        if stem == keep {
            continue;
        }
        if let Ok(Some(lock)) = Lock::take(&path) {
            let _ = std::fs::remove_file(dir.join(format!("{stem}.sock")));
            lock.remove();
        }
    }
}
