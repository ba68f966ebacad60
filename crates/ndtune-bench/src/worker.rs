//! The measurement worker process: evaluates configurations for the supervisor, one JSON line
//! each way; and the line protocol it shares with the build workers ([`crate::builder`]).
//!
//! The supervisor writes one [`Job`] line, then one [`Request`] line per configuration; the worker
//! answers [`Response::Ready`] once its device is open, then one [`Response::Outcome`] per request,
//! or [`Response::Fatal`] and exits when the spec, the kernel or the reference is wrong. A request
//! with an [`OwnCheck`] is answered by [`Response::Check`] first, then by its outcome once the
//! supervisor has sent the front end's verdict ([`Request::Checked`]). A request that is
//! `observe`d tells each [`Moment`] of its timed runs ([`Response::Moment`]) and goes on once
//! the supervisor's front end has called its observers ([`Request::Go`]); after
//! [`Moment::AfterStart`] the supervisor answers at once and calls `during` until the next
//! moment.
//!
//! A [`Warm`] line may come before the job: the worker then starts its API's driver while the
//! tuner finds and picks the device, and opens the job's device once that start has ended.
//!
//! Between requests the supervisor may send a [`Switch`] line: the service takes up another job
//! on the same device (the next campaign of a sweep), keeping what it opened (the process, the
//! driver, the device's session), and answers as it did when it opened (ready) or fatal.

use crate::evaluate::{Bench, Cost, Fatal, Front, FrontCheck, Moment};
use crate::race::Limits;
use ndtune_core::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// What a worker evaluates: a spec (with constant overrides) on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub spec: PathBuf,
    pub overrides: BTreeMap<String, ndtune_core::Value>,
    /// Index of the device in `ndtune devices` order.
    pub device: usize,
    /// Where the device is in its API's own list, so that the worker loads that API alone
    /// (absent: found by its index).
    #[serde(default)]
    pub at: Option<ndtune_backend::Address>,
    /// Sub-device K of N equal partitions of that device, if one.
    pub sub: Option<(usize, usize)>,
    /// Seed of the input data.
    pub seed: u64,
    /// The digest of the campaign's setup ([`ndtune_spec::Spec::setup`]): a worker that reads
    /// the spec and its files differently (edited since the campaign started) refuses to
    /// measure, so that no result is stored under a setup it was not measured with.
    pub setup: String,
    /// Read the energy the device draws over the timed runs (the campaign's metrics need it).
    #[serde(default)]
    pub energy: bool,
    /// A build worker's: the device's profile as the campaign read it ([`Job::for_builds`]).
    #[serde(default)]
    pub profile: Option<ndtune_device::DeviceProfile>,
}

/// What the front end that runs a campaign worked out for one configuration in its own process
/// (the Python package's functions of the parameters, docs/python.md): the kernel's whole code,
/// built in place of the spec's source (with the spec's build options, without its defines),
/// and the launch's global size, in place of `[launch] global`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Generated {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub global: Option<Vec<usize>>,
}

/// The outputs the front end that runs a campaign checks itself, in its own process (the Python
/// package's `verify` function, docs/python.md): after a configuration's verification run, the
/// bytes of each named buffer argument are written into `dir` as `NAME.bin`, and the worker
/// waits for the verdict before it times the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnCheck {
    pub dir: PathBuf,
    pub outputs: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Evaluate a configuration (values in parameter order); `binary`: a file holding the
    /// program binary a build worker made for its build options, loaded instead of compiling;
    /// `race`: when its timing stops early ([`crate::race`]); `generated`: its own code or
    /// global size; `check`: the outputs the front end checks.
    Evaluate {
        config: Vec<i64>,
        binary: Option<PathBuf>,
        #[serde(default)]
        race: Option<Box<Limits>>,
        #[serde(default)]
        generated: Option<Generated>,
        #[serde(default)]
        check: Option<OwnCheck>,
        /// When the supervisor gives up on the evaluation, in milliseconds from its request.
        #[serde(default)]
        deadline_ms: Option<u64>,
        /// Tell the moments of the timed runs to the front end's observers.
        #[serde(default)]
        observe: bool,
    },
    /// The front end's verdict on the outputs of [`Response::Check`]: why they are wrong, or
    /// `None` where they are right.
    Checked { wrong: Option<String> },
    /// The front end's observers were told the [`Response::Moment`]: go on.
    Go,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    Ready {
        device: String,
    },
    Outcome {
        outcome: Outcome,
        cost: Cost,
    },
    /// The outputs of an [`OwnCheck`], written: each file by argument name.
    Check {
        outputs: BTreeMap<String, PathBuf>,
    },
    /// A moment of an observed request's timed runs.
    Moment(Moment),
    Fatal(String),
}

