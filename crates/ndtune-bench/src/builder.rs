//! Build workers: processes that compile a kernel's define sets ahead of measurement, each with
//! its own context on the tuned device, and hand the driver's program binaries
//! (`CL_PROGRAM_BINARIES`) to the measurement worker, which loads them instead of compiling. A
//! driver that keeps its builds in a cache of its own on disk (PoCL) is left to hand them over
//! itself: the build worker builds and primes, and the measurement's build from source finds
//! the program and its work-group functions in that cache ([`Built::InDriverCache`]).
//!
//! - [`Builder`] is the process (`ndtune __builder`): one [`BuildRequest`] line in, one
//!   [`BuildResponse`] line out, the binary written to a file.
//! - [`BuildPool`] runs `jobs` of them, each fed by a thread of its own from one queue ordered
//!   the way the strategy will ask ([`BuildPool::plan`]); a define set is built once. A compiler
//!   that crashes kills only its build worker (the define set is `build_failed`, with why), one
//!   that hangs is killed at the deadline (`timed_out`); the next build starts a new worker.
//! - On a CPU device the builders compete with the kernel being timed for the same cores, so
//!   the campaign stops them ([`BuildPool::pause`], SIGSTOP) while it measures and lets them go
//!   on (SIGCONT) in between; time stopped does not count towards a build's deadline. A build
//!   worker ends with its campaign even while stopped ([`crate::children`]).

use crate::evaluate::Bench;
use crate::evaluate::Fatal;
use crate::process::{LineProcess, Silence};
use crate::program_cache::ProgramCache;
use crate::worker::{serve_lines, Ask, Generated, Job, Service};
use ndtune_backend::DeviceError;
use ndtune_core::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Build a configuration's program and write its binary to `out`; with `prime`, also launch it
/// once (see [`Bench::prime`]); `generated`: the code (and global size) the front end generated
/// for it, built in place of the spec's.
#[derive(Debug, Serialize, Deserialize)]
pub struct BuildRequest {
    pub config: Vec<i64>,
    pub prime: bool,
    pub out: PathBuf,
    #[serde(default)]
    pub generated: Option<Generated>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildResponse {
    Ready,
    /// Built; the binary is in the request's file. With `prime`, [`BuildResponse::Primed`]
    /// follows once the launch is done.
    Built,
    /// Built into the driver's own cache of builds (no file); with `prime`,
    /// [`BuildResponse::Primed`] follows as for `Built`.
    InDriverCache,
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
    /// A configuration and its binary (none: built into the driver's cache) to prime after
    /// answering.
    primer: Option<(Vec<i64>, Option<Vec<u8>>)>,
    /// Where builds are primed (a CPU device), configurations that share build options but not
    /// launch sizes come one by one: their binaries, by build options, built once.
    binaries: HashMap<String, Vec<u8>>,
}

impl Service for Builder {
    type Request = BuildRequest;
    type Response = BuildResponse;

    fn open(job: &Job) -> Result<Builder, Fatal> {
        let bench = Bench::open(job)?;
        go_idle();
        Ok(Builder {
            bench,
            primer: None,
            binaries: HashMap::new(),
        })
    }

