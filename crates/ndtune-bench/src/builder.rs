//! Build workers: processes that compile a kernel's define sets ahead of measurement, each with
//! its own context on the tuned device, and hand the driver's program binaries
//! (`CL_PROGRAM_BINARIES`) to the measurement worker, which loads them instead of compiling.
//!
//! - [`Builder`] is the process (`ndtune __builder`): one [`BuildRequest`] line in, one
//!   [`BuildResponse`] line out, the binary written to a file.
//! - [`BuildPool`] runs `jobs` of them, each fed by a thread of its own from one queue ordered
//!   the way the strategy will ask ([`BuildPool::plan`]); a define set is built once. A compiler
//!   that crashes kills only its build worker (the define set is `build_failed`, with why), one
//!   that hangs is killed at the deadline (`timed_out`); the next build starts a new worker.
//! - On a CPU device the builders compete with the kernel being timed for the same cores, so
//!   the campaign stops them ([`BuildPool::pause`], SIGSTOP) while it measures and lets them go
//!   on (SIGCONT) in between; time stopped does not count towards a build's deadline.

use crate::evaluate::Bench;
use crate::evaluate::Fatal;
use crate::process::{LineProcess, Silence};
use crate::worker::{serve_lines, Job, Service};
use ndtune_cl::ClError;
use ndtune_core::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Build a configuration's program and write its binary to `out`; with `prime`, also launch it
/// once (see [`Bench::prime`]).
#[derive(Debug, Serialize, Deserialize)]
pub struct BuildRequest {
    pub config: Vec<i64>,
    pub prime: bool,
    pub out: PathBuf,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildResponse {
    Ready,
    /// Built; the binary is in the request's file. With `prime`, [`BuildResponse::Primed`]
    /// follows once the launch is done.
    Built,
    Primed,
    /// The driver refused the source with these options; its log.
    Failed {
        log: String,
    },
    Fatal(String),
}

/// The build worker process: an evaluator on the job's device that only builds (and primes).
pub struct Builder {
    bench: Bench,
    /// A configuration and its binary to prime after answering `Built`.
    primer: Option<(Vec<i64>, Vec<u8>)>,
}

impl Service for Builder {
    type Request = BuildRequest;
    type Response = BuildResponse;

    fn open(job: &Job) -> Result<Builder, Fatal> {
        Ok(Builder {
            bench: Bench::open(job)?,
            primer: None,
        })
    }

    fn ready(&self) -> BuildResponse {
        BuildResponse::Ready
    }

    fn fatal(why: String) -> BuildResponse {
        BuildResponse::Fatal(why)
    }

    fn follow_up(&mut self) -> Option<BuildResponse> {
        let (config, binary) = self.primer.take()?;
        self.bench.prime(&config, &binary);
        Some(BuildResponse::Primed)
    }

    fn handle(&mut self, r: BuildRequest) -> Result<Option<BuildResponse>, Fatal> {
        match self.bench.binary(&r.config) {
            Ok(binary) => {
                // Written aside and renamed, so a reader never sees half a binary.
                let partial = r.out.with_extension("partial");
                std::fs::write(&partial, &binary)
                    .and_then(|()| std::fs::rename(&partial, &r.out))
                    .map_err(|e| Fatal(format!("cannot write {}: {e}", r.out.display())))?;
                if r.prime {
                    self.primer = Some((r.config, binary));
                }
                Ok(Some(BuildResponse::Built))
            }
            Err(ClError::Build { log, .. }) => Ok(Some(BuildResponse::Failed { log })),
            Err(e) => Ok(Some(BuildResponse::Failed { log: e.to_string() })),
        }
    }
}

/// Runs a build worker on stdin/stdout until stdin closes; the process exit code.
pub fn serve() -> i32 {
    serve_lines::<Builder>()
}

/// What became of one define set.
#[derive(Debug, Clone, PartialEq)]
pub enum Built {
    /// The program binary, in a file of the pool's directory.
    Binary(PathBuf),
    /// `build_failed` (the driver's log, or how the compiler crashed) or `timed_out`.
    Failed(Outcome),
    /// No build worker could be started (why): the measurement worker compiles itself.
    Unavailable(String),
}

/// The default deadline of a build is this many times the slowest build so far, at least
/// [`crate::supervisor::TIMEOUT_FLOOR`].
const TIMEOUT_FACTOR: u32 = 10;

/// Build workers fed from one queue of define sets (build options).
pub struct BuildPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    dir: tempfile::TempDir,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    command: Box<dyn Fn() -> Command + Send + Sync>,
    job: String,
    fixed_timeout: Option<Duration>,
    prime: bool,
}

