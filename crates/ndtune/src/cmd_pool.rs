//! `ndtune tune --pool`: one campaign shared by identical devices of this machine, a worker
//! process each (`ndtune tune --worker`, see `ndtune_engine::share`), coordinated by the store
//! alone — SQLite or PostgreSQL. Shows the campaign's progress from the store, then its report
//! (a last pass of a worker of its own over the store's results, which measures only what a
//! dead worker left behind) and each worker's share. The workers end with the pool: SIGTERM
//! when it dies or is stopped (`ndtune_bench::children`), so that they give back their claims.

use crate::cli::TuneArgs;
use crate::cmd_tune::{default_worker_id, nothing_measured, print_report, tune_device};
use crate::targets;
use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use ndtune_bench::children::{self, OnEnd};
use ndtune_cl::ClDevice;
use ndtune_core::Value;
use ndtune_engine::Share;
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_store::{Store, WorkerStatus};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How often the progress is read from the store.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

pub fn run(
    args: &TuneArgs,
    spec: &Spec,
    overrides: &BTreeMap<String, Value>,
    devices: &[ClDevice],
    store: &Store,
) -> Result<()> {
    let first = &devices[0];
    let kind = ndtune_store::fingerprint(&first.profile);
    for d in &devices[1..] {
        if ndtune_store::fingerprint(&d.profile) != kind {
            bail!(
                "--pool shares one campaign among identical devices, and {} differs from {} \
                 (another device kind keeps results of its own): pool each kind separately",
                targets::label(d),
                targets::label(first)
            );
        }
    }
    let source = spec
        .kernel_source()?
        .context("[kernel] source is needed to tune")?;
    let group = ndtune_engine::group(spec, &source, args.campaign.seed, first, store)?;
    let pruning = spec
        .problem
        .prune(&[Target::from_profile(targets::label(first), &first.profile)])
        .map_err(|e| spec.locate(&e))?;
    let valid = pruning.stats.pruned;
    let total = crate::cmd_tune::resolve_strategy(&args.campaign, args.search.time, valid, true)
        .budget
        .evaluations
        .map_or(valid, |b| (b as u128).min(valid));
    let started = Instant::now();
    let mut workers = Vec::new();
    for (i, device) in devices.iter().enumerate() {
        let id = format!("{}:pool{i}", default_worker_id(device));
        let child = spawn_worker(args, spec, overrides, device, &id, devices.len())
            .with_context(|| format!("cannot start the worker for {}", targets::label(device)))?;
        workers.push(Worker {
            id,
            label: targets::label(device),
            child,
        });
    }
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let bar = progress.add(ProgressBar::new(total.try_into().unwrap_or(u64::MAX)));
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("pool of {}", devices.len()));
    let relays: Vec<_> = workers
        .iter_mut()
        .map(|w| relay_errors(&mut w.child, &w.label, &progress))
        .collect();
    let mut failed = Vec::new();
    while !workers.is_empty() {
        std::thread::sleep(PROGRESS_EVERY);
        // While stopping, the store may be what hangs: the workers' ends are what matter.
        if children::stopping().is_none() {
            let status = store.campaign_status(&group)?;
            bar.set_position(status.results);
        }
        bar.set_message(format!("{} workers", workers.len()));
        let mut running = Vec::new();
        for mut w in workers {
            match exited(&mut w.child)? {
                None => running.push(w),
                Some(exit) if !exit.success() => {
                    failed.push(format!("{} ({}): {exit}", w.id, w.label))
                }
                Some(_) => {}
            }
        }
        workers = running;
    }
    bar.finish();
    for relay in relays {
        let _ = relay.join();
    }
    if let Some(why) = children::stopping() {
        bail!("the pool stopped: {why}");
    }
    let wall_s = started.elapsed().as_secs_f64();
    if !failed.is_empty() {
        let _ = progress.println(format!(
            "workers that stopped early (what they measured is kept; the rest is measured now): {}",
            failed.join("; ")
        ));
    }
    // The campaign's report, from every worker's results; whatever a dead worker left is
    // measured here once its claims lapse.
    let share = Share {
        worker: format!("{}:pool", default_worker_id(first)),
        lease: args.share.lease,
        location: args.campaign.store.db.clone().into(),
    };
    // Nothing is left to build ahead, but for a dead worker's few configurations.
    let campaign = crate::cli::CampaignArgs {
        build_jobs: Some(1),
        ..args.campaign.clone()
    };
    let report = tune_device(
        &campaign,
        args.timeout,
        spec,
        overrides,
        first,
        &format!("pool of {}", devices.len()),
        store,
        &progress,
        &args.search,
        Some(share),
        None,
    )?
    .report;
    let status = store.campaign_status(&group)?;
    let shares: Vec<&WorkerStatus> = status
        .workers
        .iter()
        .filter(|w| w.worker.contains(&format!(":{}:", std::process::id())))
        .collect();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "devices": [report],
                "pool": {
                    "wall_s": wall_s,
                    "workers": shares,
                    "measured_twice": status.measured_twice,
                    "stopped_early": failed,
                },
            }))?
        );
    } else {
        print_report(&report, store.path());
        println!(
            "  pool       {} workers in {wall_s:.2} s; measured {}",
            devices.len(),
            shares
                .iter()
                .map(|w| format!("{} by {}", w.done, w.worker))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    match nothing_measured(spec, &report, first) {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

struct Worker {
    id: String,
    label: String,
    child: Child,
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

/// Starts `ndtune tune --worker` for `device` with the campaign's arguments; the store's
/// location goes by environment, so that a password never shows in a process list.
fn spawn_worker(
    args: &TuneArgs,
    spec: &Spec,
    overrides: &BTreeMap<String, Value>,
    device: &ClDevice,
    id: &str,
    workers: usize,
) -> Result<Child> {
    let c = &args.campaign;
    let exe = std::env::current_exe().context("cannot find the ndtune executable")?;
    let mut cmd = Command::new(exe);
    cmd.arg("tune")
        .arg(&spec.path)
        .args(["--device", &targets::selector(device)])
        .args(["--worker", "--worker-id", id, "--json"])
        .args(["--strategy", &c.strategy])
        .args(["--seed", &c.seed.to_string()])
        .args(["--lease", &format!("{}ms", args.share.lease.as_millis())])
        .args([
            "--build-jobs",
            &pool_build_jobs(c.build_jobs, workers).to_string(),
        ])
        .env("NDTUNE_DB", &c.store.db)
        .env(
            "NDTUNE_DB_RETRY",
            format!("{}ms", c.store.db_retry.as_millis()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(n) = c.budget {
        cmd.args(["--budget", &n.to_string()]);
    }
    if let Some(t) = args.search.time {
        cmd.args(["--time", &format!("{}ms", t.as_millis())]);
    }
    if args.search.warm_start {
        cmd.arg("--warm-start");
    }
    if let Some(t) = args.timeout {
        cmd.args(["--timeout", &t.to_string()]);
    }
    for (name, value) in overrides {
        cmd.args(["--set", &format!("{name}={value}")]);
    }
    Ok(children::spawn(cmd, OnEnd::Terminate)?)
}

/// Build jobs per worker: as given, or the machine's cores shared among the workers (less one
/// each for its measurement).
fn pool_build_jobs(given: Option<u16>, workers: usize) -> usize {
    given.map_or_else(
        || {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores / workers.max(1)).saturating_sub(1).max(1)
        },
        usize::from,
    )
}

/// Shows a worker's error output, each line under its device's name.
fn relay_errors(
    child: &mut Child,
    label: &str,
    progress: &MultiProgress,
) -> std::thread::JoinHandle<()> {
    let stderr = child.stderr.take().expect("stderr is piped");
    let (label, progress) = (label.to_string(), progress.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = progress.println(format!("{label}: {line}"));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_jobs_share_the_cores_among_workers() {
        assert_eq!(pool_build_jobs(Some(3), 4), 3);
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(pool_build_jobs(None, 1), (cores - 1).max(1));
        assert_eq!(pool_build_jobs(None, cores * 2), 1);
    }
}
