//! The supervisor: runs the worker process, gives each evaluation a deadline, and turns a worker
//! that dies into a `crashed` outcome (once it died on the configuration in a fresh worker too)
//! and one that does not answer in time into `timed_out`, restarting the worker for the next
//! configuration. A worker ended because the campaign stops
//! ([`crate::children::stopping`]) is no outcome: the evaluation fails, as fatal. The front end
//! that runs the campaign ([`FrontEnd`]) takes its part in the middle of an evaluation here, in
//! its own process: its check of the outputs and its observers of the timed runs.

use crate::evaluate::{Cost, Fatal, Moment};
use crate::process::{LineProcess, Silence};
use crate::race::Limits;
use crate::worker::{Generated, Job, OwnCheck, Request, Response, Switch, Warm};
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

/// What the front end that runs a campaign (the Python package, docs/python.md) does in the
/// middle of an evaluation, in its own process. Every error stops the campaign.
pub trait FrontEnd {
    /// The outputs it checks itself after each measured configuration's verification run, and
    /// where they are written; `None`: it checks none.
    fn own_check(&self) -> Option<&OwnCheck>;

    /// Checks a configuration's outputs, given their files by argument name: why they are
    /// wrong (the configuration is `wrong_result`), or `None` where they are right.
    fn check(&mut self, outputs: &BTreeMap<String, PathBuf>) -> Result<Option<String>, String>;

    /// The names of its observers of the timed runs (Kernel Tuner's `BenchmarkObserver`s);
    /// empty where it has none.
    fn observers(&self) -> Vec<String>;

    /// Calls its observers' hooks for `moment` of the configuration being evaluated.
    fn observe(&mut self, moment: Moment) -> Result<(), String>;

    /// What its observers give for the timed runs just over ([`Moment::End`]), by observer.
    fn observed(&mut self) -> Result<BTreeMap<String, serde_json::Value>, String>;
}

/// How often `during` is called while an observed run runs, at most.
const DURING_POLL: Duration = Duration::from_micros(100);

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
    /// When the worker (running or starting) was handed the job it has now ([`Switch`]) and
    /// has not yet said it took it up.
    switched: Option<Instant>,
    /// Workers started so far (1 + restarts).
    pub starts: usize,
    /// Wall time spent starting workers (process, device discovery, session, the inputs of
    /// fixed size on the device), in seconds.
    pub startup_s: f64,
    /// The part of `startup_s` that evaluations waited for (a worker started ahead starts while
    /// the campaign prepares).
    pub startup_waited_s: f64,
}

/// A measurement worker started before its job is known: it loads and initialises the driver of
/// the job's API ([`Warm`]) while the tuner finds the devices and picks one (each taking about
/// 0.2 s on an H100 host: `cuInit`, or NVIDIA's OpenCL platform), and takes the job once it is
/// known ([`Supervisor::start_warmed`]). Dropped, the process ends.
pub struct Warming {
    worker: LineProcess,
    api: ndtune_backend::Api,
    since: Instant,
}

