//! The supervisor: runs the worker process, gives each evaluation a deadline, and turns a worker
//! that dies into a `crashed` outcome and one that does not answer in time into `timed_out`,
//! restarting the worker for the next configuration.

use crate::evaluate::{Cost, Fatal};
use crate::worker::{Job, Request, Response};
use ndtune_core::Outcome;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The default deadline of one evaluation is this many times the slowest evaluation so far...
pub const TIMEOUT_FACTOR: u32 = 10;
/// ...and never less than this.
pub const TIMEOUT_FLOOR: Duration = Duration::from_secs(60);
/// Lines of the worker's stderr kept to explain a crash.
const STDERR_TAIL: usize = 20;

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// One evaluation as the supervisor saw it.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub outcome: Outcome,
    /// The worker's account of where the time went; none when it crashed or hung.
    pub cost: Option<Cost>,
    /// From sending the request to reading the answer, in milliseconds.
    pub round_trip_ms: f64,
}

impl Evaluation {
    fn lost(outcome: Outcome, started: Instant) -> Evaluation {
        Evaluation {
            outcome,
            cost: None,
            round_trip_ms: started.elapsed().as_secs_f64() * 1e3,
        }
    }
}

/// Runs evaluations of one [`Job`] in a worker process.
pub struct Supervisor {
    command: Box<dyn Fn() -> Command + Send>,
    job: Job,
    fixed_timeout: Option<Duration>,
    slowest: Duration,
    running: Option<Running>,
    /// Workers started so far (1 + restarts).
    pub starts: usize,
    /// Wall time spent starting workers (process, device discovery, session), in seconds.
    pub startup_s: f64,
}

impl Supervisor {
    /// `command` makes the command that starts a worker (e.g. `ndtune __worker`);
    /// `timeout` fixes the per-evaluation deadline, else it adapts (see [`TIMEOUT_FACTOR`]).
    pub fn new(
        command: Box<dyn Fn() -> Command + Send>,
        job: Job,
        timeout: Option<Duration>,
    ) -> Supervisor {
        Supervisor {
            command,
            job,
            fixed_timeout: timeout,
            slowest: Duration::ZERO,
            running: None,
            starts: 0,
            startup_s: 0.0,
        }
    }

    /// The deadline the next evaluation gets.
    pub fn deadline(&self) -> Duration {
        self.fixed_timeout
            .unwrap_or_else(|| (self.slowest * TIMEOUT_FACTOR).max(TIMEOUT_FLOOR))
    }

    fn start(&mut self) -> Result<(), Fatal> {
        let started = Instant::now();
        let result = self.spawn();
        self.startup_s += started.elapsed().as_secs_f64();
        result
    }

    fn spawn(&mut self) -> Result<(), Fatal> {
        let mut child = (self.command)()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Fatal(format!("cannot start the worker process: {e}")))?;
        self.starts += 1;
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let kept = Arc::clone(&stderr);
        thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let mut t = kept.lock().unwrap_or_else(|p| p.into_inner());
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        let job = serde_json::to_string(&self.job).expect("a job serialises");
        writeln!(stdin, "{job}").map_err(|e| Fatal(format!("cannot talk to the worker: {e}")))?;
        let mut running = Running {
            child,
            stdin,
            lines,
            stderr,
        };
        // Opening the device can take a while (driver start-up), so the deadline is generous.
        match running
            .lines
            .recv_timeout(self.deadline().max(Duration::from_secs(120)))
        {
            Ok(line) => match serde_json::from_str(&line) {
                Ok(Response::Ready { .. }) => {
                    self.running = Some(running);
                    Ok(())
                }
                Ok(Response::Fatal(msg)) => {
                    let _ = running.child.wait();
                    Err(Fatal(msg))
                }
                _ => Err(Fatal(format!("the worker said `{line}` instead of ready"))),
            },
            Err(_) => {
                let _ = running.child.kill();
                let status = running.child.wait().ok();
                Err(Fatal(format!(
                    "the worker did not start: {}{}",
                    exit_text(status),
                    tail(&running.stderr)
                )))
            }
        }
    }

    /// Evaluates one configuration in the worker. A crash or a hang is an outcome; only a fatal
    /// answer (a broken spec, kernel or reference) is an error.
    pub fn evaluate(&mut self, config: &[i64]) -> Result<Evaluation, Fatal> {
        if self.running.is_none() {
            self.start()?;
        }
        let deadline = self.deadline();
        let running = self.running.as_mut().expect("started");
        let request =
            serde_json::to_string(&Request::Evaluate(config.to_vec())).expect("serialises");
        let started = Instant::now();
        let sent = writeln!(running.stdin, "{request}").and_then(|()| running.stdin.flush());
        let answer = match sent {
            Ok(()) => running.lines.recv_timeout(deadline),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        };
        match answer {
            Ok(line) => match serde_json::from_str::<Response>(&line) {
                Ok(Response::Outcome { outcome, cost }) => {
                    self.slowest = self.slowest.max(started.elapsed());
                    Ok(Evaluation {
                        outcome,
                        cost: Some(cost),
                        round_trip_ms: started.elapsed().as_secs_f64() * 1e3,
                    })
                }
                Ok(Response::Fatal(msg)) => {
                    self.stop();
                    Err(Fatal(msg))
                }
                _ => {
                    self.stop();
                    Err(Fatal(format!("the worker answered `{line}`")))
                }
            },
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                let outcome = Outcome::TimedOut {
                    seconds: deadline.as_secs_f64(),
                };
                Ok(Evaluation::lost(outcome, started))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let mut r = self.running.take().expect("running");
                let status = r.child.wait().ok();
                // Let the stderr reader drain what the dying worker wrote.
                thread::sleep(Duration::from_millis(50));
                let detail = format!("the worker {}{}", exit_text(status), tail(&r.stderr));
                Ok(Evaluation::lost(Outcome::Crashed { detail }, started))
            }
        }
    }

    /// Kills the worker, if one runs; the next evaluation starts a new one.
    pub fn stop(&mut self) {
        if let Some(mut r) = self.running.take() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop();
    }
}

fn exit_text(status: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (_, Some(sig)) => format!("was killed by signal {sig} ({})", signal_name(sig)),
            (Some(code), _) => format!("exited with status {code}"),
            _ => "ended".into(),
        },
        None => "ended".into(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => "signal",
    }
}

fn tail(stderr: &Arc<Mutex<VecDeque<String>>>) -> String {
    let t = stderr.lock().unwrap_or_else(|p| p.into_inner());
    if t.is_empty() {
        String::new()
    } else {
        format!(
            "; its last output:\n{}",
            t.iter().cloned().collect::<Vec<_>>().join("\n")
        )
    }
}
