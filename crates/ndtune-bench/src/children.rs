//! The child processes of a campaign (the measurement worker, the build workers, the workers
//! of a `--pool`) end with it, however it ends.
//!
//! - [`spawn`] starts a child that the kernel ends when this process dies, even by SIGKILL:
//!   between fork and exec it asks for a parent-death signal (`PR_SET_PDEATHSIG`) and exits at
//!   once if its parent is gone already. The signal comes when the *thread* that forked the
//!   child ends, so every child is forked by one thread that lives as long as the process. A
//!   child that may be stopped (a build worker paused with SIGSTOP while a CPU device is timed)
//!   gets SIGKILL, the one signal a stopped process does not hold pending; one that may clean
//!   up (a pool's `tune --worker`) gets SIGTERM. Each child leads a process group of its own,
//!   so that a terminal's Ctrl-C reaches only ndtune, which then ends its children itself.
//! - [`end_with_signals`] makes SIGTERM, SIGINT and SIGHUP stop the campaign: [`stopping`] says
//!   so from then on, every living child gets its signal, and a worker that dies of it is not
//!   taken for a crash ([`crate::process::Silence::Interrupted`]), so nothing false is stored.
//!   The campaign stops as after a fatal error, keeping what it measured, giving back its
//!   claims and removing its temporary files; where it has not ended [`GRACE`] later, or at a
//!   second signal, the process exits at once, removing its and its children's temporary
//!   folders first (its children then die of the parent-death signal). A second signal from
//!   the parent, or from this process, does not count: the kernel sends a parent-death signal
//!   again each time one of the dying parent's threads ends (the child passes from thread to
//!   thread), naming as its sender the parent or the child itself, and a stopping parent sends
//!   its own; only the grace ends a child then.
//! - [`end`] signals a child to end after taking it off the idle scheduling policy (a build
//!   worker's), so that a busy machine does not starve its exit.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a stopping campaign may take to end after its children were ended.
pub const GRACE: Duration = Duration::from_secs(3);

/// The signal a child gets when its campaign ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnEnd {
    /// SIGKILL: the child may be stopped, or has nothing to save.
    Kill,
    /// SIGTERM: the child saves what it has and ends its own children.
    Terminate,
}

impl OnEnd {
    fn signal(self) -> libc::c_int {
        match self {
            OnEnd::Kill => libc::SIGKILL,
            OnEnd::Terminate => libc::SIGTERM,
        }
    }
}

/// The living children, by process id, with the signal each gets when the campaign stops.
static LIVING: Mutex<BTreeMap<u32, OnEnd>> = Mutex::new(BTreeMap::new());

/// The signal the campaign is stopping for; 0 while it is not.
static STOPPING: AtomicI32 = AtomicI32::new(0);

type Spawn = (Command, mpsc::Sender<io::Result<Child>>);

/// The thread every child is forked by (see the module's header).
fn forker() -> &'static mpsc::Sender<Spawn> {
    static FORKER: OnceLock<mpsc::Sender<Spawn>> = OnceLock::new();
    FORKER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Spawn>();
        std::thread::Builder::new()
            .name("ndtune-forker".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread to start child processes");
        tx
    })
}