impl Warming {
    /// Starts `command` (a measurement worker's) warming `api`; `None` where it cannot start
    /// (the worker started for the job then says why).
    pub fn start(command: Command, api: ndtune_backend::Api) -> Option<Warming> {
        let since = Instant::now();
        let line = serde_json::to_string(&Warm { warm: api }).expect("serialises");
        let worker = LineProcess::spawn(command, &line).ok()?;
        Some(Warming { worker, api, since })
    }
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
            switched: None,
            starts: 0,
            startup_s: 0.0,
            startup_waited_s: 0.0,
        }
    }

    /// The job evaluated now.
    pub fn job(&self) -> &Job {
        &self.job
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

    /// [`Supervisor::start_ahead`] in the process of `warming` where it warms the job's API (its
    /// start-up counted from the warming's start); else that process ends and a worker starts
    /// as usual.
    pub fn start_warmed(&mut self, warming: Warming) {
        let fits = self.running.is_none()
            && self.starting.is_none()
            && self.job.at.is_some_and(|at| at.api == warming.api);
        if fits {
            let Warming {
                mut worker, since, ..
            } = warming;
            let job = serde_json::to_string(&self.job).expect("a job serialises");
            if worker.tell(&job).is_ok() {
                self.starts += 1;
                self.starting = Some((worker, since));
                return;
            }
        }
        self.start_ahead();
    }

    /// Makes `job` the one evaluated from now on, where it is another, with the accounts of
    /// starts and start-up begun anew (a sweep's next campaign). A worker open on the same
    /// device (or still opening it) takes it up in the same process, keeping its driver and
    /// session: the job is sent now and taken up while the caller goes on; the next evaluation
    /// waits for it. On another device the worker stops and the next evaluation starts one.
    pub fn switch(&mut self, job: Job) {
        if job == self.job {
            return;
        }
        // A switch not answered yet (the campaign before evaluated nothing: everything came
        // from the store) is answered first, so that each answer is read as what it answers.
        if self.switched.is_some() {
            if self.starting.is_some() && self.start().is_err() {
                self.stop();
            }
            self.await_switch();
        }
        self.starts = 0;
        self.startup_s = 0.0;
        self.startup_waited_s = 0.0;
        let same_device = job.same_device(&self.job);
        self.job = job;
        if !same_device {
            self.stop();
            return;
        }
        let line = serde_json::to_string(&Switch {
            switch: self.job.clone(),
        })
        .expect("a job serialises");
        let told = match (&mut self.running, &mut self.starting) {
            (Some(worker), _) | (None, Some((worker, _))) => worker.tell(&line).is_ok(),
            (None, None) => return,
        };
        if told {
            self.switched = Some(Instant::now());
        } else {
            self.stop();
        }
    }

    /// Waits for the running worker to take up the job it was switched to, if it was; one that
    /// does not is stopped (the next evaluation starts a fresh one, which says what is wrong).
    fn await_switch(&mut self) {
        let deadline = self.deadline().max(Duration::from_secs(120));
        // A worker still starting answers its switch after its start ([`Supervisor::start`]).
        let Some(worker) = self.running.as_mut() else {
            return;
        };
        let Some(since) = self.switched.take() else {
            return;
        };
        let waited = Instant::now();
        let took = matches!(
            worker
                .answer(deadline)
                .map(|line| serde_json::from_str::<Response>(&line)),
            Ok(Ok(Response::Ready { .. }))
        );
        let ended = worker.arrived().unwrap_or_else(Instant::now);
        self.startup_s += ended.saturating_duration_since(since).as_secs_f64();
        self.startup_waited_s += ended.saturating_duration_since(waited).as_secs_f64();
        if !took {
            self.stop();
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
        let ready = self.await_ready(worker);
        // The worker's start-up ends when it said it was ready, which a worker started ahead
        // may have said long before the campaign first asked for it (while it waited for its
        // first build).
        let said = self.running.as_ref().and_then(LineProcess::arrived);
        let now = Instant::now();
        let ended = said.unwrap_or(now);
        self.startup_s += ended.saturating_duration_since(started).as_secs_f64();
        self.startup_waited_s += ended.saturating_duration_since(waited).as_secs_f64();
        ready
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
    /// code or global size the front end generated for it, and the `front` end that checks
    /// outputs and observes the timed runs (the time it takes is not the worker's: no part of
    /// the deadline). A
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
        mut front: Option<&mut (dyn FrontEnd + '_)>,
    ) -> Result<Evaluation, Fatal> {
        let first = self.evaluate_once(config, binary, race, generated, front.as_deref_mut())?;
        let Outcome::Crashed {
            detail: first_death,
        } = &first.outcome
        else {
            return Ok(first);
        };
        let mut again = self.evaluate_once(config, binary, race, generated, front)?;
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
        mut front: Option<&mut (dyn FrontEnd + '_)>,
    ) -> Result<Evaluation, Fatal> {
        self.await_switch();
        if self.running.is_none() {
            self.start()?;
            self.await_switch();
            if self.running.is_none() {
                self.start()?;
            }
        }
        let deadline = self.deadline();
        let worker = self.running.as_mut().expect("started");
        let request = serde_json::to_string(&Request::Evaluate {
            config: config.to_vec(),
            binary: binary.map(Path::to_path_buf),
            race: race.cloned().map(Box::new),
            generated: generated.cloned(),
            check: front.as_ref().and_then(|f| f.own_check().cloned()),
            deadline_ms: Some(deadline.as_millis() as u64),
            observe: front.as_ref().is_some_and(|f| !f.observers().is_empty()),
        })
        .expect("serialises");
        let started = Instant::now();
        let mut answered = worker.ask(&request, deadline);
        // The front end's part in the middle of the evaluation: a verdict on the outputs, its
        // observers' hooks. Its time is no part of the worker's deadline, but for `during`,
        // called while the worker waits for its run.
        let mut front_end = Duration::ZERO;
        let mut observed = None;
        while let (Ok(line), Some(front)) = (&answered, front.as_deref_mut()) {
            let asked = Instant::now();
            let response = serde_json::from_str::<Response>(line);
            let reply = match &response {
                Ok(Response::Check { outputs }) => {
                    front.check(outputs).map(|wrong| Request::Checked { wrong })
                }
                Ok(Response::Moment(moment)) => front.observe(*moment).and_then(|()| {
                    if *moment == Moment::End {
                        observed = Some(front.observed()?);
                    }
                    Ok(Request::Go)
                }),
                _ => break,
            };
            let reply = match reply {
                Ok(reply) => serde_json::to_string(&reply).expect("serialises"),
                Err(why) => {
                    self.stop();
                    return Err(Fatal(why));
                }
            };
            front_end += asked.elapsed();
            let left = |front_end| deadline.saturating_sub(started.elapsed() - front_end);
            if !matches!(response, Ok(Response::Moment(Moment::AfterStart))) {
                answered = worker.ask(&reply, left(front_end));
                continue;
            }
            // The run runs: `during` until the worker tells its next moment.
            // An observer that raises stops the campaign as an interruption does.
            answered = worker.tell(&reply).and_then(|()| loop {
                if let Err(why) = front.observe(Moment::During) {
                    break Err(Silence::Interrupted(why));
                }
                match worker.answer(DURING_POLL.min(left(front_end))) {
                    Err(Silence::Timeout) if !left(front_end).is_zero() => continue,
                    other => break other,
                }
            });
            if let Err(Silence::Interrupted(why)) = answered {
                self.stop();
                return Err(Fatal(why));
            }
        }
        match answered {
            Ok(line) => match serde_json::from_str::<Response>(&line) {
                Ok(Response::Outcome { mut outcome, cost }) => {
                    if let Outcome::Measured(timing) = &mut outcome {
                        timing.observed = observed.map(Box::new);
                    }
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
        self.switched = None;
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
            at: None,
            sub: None,
            seed: 0,
            setup: String::new(),
            energy: false,
            profile: None,
        };
        let command = move || {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script).arg("worker").arg(&died);
            c.arg(if always { "always" } else { "once" });
            c
        };
        Supervisor::new(Box::new(command), job, Some(Duration::from_secs(20)))
    }

    /// A stand-in worker that answers each switch as ready and each request as `refused`,
    /// saying how many switches it took up.
    fn switching_supervisor(job: Job) -> Supervisor {
        let script = r#"read job
echo '{"ready":{"device":"stand-in"}}'
n=0
while read line; do
  case "$line" in
    *'"switch"'*) n=$((n+1)); echo '{"ready":{"device":"stand-in"}}';;
    *) echo '{"outcome":{"outcome":{"outcome":"refused","error":"after '$n' switches"},"cost":{"build_ms":0,"launch_ms":0,"reference_ms":0,"prepare_ms":0,"verify_ms":0,"total_ms":0}}}';;
  esac
done"#;
        let command = move || {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script);
            c
        };
        Supervisor::new(Box::new(command), job, Some(Duration::from_secs(20)))
    }

    /// Campaigns that evaluate nothing (all from the store) switch the worker again before it
    /// was asked anything: each switch's answer is read as that switch's, and the next
    /// evaluation gets its own, running or still starting.
    #[test]
    fn switches_in_a_row_are_each_answered_before_the_next_evaluation() {
        let job = |seed: u64| Job {
            spec: PathBuf::from("unused.toml"),
            overrides: BTreeMap::new(),
            device: 0,
            at: None,
            sub: None,
            seed,
            setup: String::new(),
            energy: false,
            profile: None,
        };
        let refused = |n: usize| Outcome::Refused {
            error: format!("after {n} switches"),
        };
        let mut s = switching_supervisor(job(0));
        let e = s.evaluate(&[1], None, None, None, None).unwrap();
        assert_eq!(e.outcome, refused(0));
        for seed in 1..=3 {
            s.switch(job(seed));
        }
        let e = s.evaluate(&[1], None, None, None, None).unwrap();
        assert_eq!((e.outcome, s.starts), (refused(3), 0));
        // Started ahead and switched twice before its first evaluation.
        let mut s = switching_supervisor(job(0));
        s.start_ahead();
        s.switch(job(1));
        s.switch(job(2));
        let e = s.evaluate(&[1], None, None, None, None).unwrap();
        assert_eq!(e.outcome, refused(2));
    }

    /// A worker started warming an API takes a job on that API in the same process; one
    /// warming another ends, and the job's worker starts as usual. The stand-in answers each
    /// request `refused`, saying which line came first and what it read after it.
    #[test]
    fn a_warmed_worker_takes_its_job_where_it_warms_the_jobs_api() {
        let script = r#"read first
case "$first" in *'"warm"'*) read job; said="after $first";; *) said=cold;; esac
echo '{"ready":{"device":"stand-in"}}'
while read line; do
  echo '{"outcome":{"outcome":{"outcome":"refused","error":"'"$(echo "$said" | tr -d '"')"'"},"cost":{"build_ms":0,"launch_ms":0,"reference_ms":0,"prepare_ms":0,"verify_ms":0,"total_ms":0}}}'
done"#;
        let command = move || {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script);
            c
        };
        let cuda = ndtune_backend::Address {
            api: ndtune_backend::Api::Cuda,
            number: 0,
        };
        let job = Job {
            spec: PathBuf::from("unused.toml"),
            overrides: BTreeMap::new(),
            device: 2,
            at: Some(cuda),
            sub: None,
            seed: 0,
            setup: String::new(),
            energy: false,
            profile: None,
        };
        let refused = |error: &str| Outcome::Refused {
            error: error.into(),
        };
        for (api, said) in [
            (ndtune_backend::Api::Cuda, "after {warm:cuda}"),
            (ndtune_backend::Api::OpenCl, "cold"),
        ] {
            let mut s = Supervisor::new(Box::new(command), job.clone(), None);
            s.start_warmed(Warming::start(command(), api).expect("sh starts"));
            let e = s.evaluate(&[1], None, None, None, None).unwrap();
            assert_eq!((e.outcome, s.starts), (refused(said), 1), "warming {api:?}");
        }
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
