//! `ndtune tune`: measure a spec's pruned space on one or more live devices with a search
//! strategy, through a supervised worker process, keeping every outcome in the store as it
//! happens; resume from the store; sweep over constants (`--set N=256,512`: a campaign per
//! value); tune what programs asked for at run time (`--captured`); or replay recorded results
//! (`--replay`).

use crate::cli::{CampaignArgs, MetricArgs, SearchArgs, TuneArgs};

use crate::output::{nothing_measured, print_report, progress_bar, show_config};
use crate::wall::Wall;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::MultiProgress;
use ndtune_cl::ClDevice;
use ndtune_core::Constants;
use ndtune_engine::devices;
use ndtune_engine::share::default_worker_id;
use ndtune_engine::{
    show_constants, Best, DeviceReport, Event, Options, Processes, Share, Tuned, Tuning, Worker,
};
use ndtune_spec::Spec;
use ndtune_store::Store;
use std::collections::HashSet;
use std::time::Duration;

pub fn run(args: &TuneArgs) -> Result<()> {
    let mut wall = Wall::new();
    if let Some(path) = &args.replay {
        if args.search.warm_start || args.share.worker || args.share.pool {
            bail!(
                "--replay measures nothing: --warm-start, --worker and --pool need a live campaign"
            );
        }
        return crate::cmd_replay::run(args, path);
    }
    let spec_path = args
        .spec
        .as_ref()
        .ok_or_else(|| anyhow!("tune needs a spec file (or --replay PATH)"))?;
    let captured = args
        .captured
        .as_deref()
        .map(|dir| Captured::plan(dir, spec_path, args))
        .transpose()?;
    let sweep = match &captured {
        Some(c) => c.sweep.clone(),
        None => args
            .campaign
            .constants
            .sweep()
            .map_err(anyhow::Error::msg)?,
    };
    wall.lap();
    // Every combination's spec is checked before anything is measured.
    let specs = sweep
        .iter()
        .map(|overrides| {
            let mut spec = Spec::load_with(spec_path, overrides)?;
            apply_metrics(&mut spec, &args.metrics)?;
            spec.kernel_source()?.ok_or_else(|| {
                anyhow!("{}: [kernel] source is needed to tune", spec.path.display())
            })?;
            Ok(spec)
        })
        .collect::<Result<Vec<Spec>>>()?;
    ndtune_search::by_name(&args.campaign.strategy, args.campaign.seed)?;
    // The racing flags are checked before any worker starts.
    args.campaign
        .race
        .rule(specs[0].measure.race)
        .map_err(|e| anyhow!(e))?;
    wall.spec_s += wall.lap();
    let selector = captured
        .as_ref()
        .map_or(args.device.clone(), |c| Some(c.devices.clone()));
    let picked = devices::pick_live(selector.as_deref()).map_err(|e| anyhow!("--device {e}"))?;
    if args.share.pool && sweep.len() > 1 {
        bail!(
            "--pool runs one campaign, and --set gives {} combinations of values: start a pool for each",
            sweep.len()
        );
    }
    if args.share.worker && picked.len() > 1 {
        bail!(
            "--worker measures on one device, --device {} names {}: start a worker per device, or use --pool",
            args.device.as_deref().unwrap_or_default(),
            picked.len()
        );
    }
    // Each device's measurement worker for the first campaign starts now, while its device is
    // opened and its space pruned here (a pool's workers are processes of their own).
    let mut workers: Vec<Option<Worker>> = Vec::new();
    for p in &picked {
        workers.push(if args.share.pool {
            None
        } else {
            let source = specs[0].kernel_source()?.expect("checked above");
            let job = ndtune_engine::job(
                &specs[0],
                &source,
                &sweep[0],
                (p.index, p.sub),
                args.campaign.seed,
            )?;
            let processes = Processes::current_exe()
                .context("cannot find the ndtune executable to start workers")?;
            Some(Worker::start(
                job,
                &processes,
                args.timeout.map(Duration::from_secs_f64),
            ))
        });
    }
    let devices = devices::open_picked(&picked).map_err(|e| anyhow!(e))?;
    wall.discovery_s += wall.lap();
    let store = args.campaign.store.open()?;
    wall.store_s += wall.lap();
    if args.share.pool {
        return crate::cmd_pool::run(args, &specs[0], &sweep[0], &devices, &store);
    }
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut reports: Vec<DeviceReport> = Vec::new();
    let mut workers = workers.into_iter();
    // The campaigns of a sweep warm-start each other: the nearest tuned constants' best first.
    let search = SearchArgs {
        warm_start: args.search.warm_start || sweep.len() > 1,
        ..args.search.clone()
    };
    for (spec, overrides) in specs.iter().zip(&sweep) {
        for device in &devices {
            // A signal stopped the campaign before: the others are not started.
            if reports.iter().any(|r| r.interrupted.is_some()) {
                break;
            }
            if captured
                .as_ref()
                .is_some_and(|c| !c.asked(overrides, &device.profile))
            {
                drop(workers.next()); // the worker started for this device is not needed
                continue;
            }
            let share = args.share.worker.then(|| Share {
                worker: args
                    .share
                    .worker_id
                    .clone()
                    .unwrap_or_else(|| default_worker_id(device)),
                lease: args.share.lease,
                location: args.campaign.store.db.clone().into(),
            });
            let tuned = tune_device(
                &args.campaign,
                args.timeout,
                spec,
                overrides,
                device,
                &device.label(),
                &store,
                &progress,
                &search,
                share,
                args.share.lease,
                workers.next().flatten(),
            )?;
            wall.lap();
            wall.prune_s += tuned.prune_s;
            wall.campaigns_s += tuned.report.time.campaign_s;
            reports.push(tuned.report);
        }
    }
    // A sweep ends with the best of each of its campaigns.
    let swept: Option<Vec<Swept>> = (sweep.len() > 1).then(|| {
        reports
            .iter()
            .map(|r| Swept {
                constants: r.constants.clone(),
                device: r.device.clone(),
                setup: r.setup.clone(),
                best: r.best.clone(),
            })
            .collect()
    });
    let wall = wall.close();
    if args.json {
        let mut out = serde_json::json!({ "devices": reports, "time": wall });
        if let Some(swept) = &swept {
            out["sweep"] = serde_json::to_value(swept)?;
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &reports {
            print_report(r, store.path());
        }
        if let Some(swept) = &swept {
            print_sweep(swept, &reports[0].names);
        }
        println!("{}", wall.line());
        println!(
            "pictures of this campaign: ndtune report --db {} --out report.html",
            store.path().display()
        );
    }
    // Reports come in sweep order, each spec's devices in turn.
    let tuned = specs
        .iter()
        .flat_map(|spec| devices.iter().map(move |device| (spec, device)));
    let why: Vec<String> = reports
        .iter()
        .zip(tuned)
        .filter_map(|(r, (spec, device))| nothing_measured(spec, r, device))
        .collect();
    if let Some(why) = reports.iter().find_map(|r| r.interrupted.as_ref()) {
        bail!("{why}");
    }
    if !why.is_empty() {
        bail!("{}", why.join("\n"));
    }
    Ok(())
}

/// Adds the command line's metrics and objective to the spec's (a metric of the same name
/// replaces the spec's), checked against the spec's names.
pub(crate) fn apply_metrics(spec: &mut Spec, args: &MetricArgs) -> Result<()> {
    let objective = args.objective().map_err(|e| anyhow!(e))?;
    if args.metrics.is_empty() && objective.is_none() {
        return Ok(());
    }
    let defs = spec
        .metrics
        .definitions()
        .clone()
        .with(args.metrics.clone(), objective);
    spec.set_metrics(defs)
        .map_err(|e| anyhow!("--metric/--objective: {e}"))
}

/// The engine's options for a campaign from the command line.
fn options(
    campaign: &CampaignArgs,
    device: &ClDevice,
    timeout: Option<f64>,
    search: &SearchArgs,
    race: Option<ndtune_spec::Race>,
    share: Option<Share>,
    guard: Option<Share>,
) -> Result<Options> {
    Ok(Options {
        strategy: campaign.strategy.clone(),
        budget: campaign.budget,
        time: search.time,
        warm_start: search.warm_start,
        patience: search.patience.map(|p| p as usize),
        configs: search.configs.clone(),
        share,
        guard,
        seed: campaign.seed,
        timeout: timeout.map(Duration::from_secs_f64),
        build_jobs: campaign.build_jobs.map_or_else(
            || ndtune_engine::default_build_jobs(device.profile.device_type),
            usize::from,
        ),
        race,
        advice_prior: !search.no_advice_prior,
        keep_timed_out: search.keep_timed_out,
        processes: Processes::current_exe()
            .context("cannot find the ndtune executable to start workers")?,
    })
}

/// One campaign of a sweep over constants, as its closing table shows it.
#[derive(serde::Serialize)]
struct Swept {
    constants: Constants,
    device: String,
    setup: String,
    best: Option<Best>,
}

/// The closing table of a sweep: each campaign's constants, device and best configuration.
fn print_sweep(swept: &[Swept], names: &[String]) {
    println!("sweep: the best of each of its {} campaigns", swept.len());
    let rows: Vec<[String; 4]> = swept
        .iter()
        .map(|s| {
            let (config, ms) = match &s.best {
                Some(b) => (show_config(names, &b.config), format!("{:.4}", b.time_ms)),
                None => ("none measured".into(), "-".into()),
            };
            [
                show_constants(&s.constants).trim_start().to_string(),
                s.device.clone(),
                ms,
                config,
            ]
        })
        .collect();
    let header = ["constants", "device", "ms", "best configuration"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for r in std::iter::once(header.map(String::from)).chain(rows) {
        println!("  {:w0$}  {:w1$}  {:>w2$}  {}", r[0], r[1], r[2], r[3]);
    }
}

/// Tunes a spec on one device with the tuning engine, committing every outcome to `store`, with
/// a progress bar; the report of the campaign. Without `share` (a worker's), the campaign claims
/// what it measures as `host:pid:device` for `lease`, so that another process tuning the same
/// campaign in the same store never measures it too. `worker`: its measurement worker, if
/// started ahead ([`Worker::start`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn tune_device(
    campaign: &CampaignArgs,
    timeout: Option<f64>,
    spec: &Spec,
    overrides: &Constants,
    device: &ClDevice,
    label: &str,
    store: &Store,
    progress: &MultiProgress,
    search: &SearchArgs,
    share: Option<Share>,
    lease: Duration,
    worker: Option<Worker>,
) -> Result<Tuned> {
    let race = campaign
        .race
        .rule(spec.measure.race)
        .map_err(|e| anyhow!(e))?;
    let bar = progress_bar(progress, label);
    let objective = &spec.metrics.objective().metric;
    let unit = spec.metrics.unit(objective).unwrap_or_default();
    let named = if spec.metrics.is_time() {
        String::new()
    } else {
        format!("{objective} ")
    };
    let mut observer = |event: Event<'_>| match event {
        Event::Started { total } => bar.set_length(total as u64),
        Event::Evaluated { best, .. } => {
            bar.inc(1);
            if let Some(v) = best {
                bar.set_message(format!("best {named}{v:.4} {unit}"));
            }
        }
        // On stderr, not the bars' println: it shows in a log and under --json too, where bars
        // are hidden, and never mixes with --json's output.
        Event::Warning(message) => progress.suspend(|| eprintln!("{label}: {message}")),
    };
    let tuned = Tuning {
        spec,
        overrides,
        device,
        label,
        store,
        options: options(
            campaign,
            device,
            timeout,
            search,
            race,
            share.clone(),
            share.is_none().then(|| Share {
                worker: default_worker_id(device),
                lease,
                location: campaign.store.db.clone().into(),
            }),
        )?,
        worker,
    }
    .run(&mut observer, None);
    bar.finish();
    Ok(tuned?)
}

