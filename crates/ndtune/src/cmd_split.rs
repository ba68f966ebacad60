//! `ndtune split`: co-execute one NDRange of a spec across several devices (Erdem et al. 2018,
//! §2.2), each with its best configuration from the store (tuned first where missing), and
//! report Table 3, Fig. 5 and, with `--sweep`, Fig. 6-7. `--plan-only` plans from given sizes and
//! times without running anything.

use crate::cli::{SearchArgs, SplitArgs};
use crate::output::show_config;

use anyhow::{anyhow, bail, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ndtune_backend::{AnyDevice, Api};
use ndtune_engine::{coexec, DeviceChoice};
use ndtune_spec::Spec;
use ndtune_split::runtime::CoExecutor;
use ndtune_split::study::{study, Mode, Options, Report};
use ndtune_split::{plan_with, Device, Plan, Residue};
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
        print_report(&report, &names);
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

fn print_report(r: &Report, names: &[String]) {
    let s = &r.study;
    println!(
        "co-execution of `{}`: {} items along dimension {} on {} devices",
        r.kernel,
        s.plan.global,
        r.dim,
        r.devices.len()
    );
    println!("  each device alone (its best configuration from the store; host clock, transfers included):");
    for (i, d) in r.devices.iter().enumerate() {
        println!(
            "    [{i}] {}: {}  alone {:.4} ms (kernel {:.4} ms, tuned {:.4} ms)",
            d.device,
            show_config(names, &d.config),
            d.single_ms,
            d.single_kernel_ms,
            d.tuned_ms
        );
    }
    match &s.plan_ms {
        Some(t) => println!(
            "  plan (Table 3) from the given times {t:?} ms, residue rule `{}`:",
            s.plan.residue
        ),
        None => println!("  plan (Table 3), residue rule `{}`:", s.plan.residue),
    }
    println!(
        "    {:>6} {:>10} {:>10} {:>8} {:>6} {:>9} {:>9} {:>10} {:>10}",
        "device", "offset", "size", "groups", "wg", "adjusted", "optimal", "finish ms", "kernel ms"
    );
    for p in &s.plan.parts {
        let t = s.parts.iter().find(|t| t.device == p.device);
        println!(
            "    {:>6} {:>10} {:>10} {:>8} {:>6} {:>9.3} {:>9.3} {:>10} {:>10}",
            p.device,
            p.offset,
            p.size,
            p.work_groups,
            r.devices[p.device].wg,
            p.factor,
            p.optimal_factor,
            t.map_or("-".into(), |t| format!("{:.4}", t.finish_ms)),
            t.map_or("-".into(), |t| format!("{:.4}", t.kernel_ms)),
        );
    }
    if s.plan.overlap > 0 {
        println!(
            "    {} items are computed by two devices (work-group sizes are not multiples of each other)",
            s.plan.overlap
        );
    }
    println!(
        "  theoretical {:.4} ms (Algorithm 1), co-execution {:.4} ms measured, overhead {:+.1}%",
        s.plan.theoretical_ms,
        s.coexec_ms,
        s.overhead * 100.0
    );
    if let Some(other) = &s.other_rule {
        println!(
            "  {} rule (not run): sizes {}, theoretical {:.4} ms",
            other.residue,
            sizes(other),
            other.theoretical_ms
        );
    }
    println!(
        "  ideal speedup {:.3}, speedup {:.3} over device {} alone, efficiency {:.3}, balance {:.3}",
        s.ideal_speedup, s.speedup, s.best_single, s.efficiency, s.balance
    );
    match &s.mismatch {
        None => println!(
            "  verified: the gathered output matches device {} alone",
            s.best_single
        ),
        Some(m) => println!("  NOT verified: {m}"),
    }
    print_schedules(s);
    let mode = match s.decision.mode {
        Mode::Coexec if s.schedules.len() > 1 => format!(
            "co-execute with `{}`{}",
            s.decision
                .scheduler
                .unwrap_or(ndtune_split::schedule::Scheduler::Static),
            s.decision
                .without
                .map_or(String::new(), |d| format!(" without device {d}"))
        ),
        Mode::Coexec => "co-execute".to_string(),
        Mode::Single => format!("run on device {} alone", s.decision.device.unwrap_or(0)),
    };
    println!(
        "  decision: {mode} ({:.4} ms): {}",
        s.decision.ms, s.decision.reason
    );
    if let Some(points) = &s.sweep {
        println!("  sweep (Fig. 6-7): device 0's factor, adjusted factors, time");
        for p in points {
            let factors: Vec<String> = p.factors.iter().map(|f| format!("{f:.3}")).collect();
            println!(
                "    {:>6.3}  [{}]  {:>10.4} ms{}{}",
                p.factor,
                factors.join(", "),
                p.coexec_ms,
                if p.verified { "" } else { "  NOT verified" },
                if p.planner { "  <- planner" } else { "" }
            );
        }
    }
}

/// Fixed costs, the prediction, each scheduler side by side, its timeline and its failures.
fn print_schedules(s: &ndtune_split::study::Study) {
    if !s.fixed.is_empty() {
        println!("  fixed costs per device (paid whatever its share):");
        for f in &s.fixed {
            println!(
                "    [{}] a run {:.4} ms (launch, inputs every item reads, synchronisation), one more chunk {:.4} ms",
                f.device, f.run_ms, f.chunk_ms
            );
        }
        println!("    running together: {:.4} ms more", s.together_ms);
    }
    if let Some(p) = &s.prediction {
        println!(
            "  predicted before running: {:.4} ms, {}; measured: {:.4} ms ({})",
            p.ms,
            if p.pays {
                "co-execution pays"
            } else {
                "co-execution does not pay"
            },
            s.decision.ms,
            p.reason
        );
    }
    if s.schedules.len() > 1 {
        let width = s
            .schedules
            .iter()
            .map(|r| r.label().len())
            .fold("schedule".len(), usize::max);
        println!(
            "  {:>width$} {:>11} {:>8} {:>10} {:>8} {:>7}  verified",
            "schedule", "ms", "speedup", "efficiency", "balance", "chunks"
        );
        for r in &s.schedules {
            println!(
                "  {:>width$} {:>11.4} {:>8.3} {:>10.3} {:>8.3} {:>7}  {}",
                r.label(),
                r.ms,
                r.speedup,
                r.efficiency,
                r.balance,
                r.timeline.len(),
                if r.verified { "yes" } else { "NO" }
            );
        }
    }
    for r in s
        .schedules
        .iter()
        .filter(|r| r.timeline.len() > r.parts.len())
    {
        println!(
            "  timeline of `{}`, the timed run of median time (ms from its start):",
            r.label()
        );
        for p in &r.parts {
            let mine: Vec<&ndtune_split::runtime::ChunkRun> =
                r.timeline.iter().filter(|c| c.device == p.device).collect();
            let mut shown: Vec<String> = mine
                .iter()
                .map(|c| format!("{}+{} {:.3}-{:.3}", c.offset, c.size, c.start_ms, c.end_ms))
                .collect();
            let count = shown.len();
            if count > 8 {
                // The first and last chunks tell the story; the JSON and the report have all.
                shown.splice(4..count - 2, [format!("... {} more ...", count - 6)]);
            }
            println!(
                "    [{}] {count} chunks, {} items, done at {:.4}: {}",
                p.device,
                mine.iter().map(|c| c.size).sum::<u64>(),
                mine.iter().map(|c| c.end_ms).fold(0.0, f64::max),
                shown.join(", ")
            );
        }
    }
    for r in &s.schedules {
        for f in &r.failures {
            println!(
                "  `{}`: device {} ({}) FAILED: {}; the others ran its items {}",
                r.label(),
                f.device,
                f.label,
                f.message,
                f.given_back
                    .iter()
                    .map(|c| format!("{}..{}", c.offset, c.offset + c.size))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
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
    print_plan(&p, &devices);
    println!("the other rule, for comparison:");
    print_plan(&other, &devices);
    Ok(())
}

/// Each part's size, `/`-separated in device order (0 for a device without a part).
fn sizes(p: &Plan) -> String {
    let n = p.parts.iter().map(|q| q.device + 1).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            p.parts
                .iter()
                .find(|q| q.device == i)
                .map_or(0, |q| q.size)
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// One plan as Table 3: per device its part, groups, adjusted and optimal factors.
fn print_plan(p: &Plan, devices: &[Device]) {
    println!(
        "  residue rule `{}`: {}",
        p.residue,
        match p.residue {
            Residue::Finish => "the rounding with the least predicted time",
            Residue::Paper => "eq. 9, the residue to the device with the least extra work",
        }
    );
    println!(
        "  {:>6} {:>10} {:>10} {:>8} {:>11} {:>9} {:>9} {:>10}",
        "device", "offset", "size", "groups", "work-group", "adjusted", "optimal", "finish ms"
    );
    for part in &p.parts {
        println!(
            "  {:>6} {:>10} {:>10} {:>8} {:>11} {:>9.3} {:>9.3} {:>10.4}",
            part.device,
            part.offset,
            part.size,
            part.work_groups,
            devices[part.device].wg,
            part.factor,
            part.optimal_factor,
            part.factor * devices[part.device].time_ms
        );
    }
    for (i, _) in devices
        .iter()
        .enumerate()
        .filter(|(i, _)| !p.parts.iter().any(|q| q.device == *i))
    {
        println!("  device {i} gets nothing: its share is less than one of its work-groups");
    }
    if p.overlap > 0 {
        println!("  {} items are computed by two devices (work-group sizes are not multiples of each other)", p.overlap);
    }
    println!(
        "  theoretical {:.4} ms (Algorithm 1 on the adjusted factors), ideal {:.4} ms",
        p.theoretical_ms, p.ideal_ms
    );
}