fn locked() -> std::sync::MutexGuard<'static, BTreeMap<u32, OnEnd>> {
    LIVING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts `command` as a child that ends with this process (it gets `on_end`'s signal when
/// this process dies or the campaign stops), in a process group of its own. Refused while the
/// campaign is stopping. Call [`reaped`] before waiting for the child's end.
pub fn spawn(mut command: Command, on_end: OnEnd) -> io::Result<Child> {
    if let Some(why) = stopping() {
        return Err(io::Error::other(why));
    }
    let parent = std::process::id() as libc::pid_t;
    let signal = on_end.signal() as libc::c_ulong;
    // SAFETY: between fork and exec only async-signal-safe calls are made (setpgid, prctl,
    // getppid) and nothing is allocated.
    unsafe {
        command.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 || libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent died before the death signal was asked for: nobody would send it.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let (reply, spawned) = mpsc::channel();
    forker()
        .send((command, reply))
        .map_err(|_| io::Error::other("the thread that starts child processes is gone"))?;
    let mut child = spawned
        .recv()
        .map_err(|_| io::Error::other("the thread that starts child processes is gone"))??;
    locked().insert(child.id(), on_end);
    // A stop that came while it started did not see it.
    if let Some(why) = stopping() {
        reaped(child.id());
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other(why));
    }
    Ok(child)
}

/// Forgets child `pid`, which ended or is being ended: call it before waiting for its end, so
/// that its process id, free again once it is reaped, is never signalled.
pub fn reaped(pid: u32) {
    locked().remove(&pid);
}

/// Why the campaign is stopping, if it is: `ndtune was interrupted (SIGTERM)...`.
pub fn stopping() -> Option<String> {
    match STOPPING.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(format!(
            "ndtune was interrupted ({}); what was measured is in the store, and the same \
             command goes on from there",
            signal_name(signal)
        )),
    }
}

/// A host that lives on after a stopped campaign (a Python session) clears the stop, so that
/// its next campaign runs.
pub fn carry_on() {
    STOPPING.store(0, Ordering::SeqCst);
}

/// The exit status of a process that stops for [`stopping`]'s signal: 128 + the signal.
pub fn stopping_status() -> Option<u8> {
    match STOPPING.load(Ordering::SeqCst) {
        0 => None,
        signal => u8::try_from(128 + signal).ok(),
    }
}

/// The signals that stop a campaign.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// From now on SIGTERM, SIGINT and SIGHUP stop the campaign (see the module's header). Call it
/// from the main thread before any other thread starts: the signals are blocked in it, so in
/// every thread started after it, and a thread of its own takes them with sigwaitinfo(2). No
/// signal handler ever runs for them, so none that a library installs decides what they do:
/// LLVM (in PoCL) installs one with `SA_RESETHAND` that puts the default action back while it
/// runs, and a parent's death, which sends the signal once per thread of the parent, then
/// killed a pool's worker before it gave back its claims.
pub fn end_with_signals() -> io::Result<()> {
    let set = stop_set();
    // SAFETY: pthread_sigmask(3) on this thread with a set made by sigemptyset/sigaddset.
    let blocked = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if blocked != 0 {
        return Err(io::Error::from_raw_os_error(blocked));
    }
    // SAFETY: getppid(2) and getpid(2) have no preconditions.
    let (parent, own) = unsafe { (libc::getppid(), libc::getpid()) };
    std::thread::Builder::new()
        .name("ndtune-signals".into())
        .spawn(move || {
            let first = loop {
                if let Some(info) = next_signal(&set, None) {
                    break info;
                }
            };
            let signal = first.si_signo;
            let name = signal_name(signal);
            // With or without a child to end, the campaign gets its grace: it gives back its
            // claims, removes its temporary files and sums up (a pool's worker between two
            // evaluations has no child, and holds claims all the same).
            stop(signal);
            let deadline = Instant::now() + GRACE;
            // A signal from the parent or from this process is not a second request (see the
            // module's header).
            let again = loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break false;
                }
                if let Some(info) = next_signal(&set, Some(left)) {
                    if !from_process(&info, parent) && !from_process(&info, own) {
                        break true;
                    }
                }
            };
            // Written whole or not at all: the reader (a pool that died) may be gone.
            let said = if again {
                format!("ndtune: {name} again: exiting now\n")
            } else {
                format!(
                    "ndtune: the campaign did not end within {} s of {name}: exiting now\n",
                    GRACE.as_secs()
                )
            };
            let _ = io::Write::write_all(&mut io::stderr(), said.as_bytes());
            // Nothing else runs from here: this process's temporary folders, and its children's
            // (ended at the first signal), go now.
            // (Never waiting on a lock another thread may hold while stuck.)
            let children: Vec<u32> = LIVING
                .try_lock()
                .map(|living| living.keys().copied().collect())
                .unwrap_or_default();
            for pid in children.into_iter().chain([std::process::id()]) {
                ndtune_core::cache::remove_private_temp_dirs_of(pid);
            }
            // SAFETY: _exit(2) ends the process without running anything more; the children
            // get their parent-death signal.
            unsafe { libc::_exit(128 + signal) }
        })?;
    Ok(())
}

