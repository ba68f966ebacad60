//! `ndtune space`: the declared, bounded and pruned sizes of a spec's space on one device, on
//! every device and their common space, with what each constraint removed; the configurations
//! themselves with `--list`; the MiniZinc model with `--mzn`.

use crate::cli::SpaceArgs;
use anyhow::{anyhow, bail, Result};
use ndtune_engine::space::{spaces, AllReport, BuildCheck, Report};
use ndtune_space::mzn;
use ndtune_spec::Spec;

pub fn run(args: &SpaceArgs) -> Result<()> {
    let overrides = args.constants.single()?;
    let spec = Spec::load_with(&args.spec, &overrides)?;
    let needs_device = spec.problem.launch.is_some()
        || spec
            .problem
            .constraints
            .iter()
            .any(|c| c.contains("device."));
    let devices = args.device.targets(needs_device)?;
    // `--device all` reports each device and the common space, however many devices there are.
    let multi = args.device.device.as_deref() == Some("all") || devices.len() > 1;
    let check = BuildCheck {
        cap: args.kernel_check,
        prune_by_query: args.prune_by_query,
    };
    let mut starting = |device: &str, n| {
        eprintln!("{device}: building {n} configuration(s) to read their CL_KERNEL_WORK_GROUP_SIZE")
    };
    let spaces = spaces(&spec, &devices, multi, &check, &mut starting)?;
    if let Some(dir) = &args.mzn {
        if devices.len() > 1 {
            bail!("--mzn writes the model of one device; pick one with --device, --profile or --profile-file");
        }
        let model =
            mzn::problem_model(&spec.kernel.name, &spec.problem).map_err(|e| spec.locate(&e))?;
        let mut files = vec![(format!("{}.mzn", spec.kernel.name), model)];
        // Without a device the model has neither launch nor `device.*` names: it stands alone.
        if let Some(d) = devices.first() {
            files.extend(mzn::platform_files([("device", &d.profile)]));
        }
        mzn::write_files(dir, &files)?;
    }
    if args.list {
        let listed = spaces.listed();
        let out = &mut std::io::stdout().lock();
        ndtune_space::listing::write(out, &listed.pruning, listed.excluded(), args.json)?;
    }
    // An empty space is an error naming what emptied it, raised after the reports are printed.
    let empty = spaces.empty(&spec);
    if !args.list {
        let device_reports: Vec<Report> = spaces
            .per_device
            .into_iter()
            .map(|p| p.report(&spec))
            .collect();
        let top = spaces.shared.map(|p| p.report(&spec));
        if args.json {
            let text = match (multi, top) {
                (true, Some(common)) => serde_json::to_string_pretty(&AllReport {
                    common,
                    devices: device_reports,
                })?,
                (_, Some(top)) => serde_json::to_string_pretty(&top)?,
                (_, None) => serde_json::to_string_pretty(&device_reports[0])?,
            };
            println!("{text}");
        } else {
            device_reports
                .iter()
                .chain(top.iter())
                .for_each(print_report);
        }
    }
    match empty {
        Some(why) => Err(anyhow!(why)),
        None => Ok(()),
    }
}

fn print_report(report: &Report) {
    let r = &report.space;
    let on = r
        .device
        .as_deref()
        .map(|d| format!(" on {d}"))
        .unwrap_or_default();
    println!("space of `{}`{on}", r.kernel);
    println!(
        "  declared {:>14}  Cartesian product of the domains",
        r.declared
    );
    println!(
        "  bounded  {:>14}  local sizes within the max work-item sizes (Erdem Table 1)",
        r.bounded
    );
    println!(
        "  pruned   {:>14}  every constraint holds (Erdem Table 2)",
        r.pruned
    );
    if !r.constraints.is_empty() {
        println!(
            "  {:>14}  constraint (first to reject a configuration, in evaluation order)",
            "removed"
        );
        for c in &r.constraints {
            println!("  {:>14}  {}", c.removed, c.constraint);
        }
    }
    if let Some(k) = &report.kernel_check {
        let range = k
            .work_group_size_range
            .map(|(lo, hi)| format!(", CL_KERNEL_WORK_GROUP_SIZE {lo}..{hi}"))
            .unwrap_or_default();
        if k.pruned_by_query {
            println!(
                "  {:>14}  kernel work-group size of each configuration's own build ({} built{range}; --prune-by-query)",
                k.removed, k.checked
            );
        } else {
            println!(
                "  advice {:>7}  exceed their own build's CL_KERNEL_WORK_GROUP_SIZE ({} built{range}): kept, since only a launch refuses (--prune-by-query removes them)",
                k.removed, k.checked
            );
        }
        if k.build_failed > 0 {
            println!(
                "  {:>14}  builds failed (kept: tuning records them as build_failed)",
                k.build_failed
            );
        }
    }
    println!("  evaluation order: {}", r.order.join(", "));
    for h in &r.hints {
        println!("  hint: {h}");
    }
}
