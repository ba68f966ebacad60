//! `ndtune tune`: measure a spec's pruned space on one or more live devices with a search
//! strategy, through a supervised worker process, keeping every outcome in the store as it
//! happens; resume from the store; sweep over constants (`--set N=256,512`: a campaign per
//! value); or replay recorded results (`--replay`).

use crate::cli::{CampaignArgs, SearchArgs, TuneArgs};
use crate::targets;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use ndtune_cl::ClDevice;
use ndtune_core::{Config, Constants, OutcomeKind};
use ndtune_engine::{Best, Campaign, DeviceReport, Event, Options, Processes, Share};
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_store::{Group, Store};
use std::collections::BTreeMap;
use std::time::Duration;

pub fn run(args: &TuneArgs) -> Result<()> {
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
    // Every combination's spec is checked before anything is measured.
    let specs = sweep
        .iter()
        .map(|overrides| {
            let spec = Spec::load_with(spec_path, overrides)?;
            spec.kernel_source()?.ok_or_else(|| {
                anyhow!("{}: [kernel] source is needed to tune", spec.path.display())
            })?;
            Ok(spec)
        })
        .collect::<Result<Vec<Spec>>>()?;
    ndtune_search::by_name(&args.campaign.strategy, args.campaign.seed)?;
    let devices = targets::live_devices(args.device.as_deref())?;
    let store = args.campaign.store.open()?;
    if args.share.pool {
        let ([spec], [overrides]) = (specs.as_slice(), sweep.as_slice()) else {
            bail!(
                "--pool runs one campaign, and --set gives {} combinations of values: start a pool for each",
                sweep.len()
            );
        };
        return crate::cmd_pool::run(args, spec, overrides, &devices, &store);
    }
    if args.share.worker && devices.len() > 1 {
        bail!(
            "--worker measures on one device, --device {} names {}: start a worker per device, or use --pool",
            args.device.as_deref().unwrap_or_default(),
            devices.len()
        );
    }
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut reports = Vec::new();
    for (spec, overrides) in specs.iter().zip(&sweep) {
        for device in &devices {
            let share = args.share.worker.then(|| Share {
                worker: args
                    .share
                    .worker_id
                    .clone()
                    .unwrap_or_else(|| default_worker_id(device)),
                lease: args.share.lease,
                location: args.campaign.store.db.clone().into(),
            });
            reports.push(tune_device(
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
            )?);
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
    if args.json {
        let mut out = serde_json::json!({ "devices": reports });
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
    if !why.is_empty() {
        bail!("{}", why.join("\n"));
    }
    Ok(())
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

/// How long the claims of a campaign of its own outlive its last heartbeat (`--lease` is a
/// worker's).
const GUARD_LEASE: Duration = Duration::from_secs(60);

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
/// what it measures as `host:pid:device`, so that another process tuning the same campaign in
/// the same store never measures it too.
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
) -> Result<DeviceReport> {
    let pruning = spec
        .problem
        .prune(&[Target::from_profile(label, &device.profile)])
        .map_err(|e| spec.locate(&e))?;
    let source = spec
        .kernel_source()?
        .ok_or_else(|| anyhow!("{}: [kernel] source is needed to tune", spec.path.display()))?;
    let group = ndtune_engine::group(spec, &source, campaign.seed, device, store)?;
    record_space(spec, label, &pruning, &group, store)?;
    let bar = progress.add(ProgressBar::new(0));
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    let mut observer = |event: Event<'_>| match event {
        Event::Started { total } => bar.set_length(total as u64),
        Event::Evaluated { best_ms, .. } => {
            bar.inc(1);
            if let Some(ms) = best_ms {
                bar.set_message(format!("best {ms:.4} ms"));
            }
        }
        Event::Warning(message) => {
            let _ = progress.println(format!("{label}: {message}"));
        }
    };
    let report = Campaign {
        spec,
        overrides,
        device,
        label,
        pruning,
        store,
        options: Options {
            strategy: campaign.strategy.clone(),
            budget: campaign.budget,
            time: search.time,
            warm_start: search.warm_start,
            guard: share.is_none().then(|| Share {
                worker: default_worker_id(device),
                lease: GUARD_LEASE,
                location: campaign.store.db.clone().into(),
            }),
            share,
            seed: campaign.seed,
            timeout: timeout.map(Duration::from_secs_f64),
            build_jobs: campaign
                .build_jobs
                .map_or_else(ndtune_engine::default_build_jobs, usize::from),
            processes: Processes::current_exe()
                .context("cannot find the ndtune executable to start workers")?,
        },
    }
    .run(&mut observer);
    bar.finish();
    Ok(report?)
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

/// Keeps a tuned space's pruning counts (Erdem Tables 1-2) in the store for `ndtune report`: a
/// study of kind `space` per (kernel, constants, device), its body `ndtune space --json`'s
/// report with the device's fingerprint and the constants.
fn record_space(
    spec: &Spec,
    label: &str,
    pruning: &ndtune_space::problem::Pruning,
    group: &Group,
    store: &Store,
) -> Result<()> {
    let space = serde_json::to_value(crate::cmd_space::report(
        spec,
        Some(label.to_string()),
        pruning,
        pruning.stats.pruned,
        None,
    ))
    .context("the pruning counts do not fit JSON")?;
    store.put_study(&ndtune_store::Study {
        kind: "space".into(),
        name: format!(
            "{}{} on {}",
            group.kernel,
            show_constants(&group.constants),
            group.device
        ),
        body: serde_json::json!({
            "device": group.device,
            "constants": group.constants,
            "space": space,
        }),
        created_at: ndtune_store::now_ms(),
    })?;
    Ok(())
}

/// `measured 5, pruned 0, ...` in the taxonomy's order.
pub(crate) fn outcome_counts<N: std::fmt::Display>(counts: &BTreeMap<&'static str, N>) -> String {
    OutcomeKind::ALL
        .iter()
        .filter_map(|k| counts.get(k.as_str()).map(|n| format!("{k} {n}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` N=128 K=3` (with a leading space), or nothing where there are no constants.
pub(crate) fn show_constants(constants: &Constants) -> String {
    constants.iter().map(|(k, v)| format!(" {k}={v}")).collect()
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
    match &r.best {
        Some(b) => {
            let mut rates = String::new();
            if let Some(g) = b.gflops {
                rates.push_str(&format!(", {g:.2} GFLOP/s"));
            }
            if let Some(g) = b.gbytes_per_s {
                rates.push_str(&format!(", {g:.2} GB/s"));
            }
            println!(
                "  best       {}: {:.4} ms (median {:.4}, min {:.4}, spread {:.1}%){rates}",
                show_config(&r.names, &b.config),
                b.time_ms,
                b.median_ms,
                b.min_ms,
                b.rel_spread * 100.0
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
    if r.evaluated > 0 {
        let t = &r.time;
        println!(
            "  time       {:.2} s: worker start {:.2} s, reference {:.2} s, builds {:.2} s, launches {:.2} s, \
             overhead {:.2} ms per configuration",
            t.total_s + t.startup_s + t.lost_s,
            t.startup_s,
            t.reference_s,
            t.build_s,
            t.launch_s,
            t.overhead_ms_per_config
        );
        if t.build_jobs > 1 {
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
    }
    if r.above_queried_work_group > 0 {
        println!(
            "  advice     {} measured configurations have a work-group above their build's CL_KERNEL_WORK_GROUP_SIZE: the driver launched them",
            r.above_queried_work_group
        );
    }
    if r.fastest.len() > 1 {
        println!("  fastest    {:>10}  configuration", "ms");
        for f in &r.fastest {
            println!(
                "             {:>10.4}  {}",
                f.time_ms,
                show_config(&r.names, &f.config)
            );
        }
    }
}
