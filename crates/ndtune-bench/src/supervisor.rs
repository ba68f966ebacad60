//! The supervisor: runs the worker process, gives each evaluation a deadline, and turns a worker
//! that dies into a `crashed` outcome (once it died on the configuration in a fresh worker too)
//! and one that does not answer in time into `timed_out`, restarting the worker for the next
//! configuration. A worker ended because the campaign stops
//! ([`crate::children::stopping`]) is no outcome: the evaluation fails, as fatal.

use crate::evaluate::{Cost, Fatal};
use crate::process::{LineProcess, Silence};
use crate::race::Limits;
use crate::worker::{Generated, Job, OwnCheck, Request, Response};
use ndtune_core::Outcome;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The default deadline of one evaluation is this many times the slowest evaluation so far...
pub const TIMEOUT_FACTOR: u32 = 10;
/// ...and never less than this.
pub const TIMEOUT_FLOOR: Duration = Duration::from_secs(60);

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

/// The front end's check of the outputs it names ([`OwnCheck`]), given their files by argument
/// name: why they are wrong, or `None`; an error stops the campaign.
pub type Verdict<'a> =
    &'a mut dyn FnMut(&BTreeMap<String, PathBuf>) -> Result<Option<String>, String>;

/// Runs evaluations of one [`Job`] in a worker process.
pub struct Supervisor {
    command: Box<dyn Fn() -> Command + Send>,
    job: Job,
    fixed_timeout: Option<Duration>,
    slowest: Duration,
    running: Option<LineProcess>,
    /// A worker started ahead ([`Supervisor::start_ahead`]) that has not said it is ready yet,
    /// and when it was started.
    starting: Option<(LineProcess, Instant)>,
    /// Workers started so far (1 + restarts).
    pub starts: usize,
    /// Wall time spent starting workers (process, device discovery, session), in seconds.
    pub startup_s: f64,
    /// The part of `startup_s` that evaluations waited for (a worker started ahead starts while
    /// the campaign prepares).
    pub startup_waited_s: f64,
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
            starting: None,
            starts: 0,
            startup_s: 0.0,
            startup_waited_s: 0.0,
        }
    }

    /// Starts the worker process now and lets it open its device while the caller goes on; the
    /// first evaluation waits for it to be ready. A worker that cannot start says so then.
    pub fn start_ahead(&mut self) {
        if self.running.is_some() || self.starting.is_some() {
            return;
        }
        if let Ok(worker) = self.spawn() {
            self.starting = Some((worker, Instant::now()));
        }
    }

    /// Starts a worker process and hands it its job.
    fn spawn(&mut self) -> Result<LineProcess, Fatal> {
        let job = serde_json::to_string(&self.job).expect("a job serialises");
        let worker = LineProcess::spawn((self.command)(), &job)
            .map_err(|e| Fatal(format!("the worker did not start: {e}")))?;
        self.starts += 1;
        Ok(worker)
    }

    /// The deadline the next evaluation gets.
    pub fn deadline(&self) -> Duration {
        self.fixed_timeout
            .unwrap_or_else(|| (self.slowest * TIMEOUT_FACTOR).max(TIMEOUT_FLOOR))
    }

    /// Makes a worker ready: the one started ahead, or a new one.
    fn start(&mut self) -> Result<(), Fatal> {
        let waited = Instant::now();
        let (worker, started) = match self.starting.take() {
            Some(ahead) => ahead,
            None => (self.spawn()?, waited),
        };
        let result = self.await_ready(worker);
        self.startup_s += started.elapsed().as_secs_f64();
        self.startup_waited_s += waited.elapsed().as_secs_f64();
        result
    }

    fn await_ready(&mut self, mut worker: LineProcess) -> Result<(), Fatal> {
        // Opening the device can take a while (driver start-up), so the deadline is generous.
        let line = match worker.answer(self.deadline().max(Duration::from_secs(120))) {
            Ok(line) => line,
            Err(Silence::Died(why)) => {
                return Err(Fatal(format!("the worker did not start: it {why}")))
            }
            Err(Silence::Interrupted(why)) => return Err(Fatal(why)),
            Err(Silence::Timeout) => {
                return Err(Fatal("the worker did not start: no answer in time".into()))
            }
        };
        match serde_json::from_str(&line) {
            Ok(Response::Ready { .. }) => {
                self.running = Some(worker);
                Ok(())
            }
            Ok(Response::Fatal(msg)) => Err(Fatal(msg)),
            _ => Err(Fatal(format!("the worker said `{line}` instead of ready"))),
        }
    }

    /// Evaluates one configuration in the worker, with the program binary a build worker made
    /// for it where there is one, the limits that stop its timing early where racing, and the
    /// code or global size the front end generated for it, and the outputs the front end checks
    /// with `verdict` (the time it takes is not the worker's: no part of the deadline). A
    /// crash or a hang is an outcome; only a fatal answer (a broken spec, kernel or reference)
    /// or a failed verdict is an error.
    ///
    /// A worker that dies is not yet the configuration's fault: it may die of what an earlier
    /// configuration left behind (a write out of bounds) or of a driver's flake (PoCL aborts on
    /// rare races). So the configuration is evaluated once more in a fresh worker, and that
    /// answer is its outcome; `crashed` only when it dies there too.
    pub fn evaluate(
        &mut self,
        config: &[i64],
        binary: Option<&Path>,
        race: Option<&Limits>,
        generated: Option<&Generated>,
        mut check: Option<(&OwnCheck, Verdict<'_>)>,
    ) -> Result<Evaluation, Fatal> {
        let first = self.evaluate_once(
            config,
            binary,
            race,
            generated,
            check
                .as_mut()
                .map(|(own, verdict)| (*own, &mut **verdict as _)),
        )?;
        let Outcome::Crashed {
            detail: first_death,
        } = &first.outcome
        else {
            return Ok(first);
        };
        let mut again = self.evaluate_once(config, binary, race, generated, check)?;
        again.round_trip_ms += first.round_trip_ms;
        if let Outcome::Crashed { detail } = &mut again.outcome {
            *detail = format!("{detail}, and before that, in another worker: {first_death}");
        }
        Ok(again)
    }

    fn evaluate_once(
        &mut self,
        config: &[i64],
        binary: Option<&Path>,
        race: Option<&Limits>,
        generated: Option<&Generated>,
        mut check: Option<(&OwnCheck, Verdict<'_>)>,
    ) -> Result<Evaluation, Fatal> {
        if self.running.is_none() {
            self.start()?;
        }
        let deadline = self.deadline();
        let worker = self.running.as_mut().expect("started");
        let request = serde_json::to_string(&Request::Evaluate {
            config: config.to_vec(),
            binary: binary.map(Path::to_path_buf),
            race: race.cloned(),
            generated: generated.cloned(),
            check: check.as_ref().map(|(own, _)| (*own).clone()),
            deadline_ms: Some(deadline.as_millis() as u64),
        })
        .expect("serialises");
        let started = Instant::now();
        let mut answered = worker.ask(&request, deadline);
        // The front end's part in the middle of the evaluation: a verdict on the outputs. Its
        // time is no part of the worker's deadline.
        let mut front_end = Duration::ZERO;
        while let Ok(line) = &answered {
            let asked = Instant::now();
            let reply = match (serde_json::from_str(line), check.as_mut()) {
                (Ok(Response::Check { outputs }), Some((_, verdict))) => match verdict(&outputs) {
                    Ok(wrong) => Request::Checked { wrong },
                    Err(why) => {
                        self.stop();
                        return Err(Fatal(why));
                    }
                },
                _ => break,
            };
            front_end += asked.elapsed();
            let request = serde_json::to_string(&reply).expect("serialises");
            let left = deadline.saturating_sub(started.elapsed() - front_end);
            answered = worker.ask(&request, left);
        }
        match answered {
            Ok(line) => match serde_json::from_str::<Response>(&line) {
                Ok(Response::Outcome { outcome, cost }) => {
                    self.slowest = self.slowest.max(started.elapsed() - front_end);
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
            Err(Silence::Timeout) => {
                self.stop();
                let outcome = Outcome::TimedOut {
                    seconds: deadline.as_secs_f64(),
                };
                Ok(Evaluation::lost(outcome, started))
            }
            Err(Silence::Died(why)) => {
                self.running = None;
                let detail = format!("the worker {why}");
                Ok(Evaluation::lost(Outcome::Crashed { detail }, started))
            }
            // Ended because the campaign stops: no outcome of the configuration.
            Err(Silence::Interrupted(why)) => {
                self.running = None;
                Err(Fatal(why))
            }
        }
    }

    /// Kills the worker, if one runs; the next evaluation starts a new one.
    pub fn stop(&mut self) {
        self.running = None;
        self.starting = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in worker (the supervisor is tested alone here; the real worker's crashes are in
    /// the CLI's tests): it says it is ready, then dies of SIGABRT on its first request where
    /// `died` does not exist yet (making it) or where `always`, and else answers `refused`, an
    /// outcome that needs no timing.
    fn supervisor(died: PathBuf, always: bool) -> Supervisor {
        let script = r#"read job
echo '{"ready":{"device":"stand-in"}}'
read request
if [ "$2" = once ] && [ -e "$1" ]; then
  echo '{"outcome":{"outcome":{"outcome":"refused","error":"stand-in"},"cost":{"build_ms":0,"launch_ms":0,"reference_ms":0,"prepare_ms":0,"verify_ms":0,"total_ms":0}}}'
  read more
else
  : > "$1"
  kill -ABRT $$
fi"#;
        let job = Job {
            spec: PathBuf::from("unused.toml"),
            overrides: BTreeMap::new(),
            device: 0,
            sub: None,
            seed: 0,
            setup: String::new(),
            energy: false,
        };
        let command = move || {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script).arg("worker").arg(&died);
            c.arg(if always { "always" } else { "once" });
            c
        };
        Supervisor::new(Box::new(command), job, Some(Duration::from_secs(20)))
    }

    #[test]
    fn a_worker_that_died_once_is_asked_again_in_a_fresh_one_whose_answer_counts() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = supervisor(dir.path().join("died"), false);
        let e = s.evaluate(&[1], None, None, None, None).unwrap();
        let refused = Outcome::Refused {
            error: "stand-in".into(),
        };
        assert_eq!((e.outcome, s.starts), (refused, 2));
    }

    #[test]
    fn a_configuration_that_kills_two_workers_is_crashed_and_says_both() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = supervisor(dir.path().join("died"), true);
        let e = s.evaluate(&[1], None, None, None, None).unwrap();
        let Outcome::Crashed { detail } = &e.outcome else {
            panic!("{:?}", e.outcome)
        };
        assert_eq!(s.starts, 2);
        assert_eq!(detail.matches("SIGABRT").count(), 2, "{detail}");
        assert!(detail.contains("in another worker"), "{detail}");
    }
}
