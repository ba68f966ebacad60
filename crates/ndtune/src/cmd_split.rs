//! `ndtune split`: co-execute one NDRange of a spec across several devices (Erdem et al. 2018,
//! §2.2), each with its best configuration from the store (tuned first where missing), and
//! report Table 3, Fig. 5 and, with `--sweep`, Fig. 6-7. `--plan-only` plans from given sizes and
//! times without running anything.

use crate::cli::{SearchArgs, SplitArgs};

use anyhow::{anyhow, bail, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ndtune_backend::{AnyDevice, Api};
use ndtune_engine::{coexec, DeviceChoice};
use ndtune_spec::Spec;
use ndtune_split::runtime::CoExecutor;
use ndtune_split::study::{study, Options, Report};
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
    let split = spec.split.as_ref().ok_or_else(|| {
        spec.split_error(
            "no [split] section: say which buffers follow the split (see docs/split.md)".into(),
        )
    })?;
    let dims = spec.problem.launch.as_ref().map_or(0, |l| l.global.len());
    let dim = args.dim.unwrap_or(split.dim);
    if dim >= dims {
        bail!(
            "--dim {dim}: the launch of {} has {dims} dimension(s), 0 to {}",
            spec.path.display(),
            dims.saturating_sub(1)
        );
    }
    let twin = args
        .twin
        .as_ref()
        .map(|path| coexec::twin(&spec, path, &overrides))
        .transpose()?;
    let languages: Vec<Api> = std::iter::once(spec.kernel.language)
        .chain(twin.as_ref().map(|t| t.kernel.language))
        .collect();
    let devices = coexec::pick_devices(
        &languages,
        args.devices.as_deref().expect("clap requires --devices"),
    )?;
    let labels: Vec<String> = devices.iter().map(|d| d.label()).collect();

    let store = args.campaign.store.open()?;
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(ProgressDrawTarget::hidden());
    }
    let names: Vec<String> = spec.problem.params.iter().map(|p| p.name.clone()).collect();
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
    let (members, mut rows) = coexec::members(
        &spec,
        twin.as_ref(),
        &devices,
        &labels,
        &store,
        args.campaign.seed,
        &mut tune,
    )?;

    let inputs = ndtune_bench::data::spec_inputs(&spec, &members[0].config, args.campaign.seed)
        .map_err(|e| anyhow!("{}: {e}", spec.path.display()))?;
    let mut exec = CoExecutor::new(&spec, &members, &labels, dim, &inputs)?;
    if let Some(n) = args.slices {
        exec.slices(n as usize)?;
    }
    let spinner = progress.add(ProgressBar::new_spinner());
    spinner.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("template"));
    spinner.enable_steady_tick(Duration::from_millis(200));
    let options = Options {
        sweep: args.sweep,
        residue: args.residue,
        schedule: args.schedule,
        chunks: args.chunks,
        plan_ms: args.plan_ms.clone(),
    };
    let result = study(&mut exec, &spec, &options, &mut |m| spinner.set_message(m));
    spinner.finish_and_clear();
    let s = result?;
    for (i, row) in rows.iter_mut().enumerate() {
        row.wg = exec.work_groups()[i];
        row.single_ms = s.single_ms[i];
        row.single_kernel_ms = s.single_kernel_ms[i];
    }
    let report = Report {
        kernel: spec.kernel.name.clone(),
        constants: spec.problem.constants.clone(),
        dim,
        devices: rows,
        study: s,
    };
    // Kept for `ndtune report` (Fig. 5-7, Table 3), verified or not: the page says which.
    coexec::keep(&store, &report, &labels)?;
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
