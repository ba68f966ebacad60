//! `ndtune tune --pool`: one campaign shared by identical devices of this machine, run by
//! `ndtune_engine::pool` (a worker process each, `ndtune __campaign`, coordinated by the store
//! alone); here the progress bar, each worker's error output under its device's name, the
//! report and each worker's share.

use crate::cli::TuneArgs;
use crate::output::{nothing_measured, print_report, progress_bar};
use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar};
use ndtune_cl::ClDevice;
use ndtune_core::Value;
use ndtune_engine::pool::{Pool, PoolEvent, PoolReport};
use ndtune_engine::share::default_worker_id;
use ndtune_engine::{Event, Options, Processes};
use ndtune_spec::Spec;
use ndtune_store::Store;
use std::collections::BTreeMap;
use std::time::Duration;

pub fn run(
    args: &TuneArgs,
    spec: &Spec,
    overrides: &BTreeMap<String, Value>,
    devices: &[ClDevice],
    store: &Store,
) -> Result<()> {
    let c = &args.campaign;
    let race = c
        .race
        .rule(spec.measure.race)
        .map_err(|e| anyhow::anyhow!(e))?;
    let options = Options {
        strategy: c.strategy.clone(),
        budget: c.budget,
        time: args.search.time,
        warm_start: args.search.warm_start,
        patience: args.search.patience.map(|p| p as usize),
        configs: args.search.configs.clone(),
        share: None,
        guard: None,
        seed: c.seed,
        timeout: args.timeout.map(Duration::from_secs_f64),
        build_jobs: c.build_jobs.map_or_else(
            || ndtune_engine::default_build_jobs(devices[0].profile.device_type),
            usize::from,
        ),
        race,
        advice_prior: !args.search.no_advice_prior,
        keep_timed_out: args.search.keep_timed_out,
        processes: Processes::current_exe()
            .context("cannot find the ndtune executable to start workers")?,
    };
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let name = format!("pool of {}", devices.len());
    let bar = progress_bar(&progress, &name);
    let mut last: Option<ProgressBar> = None;
    let mut on = |event: PoolEvent<'_>| match event {
        PoolEvent::Started { total, .. } => bar.set_length(total.try_into().unwrap_or(u64::MAX)),
        PoolEvent::Progress { results, running } => {
            bar.set_position(results);
            bar.set_message(format!("{running} workers"));
        }
        PoolEvent::Said { label, line } => {
            let _ = progress.println(format!("{label}: {line}"));
        }
        PoolEvent::LastPass => {
            bar.finish();
            last = Some(progress_bar(&progress, &name));
        }
    };
    let mut observer = |event: Event<'_>| {
        if let Event::Warning(message) = event {
            progress.suspend(|| eprintln!("{name}: {message}"));
        }
    };
    let pool = Pool {
        spec,
        overrides,
        devices,
        store,
        location: c.store.db.clone().into(),
        db_retry: c.store.db_retry,
        options,
        lease: args.share.lease,
        id: default_worker_id(&devices[0]),
    }
    .run(&mut on, &mut observer)?;
    if let Some(bar) = last {
        bar.finish_and_clear();
    }
    let report = &pool.report;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "devices": [report],
                "pool": {
                    "wall_s": pool.wall_s,
                    "workers": workers_json(&pool),
                    "measured_twice": pool.measured_twice,
                },
            }))?
        );
    } else {
        print_report(report, store.path());
        println!(
            "  pool       {} workers in {:.2} s; measured {}",
            devices.len(),
            pool.wall_s,
            pool.workers
                .iter()
                .map(|w| format!("{} by {}", w.done, w.worker))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for end in pool.ends.iter().filter(|e| !e.success) {
            let said = match end.said.last() {
                Some(_) => format!(": it said: {}", end.said.join(" | ")),
                None => ", saying nothing".into(),
            };
            println!(
                "  worker     {} ({}) ended early, {}{said}; what it measured is kept, what it held was measured by the pool",
                end.worker, end.device, end.status
            );
        }
    }
    match nothing_measured(spec, report, &devices[0]) {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

/// Each worker: how it ended (its exit status and last lines of error output), its share from
/// the store where it claimed anything, and its own account where it ended normally (its
/// device, what it evaluated and where its time went).
fn workers_json(pool: &PoolReport) -> Vec<serde_json::Value> {
    pool.ends
        .iter()
        .map(|end| {
            let mut entry = match pool.workers.iter().find(|w| w.worker == end.worker) {
                Some(w) => serde_json::to_value(w).expect("a worker's status serialises"),
                None => serde_json::json!({"worker": end.worker, "done": 0}),
            };
            let object = entry.as_object_mut().expect("an object");
            object.insert("device".into(), end.device.clone().into());
            object.insert(
                "end".into(),
                serde_json::to_value(end).expect("an end serialises"),
            );
            if let Some(account) = pool.accounts.get(&end.worker) {
                object.insert("evaluated".into(), account.evaluated.into());
                object.insert(
                    "time".into(),
                    serde_json::to_value(account.time).expect("times serialise"),
                );
            }
            entry
        })
        .collect()
}
