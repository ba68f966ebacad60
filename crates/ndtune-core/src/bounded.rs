//! Running an external tool (clang, a compiled host function) within bounds: a wall-clock
//! limit, optional memory and CPU-time limits, output captured on both pipes at once up to a
//! size (so that a tool writing much on one pipe cannot block on it while the other is read),
//! in a process group of its own that is killed whole when the limit passes, when the caller
//! drops the run (a panic, an ended request) and, through a parent-death signal, when the
//! thread that started it dies. Nothing a tool started can outlive the run: a descendant that
//! left the group (`fork(); setsid()`, a daemon) is found by a mark in its environment
//! ([`MARK`]) and killed when the run ends, so it neither lingers nor holds the output pipes
//! open until the time limit.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The bounds of one run.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Wall-clock time, after which the process group is killed.
    pub wall: Duration,
    /// Address space in bytes (`RLIMIT_AS`), where limited.
    pub memory: Option<u64>,
    /// Bytes kept of each of stdout and stderr; more is read and dropped.
    pub output: usize,
}

impl Bounds {
    /// `wall` time, no memory limit, 1 MiB of output kept per pipe.
    pub fn wall(wall: Duration) -> Bounds {
        Bounds {
            wall,
            memory: None,
            output: 1 << 20,
        }
    }
}

/// A finished run.
#[derive(Debug)]
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Whether either pipe carried more than [`Bounds::output`] (the rest was dropped).
    pub truncated: bool,
}

impl Ran {
    /// Exit status and stderr in words, for an error message: `exit status 2: <stderr>` with
    /// control characters escaped.
    pub fn failure(&self) -> String {
        let stderr = printable(String::from_utf8_lossy(&self.stderr).trim_end());
        match self.status.signal() {
            Some(signal) => format!("killed by signal {signal}: {stderr}"),
            None => format!("{}: {stderr}", self.status),
        }
    }
}

/// Why a run gave no [`Ran`].
#[derive(Debug)]
pub enum RunError {
    /// The tool could not be started.
    Spawn(std::io::Error),
    /// The wall-clock limit passed; the process group was killed. What it wrote until then.
    TimedOut {
        limit: Duration,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "{e}"),
            RunError::TimedOut { limit, stderr, .. } => {
                write!(
                    f,
                    "did not finish within {} s and was killed",
                    limit.as_secs_f64()
                )?;
                let said = printable(String::from_utf8_lossy(stderr).trim_end());
                match said.is_empty() {
                    true => Ok(()),
                    false => write!(f, "; it wrote: {said}"),
                }
            }
        }
    }
}

/// The environment variable that marks every process of one run (`PID:N` of the running
/// process and the run): descendants inherit it, wherever they go.
pub const MARK: &str = "NDTUNE_BOUNDED_RUN";

/// How long a run's marked descendants are looked for again after it ends, while one of them
/// still holds its output pipes open.
const PIPES_CLOSE: Duration = Duration::from_secs(5);

