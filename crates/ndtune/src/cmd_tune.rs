//! `ndtune tune`: the command line made into one [`TuneRequest`] (`ndtune_engine::request`:
//! one device or several, a sweep over constants, `--captured`, `--worker`, `--pool`) or a
//! replay (`--replay`), run with progress bars, and its reports printed as tables or JSON.

use crate::cli::{CampaignArgs, SearchArgs, TuneArgs};
use crate::output::progress_bar;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar};
use ndtune_engine::pool::PoolEvent;
use ndtune_engine::{DeviceChoice, Event, Mode, Processes, Ran, RequestEvent, Search, TuneRequest};

pub fn run(args: &TuneArgs) -> Result<()> {
    if let Some(path) = &args.replay {
        if args.search.warm_start || args.share.worker || args.share.pool {
            bail!(
                "--replay measures nothing: --warm-start, --worker and --pool need a live campaign"
            );
        }
        return crate::cmd_replay::run(args, path);
    }
    let spec = args
        .spec
        .clone()
        .ok_or_else(|| anyhow!("tune needs a spec file (or --replay PATH)"))?;
    let mut request = request(&args.campaign, &args.search, spec)?;
    request.sweep = args.campaign.constants.sweep()?;
    request.captured = args.captured.clone();
    request.metrics = args.metrics.metrics.clone();
    request.objectives = args.metrics.objectives()?;
    request.devices = DeviceChoice::Selector(args.device.clone());
    request.timeout = args.timeout.map(std::time::Duration::from_secs_f64);
    request.lease = args.share.lease;
    request.mode = match (args.share.pool, args.share.worker) {
        (true, _) => Mode::Pool,
        (_, true) => Mode::Worker {
            id: args.share.worker_id.clone(),
        },
        _ => Mode::Campaigns,
    };
    let ran = run_with_progress(&request, args.json)?;
    if args.json {
        let mut out = serde_json::json!({ "devices": ran.reports });
        match &ran.pool {
            Some(pool) => out["pool"] = pool.to_json(),
            None => out["time"] = serde_json::to_value(&ran.time)?,
        }
        if let Some(swept) = &ran.sweep {
            out["sweep"] = serde_json::to_value(swept)?;
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &ran.reports {
            print!("{}", r.text(&ran.store));
        }
        match &ran.pool {
            Some(pool) => print!("{}", pool.text(ran.devices.len())),
            None => {
                if let Some(swept) = &ran.sweep {
                    print!(
                        "{}",
                        ndtune_engine::sweep_table(swept, &ran.reports[0].names)
                    );
                }
                println!("{}", ran.time.line());
                println!(
                    "pictures of this campaign: ndtune report --db {} --out report.html",
                    ran.store.display()
                );
            }
        }
    }
    match ran.failure {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

/// The request of a campaign as the command line's campaign and search flags say (`tune`, and
/// `split` for devices not tuned yet), on device 0 until the caller says otherwise.
pub(crate) fn request(
    campaign: &CampaignArgs,
    search: &SearchArgs,
    spec: std::path::PathBuf,
) -> Result<TuneRequest> {
    let processes =
        Processes::current_exe().context("cannot find the ndtune executable to start workers")?;
    let mut request = TuneRequest::new(spec, campaign.store.db.clone(), processes);
    request.db_retry = campaign.store.db_retry;
    request.search = Search {
        strategy: campaign.strategy.clone(),
        budget: campaign.budget,
        time: search.time,
        warm_start: search.warm_start,
        patience: search.patience.map(|p| p as usize),
        configs: search.configs.clone(),
        seed: campaign.seed,
        build_jobs: campaign.build_jobs.map(usize::from),
        advice_prior: !search.no_advice_prior,
        keep_timed_out: search.keep_timed_out,
    };
    request.race = campaign.race.choice();
    Ok(request)
}

/// Runs `request` with a progress bar per campaign (or the pool's), hidden under `--json`;
/// warnings go to stderr under the device's name.
pub(crate) fn run_with_progress(request: &TuneRequest, json: bool) -> Result<Ran> {
    let progress = MultiProgress::new();
    if json {
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    // The bar of the campaign running, its label, and how its best is shown: `best 1.2345 ms`,
    // `best gflops 812.3 GFLOP/s`.
    let mut bar: Option<(ProgressBar, String)> = None;
    let (mut named, mut unit) = (String::new(), String::new());
    let mut on = |event: RequestEvent<'_>| match event {
        RequestEvent::Campaign { label, spec } => {
            let objective = &spec.metrics.objective().metric;
            unit = spec.metrics.unit(objective).unwrap_or_default().to_string();
            named = match spec.metrics.is_time() {
                true => String::new(),
                false => format!("{objective} "),
            };
            let made = (progress_bar(&progress, label), label.to_string());
            if let Some((done, _)) = bar.replace(made) {
                done.finish();
            }
        }
        RequestEvent::Event { label, event } => match (event, &bar) {
            (Event::Started { total }, Some((bar, _))) => bar.set_length(total as u64),
            (Event::Evaluated { best, .. }, Some((bar, _))) => {
                bar.inc(1);
                if let Some(v) = best {
                    bar.set_message(format!("best {named}{v:.4} {unit}"));
                }
            }
            // On stderr, not the bars' println: it shows in a log and under --json too, where
            // bars are hidden, and never mixes with --json's output.
            (Event::Warning(message), _) => progress.suspend(|| eprintln!("{label}: {message}")),
            _ => {}
        },
        RequestEvent::Pool(event) => match (event, &mut bar) {
            (PoolEvent::Started { total, .. }, Some((bar, _))) => {
                bar.set_length(total.try_into().unwrap_or(u64::MAX))
            }
            (PoolEvent::Progress { results, running }, Some((bar, _))) => {
                bar.set_position(results);
                bar.set_message(format!("{running} workers"));
            }
            (PoolEvent::Said { label, line }, _) => {
                let _ = progress.println(format!("{label}: {line}"));
            }
            // The last pass reads every result back, counting them again on a bar of its own.
            (PoolEvent::LastPass, Some((done, label))) => {
                done.finish();
                *done = progress_bar(&progress, label);
            }
            _ => {}
        },
        RequestEvent::Note(line) => progress.suspend(|| eprintln!("{line}")),
    };
    let ran = ndtune_engine::request::run(request, &mut on, None);
    if let Some((bar, _)) = bar {
        match request.mode {
            Mode::Pool => bar.finish_and_clear(),
            _ => bar.finish(),
        }
    }
    Ok(ran?)
}