/// The set of [`STOP_SIGNALS`].
fn stop_set() -> libc::sigset_t {
    // SAFETY: sigemptyset(3) initialises the set, sigaddset(3) adds valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in STOP_SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// The next signal of `set` (blocked in this thread) sent to this process, waiting for it for
/// `within` at most (`None`: as long as it takes); `None` where none came (or the wait was
/// interrupted).
fn next_signal(set: &libc::sigset_t, within: Option<Duration>) -> Option<libc::siginfo_t> {
    // SAFETY: sigwaitinfo(2)/sigtimedwait(2) fill `info` where they return a signal number.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let got = match within {
            None => libc::sigwaitinfo(set, &mut info),
            Some(d) => {
                let timeout = libc::timespec {
                    tv_sec: d.as_secs() as libc::time_t,
                    tv_nsec: d.subsec_nanos() as libc::c_long,
                };
                libc::sigtimedwait(set, &mut info, &timeout)
            }
        };
        (got > 0).then_some(info)
    }
}

/// Whether a signal was sent by process `pid` (with kill(2), or as its parent-death signal).
fn from_process(info: &libc::siginfo_t, pid: libc::pid_t) -> bool {
    // SAFETY: si_pid is read only where si_code says that a process sent the signal (SI_USER,
    // SI_QUEUE and the other codes below 1), for which the kernel sets it.
    info.si_code <= 0 && unsafe { info.si_pid() } == pid
}

/// The campaign stops for `signal`: every living child gets its signal. Returns whether there
/// was one. [`end_with_signals`] calls it from its thread; a host that handles signals itself
/// (Python's KeyboardInterrupt) calls it when it sees one.
pub fn stop(signal: libc::c_int) -> bool {
    STOPPING.store(signal, Ordering::SeqCst);
    let living = locked();
    for (&pid, on_end) in living.iter() {
        end(pid, on_end.signal());
    }
    !living.is_empty()
}

/// Sends child `pid` (not reaped yet) `signal` to end it, first taking its threads off the idle
/// scheduling policy. A build worker runs under `SCHED_IDLE`, and on a machine whose cores are
/// busy with other work a dying process of that policy gets next to no time for its exit (its
/// threads end, its memory is freed): its pipes stayed open for seconds, and the campaign,
/// waiting for them, outlived its [`GRACE`]. Where the system refuses to leave the idle policy
/// (see [`crate::builder`]'s priorities) it is only the signal.
pub fn end(pid: u32, signal: libc::c_int) {
    let param = libc::sched_param { sched_priority: 0 };
    for tid in threads(pid) {
        // SAFETY: sched_getscheduler(2) and sched_setscheduler(2) on a thread of our own child.
        unsafe {
            if libc::sched_getscheduler(tid) == libc::SCHED_IDLE {
                libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param);
            }
        }
    }
    // SAFETY: kill(2) of a child of this process that has not been reaped (the caller's word).
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// The threads of process `pid`, as /proc lists them (none where it is gone).
pub fn threads(pid: u32) -> Vec<libc::pid_t> {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(Vec::new(), |tasks| {
        tasks
            .flatten()
            .filter_map(|t| t.file_name().to_str()?.parse().ok())
            .collect()
    })
}

/// A signal's name, as people know it.
pub fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}
