//! A pool of identical local devices sharing one campaign (`ndtune tune --pool`, the Python
//! package's `tune_kernel(..., pool=[...])`): a worker process per device (the front end's
//! `__campaign`, served by [`serve`]) tunes the campaign shared through the store's claims
//! ([`crate::share`]), coordinated by the store alone, SQLite or PostgreSQL. [`Pool::run`] tells
//! the progress read from the store and each worker's error output, then makes the campaign's
//! report by a last pass of a worker of its own over the store's results (which measures only
//! what a dead worker left behind). The workers end with the pool: SIGTERM when it dies or is
//! stopped (`ndtune_bench::children`), so that they give back their claims.

use crate::tuning::{resolve_strategy, Tuning};
use crate::{group, CampaignError, DeviceReport, Event, Observer, Options, Share, TimeSpent};
use ndtune_backend::AnyDevice;
use ndtune_bench::children::{self, OnEnd};
use ndtune_core::Value;
use ndtune_device::DeviceProfile;
use ndtune_search::Budget;
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_store::{Store, WorkerStatus};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the progress is read from the store.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The environment variable that gives a pool worker the store's location (so that a password
/// never shows in a process list).
pub const STORE_ENV: &str = "NDTUNE_DB";

/// What a pool tells while it runs.
#[derive(Debug)]
pub enum PoolEvent<'a> {
    /// The pool evaluates at most `total` configurations with `workers` workers.
    Started { total: u128, workers: usize },
    /// The store holds `results` of the campaign; `running` workers are still at it.
    Progress { results: u64, running: usize },
    /// A line a worker wrote on its error output, with its device's label.
    Said { label: &'a str, line: &'a str },
    /// The workers are done; the last pass (a campaign of its own) begins.
    LastPass,
}

/// One campaign shared by the identical `devices`.
pub struct Pool<'a> {
    pub spec: &'a Spec,
    pub overrides: &'a BTreeMap<String, Value>,
    pub devices: &'a [AnyDevice],
    pub store: &'a Store,
    /// Where the workers find the store (a path or a connection string).
    pub location: OsString,
    /// How long a worker keeps trying to reach a PostgreSQL store that went away.
    pub db_retry: Duration,
    /// The campaign's options: `build_jobs` is the node's build service's, `share`
    /// and `guard` are the pool's own.
    pub options: Options,
    /// How long a worker's claims outlive its last heartbeat.
    pub lease: Duration,
    /// The pool's own name in the store; each worker is `ID:poolK`.
    pub id: String,
}

/// What a pool did: the campaign's report (by its last pass) and each worker's share.
pub struct PoolReport {
    pub report: DeviceReport,
    pub wall_s: f64,
    /// This pool's workers, with what each evaluated.
    pub workers: Vec<WorkerStatus>,
    /// Each worker's own account, by worker name, from those that ended normally.
    pub accounts: BTreeMap<String, WorkerAccount>,
    pub measured_twice: u64,
    /// How each worker ended, in the devices' order.
    pub ends: Vec<WorkerEnd>,
}

/// How many of a worker's last lines of error output its end keeps.
const TAIL: usize = 8;

/// How a pool worker ended: its exit status and the last lines it wrote on its error output.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerEnd {
    pub worker: String,
    pub device: String,
    /// Whether it ended normally (exit status 0); a worker that did not has its results kept,
    /// and the pool's last pass measures what it left.
    pub success: bool,
    /// `exit status 0`, `exit status 1`, `killed by signal 9 (SIGKILL)`.
    pub status: String,
    /// Its last lines of error output (at most 8), oldest first.
    pub said: Vec<String>,
}