    fn switch(self, job: &Job) -> Result<Builder, Fatal> {
        Ok(Builder {
            bench: self.bench.switch(job)?,
            primer: None,
            binaries: HashMap::new(),
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
        self.bench.prime(&config, binary);
        Some(BuildResponse::Primed)
    }

    fn handle(&mut self, r: BuildRequest, _: Ask<'_, Self>) -> Result<BuildResponse, Fatal> {
        // Generated code is its configuration's own: never one of the spec's shared builds.
        let options = (r.generated.is_none()).then(|| self.bench.build_options(&r.config));
        self.bench.generate(r.generated);
        if self.bench.driver_caches_builds() {
            return Ok(match self.bench.build_into_driver_cache(&r.config) {
                Ok(()) => {
                    if r.prime {
                        self.primer = Some((r.config, None));
                    }
                    BuildResponse::InDriverCache
                }
                Err(e) => failed(e)?,
            });
        }
        let built = match options.as_ref().and_then(|o| self.binaries.get(o)) {
            Some(binary) => Ok(binary.clone()),
            None => self.bench.binary(&r.config),
        };
        match built {
            Ok(binary) => {
                // Written aside and renamed, so a reader never sees half a binary.
                let partial = r.out.with_extension("partial");
                std::fs::write(&partial, &binary)
                    .and_then(|()| std::fs::rename(&partial, &r.out))
                    .map_err(|e| Fatal(format!("cannot write {}: {e}", r.out.display())))?;
                if r.prime {
                    if let Some(options) = options {
                        self.binaries.insert(options, binary.clone());
                    }
                    self.primer = Some((r.config, Some(binary)));
                }
                Ok(BuildResponse::Built)
            }
            Err(e) => failed(e),
        }
    }
}

/// The answer to a build that did not give a program: `build_failed` where the compiler refused
/// the program; anything else (no kernel of the spec's name, the compiler missing, a failed
/// call) is no property of the configuration, so no outcome of it: the worker stops, and the
/// measurement worker, building itself, says what is wrong.
fn failed(e: DeviceError) -> Result<BuildResponse, Fatal> {
    match e {
        DeviceError::Build { log, .. } => Ok(BuildResponse::Failed { log }),
        e => Err(Fatal(e.to_string())),
    }
}

/// How much lower a build worker's scheduling priority is than the measurement's (nice(2)),
/// where the kernel refuses the idle policy (see [`serve`]).
pub const BUILD_NICENESS: i32 = 10;

/// Runs a build worker on stdin/stdout until stdin closes; the process exit code.
///
/// Once its device is open, a build worker runs under `SCHED_IDLE` ([`go_idle`]): it takes
/// only the cores nothing else wants. On a CPU device it runs beside the measurement worker's
/// untimed work (the first launch, restoring and comparing outputs) and is stopped for its timed
/// runs; at nice 10 a compiler still delayed each wake-up of the measurement (2.0-2.1 ms of
/// overhead per configuration on 2 cores against 1.5-1.7 ms under the idle policy,
/// `examples/conv2d.toml`), while under the idle policy the measurement preempts it at once.
/// It opens its device at the campaign's priority: the campaign waits for its first build, and
/// on a machine busy with other work an idle process never got through its start (a vector add's
/// 15 builds waited 25 s on PoCL against two busy loops, its builders busy 1.6 s of it).
pub fn serve() -> i32 {
    serve_lines::<Builder>()
}

/// Puts every thread of this build worker (the driver's included) under `SCHED_IDLE`, or at nice
/// [`BUILD_NICENESS`] where the kernel refuses the idle policy; a failure leaves the priority as
/// it was.
fn go_idle() {
    let param = libc::sched_param { sched_priority: 0 };
    for tid in crate::children::threads(std::process::id()) {
        // SAFETY: sched_setscheduler(2) and setpriority(2) on a thread of this process.
        unsafe {
            if libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) != 0 {
                libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BUILD_NICENESS);
            }
        }
    }
}

/// What became of one define set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Built {
    /// The program binary, in a file of the pool's directory.
    Binary(PathBuf),
    /// Built into the driver's own cache of builds ([`Bench::driver_caches_builds`]): the
    /// measurement worker builds from source and finds it there.
    InDriverCache,
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
    /// One dispatching thread per build worker slot (more come with [`BuildPool::grow`]).
    threads: Vec<JoinHandle<()>>,
    dir: tempfile::TempDir,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    command: Box<dyn Fn() -> Command + Send + Sync>,
    /// The job the workers build for, and how many times the pool was switched to another
    /// ([`BuildPool::switch`]): a worker started for an earlier one takes this one up before
    /// its next build.
    job: Mutex<(Arc<Job>, u64)>,
    fixed_timeout: Option<Duration>,
    prime: bool,
    /// Binaries of earlier campaigns, by build key: taken instead of building.
    cache: Option<ProgramCache>,
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
    /// Time the workers spent building, summed over workers.
    busy: Duration,
    /// Whether the queue may be built in any order (the strategy promised to ask for all of
    /// it): then the builds expected to take longest go first.
    any_order: bool,
    /// How many builds at the queue's front go first, in their order, before the longest
    /// ([`BuildPool::hurry`]).
    urgent: usize,
    times: BuildTimes,
    /// Build worker processes started (since the pool's last switch).
    started: usize,
    files: usize,
    /// Builds whose worker died once: built again in a fresh worker before the crash counts
    /// (PoCL's compiler crashes now and then where the same build succeeds the next time).
    crashed_once: HashSet<String>,
    /// Builds someone waits for ([`BuildPool::first_done`]), with how many wait: a new plan
    /// keeps them queued, first (the workers of a node plan in turn while others wait), and the
    /// worker building one runs at the campaign's own priority ([`set_priority`]).
    waited: HashMap<String, usize>,
    /// The build each worker slot is on.
    building: HashMap<usize, String>,
    /// The code the front end generated, by the key of its build ([`BuildPool::provide`]).
    generated: HashMap<String, Generated>,
}