#[derive(Default)]
struct State {
    /// Builds to make (key, configuration), in the order they are expected to be needed.
    queue: VecDeque<(String, Vec<i64>)>,
    running: HashSet<String>,
    done: HashMap<String, Built>,
    /// The build workers' process ids, by worker slot.
    pids: HashMap<usize, u32>,
    paused: bool,
    /// Time the workers were stopped, over the pool's life (builds exclude it).
    paused_total: Duration,
    paused_since: Option<Instant>,
    closing: bool,
    /// Why no build worker could start, once that is known.
    broken: Option<String>,
    slowest: Duration,
    /// Binaries made since [`BuildPool::take_finished`] was last called.
    finished: Vec<(Vec<i64>, PathBuf)>,
    /// Time the workers spent building, summed over workers.
    busy: Duration,
    files: usize,
}

impl State {
    fn paused_so_far(&self) -> Duration {
        self.paused_total + self.paused_since.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn deadline(&self, state: &State) -> Duration {
        self.fixed_timeout.unwrap_or_else(|| {
            (state.slowest * TIMEOUT_FACTOR).max(crate::supervisor::TIMEOUT_FLOOR)
        })
    }
}

impl BuildPool {
    /// Starts `jobs` build workers for `job` (`command` makes the command that starts one, e.g.
    /// `ndtune __builder`); `timeout` fixes a build's deadline, else it adapts; `prime`: launch
    /// each build once in its build worker (see [`Bench::prime`]).
    pub fn new(
        command: Box<dyn Fn() -> Command + Send + Sync>,
        job: &Job,
        jobs: usize,
        timeout: Option<Duration>,
        prime: bool,
    ) -> Result<BuildPool, Fatal> {
        let dir = tempfile::Builder::new()
            .prefix("ndtune-builds-")
            .tempdir()
            .map_err(|e| Fatal(format!("cannot make a directory for program binaries: {e}")))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            command,
            job: serde_json::to_string(job).expect("a job serialises"),
            fixed_timeout: timeout,
            prime,
        });
        let threads = (0..jobs.max(1))
            .map(|slot| {
                let shared = Arc::clone(&shared);
                let dir = dir.path().to_path_buf();
                std::thread::spawn(move || dispatch(&shared, slot, &dir))
            })
            .collect();
        Ok(BuildPool {
            shared,
            threads,
            dir,
        })
    }

    /// The builds expected next, in order, each a key (configurations with the same key share
    /// a build) and a configuration: replaces what was queued before; those built or being
    /// built already are left out.
    pub fn plan(&self, builds: impl IntoIterator<Item = (String, Vec<i64>)>) {
        let mut s = self.shared.lock();
        let mut queued = HashSet::new();
        let queue: VecDeque<(String, Vec<i64>)> = builds
            .into_iter()
            .filter(|(k, _)| !s.done.contains_key(k) && !s.running.contains(k))
            .filter(|(k, _)| queued.insert(k.clone()))
            .collect();
        s.queue = queue;
        self.shared.changed.notify_all();
    }

    /// What became of build `key` (of `config`), building it first, ahead of the queue, if
    /// needed.
    pub fn wait(&self, key: &str, config: &[i64]) -> Built {
        let mut s = self.shared.lock();
        if !s.done.contains_key(key) && !s.running.contains(key) {
            s.queue.retain(|(k, _)| k != key);
            s.queue.push_front((key.to_string(), config.to_vec()));
            self.shared.changed.notify_all();
        }
        loop {
            if let Some(built) = s.done.get(key) {
                return built.clone();
            }
            if let Some(why) = &s.broken {
                return Built::Unavailable(why.clone());
            }
            s = self
                .shared
                .changed
                .wait(s)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Stops every build worker (SIGSTOP) until [`BuildPool::resume`]; none takes a new build.
    pub fn pause(&self) {
        let mut s = self.shared.lock();
        s.paused = true;
        s.paused_since.get_or_insert_with(Instant::now);
        for &pid in s.pids.values() {
            signal(pid, libc::SIGSTOP);
        }
    }

    /// Lets the build workers go on.
    pub fn resume(&self) {
        let mut s = self.shared.lock();
        s.paused = false;
        if let Some(since) = s.paused_since.take() {
            s.paused_total += since.elapsed();
        }
        for &pid in s.pids.values() {
            signal(pid, libc::SIGCONT);
        }
        self.shared.changed.notify_all();
    }

    /// The program binaries made since the last call, with a configuration each was built for.
    pub fn take_finished(&self) -> Vec<(Vec<i64>, PathBuf)> {
        std::mem::take(&mut self.shared.lock().finished)
    }

    /// Time the build workers spent building so far, summed over workers, in seconds.
    pub fn busy_s(&self) -> f64 {
        self.shared.lock().busy.as_secs_f64()
    }

    /// The directory the program binaries are written to (removed with the pool).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for BuildPool {
    fn drop(&mut self) {
        {
            let mut s = self.shared.lock();
            s.closing = true;
            // A build in progress is abandoned: its worker is killed (stopped ones too).
            for &pid in s.pids.values() {
                signal(pid, libc::SIGKILL);
            }
            self.shared.changed.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a child process this pool started and has not reaped yet.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// One build worker's thread: takes define sets off the queue and builds them in its process,
/// restarting the process after a crash or a hang.
fn dispatch(shared: &Shared, slot: usize, dir: &std::path::Path) {
    let mut worker: Option<LineProcess> = None;
    loop {
        let (key, config) = {
            let mut s = shared.lock();
            loop {
                if s.closing || s.broken.is_some() {
                    return;
                }
                if !s.paused {
                    if let Some((k, config)) = s.queue.pop_front() {
                        s.running.insert(k.clone());
                        break (k, config);
                    }
                }
                s = shared.changed.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        };
        if worker.is_none() {
            match start(shared, slot) {
                Ok(w) => worker = Some(w),
                Err(why) => {
                    let mut s = shared.lock();
                    s.running.remove(&key);
                    s.broken.get_or_insert(why);
                    shared.changed.notify_all();
                    return;
                }
            }
        }
        let out = {
            let mut s = shared.lock();
            s.files += 1;
            dir.join(format!("{}.bin", s.files))
        };
        let request = serde_json::to_string(&BuildRequest {
            config: config.clone(),
            prime: shared.prime,
            out: out.clone(),
        })
        .expect("serialises");
        let (deadline, paused_before) = {
            let s = shared.lock();
            (shared.deadline(&s), s.paused_so_far())
        };
        let started = Instant::now();
        let w = worker.as_mut().expect("started above");
        let answer = w
            .tell(&request)
            .and_then(|()| w.answer_counting(deadline, || !shared.lock().paused));
        let (built, alive) = match answer.as_deref().map(serde_json::from_str::<BuildResponse>) {
            Ok(Ok(BuildResponse::Built)) => (Built::Binary(out), true),
            Ok(Ok(BuildResponse::Failed { log })) => {
                (Built::Failed(Outcome::BuildFailed { log }), true)
            }
            Ok(Ok(BuildResponse::Fatal(why))) => (Built::Unavailable(why), false),
            Ok(_) => (
                Built::Unavailable(format!(
                    "a build worker answered `{}`",
                    answer.unwrap_or_default()
                )),
                false,
            ),
            Err(Silence::Died(why)) => (
                Built::Failed(Outcome::BuildFailed {
                    log: format!("the compiler crashed: the build worker {why}"),
                }),
                false,
            ),
            Err(Silence::Timeout) => (
                Built::Failed(Outcome::TimedOut {
                    seconds: deadline.as_secs_f64(),
                }),
                false,
            ),
        };
        let primes = alive && shared.prime && matches!(built, Built::Binary(_));
        finish(
            shared,
            slot,
            (&key, config),
            built,
            started,
            paused_before,
            alive,
        );
        if primes {
            // The binary is out; the launch that primes the driver's cache follows. A kernel that
            // crashes or hangs there only costs this worker: the measurement will find out itself.
            let primed = worker
                .as_mut()
                .expect("alive")
                .answer_counting(deadline, || !shared.lock().paused);
            if !matches!(
                primed.as_deref().map(serde_json::from_str::<BuildResponse>),
                Ok(Ok(BuildResponse::Primed))
            ) {
                shared.lock().pids.remove(&slot);
                worker = None;
            }
        } else if !alive {
            worker = None;
        }
    }
}

/// Records what became of build `key` and wakes whoever waits for it.
fn finish(
    shared: &Shared,
    slot: usize,
    (key, config): (&str, Vec<i64>),
    built: Built,
    started: Instant,
    paused_before: Duration,
    alive: bool,
) {
    let mut s = shared.lock();
    if !alive {
        s.pids.remove(&slot);
    }
    let took = started
        .elapsed()
        .saturating_sub(s.paused_so_far() - paused_before);
    s.busy += took;
    if matches!(
        built,
        Built::Binary(_) | Built::Failed(Outcome::BuildFailed { .. })
    ) {
        s.slowest = s.slowest.max(took);
    }
    if let Built::Binary(path) = &built {
        s.finished.push((config, path.clone()));
    }
    s.running.remove(key);
    s.done.insert(key.to_string(), built);
    shared.changed.notify_all();
}

/// Starts a build worker and waits for it to open its device.
fn start(shared: &Shared, slot: usize) -> Result<LineProcess, String> {
    let mut w = LineProcess::spawn((shared.command)(), &shared.job)
        .map_err(|e| format!("a build worker did not start: {e}"))?;
    {
        let mut s = shared.lock();
        s.pids.insert(slot, w.pid());
        if s.paused {
            signal(w.pid(), libc::SIGSTOP);
        }
    }
    let opened = w.answer_counting(Duration::from_secs(120), || !shared.lock().paused);
    match opened.as_deref().map(serde_json::from_str::<BuildResponse>) {
        Ok(Ok(BuildResponse::Ready)) => Ok(w),
        Ok(Ok(BuildResponse::Fatal(why))) => Err(format!("a build worker did not start: {why}")),
        Ok(_) => Err("a build worker did not say it was ready".into()),
        Err(Silence::Died(why)) => Err(format!("a build worker did not start: it {why}")),
        Err(Silence::Timeout) => Err("a build worker did not open the device in 120 s".into()),
    }
}
