//! `ndtune split`: co-execute one NDRange of a spec across several devices (Erdem et al. 2018,
//! §2.2), each with its best configuration from the store (tuned first where missing), and
//! report Table 3, Fig. 5 and, with `--sweep`, Fig. 6-7. `--plan-only` plans from given sizes and
//! times without running anything.

use crate::cli::{SearchArgs, SplitArgs};

use anyhow::{bail, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ndtune_backend::AnyDevice;
use ndtune_engine::coexec::{self, Split};
use ndtune_engine::DeviceChoice;
use ndtune_spec::Spec;
use ndtune_split::study::Options;
use ndtune_split::{plan_with, Device};
use std::time::Duration;

pub fn run(args: &SplitArgs) -> Result<()> {
    if args.plan_only {
        return plan_only(args);
    }
    let spec_path = args
        .spec
        .as_ref()
        .expect("clap requires SPEC without --plan-only");
    let overrides = args.campaign.constants.single()?;
    let spec = Spec::load_with(spec_path, &overrides)?;
    let split = Split {
        spec: &spec,
        overrides: &overrides,
        twin: args.twin.as_deref(),
        devices: args.devices.as_deref().expect("clap requires --devices"),
        dim: args.dim,
        slices: args.slices.map(|n| n as usize),
        seed: args.campaign.seed,
        options: Options {
            sweep: args.sweep,
            residue: args.residue,
            schedule: args.schedule,
            chunks: args.chunks,
            plan_ms: args.plan_ms.clone(),
        },
    };
    let prepared = coexec::prepare(&split)?;
    let store = args.campaign.store.open()?;
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(ProgressDrawTarget::hidden());
    }
    // A device without a best is tuned first, as `ndtune tune` would.
    let mut tune = |path: &std::path::Path, device: &AnyDevice, label: &str| {
        let _ = progress.println(format!(
            "{label}: no measured configuration of `{}` in {}: tuning first",
            spec.kernel.name,
            store.path().display()
        ));
        let mut request =
            crate::cmd_tune::request(&args.campaign, &SearchArgs::default(), path.to_path_buf())
                .map_err(|e| format!("{e:#}"))?;
        request.sweep = vec![overrides.clone()];
        request.devices = DeviceChoice::Opened(vec![device.clone()]);
        let mut ran = crate::cmd_tune::run_with_progress(&request, args.json)
            .map_err(|e| format!("{e:#}"))?;
        Ok(ran.reports.remove(0))
    };
    let spinner = progress.add(ProgressBar::new_spinner());
    spinner.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("template"));
    spinner.enable_steady_tick(Duration::from_millis(200));
    let report = prepared.run(&store, &mut tune, &mut |m| spinner.set_message(m));
    spinner.finish_and_clear();
    let report = report?;
    let names: Vec<String> = spec.problem.params.iter().map(|p| p.name.clone()).collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text(&names));
    }
    if !report.study.verified {
        bail!(
            "the co-executed output of `{}` does not match device {} alone: {}",
            report.kernel,
            report.study.best_single,
            report.study.mismatch.as_deref().unwrap_or("")
        );
    }
    Ok(())
}

/// `--plan-only`: the planner on given sizes and times.
fn plan_only(args: &SplitArgs) -> Result<()> {
    let global = args
        .global
        .expect("clap requires --global with --plan-only");
    if args.wg.len() != args.time.len() {
        bail!(
            "--wg names {} devices but --time {}",
            args.wg.len(),
            args.time.len()
        );
    }
    let devices: Vec<Device> = args
        .wg
        .iter()
        .zip(&args.time)
        .map(|(&wg, &time_ms)| Device { wg, time_ms })
        .collect();
    let p = plan_with(global, &devices, args.residue)?;
    let other = plan_with(global, &devices, args.residue.other())?;
    if args.json {
        let mut v = serde_json::to_value(&p)?;
        v["other_rule"] = serde_json::to_value(&other)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "split of {} items across {} devices (Table 3)",
        p.global,
        devices.len()
    );
    print!("{}", p.table(&devices));
    println!("the other rule, for comparison:");
    print!("{}", other.table(&devices));
    Ok(())
}
