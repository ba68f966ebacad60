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
            for report in device_reports.iter().chain(top.iter()) {
                print!("{}", report.text());
            }
        }
    }
    match empty {
        Some(why) => Err(anyhow!(why)),
        None => Ok(()),
    }
}
