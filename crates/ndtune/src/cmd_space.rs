//! `ndtune space`: the declared, bounded and pruned sizes of a spec's space on one device, on
//! every device and their common space, with what each constraint removed; the configurations
//! themselves with `--list`; the MiniZinc model with `--mzn`.

use crate::cli::SpaceArgs;
use crate::targets::{self, Device};
use anyhow::{bail, Context, Result};
use ndtune_space::mzn;
use ndtune_space::platform::KernelLimits;
use ndtune_space::problem::{Origin, Pruning, Target};
use ndtune_spec::Spec;
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;

#[derive(Serialize)]
struct Removal {
    constraint: String,
    origin: &'static str,
    removed: u128,
}

#[derive(Serialize)]
struct Report {
    kernel: String,
    device: Option<String>,
    declared: u128,
    bounded: u128,
    pruned: u128,
    /// Parameters in evaluation order.
    order: Vec<String>,
    constraints: Vec<Removal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_work_group_size: Option<i64>,
}

#[derive(Serialize)]
struct AllReport {
    #[serde(flatten)]
    common: Report,
    devices: Vec<Report>,
}

fn report(
    spec: &Spec,
    device: Option<String>,
    p: &Pruning,
    kernel: Option<KernelLimits>,
) -> Report {
    Report {
        kernel: spec.kernel.name.clone(),
        device,
        declared: p.stats.declared,
        bounded: p.bounded,
        pruned: p.stats.pruned,
        order: p.space.order().into_iter().map(String::from).collect(),
        constraints: p
            .space
            .labels()
            .iter()
            .zip(&p.stats.removed)
            .zip(&p.origins)
            .map(|((label, removed), (origin, _))| Removal {
                constraint: label.clone(),
                origin: match origin {
                    Origin::User(_) => "application",
                    Origin::Platform(_) => "platform",
                },
                removed: *removed,
            })
            .collect(),
        kernel_work_group_size: kernel.map(|k| k.work_group_size),
    }
}

/// Prunes for one device. For a live device with a kernel source, the kernel is built once with
/// the first valid configuration's defines and its `clGetKernelWorkGroupInfo` limits are added
/// (tuning re-checks every configuration's own build).
fn prune_for(
    spec: &Spec,
    source: Option<&str>,
    d: &Device,
) -> Result<(Pruning, Option<KernelLimits>)> {
    let target = Target::from_profile(&d.label, &d.profile, None);
    let pruning = spec.problem.prune(&[target]).map_err(|e| spec.locate(&e))?;
    let (Some(cl), Some(source), Some(_)) = (&d.live, source, &spec.problem.launch) else {
        return Ok((pruning, None));
    };
    let Some(first) = pruning.space.configs_first() else {
        return Ok((pruning, None));
    };
    match cl.kernel_limits(source, &spec.kernel.name, &spec.build_options(&first)) {
        Ok(k) => {
            let limits = KernelLimits {
                work_group_size: i64::try_from(k.work_group_size).unwrap_or(i64::MAX),
            };
            let target = Target::from_profile(&d.label, &d.profile, Some(limits));
            let pruning = spec.problem.prune(&[target]).map_err(|e| spec.locate(&e))?;
            Ok((pruning, Some(limits)))
        }
        Err(e) => {
            eprintln!("warning: {}: kernel limits not checked: {e}", d.label);
            Ok((pruning, None))
        }
    }
}