/// Tells what the workers wrote on their error output since the last call, keeping each one's
/// last [`TAIL`] lines.
fn tell(
    on: &mut dyn FnMut(PoolEvent<'_>),
    heard: &mpsc::Receiver<(usize, String)>,
    names: &[(String, String)],
    tails: &mut [VecDeque<String>],
) {
    for (i, line) in heard.try_iter() {
        hear(on, names, tails, i, line);
    }
}

/// Tells one line worker `i` wrote, keeping it in its tail.
fn hear(
    on: &mut dyn FnMut(PoolEvent<'_>),
    names: &[(String, String)],
    tails: &mut [VecDeque<String>],
    i: usize,
    line: String,
) {
    on(PoolEvent::Said {
        label: &names[i].1,
        line: &line,
    });
    let tail = &mut tails[i];
    if tail.len() == TAIL {
        tail.pop_front();
    }
    tail.push_back(line);
}

/// An exit status in words.
fn ended(exit: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (exit.code(), exit.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!(
            "killed by signal {signal} ({})",
            children::signal_name(signal)
        ),
        _ => exit.to_string(),
    }
}

/// What a pool worker tells of its campaign when it ends (a line on its standard output).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerAccount {
    /// Its device.
    pub device: String,
    /// Configurations it evaluated.
    pub evaluated: usize,
    /// Where its time went.
    pub time: TimeSpent,
}

/// What one pool worker runs, sent on its standard input.
#[derive(Debug, Serialize, Deserialize)]
struct PoolJob {
    spec: PathBuf,
    overrides: BTreeMap<String, Value>,
    /// The device's selector...
    device: String,
    /// ...and its whole profile, read by the pool (the worker makes no context to read it).
    profile: DeviceProfile,
    worker: String,
    lease: Duration,
    db_retry: Duration,
    /// The pool's options (its `share` and `guard` are not sent: the worker shares as `worker`).
    options: Options,
}

impl Pool<'_> {
    /// Runs the pool to its end: the workers, then the last pass. An error where the devices
    /// differ, a worker cannot start, or the pool is stopped (what was measured is kept).
    pub fn run(
        self,
        on: &mut dyn FnMut(PoolEvent<'_>),
        observer: &mut dyn Observer,
    ) -> Result<PoolReport, CampaignError> {
        let first = &self.devices[0];
        let kind = ndtune_store::fingerprint(first.profile());
        if let Some(d) = self.devices[1..]
            .iter()
            .find(|d| ndtune_store::fingerprint(d.profile()) != kind)
        {
            return Err(CampaignError::Spec(format!(
                "a pool shares one campaign among identical devices, and {} differs from {} \
                 (another device kind keeps results of its own): pool each kind separately",
                d.label(),
                first.label()
            )));
        }
        let spec = self.spec;
        let source = crate::tunable_source(spec)?;
        let group = group(spec, &source, self.options.seed, first, self.store)?;
        let pruning = spec
            .problem
            .prune(&[Target::from_profile(first.label(), first.profile())])
            .map_err(|e| CampaignError::Spec(spec.locate(&e).to_string()))?;
        let valid = pruning.stats.pruned;
        let given = Budget {
            evaluations: self.options.budget,
            time: self.options.time,
        };
        let objectives = spec.metrics.objectives().len();
        let total = resolve_strategy(
            &self.options.strategy,
            given,
            valid,
            true,
            false,
            objectives,
        )
        .budget
        .evaluations
        .map_or(valid, |b| (b as u128).min(valid));
        let started = Instant::now();
        let (said, heard) = mpsc::channel::<(usize, String)>();
        let mut workers = Vec::new();
        for (i, device) in self.devices.iter().enumerate() {
            let job = self.job(device, format!("{}:pool{i}", self.id));
            let child = spawn(&self.options, &self.location, &job).map_err(|e| {
                CampaignError::Spec(format!(
                    "cannot start the worker for {}: {e}",
                    device.label()
                ))
            })?;
            workers.push((job.worker, device.label(), child));
        }
        let mut accounts = Vec::new();
        let names: Vec<(String, String)> = workers
            .iter()
            .map(|(id, label, _)| (id.clone(), label.clone()))
            .collect();
        let mut tails: Vec<VecDeque<String>> = vec![Default::default(); names.len()];
        let mut ends: Vec<Option<WorkerEnd>> = vec![None; names.len()];
        for (i, (id, _, child)) in workers.iter_mut().enumerate() {
            let stdout = child.stdout.take().expect("stdout is piped");
            let id = id.clone();
            accounts.push(std::thread::spawn(move || {
                let line = BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                    .last()?;
                Some((id, serde_json::from_str::<WorkerAccount>(&line).ok()?))
            }));
            let stderr = child.stderr.take().expect("stderr is piped");
            let said = said.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if said.send((i, line)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(said);
        on(PoolEvent::Started {
            total,
            workers: workers.len(),
        });
        let mut workers: Vec<(usize, Child)> = workers
            .into_iter()
            .enumerate()
            .map(|(i, (_, _, child))| (i, child))
            .collect();
        while !workers.is_empty() {
            std::thread::sleep(PROGRESS_EVERY);
            tell(on, &heard, &names, &mut tails);
            let mut running = Vec::new();
            for (i, mut child) in workers {
                match exited(&mut child).map_err(|e| CampaignError::Spec(e.to_string()))? {
                    None => running.push((i, child)),
                    Some(exit) => {
                        ends[i] = Some(WorkerEnd {
                            worker: names[i].0.clone(),
                            device: names[i].1.clone(),
                            success: exit.success(),
                            status: ended(exit),
                            said: Vec::new(),
                        })
                    }
                }
            }
            workers = running;
            // While stopping, the store may be what hangs: the workers' ends are what matter.
            if children::stopping().is_none() {
                let status = self.store.campaign_status(&group)?;
                on(PoolEvent::Progress {
                    results: status.results,
                    running: workers.len(),
                });
            }
        }
        // A worker's last lines may come after its exit was seen: read them to the pipes' end
        // (2 s at most, should a process the worker left hold one open).
        let until = Instant::now() + Duration::from_secs(2);
        while let Ok((i, line)) =
            heard.recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            hear(on, &names, &mut tails, i, line);
        }
        let ends: Vec<WorkerEnd> = ends
            .into_iter()
            .zip(tails)
            .filter_map(|(end, tail)| {
                end.map(|mut end| {
                    end.said = tail.into();
                    end
                })
            })
            .collect();
        if let Some(why) = children::stopping() {
            return Err(CampaignError::Stopped {
                label: format!("pool of {}", self.devices.len()),
                kernel: spec.kernel.name.clone(),
                why,
            });
        }
        let wall_s = started.elapsed().as_secs_f64();
        let accounts = accounts
            .into_iter()
            .filter_map(|t| t.join().ok().flatten())
            .collect();
        on(PoolEvent::LastPass);
        // The campaign's report, from every worker's results; whatever a dead worker left is
        // measured here once its claims lapse. Nothing is left to build ahead, but for a dead
        // worker's few configurations.
        let options = Options {
            share: Some(Share {
                worker: format!("{}:pool", self.id),
                lease: self.lease,
                location: self.location.clone(),
            }),
            guard: None,
            build_jobs: 1,
            ..self.options
        };
        let label = format!("pool of {}", self.devices.len());
        let mut report = Tuning {
            spec,
            overrides: self.overrides,
            device: first,
            label: &label,
            store: self.store,
            options,
            worker: None,
        }
        .run(observer, None)?
        .report;
        let status = self.store.campaign_status(&group)?;
        let mine = format!("{}:pool", self.id);
        let workers: Vec<WorkerStatus> = status
            .workers
            .into_iter()
            .filter(|w| w.worker.starts_with(&mine))
            .collect();
        // What this pool's workers evaluated was evaluated now, not reused: the last pass found
        // it in the store, as it would an earlier campaign's.
        let by_workers = workers
            .iter()
            .filter(|w| w.worker != mine)
            .map(|w| w.done as usize)
            .sum::<usize>()
            .min(report.reused);
        report.reused -= by_workers;
        report.evaluated += by_workers;
        Ok(PoolReport {
            report,
            wall_s,
            workers,
            accounts,
            measured_twice: status.measured_twice,
            ends,
        })
    }

    fn job(&self, device: &AnyDevice, worker: String) -> PoolJob {
        PoolJob {
            spec: std::fs::canonicalize(&self.spec.path).unwrap_or_else(|_| self.spec.path.clone()),
            overrides: self.overrides.clone(),
            device: device.selector(),
            profile: device.profile().clone(),
            worker,
            lease: self.lease,
            db_retry: self.db_retry,
            options: self.options.clone(),
        }
    }
}

/// Starts a pool worker with `job` on its standard input; the store's location goes by
/// environment.
fn spawn(options: &Options, location: &OsString, job: &PoolJob) -> std::io::Result<Child> {
    let mut command = options.processes.command("__campaign")();
    command
        .env(STORE_ENV, location)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = children::spawn(command, OnEnd::Terminate)?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let line = serde_json::to_string(job).expect("a job serialises");
    ndtune_core::bounded::without_sigpipe(|| writeln!(stdin, "{line}"))?;
    Ok(child)
}

/// How a worker exited, if it did (reaped; see `children::reaped`).
fn exited(child: &mut Child) -> std::io::Result<Option<std::process::ExitStatus>> {
    // SAFETY: waitid(2) on our own child with WNOWAIT leaves it to be reaped below.
    let ended = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
            && info.si_pid() != 0
    };
    if !ended {
        return Ok(None);
    }
    children::reaped(child.id());
    child.wait().map(Some)
}

/// A pool worker's process (`ndtune __campaign`, `python -m ndtune._worker __campaign`): reads
/// its job from standard input and the store's location from [`STORE_ENV`], tunes its share of
/// the campaign; the exit code (1 with why on standard error where it could not).
pub fn serve() -> i32 {
    match serve_job() {
        Ok(()) => 0,
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "{why}");
            children::stopping_status().map_or(1, i32::from)
        }
    }
}