/// Runs `command` with `stdin` as its input, within `bounds`. The command's stdio and [`MARK`]
/// are set here; anything else (arguments, environment, working directory, inherited
/// descriptors) is the caller's.
pub fn run(mut command: Command, stdin: &[u8], bounds: Bounds) -> Result<Ran, RunError> {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mark = format!(
        "{}:{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    command.env(MARK, &mark);
    command
        .stdin(if stdin.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let memory = bounds.memory;
    // SAFETY: between fork and exec only async-signal-safe calls (setpgid, prctl, setrlimit).
    unsafe {
        command.pre_exec(move || {
            if libc::setpgid(0, 0) != 0
                || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(bytes) = memory {
                let limit = libc::rlimit {
                    rlim_cur: bytes as libc::rlim_t,
                    rlim_max: bytes as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(RunError::Spawn)?;
    let mut group = Group(child, mark);
    let feeding = group.0.stdin.take().map(|mut pipe| {
        let input = stdin.to_vec();
        // A write fails when the tool exits early (a bad option): its status says why.
        std::thread::spawn(move || drop(without_sigpipe(|| pipe.write_all(&input))))
    });
    let keep = bounds.output;
    let stdout = collect(group.0.stdout.take().expect("piped"), keep);
    let stderr = collect(group.0.stderr.take().expect("piped"), keep);
    let deadline = Instant::now() + bounds.wall;
    let mut pause = Duration::from_micros(200);
    let status = loop {
        match group.0.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => return Err(RunError::Spawn(e)),
        }
    };
    // The group goes whole: a tool's own children could hold the pipes open.
    group.kill();
    // A marked descendant the kill missed (one forked while the processes were being found,
    // on a loaded machine) still holds the pipes: look again until they close.
    let closing = Instant::now() + PIPES_CLOSE;
    let mut pause = Duration::from_millis(2);
    while !(stdout.is_finished() && stderr.is_finished()) && Instant::now() < closing {
        std::thread::sleep(pause);
        kill_marked(&group.1);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
    if let Some(feeding) = feeding {
        let _ = feeding.join();
    }
    let (stdout, more_out) = stdout.join().unwrap_or_default();
    let (stderr, more_err) = stderr.join().unwrap_or_default();
    match status {
        Some(status) => Ok(Ran {
            status,
            stdout,
            stderr,
            truncated: more_out || more_err,
        }),
        None => Err(RunError::TimedOut {
            limit: bounds.wall,
            stdout,
            stderr,
        }),
    }
}

/// Runs `write` (a write to a child's pipe) with SIGPIPE blocked in this thread: a child that
/// died makes the write fail with `EPIPE` instead of killing this process (ndtune keeps
/// SIGPIPE's default, ending quietly when the reader of its own output goes away). A SIGPIPE
/// the write raised is taken off the thread before SIGPIPE is unblocked again.
pub fn without_sigpipe<T>(write: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use; pthread_sigmask
    // and sigtimedwait act on this thread only.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut before);
        let result = write();
        if matches!(&result, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
            let now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&pipe, std::ptr::null_mut(), &now);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        result
    }
}

/// A child leading its process group, with the run's [`MARK`]: the group and every process
/// marked are killed when this is dropped.
struct Group(Child, String);

impl Group {
    fn kill(&mut self) {
        // SAFETY: kill(2) of the process group this child leads (setpgid in pre_exec); the
        // child itself is not reaped yet or was reaped by try_wait, and its group id cannot
        // be reused while the group has members or the child is unreaped.
        unsafe {
            libc::kill(-(self.0.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.0.wait();
        kill_marked(&self.1);
    }
}

/// Kills every process whose environment holds `MARK=mark` (a run's descendants that left its
/// process group); those are orphans, reaped by whoever adopted them.
fn kill_marked(mark: &str) {
    let needle = format!("{MARK}={mark}");
    let me = std::process::id();
    // A process being killed may have forked once more: look again until none is found.
    for _ in 0..4 {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut found = false;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(env) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if env.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
                found = true;
                // SAFETY: kill(2) of a process of this run, found just now.
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
            }
        }
        if !found {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            self.kill();
        }
    }
}

/// Reads `pipe` to its end on a thread, keeping the first `keep` bytes; says whether more came.
fn collect(mut pipe: impl Read + Send + 'static, keep: usize) -> JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut more = false;
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = keep.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                    more |= n > room;
                }
            }
        }
        (kept, more)
    })
}

/// `text` with control characters other than newline and tab written as `\u{1b}`: a tool's or
/// a user's message cannot move a terminal's cursor or change its colours.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn both_pipes_are_read_at_once_and_kept_to_the_bound() {
        // 1 MiB on stderr before anything on stdout: read one pipe after the other, this blocks.
        let bounds = Bounds {
            output: 1000,
            ..Bounds::wall(Duration::from_secs(30))
        };
        let ran = run(sh("head -c 1048576 /dev/zero >&2; echo done"), b"", bounds).unwrap();
        assert!(ran.status.success());
        assert_eq!(ran.stdout, b"done\n");
        assert_eq!(ran.stderr.len(), 1000);
        assert!(ran.truncated);
    }

    #[test]
    fn a_hung_tool_and_its_children_are_killed_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!(
            "sleep 300 & echo $! > {}; echo started >&2; wait",
            pid_file.display()
        );
        let started = Instant::now();
        let err = run(sh(&script), b"", Bounds::wall(Duration::from_millis(500))).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        let message = err.to_string();
        assert!(
            message.contains("did not finish within 0.5 s") && message.contains("started"),
            "{message}"
        );
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild is gone (or a zombie about to be reaped by init).
        std::thread::sleep(Duration::from_millis(200));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z "),
            "the tool's child still runs: {state}"
        );
    }

    #[test]
    fn a_tool_whose_child_leaves_its_group_ends_with_its_own_status_and_the_child_dies() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // The grandchild leaves the group (setsid) and keeps the output pipes: the run used to
        // wait for them until its limit, and leave the grandchild running.
        let script = format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 300' & while [ ! -s {} ]; do sleep 0.01; done; echo done",
            pid_file.display(),
            pid_file.display()
        );
        let ran = run(sh(&script), b"", Bounds::wall(Duration::from_secs(60))).unwrap();
        assert!(ran.status.success(), "{}", ran.failure());
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "done\n");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone = Instant::now() + Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") {
                break;
            }
            assert!(
                Instant::now() < gone,
                "the escaped grandchild still runs: {state}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn descendants_that_keep_forking_after_the_tool_ends_are_all_killed() {
        let dir = tempfile::tempdir().unwrap();
        let end = dir.path().join("end");
        // Each generation leaves the group, starts the next and ends soon after: a chain that
        // moves to new processes while /proc is looked through, holding the output pipes as it
        // goes. Left alone, its 2,000th generation would write `end` after some seconds.
        let script = format!(
            "export n=0 g='if [ $n -lt 2000 ]; then n=$((n+1)); export n; setsid sh -c \"$g\" & sleep 0.001; else echo > {}; fi'; \
             setsid sh -c \"$g\" & sleep 0.05; echo done",
            end.display()
        );
        let ran = run(sh(&script), b"", Bounds::wall(Duration::from_secs(60))).unwrap();
        assert!(ran.status.success(), "{}", ran.failure());
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "done\n");
        std::thread::sleep(Duration::from_millis(200));
        assert!(!end.exists(), "the chain ran to its end: it was not killed");
    }

    #[test]
    fn input_is_fed_and_a_memory_limit_holds() {
        let ran = run(sh("cat"), b"abc", Bounds::wall(Duration::from_secs(30))).unwrap();
        assert_eq!(ran.stdout, b"abc");
        let bounds = Bounds {
            memory: Some(64 << 20),
            ..Bounds::wall(Duration::from_secs(30))
        };
        // python3 cannot map 1 GiB under a 64 MiB address-space limit.
        let ran = run(sh("exec python3 -c 'b = bytearray(1 << 30)'"), b"", bounds).unwrap();
        assert!(!ran.status.success(), "{}", ran.failure());
    }

    #[test]
    fn a_write_to_a_dead_child_fails_instead_of_killing_the_process() {
        // The default disposition, as ndtune's main sets it: a SIGPIPE would end this test.
        // SAFETY: setting a signal's disposition; the test binary's other tests do not write
        // to closed pipes.
        let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        // A child that another test forks at that moment holds a copy of the pipe's read end
        // until it runs its program, and then the write succeeds: try again.
        let failed = (0..20).find_map(|_| {
            let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
            let mut pipe = child.stdin.take().unwrap();
            child.wait().unwrap();
            without_sigpipe(|| pipe.write_all(b"x\n")).err()
        });
        let e = failed.expect("every write to a dead child's pipe succeeded");
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGPIPE, old) };
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\x1b[31mb\n\tc"), "a\\u{1b}[31mb\n\tc");
    }
}