/// A line that may come before the [`Job`]: the worker loads and initialises `warm`'s driver
/// on a thread of its own while it waits for the job, which the supervisor sends once the
/// device is picked ([`crate::supervisor::Warming`]); the job's device is opened after it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Warm {
    pub warm: ndtune_backend::Api,
}

/// A line that hands a running service another [`Job`] on the same device.
#[derive(Debug, Serialize, Deserialize)]
pub struct Switch {
    pub switch: Job,
}

impl Job {
    /// Whether `other` runs on this job's device (the same sub-device), so that a service open
    /// for this job may take it up ([`Switch`]).
    pub fn same_device(&self, other: &Job) -> bool {
        (self.device, self.at, self.sub) == (other.device, other.at, other.sub)
    }

    /// This job for build workers, on a device whose profile the campaign read as `profile`: a
    /// backend whose builds need no driver (CUDA) builds from the profile, and its build
    /// workers never initialise the driver. Fifteen of them doing so as a campaign started
    /// took the measurement worker's start from 0.30-0.36 s to 0.46-0.52 s on an H100 host
    /// of 16 cores (BENCHMARKS.md).
    pub fn for_builds(&self, profile: &ndtune_device::DeviceProfile) -> Job {
        Job {
            profile: Some(profile.clone()),
            ..self.clone()
        }
    }

    /// Opens the job's device (or sub-device) in this process.
    pub fn open_device(&self) -> Result<ndtune_backend::AnyDevice, Fatal> {
        let device = match (self.at, &self.profile) {
            (Some(at), Some(profile)) => {
                ndtune_backend::attach_for_builds(self.device, at, profile)
            }
            (Some(at), None) => ndtune_backend::attach_at(self.device, at),
            (None, _) => ndtune_backend::attach(self.device),
        }
        .map_err(|e| Fatal(e.to_string()))?;
        match self.sub {
            Some((k, n)) => device.sub_device(k, n).map_err(|e| Fatal(e.to_string())),
            None => Ok(device),
        }
    }
}

/// A process that serves one [`Job`]: its first stdin line is the job, then one request line
/// gets one answer line, until stdin closes or an answer is fatal.
pub(crate) trait Service: Sized {
    type Request: serde::de::DeserializeOwned;
    type Response: Serialize;
    /// Opens what the job needs (the device, a session).
    fn open(job: &Job) -> Result<Self, Fatal>;
    /// Takes up `job`, on the device it is open on ([`Job::same_device`]), keeping what it can.
    fn switch(self, job: &Job) -> Result<Self, Fatal>;
    /// The answer that says the service is open.
    fn ready(&self) -> Self::Response;
    fn fatal(why: String) -> Self::Response;
    /// The answer to a request. `ask` sends an answer before it and returns the request that
    /// follows (a question the request raises for the supervisor).
    fn handle(
        &mut self,
        request: Self::Request,
        ask: Ask<'_, Self>,
    ) -> Result<Self::Response, Fatal>;
    /// A second answer to the same request, worked out after the first was sent.
    fn follow_up(&mut self) -> Option<Self::Response> {
        None
    }
}

/// How [`Service::handle`] asks the supervisor in the middle of a request.
pub(crate) type Ask<'a, S> =
    &'a mut dyn FnMut(<S as Service>::Response) -> Result<<S as Service>::Request, Fatal>;