pub fn run(args: &SpaceArgs) -> Result<()> {
    let spec = Spec::load(&args.spec)?;
    let needs_device = spec.problem.launch.is_some()
        || spec
            .problem
            .constraints
            .iter()
            .any(|c| c.contains("device."));
    let devices = targets::resolve(&args.device, needs_device)?;
    // `--device all` reports each device and the common space, however many devices there are.
    let multi = args.device.device.as_deref() == Some("all") || devices.len() > 1;
    let source = match devices.iter().any(|d| d.live.is_some()) {
        true => spec.kernel_source()?,
        false => None,
    };

    let mut per_device = Vec::new();
    for d in &devices {
        let (p, k) = prune_for(&spec, source.as_deref(), d)?;
        per_device.push((d, p, k));
    }
    // The space that is listed and summed up: the common one across several devices, else the
    // single device's, else the device-free one.
    let shared = match devices.len() {
        0 => Some(spec.problem.prune(&[]).map_err(|e| spec.locate(&e))?),
        1 if !multi => None,
        _ => {
            let targets: Vec<Target> = per_device
                .iter()
                .map(|(d, _, k)| Target::from_profile(&d.label, &d.profile, *k))
                .collect();
            Some(spec.problem.prune(&targets).map_err(|e| spec.locate(&e))?)
        }
    };
    let (listed, top) = match (&shared, per_device.first()) {
        (Some(p), _) => {
            let label = multi.then(|| "common".to_string());
            (p, report(&spec, label, p, None))
        }
        (None, Some((d, p, k))) => (p, report(&spec, Some(d.label.clone()), p, *k)),
        (None, None) => unreachable!("no device means a shared, device-free space"),
    };
    let device_reports: Vec<Report> = per_device
        .iter()
        .map(|(d, p, k)| report(&spec, Some(d.label.clone()), p, *k))
        .collect();

    if let Some(dir) = &args.mzn {
        write_mzn(dir, &spec, &devices, top.kernel_work_group_size)?;
    }
    if args.list {
        list(listed, args.json)?;
    } else if args.json {
        let text = if multi {
            serde_json::to_string_pretty(&AllReport {
                common: top,
                devices: device_reports,
            })?
        } else {
            serde_json::to_string_pretty(&top)?
        };
        println!("{text}");
    } else {
        for r in &device_reports {
            print_report(r);
        }
        if multi || devices.is_empty() {
            print_report(&top);
        }
    }
    let empties: Vec<(String, &Pruning)> = per_device
        .iter()
        .map(|(d, p, _)| (d.label.clone(), p))
        .chain(std::iter::once(("every device".to_string(), listed)))
        .filter(|(_, p)| p.stats.pruned == 0)
        .collect();
    if let Some((label, p)) = empties.first() {
        let why: Vec<String> = p
            .emptied_by()
            .into_iter()
            .map(|(c, removed, without)| {
                format!("  {c}\n    removed {removed}; without it {without} configurations remain")
            })
            .collect();
        bail!(
            "the space of `{}` is empty on {label}; the constraints that emptied it:\n{}",
            spec.kernel.name,
            why.join("\n")
        );
    }
    Ok(())
}

fn print_report(r: &Report) {
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
    if let Some(wg) = r.kernel_work_group_size {
        println!("  CL_KERNEL_WORK_GROUP_SIZE {wg} (build of the first valid configuration)");
    }
    if !r.constraints.is_empty() {
        println!(
            "  {:>14}  constraint (first to reject a configuration, in evaluation order)",
            "removed"
        );
        for c in &r.constraints {
            println!("  {:>14}  {}", c.removed, c.constraint);
        }
    }
    println!("  evaluation order: {}", r.order.join(", "));
}

/// Streams the configurations: a header and tab-separated values, or JSON lines.
fn list(p: &Pruning, json: bool) -> Result<()> {
    let names: Vec<&str> = p.space.params().iter().map(|q| q.name.as_str()).collect();
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if !json {
        writeln!(out, "{}", names.join("\t"))?;
    }
    let keys: Vec<String> = names.iter().map(|n| format!("\"{n}\":")).collect();
    let mut buf = itoa::Buffer::new();
    let mut failed = None;
    p.space.for_each(|cfg| {
        let res = (|| -> std::io::Result<()> {
            for (i, v) in cfg.iter().enumerate() {
                if json {
                    out.write_all(if i == 0 { b"{" } else { b"," })?;
                    out.write_all(keys[i].as_bytes())?;
                } else if i > 0 {
                    out.write_all(b"\t")?;
                }
                out.write_all(buf.format(*v).as_bytes())?;
            }
            out.write_all(if json { b"}\n" } else { b"\n" })
        })();
        match res {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    match failed.map_or_else(|| out.flush(), Err) {
        // A closed pipe (`| head`) is the reader's choice, not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn write_mzn(
    dir: &std::path::Path,
    spec: &Spec,
    devices: &[Device],
    kernel_wg: Option<i64>,
) -> Result<()> {
    if devices.len() > 1 {
        bail!("--mzn writes the model of one device; pick one with --device, --profile or --profile-file");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    let kernel = kernel_wg.map(|work_group_size| KernelLimits { work_group_size });
    let model = mzn::problem_model(&spec.kernel.name, &spec.problem, kernel)
        .map_err(|e| spec.locate(&e))?;
    write(&format!("{}.mzn", spec.kernel.name), model)?;
    // Without a device the model has neither launch nor `device.*` names: it stands alone.
    if let Some(d) = devices.first() {
        write("platform.mzn", mzn::platform_model())?;
        write(
            &mzn::data_file_name("device", &d.profile),
            mzn::device_data(&d.profile),
        )?;
    }
    Ok(())
}
