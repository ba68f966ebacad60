//! `ndtune collect`: exhaustive work-group data collection over stencil scenarios (Cummins et
//! al. 2016, §3.3, §5, §6), run by `ndtune_collect` (the campaign file, its scenarios, their
//! measurement, the CSV export); here the command line, progress and the summary: `--summary`
//! derives W_legal, W_safe, the oracles, the baseline and the expert's standing; `--export`
//! writes the long CSV that `ndtune learn` reads.

use crate::cli::CollectArgs;
use crate::output::progress_bar;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{MultiProgress, ProgressDrawTarget};
use ndtune_collect::{CollectCampaign, Measuring};
use ndtune_engine::outcome_counts;
use ndtune_engine::{Event, Processes};
use ndtune_learn::collected;
use ndtune_store::Store;
use std::path::PathBuf;
use std::time::Duration;

pub fn run(args: &CollectArgs) -> Result<()> {
    let db = &args.store.db;
    if let Some(out) = &args.export {
        let (rows, scenarios, features) =
            ndtune_collect::export(&args.store.open_read_only()?, out)?;
        eprintln!(
            "wrote {rows} rows ({scenarios} scenarios, {features} features) to {}",
            out.display()
        );
        return Ok(());
    }
    if args.summary {
        return summary(&args.store.open_read_only()?, args.json);
    }
    let path = args
        .campaign
        .as_ref()
        .ok_or_else(|| anyhow!("collect needs a campaign file (or --summary / --export)"))?;
    let campaign = CollectCampaign::load(path)?;
    let devices = campaign.devices()?;
    let work = args
        .work
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.stencils", db.display())));
    let store = args.store.open()?;
    // Every scenario's files, limits, grid and features first: a bad one stops the campaign
    // before anything is measured.
    let scenarios = ndtune_collect::prepare(&campaign, &devices, &work)?;
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(ProgressDrawTarget::hidden());
    }
    let processes =
        Processes::current_exe().context("cannot find the ndtune executable to start workers")?;
    for scenario in &scenarios {
        let how = Measuring {
            seed: args.seed,
            timeout: args.timeout.map(Duration::from_secs_f64),
            store: db.clone().into(),
            worker: None,
            processes: processes.clone(),
        };
        let label = &scenario.label;
        let bar = progress_bar(&progress, label);
        let mut observer = |event: Event<'_>| match event {
            Event::Started { total } => bar.set_length(total as u64),
            Event::Evaluated { .. } => bar.inc(1),
            Event::Warning(message) => progress.suspend(|| eprintln!("{label}: {message}")),
        };
        let report = scenario.measure(&store, &how, &mut observer)?.report;
        bar.finish();
        let (evaluated, per_s, overhead) = report.throughput();
        // On stderr: stdout is the summary (or its JSON).
        eprintln!(
            "{label}: {}; best {}; {evaluated} evaluated now, {per_s:.0} configurations/s besides launches, overhead {overhead:.2} ms per configuration",
            outcome_counts(&report.outcomes),
            report
                .best_ms()
                .map_or("none".to_string(), |ms| format!("{ms:.4} ms"))
        );
    }
    summary(&store, args.json)
}

fn summary(store: &Store, json: bool) -> Result<()> {
    let collected = collected::read(store)?;
    if collected.scenarios.is_empty() {
        bail!(
            "{}: no collected scenario (run `ndtune collect CAMPAIGN.toml` first)",
            store.path().display()
        );
    }
    if json {
        let summary = collected.summary_json();
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", collected.summary_text(store.path()));
    }
    Ok(())
}