fn send(out: &mut impl Write, r: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Tells the supervisor how opening a service (or switching it to another job) went: ready, or
/// fatal; the service where it is open and said so.
fn say_opened<S: Service>(out: &mut impl Write, opened: Result<S, Fatal>) -> Option<S> {
    match opened {
        Ok(service) => send(out, &service.ready()).is_ok().then_some(service),
        Err(f) => {
            let _ = send(out, &S::fatal(f.0));
            None
        }
    }
}

/// Runs a [`Service`] on stdin/stdout until stdin closes; the process exit code.
pub(crate) fn serve_lines<S: Service>() -> i32 {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout().lock();
    let mut first = lines.next();
    let mut warming = None;
    if let Some(Ok(Warm { warm })) = first
        .as_ref()
        .and_then(|l| l.as_ref().ok())
        .map(|l| serde_json::from_str::<Warm>(l))
    {
        warming = Some(std::thread::spawn(move || ndtune_backend::warm(warm)));
        first = lines.next();
    }
    let job: Job = match first.map(|l| l.map(|l| serde_json::from_str(&l))) {
        Some(Ok(Ok(job))) => job,
        _ => {
            let _ = send(&mut out, &S::fatal("no valid job line".into()));
            return 2;
        }
    };
    // The job opens its device once the driver is up: never beside the warm-up, which a
    // driver's loader need not allow.
    if let Some(warming) = warming {
        let _ = warming.join();
    }
    let Some(mut service) = say_opened(&mut out, S::open(&job)) else {
        return 1;
    };
    let parse = |line: &str| {
        serde_json::from_str::<S::Request>(line)
            .map_err(|e| Fatal(format!("a malformed request: {e}")))
    };
    while let Some(line) = lines.next() {
        let Ok(line) = line else { return 1 };
        if let Ok(Switch { switch }) = serde_json::from_str::<Switch>(&line) {
            match say_opened(&mut out, service.switch(&switch)) {
                Some(switched) => service = switched,
                None => return 1,
            }
            continue;
        }
        let mut ask = |question: S::Response| {
            send(&mut out, &question).map_err(|e| Fatal(format!("cannot ask: {e}")))?;
            match lines.next() {
                Some(Ok(line)) => parse(&line),
                _ => Err(Fatal("stdin closed while the worker asked".into())),
            }
        };
        let answer = parse(&line).and_then(|r| service.handle(r, &mut ask));
        let (answer, fatal) = match answer {
            Ok(a) => (a, false),
            Err(f) => (S::fatal(f.0), true),
        };
        if send(&mut out, &answer).is_err() || fatal {
            return 1;
        }
        if let Some(more) = service.follow_up() {
            if send(&mut out, &more).is_err() {
                return 1;
            }
        }
    }
    0
}

impl Service for Bench {
    type Request = Request;
    type Response = Response;

    // The inputs go on the device before the worker says it is ready: it starts ahead of the
    // builds, so this overlaps them instead of following the first one.
    fn open(job: &Job) -> Result<Bench, Fatal> {
        let bench = Bench::open(job)?;
        bench.load_inputs();
        Ok(bench)
    }

    fn switch(self, job: &Job) -> Result<Bench, Fatal> {
        let bench = self.switch(job)?;
        bench.load_inputs();
        Ok(bench)
    }

    fn ready(&self) -> Response {
        Response::Ready {
            device: self.device_name().to_string(),
        }
    }

    fn fatal(why: String) -> Response {
        Response::Fatal(why)
    }

    fn handle(&mut self, request: Request, ask: Ask<'_, Self>) -> Result<Response, Fatal> {
        let Request::Evaluate {
            config,
            binary,
            race,
            generated,
            check,
            deadline_ms,
            observe,
        } = request
        else {
            return Err(Fatal("an answer without a question".into()));
        };
        self.set_deadline(deadline_ms.map(std::time::Duration::from_millis));
        self.generate(generated);
        // The check and the observers ask the front end in the middle of the evaluation.
        let ask = std::cell::RefCell::new(ask);
        let mut verdict = |outputs| match (ask.borrow_mut())(Response::Check { outputs })? {
            Request::Checked { wrong } => Ok(wrong),
            _ => Err(Fatal("another answer than a verdict".into())),
        };
        let mut observed = |moment| match (ask.borrow_mut())(Response::Moment(moment))? {
            Request::Go => Ok(()),
            _ => Err(Fatal("another answer than go".into())),
        };
        let front = Front {
            check: check.as_ref().map(|own| FrontCheck {
                own,
                verdict: &mut verdict,
            }),
            observe: observe.then_some(&mut observed as _),
        };
        let (outcome, cost) =
            self.evaluate_costed(&config, binary.as_deref(), race.as_deref(), front)?;
        if let Some(why) = self.lost() {
            // Unanswered: the supervisor records the configuration `crashed`, with this reason
            // from stderr, and starts a new worker for the next one.
            eprintln!("{why}");
            std::process::exit(LOST_EXIT);
        }
        Ok(Response::Outcome { outcome, cost })
    }
}

/// The exit status of a measurement worker whose device session was lost.
const LOST_EXIT: i32 = 3;

/// Runs the measurement worker on stdin/stdout until stdin closes; the process exit code.
pub fn serve() -> i32 {
    serve_lines::<Bench>()
}