fn serve_job() -> Result<(), String> {
    // Stopped (the pool's SIGTERM), it ends its own workers and gives back its claims.
    children::end_with_signals().map_err(|e| format!("cannot handle SIGTERM and SIGINT: {e}"))?;
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| format!("no job: {e}"))?;
    let job: PoolJob = serde_json::from_str(&line).map_err(|e| format!("a bad job: {e}"))?;
    let location = std::env::var_os(STORE_ENV)
        .ok_or_else(|| format!("{STORE_ENV} does not name the store"))?;
    let store = Store::open(&location)
        .map_err(|e| e.to_string())?
        .reconnect_for(job.db_retry);
    let spec = Spec::load_with(&job.spec, &job.overrides).map_err(|e| e.to_string())?;
    let picked = crate::devices::pick_live(Some(spec.kernel.language), Some(&job.device))
        .map_err(|e| e.to_string())?;
    let [picked] = picked[..] else {
        return Err(format!(
            "a pool worker's device is one, not `{}`",
            job.device
        ));
    };
    let device = crate::devices::attach_picked(&picked, job.profile).map_err(|e| e.to_string())?;
    let options = Options {
        share: Some(Share {
            worker: job.worker,
            lease: job.lease,
            location: location.clone(),
        }),
        guard: None,
        ..job.options
    };
    let label = device.label();
    // What the campaign tells goes to standard error, which the pool shows under the device.
    // A pool that died reads no more: the write fails, and the worker goes on to clean up.
    let mut tell = |event: Event<'_>| {
        if let Event::Warning(message) = event {
            let _ = writeln!(std::io::stderr(), "{message}");
        }
    };
    let done = Tuning {
        spec: &spec,
        overrides: &job.overrides,
        device: &device,
        label: &label,
        store: &store,
        options,
        worker: None,
    }
    .run(&mut tell, None)
    .map_err(|e| e.to_string())?;
    let account = WorkerAccount {
        device: label.clone(),
        evaluated: done.report.evaluated,
        time: done.report.time,
    };
    let line = serde_json::to_string(&account).expect("an account serialises");
    // A pool that died reads no more: nothing to tell then.
    let _ = ndtune_core::bounded::without_sigpipe(|| writeln!(std::io::stdout(), "{line}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_device::DeviceType;
    use ndtune_spec::Race;

    #[test]
    fn a_pool_worker_gets_every_option_but_the_sharing() {
        let options = Options {
            strategy: "bo".into(),
            budget: Some(42),
            time: Some(Duration::from_secs(7)),
            warm_start: true,
            patience: None,
            configs: Vec::new(),
            share: None,
            guard: Some(Share {
                worker: "front".into(),
                lease: Duration::from_secs(60),
                location: "x.db".into(),
            }),
            seed: 9,
            timeout: Some(Duration::from_millis(1500)),
            build_jobs: 3,
            race: Some(Race::new(0.25, 0.9).unwrap()),
            advice_prior: false,
            keep_timed_out: true,
            cache_dir: Some("/tmp/cache".into()),
            processes: crate::Processes::new("/bin/ndtune".into()),
        };
        let line = serde_json::to_string(&options).unwrap();
        let got: Options = serde_json::from_str(&line).unwrap();
        let without_sharing = Options {
            guard: None,
            ..options
        };
        assert_eq!(format!("{got:?}"), format!("{without_sharing:?}"));
    }

    #[test]
    fn build_jobs_take_the_cores_but_one_and_a_gpu_gets_few() {
        use crate::{build_jobs_for, GPU_BUILD_JOBS};
        let cores = std::thread::available_parallelism().unwrap().get();
        let alone = if cores == 1 { 1 } else { (cores - 1).max(2) };
        assert_eq!(build_jobs_for(DeviceType::Cpu, true), alone);
        assert_eq!(
            build_jobs_for(DeviceType::Gpu, true),
            alone.min(GPU_BUILD_JOBS)
        );
        // CUDA's builds hold no context on the GPU: they take the cores.
        assert_eq!(build_jobs_for(DeviceType::Gpu, false), alone);
    }
}
