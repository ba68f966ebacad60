//! A child process that speaks one JSON line each way (the measurement worker, a build worker):
//! started with a first line, asked with [`LineProcess::ask`] under a deadline, and described in
//! words when it dies (its exit status or signal and the tail of its stderr). It ends with the
//! campaign ([`crate::children`]).

use crate::children::{self, OnEnd};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Lines of a child's stderr kept to explain its death.
const STDERR_TAIL: usize = 20;

/// How a question to a child went short of an answer.
#[derive(Debug)]
pub enum Silence {
    /// No answer before the deadline (the child is still running: kill it).
    Timeout,
    /// The child closed its output or died; why, in words.
    Died(String),
    /// The campaign is stopping ([`children::stopping`]) and ended the child; why, in words.
    Interrupted(String),
}

/// A running child with its stdout read line by line on a thread of its own.
pub struct LineProcess {
    child: Child,
    stdin: ChildStdin,
    /// Each line with the moment it came.
    lines: Receiver<(String, Instant)>,
    /// When the last line answered came (it may have waited in the pipe before it was read).
    arrived: Option<Instant>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl LineProcess {
    /// Starts `command` with piped stdio, as a child that ends with the campaign (SIGKILL: it
    /// may be stopped), and writes `first` as its first line.
    pub fn spawn(mut command: Command, first: &str) -> Result<LineProcess, String> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = children::spawn(command, OnEnd::Kill)
            .map_err(|e| format!("cannot start the process: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send((line, Instant::now())).is_err() {
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
        let mut p = LineProcess {
            child,
            stdin,
            lines,
            arrived: None,
            stderr,
        };
        if p.send(first).is_err() {
            return Err(match p.silence() {
                Silence::Interrupted(why) => why,
                Silence::Died(why) => format!("the process {why}"),
                Silence::Timeout => "the process did not take its first line".into(),
            });
        }
        Ok(p)
    }

    /// The operating system's id of the child.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, line: &str) -> std::io::Result<()> {
        // A child that died makes this fail (its death is told by `answer`), never SIGPIPE.
        ndtune_core::bounded::without_sigpipe(|| {
            writeln!(self.stdin, "{line}")?;
            self.stdin.flush()
        })
    }

    /// The next line the child writes, waiting at most `deadline`.
    pub fn answer(&mut self, deadline: Duration) -> Result<String, Silence> {
        match self.lines.recv_timeout(deadline) {
            Ok((line, at)) => {
                self.arrived = Some(at);
                Ok(line)
            }
            Err(RecvTimeoutError::Timeout) => Err(Silence::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(self.silence()),
        }
    }

    /// When the last line answered came from the child: a line read late (its reader was busy
    /// elsewhere) came earlier than it was read.
    pub fn arrived(&self) -> Option<Instant> {
        self.arrived
    }

    /// The child is gone: interrupted where the campaign is stopping, else dead (and why).
    fn silence(&mut self) -> Silence {
        match children::stopping() {
            Some(why) => Silence::Interrupted(why),
            None => Silence::Died(self.death()),
        }
    }

    /// Like [`LineProcess::answer`], but only time for which `counts()` says true is spent from
    /// the deadline (a build worker stopped while a CPU device is timed does not time out).
    pub fn answer_counting(
        &mut self,
        deadline: Duration,
        counts: impl Fn() -> bool,
    ) -> Result<String, Silence> {
        const SLICE: Duration = Duration::from_millis(50);
        let mut spent = Duration::ZERO;
        loop {
            let started = Instant::now();
            match self
                .lines
                .recv_timeout(SLICE.min(deadline.saturating_sub(spent)))
            {
                Ok((line, at)) => {
                    self.arrived = Some(at);
                    return Ok(line);
                }
                Err(RecvTimeoutError::Disconnected) => return Err(self.silence()),
                Err(RecvTimeoutError::Timeout) => {
                    if counts() {
                        spent += started.elapsed();
                    }
                    if spent >= deadline {
                        return Err(Silence::Timeout);
                    }
                }
            }
        }
    }

    /// Writes `line` and waits at most `deadline` for the answer.
    pub fn ask(&mut self, line: &str, deadline: Duration) -> Result<String, Silence> {
        if self.send(line).is_err() {
            return Err(self.silence());
        }
        self.answer(deadline)
    }

    /// Writes `line` without waiting for an answer.
    pub fn tell(&mut self, line: &str) -> Result<(), Silence> {
        self.send(line).map_err(|_| self.silence())
    }

    /// Waits for the child's end and says how it ended, with the tail of its stderr.
    fn death(&mut self) -> String {
        children::reaped(self.child.id());
        let status = self.child.wait().ok();
        // Let the stderr reader drain what the dying child wrote.
        thread::sleep(Duration::from_millis(50));
        format!("{}{}", exit_text(status), tail(&self.stderr))
    }
}

/// Dropping kills the child and reaps it.
impl Drop for LineProcess {
    fn drop(&mut self) {
        children::reaped(self.child.id());
        children::end(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
        // What the killed worker could not remove itself (its host functions' folder).
        ndtune_core::cache::remove_private_temp_dirs_of(self.child.id());
    }
}

fn exit_text(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (_, Some(sig)) => format!(
                "was killed by signal {sig} ({})",
                children::signal_name(sig)
            ),
            (Some(code), _) => format!("exited with status {code}"),
            _ => "ended".into(),
        },
        None => "ended".into(),
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
