//! `ndtune tune`: measure a spec's pruned space on one or more live devices with a search
//! strategy, through a supervised worker process, keeping every outcome in the store as it
//! happens; resume from the store; sweep over constants (`--set N=256,512`: a campaign per
//! value); or replay recorded results (`--replay`).

use crate::cli::{CampaignArgs, MetricArgs, SearchArgs, TuneArgs};
use crate::targets;
use crate::wall::Wall;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use ndtune_cl::ClDevice;
use ndtune_core::{Config, Constants, OutcomeKind};
use ndtune_engine::{
    show_constants, Best, DeviceReport, Event, Options, Processes, Share, Tuned, Tuning, Worker,
};
use ndtune_search::Budget;
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_store::Store;
use std::collections::BTreeMap;
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
    let sweep = args
        .campaign
        .constants
        .sweep()
        .map_err(anyhow::Error::msg)?;
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
    let picked = targets::pick_live(args.device.as_deref())?;
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
    let devices = targets::open_picked(&picked)?;
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
    for (spec, overrides) in specs.iter().zip(&sweep) {
        for device in &devices {
            // A signal stopped the campaign before: the others are not started.
            if reports.iter().any(|r| r.interrupted.is_some()) {
                break;
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
                &targets::label(device),
                &store,
                &progress,
                &args.search,
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

/// Why nothing could be measured on `device` (an empty space, or every configuration evaluated
/// failed), where that is so: a campaign that measured something exits 0, however much else
/// failed.
pub(crate) fn nothing_measured(spec: &Spec, r: &DeviceReport, device: &ClDevice) -> Option<String> {
    if !r.measured_nothing() {
        return None;
    }
    if r.pruned == 0 {
        let target = Target::from_profile(&r.device, &device.profile);
        return Some(match spec.problem.prune(&[target]) {
            Ok(pruning) => crate::cmd_space::empty_space(spec, &r.device, &pruning).to_string(),
            Err(e) => spec.locate(&e).to_string(),
        });
    }
    // A budget that ran out before the first configuration (`--time 0s`) is what was asked.
    let tried = r.evaluated + r.reused;
    (tried > 0).then(|| {
        format!(
            "nothing could be measured on {}: all {tried} configurations evaluated failed ({}); the first of each kind are listed above",
            r.device,
            outcome_counts(&r.outcomes)
        )
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

/// A campaign's progress bar under `progress`, named `label`.
pub(crate) fn progress_bar(progress: &MultiProgress, label: &str) -> ProgressBar {
    let bar = progress.add(ProgressBar::new(0));
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    bar
}

/// The strategy and budget `tune --replay` and `--pool` search with: `--strategy auto`
/// resolved for a space of `valid` configurations ([`ndtune_engine::resolve_strategy`]).
pub(crate) fn resolve_strategy(
    campaign: &CampaignArgs,
    time: Option<Duration>,
    valid: u128,
    live: bool,
) -> ndtune_engine::tuning::Resolved {
    let given = Budget {
        evaluations: campaign.budget,
        time,
    };
    ndtune_engine::resolve_strategy(&campaign.strategy, given, valid, live)
}

/// A worker's name where none is given: `host:pid:device` (the device's selector).
pub(crate) fn default_worker_id(device: &ClDevice) -> String {
    format!(
        "{}:{}:{}",
        hostname(),
        std::process::id(),
        targets::selector(device)
    )
}

/// This machine's host name (`localhost` where it has none).
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it or
    // truncates, and the length is bounded below by the search for NUL.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..len]) {
        Ok(name) if ok && !name.is_empty() => name.to_string(),
        _ => "localhost".into(),
    }
}

/// `measured 5, pruned 0, ...` in the taxonomy's order.
pub(crate) fn outcome_counts<N: std::fmt::Display>(counts: &BTreeMap<&'static str, N>) -> String {
    OutcomeKind::ALL
        .iter()
        .filter_map(|k| counts.get(k.as_str()).map(|n| format!("{k} {n}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `A=1 B=2` in the spec's parameter order.
pub(crate) fn show_config(names: &[String], config: &Config) -> String {
    names
        .iter()
        .map(|n| {
            format!(
                "{n}={}",
                config.get(n).map_or("?".into(), ToString::to_string)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn print_report(r: &DeviceReport, db: &std::path::Path) {
    println!(
        "{} — `{}`{} ({} strategy, {} of {} valid configurations)",
        r.device,
        r.kernel,
        show_constants(&r.constants),
        r.strategy,
        r.evaluated + r.reused,
        r.pruned
    );
    if let Some(why) = &r.interrupted {
        println!("  stopped    {why}");
    }
    let by_time = r.objective.metric == "time" && !r.objective.higher_is_better;
    if !by_time {
        let unit = r
            .objective
            .unit
            .as_ref()
            .map_or(String::new(), |u| format!(" ({u})"));
        let direction = if r.objective.higher_is_better {
            "higher"
        } else {
            "lower"
        };
        println!(
            "  objective  {}{unit}, {direction} is better",
            r.objective.metric
        );
    }
    match &r.best {
        Some(b) => {
            let shown: Vec<String> = b
                .metrics
                .iter()
                .map(|(name, v)| {
                    let unit = r.units.get(name).map_or(String::new(), |u| format!(" {u}"));
                    format!(", {name} {v:.4}{unit}")
                })
                .collect();
            println!(
                "  best       {}: {:.4} ms (median {:.4}, min {:.4}, spread {:.1}%){}",
                show_config(&r.names, &b.config),
                b.time_ms,
                b.median_ms,
                b.min_ms,
                b.rel_spread * 100.0,
                shown.concat()
            );
        }
        None => println!("  best       none: no configuration was measured and verified"),
    }
    println!("  outcomes   {}", outcome_counts(&r.outcomes));
    for (kind, failed) in &r.failures {
        let more = r.outcomes.get(kind).copied().unwrap_or(0) as usize - failed.len();
        for (i, f) in failed.iter().enumerate() {
            let head = if i == 0 { *kind } else { "" };
            println!(
                "  {head:<13}{}: {}",
                show_config(&r.names, &f.config),
                f.reason
            );
        }
        if more > 0 {
            println!("  {:<13}... and {more} more (ndtune show --config NAME=VALUE,... prints one whole)", "");
        }
    }
    if !r.verified {
        println!("  verified   nothing: the spec has no [verify], so outputs were not checked");
    }
    for h in &r.hints {
        println!("  hint       {h}");
    }
    println!(
        "  evaluated  {} now, {} reused from {} (setup {})",
        r.evaluated,
        r.reused,
        db.display(),
        r.setup
    );
    for other in &r.not_reused {
        let mut what = other.differences.clone();
        if what.len() > 3 {
            let more = what.len() - 2;
            what.truncate(2);
            what.push(format!("{more} more differences"));
        }
        println!(
            "  not reused {} results of this kernel source, constants and device under setup {}: {}",
            other.results,
            other.setup,
            what.join("; ")
        );
    }
    let t = &r.time;
    println!(
        "  time       {:.2} s: setup {:.2} s, worker start {:.2} s ({:.2} s waited for), \
         reference {:.2} s, data {:.2} s, builds {:.2} s, launches {:.2} s, overhead {:.2} ms per \
         configuration, store {:.2} s, strategy {:.2} s, shutdown {:.2} s",
        t.campaign_s,
        t.setup_s,
        t.startup_s,
        t.startup_waited_s,
        t.reference_s,
        t.data_s,
        t.build_s,
        t.launch_s,
        t.overhead_ms_per_config,
        t.store_s,
        t.search_s,
        t.shutdown_s
    );
    if t.raced > 0 {
        println!(
            "             racing stopped {} configurations that could not be the best, sparing {} timed runs",
            t.raced, t.runs_spared
        );
    }
    if t.build_jobs > 1 && r.evaluated > 0 {
        println!(
            "             builds ahead in {} build workers: {:.2} s of their time, {:.2} s of it waited for",
            t.build_jobs, t.build_workers_s, t.build_s
        );
    }
    if t.lost_s > 0.0 {
        println!(
            "             {:.2} s waiting for evaluations that crashed or timed out",
            t.lost_s
        );
    }
    if r.above_queried_work_group > 0 {
        println!(
            "  advice     {} measured configurations have a work-group above their build's CL_KERNEL_WORK_GROUP_SIZE: the driver launched them",
            r.above_queried_work_group
        );
    }
    let energy = if r.energy.measured {
        format!("measured through {}", r.energy.detail)
    } else if r.energy.available {
        format!(
            "not measured (no metric needs it); available through {}",
            r.energy.detail
        )
    } else {
        r.energy.detail.clone()
    };
    println!("  energy     {energy}");
    if r.top.len() > 1 && by_time {
        println!("  fastest    {:>10}  configuration", "ms");
        for f in &r.top {
            println!(
                "             {:>10.4}  {}",
                f.time_ms,
                show_config(&r.names, &f.config)
            );
        }
    } else if r.top.len() > 1 {
        let label = match &r.objective.unit {
            Some(unit) => format!("{} ({unit})", r.objective.metric),
            None => r.objective.metric.clone(),
        };
        println!("  top        {label:>16}  {:>10}  configuration", "ms");
        for f in &r.top {
            println!(
                "             {:>16}  {:>10.4}  {}",
                DeviceReport::format_objective(f.objective),
                f.time_ms,
                show_config(&r.names, &f.config)
            );
        }
    }
}