impl State {
    fn paused_so_far(&self) -> Duration {
        self.paused_total + self.paused_since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Makes `builds` (none of them done or running) the queue, in order, but for the builds
    /// someone waits for, which stay queued first, as urgent.
    fn replan(&mut self, builds: Vec<(String, Vec<i64>)>, any_order: bool) {
        let mut queue: VecDeque<(String, Vec<i64>)> = std::mem::take(&mut self.queue)
            .into_iter()
            .filter(|(k, _)| self.waited.contains_key(k))
            .collect();
        let mut queued: HashSet<String> = queue.iter().map(|(k, _)| k.clone()).collect();
        self.urgent = queue.len();
        for (key, config) in builds {
            if queued.insert(key.clone()) {
                queue.push_back((key, config));
            }
        }
        self.queue = queue;
        self.any_order = any_order;
    }

    /// Queues build `key` (of `config`) first, as urgent: the campaign waits for it now. The
    /// builds hurried before it stay urgent, after it.
    fn put_first(&mut self, key: &str, config: &[i64]) {
        if let Some(at) = self.queue.iter().position(|(k, _)| k == key) {
            self.queue.remove(at);
            if at < self.urgent {
                self.urgent -= 1;
            }
        }
        self.queue.push_front((key.to_string(), config.to_vec()));
        self.urgent += 1;
    }

    /// The build a free worker takes next, off the queue and marked running: the urgent ones at
    /// the queue's front in order, then the longest expected where any order will do, else the
    /// queue's order.
    fn take_next(&mut self) -> Option<(String, Vec<i64>)> {
        let next = if self.urgent > 0 {
            self.urgent -= 1;
            Some(0)
        } else if self.any_order {
            self.times
                .longest(self.queue.iter().map(|(_, c)| c.as_slice()))
        } else {
            Some(0)
        };
        let (key, config) = next.and_then(|i| self.queue.remove(i))?;
        self.running.insert(key.clone());
        self.times.running(&config, true);
        Some((key, config))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn job(&self) -> MutexGuard<'_, (Arc<Job>, u64)> {
        self.job.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether build `key` is done, running, or found in the cache (then done).
    fn known(&self, state: &mut State, key: &str) -> bool {
        if state.done.contains_key(key) || state.running.contains(key) {
            return true;
        }
        match self.cache.as_ref().and_then(|c| c.get(key)) {
            Some(kept) => {
                state.done.insert(key.to_string(), kept);
                true
            }
            None => false,
        }
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
    /// each build once in its build worker (see [`Bench::prime`]); `cache`: binaries kept
    /// across campaigns, by build key, taken instead of building and added to; `history`: build
    /// times of earlier campaigns (configuration, seconds) to order the first builds by.
    pub fn new(
        command: Box<dyn Fn() -> Command + Send + Sync>,
        job: &Job,
        jobs: usize,
        timeout: Option<Duration>,
        prime: bool,
        cache: Option<ProgramCache>,
        history: &[(Vec<i64>, f64)],
    ) -> Result<BuildPool, Fatal> {
        let times = BuildTimes::from_learnt(history);
        let dir = ndtune_core::cache::private_temp_dir("ndtune-builds-")
            .map_err(|e| Fatal(format!("cannot make a directory for program binaries: {e}")))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                times,
                ..State::default()
            }),
            changed: Condvar::new(),
            command,
            job: Mutex::new((Arc::new(job.clone()), 0)),
            fixed_timeout: timeout,
            prime,
            cache,
        });
        // A worker's process starts with its first build.
        let threads = (0..jobs.max(1))
            .map(|slot| {
                let shared = Arc::clone(&shared);
                let dir = dir.path().to_path_buf();
                std::thread::spawn(move || dispatch(&shared, slot, &dir))
            })
            .collect();
        let pool = BuildPool {
            shared,
            threads,
            dir,
        };
        Ok(pool)
    }

    /// Builds for `job` from now on (a sweep's next campaign, on the same device), as a pool
    /// started for it with build times `history` would, but with its workers kept: each takes
    /// the job up in its own process before its next build. Builds already done stay done
    /// where they say something of their key alone (a binary, a compiler's refusal); nothing
    /// queued stays; the build time and times learnt are counted anew.
    pub fn switch(&self, job: &Job, history: &[(Vec<i64>, f64)]) {
        {
            let mut current = self.shared.job();
            *current = (Arc::new(job.clone()), current.1 + 1);
        }
        let mut s = self.shared.lock();
        s.queue.clear();
        s.urgent = 0;
        s.any_order = false;
        s.busy = Duration::ZERO;
        s.started = 0;
        s.times = BuildTimes::from_learnt(history);
        s.crashed_once.clear();
        s.generated.clear();
        s.done.retain(|_, built| {
            matches!(
                built,
                Built::Binary(_)
                    | Built::InDriverCache
                    | Built::Failed(Outcome::BuildFailed { .. })
            )
        });
        self.shared.changed.notify_all();
    }

    /// How many build workers the pool runs.
    pub fn jobs(&self) -> usize {
        self.threads.len()
    }

    /// The builds expected next, in order, each a key (configurations with the same key share
    /// a build) and a configuration: replaces what was queued before, but for the builds someone
    /// waits for ([`BuildPool::first_done`]), which stay first; those built or being built
    /// already are left out. `any_order`: every one will be needed, in whatever order they
    /// are done ([`BuildPool::first_done`]), so the pool builds those it expects to take longest
    /// first (longest processing time first: the last build to finish bounds the campaign).
    pub fn plan(&self, builds: impl IntoIterator<Item = (String, Vec<i64>)>, any_order: bool) {
        let mut s = self.shared.lock();
        let builds: Vec<(String, Vec<i64>)> = builds
            .into_iter()
            .filter(|(k, _)| !self.shared.known(&mut s, k))
            .collect();
        s.replan(builds, any_order);
        self.shared.changed.notify_all();
    }

    /// Makes build `key` one of `generated`'s code, in place of the spec's source: given before
    /// the build is planned or waited for (its key names the code, so no other build shares it).
    pub fn provide(&self, key: &str, generated: Generated) {
        self.shared
            .lock()
            .generated
            .insert(key.to_string(), generated);
    }

    /// Builds `builds` (planned, or not) before the rest of the queue, in this order: what the
    /// campaign measures first whatever the plan's order (its scouts).
    pub fn hurry(&self, builds: impl IntoIterator<Item = (String, Vec<i64>)>) {
        let mut s = self.shared.lock();
        let mut front = Vec::new();
        for (key, config) in builds {
            if front.iter().any(|(k, _)| *k == key) || self.shared.known(&mut s, &key) {
                continue;
            }
            s.queue.retain(|(k, _)| *k != key);
            front.push((key, config));
        }
        s.urgent = front.len();
        for build in front.into_iter().rev() {
            s.queue.push_front(build);
        }
        self.shared.changed.notify_all();
    }

    /// What became of build `key` (of `config`), building it first, ahead of the queue, if
    /// needed.
    pub fn wait(&self, key: &str, config: &[i64]) -> Built {
        self.first_done(key, config, &[]);
        let s = self.shared.lock();
        match (s.done.get(key), &s.broken) {
            (Some(built), _) => built.clone(),
            (None, why) => Built::Unavailable(why.clone().unwrap_or_default()),
        }
    }

    /// Waits until build `key` (of `config`) is done, queued first if need be (`None`), or until
    /// one of `others` is (`Some` of its index), whichever comes first; `key` wins a tie. `None`
    /// too where no build worker can start ([`BuildPool::wait`] then says why).
    pub fn first_done(&self, key: &str, config: &[i64], others: &[&str]) -> Option<usize> {
        let mut s = self.shared.lock();
        let queued = s.any_order && s.queue.iter().any(|(k, _)| k == key);
        if !queued && !self.shared.known(&mut s, key) {
            s.put_first(key, config);
            self.shared.changed.notify_all();
        }
        *s.waited.entry(key.to_string()).or_default() += 1;
        let slot = s
            .building
            .iter()
            .find(|(_, k)| *k == key)
            .map(|(slot, _)| *slot);
        match slot.and_then(|slot| s.pids.get(&slot)) {
            Some(&pid) => set_priority(pid, true),
            // Queued: the first builder to be ready takes it next, so every build running now,
            // and every builder still opening its device, is waited for too (under the idle
            // policy, on a busy machine, none of them would end).
            None => {
                for &pid in s.pids.values() {
                    set_priority(pid, true);
                }
            }
        }
        let first = loop {
            if s.done.contains_key(key) || s.broken.is_some() {
                break None;
            }
            if let Some(i) = others.iter().position(|k| s.done.contains_key(*k)) {
                break Some(i);
            }
            s = self
                .shared
                .changed
                .wait(s)
                .unwrap_or_else(|p| p.into_inner());
        };
        if let Some(n) = s.waited.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                s.waited.remove(key);
            }
        }
        first
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

    /// Time the build workers spent building so far, summed over workers, in seconds.
    pub fn busy_s(&self) -> f64 {
        self.shared.lock().busy.as_secs_f64()
    }

    /// How many build worker processes the pool started (since its last switch).
    pub fn started(&self) -> usize {
        self.shared.lock().started
    }

    /// Every build time known (configuration, seconds): the history given, then this pool's.
    pub fn build_times(&self) -> Vec<(Vec<i64>, f64)> {
        self.shared.lock().times.learnt().to_vec()
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
                crate::children::end(pid, libc::SIGKILL);
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

/// Gives a build worker's threads the cores nothing else wants (`SCHED_IDLE`, how it runs once
/// ready, see [`serve`]) or, while the campaign waits for its build (`urgent`), the priority of the
/// campaign itself: the measurement waits for this build, so the build disturbs no timing, and
/// on a machine busy with other work a build below their priority gets next to no time (a
/// vector add's 15 builds waited 88 s on PoCL at a load of 17 under the idle policy; at nice 10
/// against two busy loops on 2 cores, Kernel Tuner's own examples took 1.4-1.7x as long through
/// ndtune as through Kernel Tuner, which compiles at its own priority). Leaving the idle policy
/// takes root, CAP_SYS_NICE or an `ulimit -e` of at least 20 - nice: where the system refuses,
/// the worker keeps what it had.
fn set_priority(pid: u32, urgent: bool) {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: getpriority(2) of this process; errno is cleared first, as -1 is a niceness too.
    let own = unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        match *libc::__errno_location() {
            0 => nice,
            _ => 0,
        }
    };
    for tid in crate::children::threads(pid) {
        // SAFETY: sched_setscheduler(2) and setpriority(2) on a thread of our own child.
        unsafe {
            if !urgent {
                libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param);
            } else if libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) == 0 {
                libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, own);
            }
        }
    }
}