/// `--captured DIR`: the campaigns programs asked for (`ndtune_wisdom::capture`).
struct Captured {
    /// The captured sets of constants of the spec's kernel, in the order first asked.
    sweep: Vec<Constants>,
    /// The devices of this machine that were asked for, as a `--device` selector.
    devices: String,
    /// Each captured question as (constants as JSON, device model), for [`Captured::asked`].
    asked: HashSet<(String, (String, String, ndtune_device::DeviceType, u64))>,
}

/// Constants as a key for hashing (their JSON: names in order).
fn constants_key(constants: &Constants) -> String {
    serde_json::to_string(constants).expect("constants serialise")
}

/// A device model as an owned key ([`ndtune_wisdom::model_of`]).
fn model_key(d: &ndtune_device::DeviceProfile) -> (String, String, ndtune_device::DeviceType, u64) {
    let (name, vendor, kind, units) = ndtune_wisdom::model_of(d);
    (name.to_string(), vendor.to_string(), kind, units)
}

impl Captured {
    fn plan(
        dir: &std::path::Path,
        spec_path: &std::path::Path,
        args: &TuneArgs,
    ) -> Result<Captured> {
        if !args.campaign.constants.set.is_empty() {
            bail!("--captured tunes the constants programs asked for: leave out --set");
        }
        let kernel = Spec::load(spec_path)?.kernel.name;
        let all = ndtune_wisdom::capture::read(dir).map_err(|e| anyhow!("--captured {e}"))?;
        let asked: Vec<_> = all.iter().filter(|c| c.kernel == kernel).cloned().collect();
        if asked.is_empty() {
            let kernels: Vec<&str> = all
                .iter()
                .map(|c| c.kernel.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            bail!(
                "--captured {}: no program asked for kernel `{kernel}` (it holds {})",
                dir.display(),
                kernels.join(", ")
            );
        }
        let names = ndtune_cl::names().map_err(|e| anyhow!(e))?;
        // The devices --device narrows to, picked once.
        let narrowed: Option<Vec<usize>> = args
            .device
            .as_deref()
            .map(|sel| devices::pick_live(Some(sel)).map(|p| p.iter().map(|d| d.index).collect()))
            .transpose()
            .map_err(|e| anyhow!("--device {e}"))?;
        let here: Vec<usize> = (0..names.len())
            .filter(|&i| {
                asked.iter().any(|c| c.device.name == names[i])
                    && narrowed.as_ref().is_none_or(|n| n.contains(&i))
            })
            .collect();
        let missing: Vec<&str> = asked
            .iter()
            .map(|c| c.device.name.as_str())
            .filter(|n| !names.iter().any(|m| m == n))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !missing.is_empty() {
            eprintln!(
                "note: captured on {}, which this machine does not have: tune there",
                missing.join(", ")
            );
        }
        if here.is_empty() {
            bail!(
                "--captured {}: none of the devices asked for is here",
                dir.display()
            );
        }
        let mut distinct = HashSet::new();
        let sweep: Vec<Constants> = asked
            .iter()
            .filter(|c| distinct.insert(constants_key(&c.constants)))
            .map(|c| c.constants.clone())
            .collect();
        Ok(Captured {
            sweep,
            devices: here
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(","),
            asked: asked
                .iter()
                .map(|c| (constants_key(&c.constants), model_key(&c.device)))
                .collect(),
        })
    }

    /// Whether a program asked for the kernel at `constants` on a device of this model.
    fn asked(&self, constants: &Constants, device: &ndtune_device::DeviceProfile) -> bool {
        self.asked
            .contains(&(constants_key(constants), model_key(device)))
    }
}