/// One build worker's thread: takes define sets off the queue and builds them in its process,
/// restarting the process after a crash or a hang.
fn dispatch(shared: &Shared, slot: usize, dir: &std::path::Path) {
    let mut worker: Option<(LineProcess, u64)> = None;
    loop {
        let (key, config) = {
            let mut s = shared.lock();
            loop {
                if s.closing || s.broken.is_some() {
                    return;
                }
                if !s.paused {
                    if let Some(next) = s.take_next() {
                        break next;
                    }
                }
                s = shared.changed.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        };
        if let Some((w, generation)) = &mut worker {
            let (job, now) = shared.job().clone();
            if *generation != now && !switch(shared, w, &job) {
                shared.lock().pids.remove(&slot);
                worker = None;
            } else {
                *generation = now;
            }
        }
        if worker.is_none() {
            match start(shared, slot) {
                Ok(w) => worker = Some(w),
                Err(why) => {
                    let mut s = shared.lock();
                    s.running.remove(&key);
                    s.times.running(&config, false);
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
        let generated = shared.lock().generated.get(&key).cloned();
        let request = serde_json::to_string(&BuildRequest {
            config: config.clone(),
            prime: shared.prime,
            out: out.clone(),
            generated,
        })
        .expect("serialises");
        let (deadline, paused_before) = {
            let s = shared.lock();
            (shared.deadline(&s), s.paused_so_far())
        };
        let (w, _) = worker.as_mut().expect("started above");
        {
            let mut s = shared.lock();
            s.building.insert(slot, key.clone());
            set_priority(w.pid(), s.waited.contains_key(&key));
        }
        let started = Instant::now();
        let answer = w
            .tell(&request)
            .and_then(|()| w.answer_counting(deadline, || !shared.lock().paused));
        let (built, alive) = match answer.as_deref().map(serde_json::from_str::<BuildResponse>) {
            Ok(Ok(BuildResponse::Built)) => (Built::Binary(out), true),
            Ok(Ok(BuildResponse::InDriverCache)) => (Built::InDriverCache, true),
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
            Err(Silence::Died(why)) => {
                let mut s = shared.lock();
                s.pids.remove(&slot);
                if s.crashed_once.insert(key.clone()) {
                    // Once more, first in the queue, in a fresh worker.
                    s.running.remove(&key);
                    s.times.running(&config, false);
                    s.queue.push_front((key, config));
                    shared.changed.notify_all();
                    worker = None;
                    continue;
                }
                (
                    Built::Failed(Outcome::BuildFailed {
                        log: format!(
                            "the compiler crashed: the build worker {why} (twice: once more in a \
                             fresh worker)"
                        ),
                    }),
                    false,
                )
            }
            Err(Silence::Timeout) => (
                Built::Failed(Outcome::TimedOut {
                    seconds: deadline.as_secs_f64(),
                }),
                false,
            ),
            Err(Silence::Interrupted(why)) => {
                // The campaign stops: no outcome of this build, and no more builds.
                let mut s = shared.lock();
                s.pids.remove(&slot);
                s.running.remove(&key);
                s.broken.get_or_insert_with(|| why.clone());
                shared.changed.notify_all();
                return;
            }
        };
        if let Some(cache) = &shared.cache {
            match &built {
                Built::Binary(path) => cache.keep(&key, Some(path)),
                Built::InDriverCache => cache.keep(&key, None),
                _ => {}
            }
        }
        let mut alive = alive;
        if alive && shared.prime && matches!(built, Built::Binary(_) | Built::InDriverCache) {
            // The binary is out; the launch that primes the driver's cache follows, and the build
            // is done once it has (else the measurement's first launch would compile the same
            // work-group size at the same time). A kernel that crashes or hangs there only costs
            // this worker: the measurement will find out itself.
            let primed = worker
                .as_mut()
                .expect("alive")
                .0
                .answer_counting(deadline, || !shared.lock().paused);
            alive = matches!(
                primed.as_deref().map(serde_json::from_str::<BuildResponse>),
                Ok(Ok(BuildResponse::Primed))
            );
        }
        finish(
            shared,
            slot,
            (&key, &config),
            built,
            started,
            paused_before,
            alive,
        );
        if !alive {
            worker = None;
        }
    }
}

/// Records what became of build `key` and wakes whoever waits for it.
fn finish(
    shared: &Shared,
    slot: usize,
    (key, config): (&str, &[i64]),
    built: Built,
    started: Instant,
    paused_before: Duration,
    alive: bool,
) {
    let mut s = shared.lock();
    s.building.remove(&slot);
    if !alive {
        s.pids.remove(&slot);
    }
    let took = started
        .elapsed()
        .saturating_sub(s.paused_so_far() - paused_before);
    s.busy += took;
    match built {
        Built::Binary(_) | Built::InDriverCache | Built::Failed(Outcome::BuildFailed { .. }) => {
            s.slowest = s.slowest.max(took);
            s.times.add(config, took);
        }
        Built::Failed(Outcome::TimedOut { .. }) => s.times.add(config, took),
        _ => {}
    }
    s.times.running(config, false);
    s.running.remove(key);
    s.done.insert(key.to_string(), built);
    shared.changed.notify_all();
}

/// Hands a running build worker the pool's `job` ([`BuildPool::switch`]); whether it took
/// it up (else it is to be replaced by a fresh one, which says what is wrong).
fn switch(shared: &Shared, w: &mut LineProcess, job: &Job) -> bool {
    let line = serde_json::to_string(&crate::worker::Switch {
        switch: job.clone(),
    })
    .expect("a job serialises");
    let answer = w
        .tell(&line)
        .and_then(|()| w.answer_counting(Duration::from_secs(120), || !shared.lock().paused));
    matches!(
        answer.as_deref().map(serde_json::from_str::<BuildResponse>),
        Ok(Ok(BuildResponse::Ready))
    )
}

/// Starts a build worker and waits for it to open its device; with the pool's generation of
/// the job it was given.
fn start(shared: &Shared, slot: usize) -> Result<(LineProcess, u64), String> {
    let (job, generation) = shared.job().clone();
    let line = serde_json::to_string(&*job).expect("a job serialises");
    let mut w = LineProcess::spawn((shared.command)(), &line)
        .map_err(|e| format!("a build worker did not start: {e}"))?;
    {
        let mut s = shared.lock();
        s.started += 1;
        s.pids.insert(slot, w.pid());
        if s.paused {
            signal(w.pid(), libc::SIGSTOP);
        }
    }
    let opened = w.answer_counting(Duration::from_secs(120), || !shared.lock().paused);
    match opened.as_deref().map(serde_json::from_str::<BuildResponse>) {
        Ok(Ok(BuildResponse::Ready)) => Ok((w, generation)),
        Ok(Ok(BuildResponse::Fatal(why))) => Err(format!("a build worker did not start: {why}")),
        Ok(_) => Err("a build worker did not say it was ready".into()),
        Err(Silence::Died(why)) => Err(format!("a build worker did not start: it {why}")),
        Err(Silence::Interrupted(why)) => Err(why.clone()),
        Err(Silence::Timeout) => Err("a build worker did not open the device in 120 s".into()),
    }
}

/// Build times so far, to guess which queued builds take longest: a build's log time is
/// modelled as the mean over all builds plus, per parameter, how far builds with the same value
/// of that parameter were from it. It starts from the build times of earlier campaigns where the
/// store kept them ([`BuildPool::new`]'s `history`).
///
/// A value never built makes a build a guess of the longest, so unexplored corners start early.
/// Among such guesses (all of them before any build has finished, when the first build workers
/// take their first builds) the corners of the space go first: builds whose values are each the
/// smallest or the largest of their parameter in the queue, since build time grows or falls with
/// what drives code size (tile sizes, unroll factors) either way; then those that bring the most
/// values not built or being built yet, so that every value is covered early.
#[derive(Default)]
pub struct BuildTimes {
    /// Sum and count of log seconds, over all builds and by (parameter index, value).
    all: (f64, u32),
    by_value: HashMap<(usize, i64), (f64, u32)>,
    /// Builds running now, by (parameter index, value).
    running: HashMap<(usize, i64), u32>,
    /// Every build time learnt (configuration, seconds), in the order learnt.
    learnt: Vec<(Vec<i64>, f64)>,
}

impl BuildTimes {
    /// Learns that building `config` took `took`.
    pub fn add(&mut self, config: &[i64], took: Duration) {
        let t = took.as_secs_f64().max(1e-6).ln();
        self.all = (self.all.0 + t, self.all.1 + 1);
        for (i, &v) in config.iter().enumerate() {
            let e = self.by_value.entry((i, v)).or_insert((0.0, 0));
            *e = (e.0 + t, e.1 + 1);
        }
        self.learnt.push((config.to_vec(), took.as_secs_f64()));
    }

    /// A build of `config` started (`true`) or ended (`false`).
    fn running(&mut self, config: &[i64], started: bool) {
        for (i, &v) in config.iter().enumerate() {
            let n = self.running.entry((i, v)).or_default();
            *n = if started { *n + 1 } else { n.saturating_sub(1) };
        }
    }

    /// Every build time learnt, in the order learnt (the history passed in first).
    pub fn learnt(&self) -> &[(Vec<i64>, f64)] {
        &self.learnt
    }

    /// The expected log time of building `config` (+inf where a value was never built).
    fn expected(&self, config: &[i64]) -> f64 {
        if self.all.1 == 0 {
            return f64::INFINITY;
        }
        let mean = self.all.0 / f64::from(self.all.1);
        config
            .iter()
            .enumerate()
            .fold(mean, |acc, (i, &v)| match self.by_value.get(&(i, v)) {
                Some(&(sum, n)) => acc + sum / f64::from(n) - mean,
                None => f64::INFINITY,
            })
    }

    /// What is known of every build time learnt so far elsewhere ([`BuildPool::build_times`]).
    pub fn from_learnt(times: &[(Vec<i64>, f64)]) -> BuildTimes {
        let mut learnt = BuildTimes::default();
        for (config, seconds) in times {
            if let Ok(took) = Duration::try_from_secs_f64(*seconds) {
                learnt.add(config, took);
            }
        }
        learnt
    }

    /// The index of the build expected to take longest; among guesses, corners first, then
    /// those that bring the most values not covered yet; the first of equals. `None` if none.
    pub fn longest<'c>(&self, configs: impl Iterator<Item = &'c [i64]> + Clone) -> Option<usize> {
        let rank = self.ranker(configs.clone());
        let mut best: Option<(usize, (f64, bool, usize))> = None;
        for (i, c) in configs.enumerate() {
            let k = rank(c);
            if best.is_none_or(|(_, b)| by_expected_length(&k, &b).is_gt()) {
                best = Some((i, k));
            }
        }
        best.map(|(i, _)| i)
    }

    /// The indices of `configs`, the builds expected to take longest first (as [`Self::longest`]
    /// ranks them; equals in their order): the order to take builds in where any order will do.
    pub fn longest_first(&self, configs: &[&[i64]]) -> Vec<usize> {
        let rank = self.ranker(configs.iter().copied());
        let keys: Vec<(f64, bool, usize)> = configs.iter().map(|c| rank(c)).collect();
        let mut order: Vec<usize> = (0..configs.len()).collect();
        order.sort_by(|&a, &b| by_expected_length(&keys[b], &keys[a]));
        order
    }

    /// How a build of the queue `configs` ranks: its expected log time, whether it is a corner
    /// of the queue (each value the smallest or the largest of its parameter), and how many of
    /// its values are neither built nor being built.
    fn ranker<'c>(
        &self,
        configs: impl Iterator<Item = &'c [i64]>,
    ) -> impl Fn(&[i64]) -> (f64, bool, usize) + '_ {
        // Each parameter's smallest and largest value in the queue.
        let mut range: Vec<(i64, i64)> = Vec::new();
        for c in configs {
            range.resize(c.len().max(range.len()), (i64::MAX, i64::MIN));
            for (r, &v) in range.iter_mut().zip(c) {
                *r = (r.0.min(v), r.1.max(v));
            }
        }
        move |c: &[i64]| {
            let corners = c
                .iter()
                .zip(&range)
                .filter(|(&v, &(lo, hi))| v == lo || v == hi)
                .count();
            let uncovered = c
                .iter()
                .enumerate()
                .filter(|&(i, &v)| {
                    !self.by_value.contains_key(&(i, v))
                        && self.running.get(&(i, v)).is_none_or(|&n| n == 0)
                })
                .count();
            (self.expected(c), corners == c.len(), uncovered)
        }
    }
}

/// How builds ranked `a` and `b` ([`BuildTimes::ranker`]) compare: `Greater` where `a` is
/// expected to take longer.
fn by_expected_length(a: &(f64, bool, usize), b: &(f64, bool, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
}

#[cfg(test)]
mod tests {
    use super::{set_priority, BuildTimes, State};
    use std::time::Duration;

    /// A build the campaign waits for goes first, ahead of the longest expected and of the
    /// hurried scouts, which keep their turn after it.
    #[test]
    fn a_build_waited_for_goes_first_and_the_hurried_keep_their_turn() {
        let mut s = State {
            any_order: true,
            ..State::default()
        };
        for (v, ms) in [(1, 100), (2, 200), (3, 300), (9, 900)] {
            s.times.add(&[v], Duration::from_millis(ms));
        }
        let build = |v: i64| (format!("V={v}"), vec![v]);
        s.queue = [2, 3, 9, 1].into_iter().map(build).collect();
        // The scouts 2 and 3 were hurried; then the campaign waits for 5, not planned.
        s.urgent = 2;
        s.put_first("V=5", &[5]);
        let mut taken = || s.take_next().map(|(k, _)| k);
        assert_eq!(taken().as_deref(), Some("V=5"));
        assert_eq!(taken().as_deref(), Some("V=2"));
        assert_eq!(taken().as_deref(), Some("V=3"));
        // Then the longest expected, 9, before 1.
        assert_eq!(taken().as_deref(), Some("V=9"));
        assert_eq!(taken().as_deref(), Some("V=1"));
        assert_eq!(taken(), None);
        // Waiting for a build that was hurried moves it first without a turn more.
        let mut s = State {
            any_order: true,
            ..State::default()
        };
        s.queue = [2, 3, 9].into_iter().map(build).collect();
        s.urgent = 2;
        s.put_first("V=3", &[3]);
        assert_eq!(s.urgent, 2);
        let order: Vec<String> = std::iter::from_fn(|| s.take_next().map(|(k, _)| k)).collect();
        assert_eq!(order, ["V=3", "V=2", "V=9"]);
    }

    #[test]
    fn a_build_waited_for_runs_at_the_campaigns_priority_and_the_others_on_idle_cores() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        // SAFETY: sched_getscheduler(2) and getpriority(2) of our own child.
        let policy = || unsafe { libc::sched_getscheduler(pid as libc::pid_t) };
        set_priority(pid, false);
        assert_eq!(policy(), libc::SCHED_IDLE);
        // Leaving the idle policy takes root, CAP_SYS_NICE or `ulimit -e` of at least 20 - nice;
        // without, the worker stays idle.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: geteuid(2) and getrlimit(2) of this process, into a local.
        let may = unsafe {
            libc::geteuid() == 0
                || (libc::getrlimit(libc::RLIMIT_NICE, &mut limit) == 0 && limit.rlim_cur >= 20)
        };
        set_priority(pid, true);
        if may {
            assert_eq!(policy(), libc::SCHED_OTHER);
            // SAFETY: getpriority(2) of our own child and of this process.
            let (nice, own) = unsafe {
                (
                    libc::getpriority(libc::PRIO_PROCESS, pid as libc::id_t),
                    libc::getpriority(libc::PRIO_PROCESS, 0),
                )
            };
            assert_eq!(
                nice, own,
                "the build waited for runs at the campaign's priority"
            );
        } else {
            assert_eq!(policy(), libc::SCHED_IDLE);
        }
        set_priority(pid, false);
        assert_eq!(policy(), libc::SCHED_IDLE);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_new_plan_keeps_the_builds_waited_for_first() {
        let build = |k: &str| (k.to_string(), vec![k.len() as i64]);
        let mut s = State {
            queue: [build("a"), build("bb"), build("ccc")].into(),
            ..State::default()
        };
        // Another worker of the node plans while this one waits for `bb`.
        s.waited.insert("bb".into(), 1);
        s.replan(vec![build("dddd"), build("bb"), build("e")], false);
        let keys: Vec<&str> = s.queue.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["bb", "dddd", "e"]);
        assert_eq!(s.take_next().unwrap().0, "bb");
        // Nobody waits: the plan is the queue.
        s.waited.clear();
        s.replan(vec![build("f")], false);
        assert_eq!(s.take_next().unwrap().0, "f");
        assert!(s.take_next().is_none());
    }

    #[test]
    fn the_longest_expected_build_goes_first_and_new_values_count_as_longest() {
        let mut t = BuildTimes::default();
        let queue: Vec<Vec<i64>> = vec![vec![8, 1], vec![16, 32], vec![16, 1], vec![64, 1]];
        let at = |t: &BuildTimes| t.longest(queue.iter().map(Vec::as_slice));
        assert_eq!(at(&t), Some(0), "nothing known: the first corner");
        t.add(&[8, 1], Duration::from_millis(100));
        t.add(&[8, 32], Duration::from_millis(800));
        t.add(&[16, 8], Duration::from_millis(400));
        // 64 was never built: the guess is that it is the slowest.
        assert_eq!(at(&t), Some(3));
        t.add(&[64, 8], Duration::from_millis(50));
        // Now an unroll of 32 (slow) with a tile of 16 (slower than 8) is expected longest.
        assert_eq!(at(&t), Some(1));
        assert!(t.expected(&[16, 32]) > t.expected(&[16, 1]));
        assert_eq!(t.longest(std::iter::empty()), None);
    }

    #[test]
    fn builds_learnt_elsewhere_order_a_queue_longest_first() {
        let learnt = BuildTimes::from_learnt(&[
            (vec![8, 1], 0.1),
            (vec![8, 32], 0.8),
            (vec![16, 8], 0.4),
            (vec![64, 8], 0.05),
        ]);
        let queue: [&[i64]; 5] = [&[8, 1], &[16, 1], &[16, 32], &[64, 1], &[8, 32]];
        // Unroll 32 is slow, a tile of 16 slower than 8, 64 the fastest.
        assert_eq!(learnt.longest_first(&queue), vec![2, 4, 1, 0, 3]);
        assert_eq!(
            learnt.longest_first(&queue)[0],
            learnt.longest(queue.iter().copied()).unwrap(),
            "the same rank as the pool's own choice"
        );
        // A value never built is guessed the longest of all.
        let queue: [&[i64]; 3] = [&[8, 1], &[32, 1], &[8, 32]];
        assert_eq!(learnt.longest_first(&queue), vec![1, 2, 0]);
        assert!(BuildTimes::default().longest_first(&[]).is_empty());
    }

    #[test]
    fn before_any_build_time_is_known_corners_go_first_then_values_not_covered() {
        let mut t = BuildTimes::default();
        let mut queue: Vec<Vec<i64>> = vec![vec![2, 5], vec![1, 5], vec![3, 9], vec![3, 7]];
        let mut take = |t: &mut BuildTimes| {
            let at = t.longest(queue.iter().map(Vec::as_slice)).unwrap();
            let config = queue.remove(at);
            t.running(&config, true);
            config
        };
        // [1, 5] and [3, 9] are corners (1 and 3, 5 and 9 the extremes): the first of them,
        // then the other.
        assert_eq!(take(&mut t), [1, 5]);
        assert_eq!(take(&mut t), [3, 9]);
        // What is left are corners of what is left, each with one value not covered: in order.
        assert_eq!(take(&mut t), [2, 5]);
        assert_eq!(take(&mut t), [3, 7]);
        // ...and once times are known, a value never built is the guess of the longest.
        let mut t = BuildTimes::default();
        t.add(&[1, 5], Duration::from_secs(1));
        t.add(&[3, 9], Duration::from_secs(2));
        let queue: Vec<Vec<i64>> = vec![vec![1, 9], vec![3, 5], vec![2, 5]];
        assert_eq!(t.longest(queue.iter().map(Vec::as_slice)), Some(2));
    }

    /// The sgemm-like space of `examples/sgemm.toml` (TS, RTS, PAD, UNROLL) in the strategy's
    /// order, smallest tiles first.
    fn sgemm_space() -> Vec<Vec<i64>> {
        let mut space = Vec::new();
        for ts in [8, 16, 32, 64] {
            for rts in [1, 2, 4, 8, 16, 32].into_iter().filter(|r| ts % r == 0) {
                for pad in [0, 1] {
                    for unroll in [1, 8, 32] {
                        space.push(vec![ts, rts, pad, unroll]);
                    }
                }
            }
        }
        space
    }

    /// A mock build pool: `workers` build workers take the queued builds in the order
    /// [`BuildTimes::longest`] says (or the queue's order), each build of `config` taking
    /// `cost(config)` seconds, its time learnt when it ends. The time the last build ends and
    /// when the costliest one started.
    fn simulate(
        mut queue: Vec<Vec<i64>>,
        workers: usize,
        cost: impl Fn(&[i64]) -> f64,
        longest_first: bool,
    ) -> (f64, f64) {
        let heaviest = queue
            .iter()
            .max_by(|a, b| cost(a).total_cmp(&cost(b)))
            .cloned()
            .unwrap();
        let mut times = BuildTimes::default();
        let mut running: Vec<(f64, Vec<i64>)> = Vec::new();
        let (mut now, mut heaviest_start) = (0.0, f64::NAN);
        while !queue.is_empty() || !running.is_empty() {
            while running.len() < workers && !queue.is_empty() {
                let at = if longest_first {
                    times.longest(queue.iter().map(Vec::as_slice)).unwrap()
                } else {
                    0
                };
                let config = queue.remove(at);
                if config == heaviest {
                    heaviest_start = now;
                }
                times.running(&config, true);
                running.push((now + cost(&config), config));
            }
            let first = (0..running.len())
                .min_by(|&a, &b| running[a].0.total_cmp(&running[b].0))
                .unwrap();
            let (end, config) = running.swap_remove(first);
            now = end;
            times.running(&config, false);
            times.add(&config, Duration::from_secs_f64(cost(&config)));
        }
        (now, heaviest_start)
    }

    #[test]
    fn a_mock_pool_ends_near_the_physical_bound_with_the_heaviest_build_first() {
        // Code grows with the results each work-item keeps (TS / RTS) and with the unroll.
        let cost = |c: &[i64]| 0.05 * ((c[0] / c[1]) as f64).powf(0.8) * (1.0 + c[3] as f64 / 8.0);
        let space = sgemm_space();
        let workers = 15;
        let total: f64 = space.iter().map(|c| cost(c)).sum();
        let longest = space.iter().map(|c| cost(c)).fold(0.0, f64::max);
        let bound = longest.max(total / workers as f64);
        let (ordered, heaviest_start) = simulate(space.clone(), workers, cost, true);
        let (fifo, fifo_heaviest_start) = simulate(space, workers, cost, false);
        assert_eq!(
            heaviest_start, 0.0,
            "the heaviest build is a corner: it starts at once"
        );
        assert!(
            ordered <= 1.1 * bound,
            "longest first: {ordered:.2} s against the bound {bound:.2} s"
        );
        assert!(
            fifo > 1.25 * bound && fifo_heaviest_start > 0.0,
            "the strategy's order starts the heaviest build late: {fifo:.2} s"
        );
    }

    #[test]
    fn build_times_of_earlier_campaigns_order_the_first_builds() {
        let space = sgemm_space();
        let mut t = BuildTimes::default();
        // An earlier campaign found small tiles with large unrolls slowest (another kernel
        // than the corners would guess): its history, not the corners, picks the first build.
        for c in &space {
            let slow = c[0] == 16 && c[3] == 32;
            t.add(c, Duration::from_secs_f64(if slow { 9.0 } else { 0.1 }));
        }
        let first = &space[t.longest(space.iter().map(Vec::as_slice)).unwrap()];
        assert_eq!((first[0], first[3]), (16, 32));
        assert_eq!(t.learnt().len(), space.len());
    }
}
