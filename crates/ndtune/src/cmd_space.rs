//! `ndtune space`: the declared, bounded and pruned sizes of a spec's space on one device, on
//! every device and their common space, with what each constraint removed; the configurations
//! themselves with `--list`; the MiniZinc model with `--mzn`.

use crate::cli::SpaceArgs;
use anyhow::{bail, Context, Result};
use ndtune_engine::devices::Target as Device;
use ndtune_engine::kernel_check::{self, KernelCheck};
use ndtune_engine::space::SpaceReport;
use ndtune_space::mzn;
use ndtune_space::problem::{Pruning, Target};
use ndtune_spec::Spec;
use serde::Serialize;
use std::collections::HashSet;
use std::io::Write;
use std::ops::ControlFlow;

/// What `ndtune space --json` prints for one space: the engine's counts and, on a live device,
/// what building each configuration found.
#[derive(Serialize)]
struct Report {
    #[serde(flatten)]
    space: SpaceReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_check: Option<KernelCheck>,
}

#[derive(Serialize)]
struct AllReport {
    #[serde(flatten)]
    common: Report,
    devices: Vec<Report>,
}

/// One pruned space: a device's, the common one, or the device-free one.
struct Pruned {
    label: Option<String>,
    pruning: Pruning,
    kernel_check: Option<KernelCheck>,
}

impl Pruned {
    fn valid(&self) -> u128 {
        let removed = self
            .kernel_check
            .as_ref()
            .filter(|k| k.pruned_by_query)
            .map_or(0, |k| k.removed as u128);
        self.pruning.stats.pruned - removed
    }

    fn report(self, spec: &Spec) -> Report {
        let valid = self.valid();
        let mut space = SpaceReport::new(spec, self.label, &self.pruning);
        space.pruned = valid;
        Report {
            space,
            kernel_check: self.kernel_check,
        }
    }
}

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
    let source = match devices.iter().any(|d| d.live.is_some()) {
        true => spec.kernel_source()?,
        false => None,
    };
    let prune = |targets: &[Target]| spec.problem.prune(targets).map_err(|e| spec.locate(&e));

    let mut per_device = Vec::new();
    for d in &devices {
        let pruning = prune(&[Target::from_profile(&d.label, &d.profile)])?;
        let kernel_check = match (&d.live, &source) {
            (Some(cl), Some(src)) => {
                let starting = |n| {
                    eprintln!(
                        "{}: building {n} configuration(s) to read their CL_KERNEL_WORK_GROUP_SIZE",
                        cl.profile().name
                    )
                };
                kernel_check::check(&spec, src, cl, &pruning, args.kernel_check, starting)?.map(
                    |mut k| {
                        k.pruned_by_query = args.prune_by_query;
                        k
                    },
                )
            }
            _ => None,
        };
        per_device.push(Pruned {
            label: Some(d.label.clone()),
            pruning,
            kernel_check,
        });
    }
    // What is listed and summed up: the common space across several devices, else the single
    // device's, else the device-free one.
    let shared = match devices.len() {
        0 => Some(Pruned {
            label: None,
            pruning: prune(&[])?,
            kernel_check: None,
        }),
        1 if !multi => None,
        _ => {
            let targets: Vec<Target> = devices
                .iter()
                .map(|d| Target::from_profile(&d.label, &d.profile))
                .collect();
            // A configuration whose own build is too small on any device is out of the common space.
            let removed_configs: HashSet<Vec<i64>> = per_device
                .iter()
                .filter_map(|p| p.kernel_check.as_ref())
                .flat_map(|k| k.removed_configs.iter().cloned())
                .collect();
            let kernel_check = (!removed_configs.is_empty()).then(|| KernelCheck {
                removed: removed_configs.len(),
                removed_configs,
                pruned_by_query: args.prune_by_query,
                ..KernelCheck::default()
            });
            Some(Pruned {
                label: Some("common".into()),
                pruning: prune(&targets)?,
                kernel_check,
            })
        }
    };
    let listed = shared.as_ref().unwrap_or_else(|| &per_device[0]);

    if let Some(dir) = &args.mzn {
        write_mzn(dir, &spec, &devices)?;
    }
    if args.list {
        let empty = HashSet::new();
        let excluded = listed
            .kernel_check
            .as_ref()
            .filter(|k| k.pruned_by_query)
            .map_or(&empty, |k| &k.removed_configs);
        list(&listed.pruning, excluded, args.json)?;
    }
    // An empty space is an error naming what emptied it, raised after the reports are printed.
    let empty_error = per_device
        .iter()
        .chain(shared.iter())
        .find(|p| p.valid() == 0)
        .map(|p| {
            anyhow::anyhow!(ndtune_engine::space::empty_space(
                &spec,
                p.label.as_deref().unwrap_or("no device"),
                &p.pruning
            ))
        });
    if !args.list {
        let device_reports: Vec<Report> = per_device.into_iter().map(|p| p.report(&spec)).collect();
        let top = shared.map(|p| p.report(&spec));
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
    if let Some(e) = empty_error {
        return Err(e);
    }
    Ok(())
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

/// Streams the configurations: a header and tab-separated values, or JSON lines.
///
/// Consecutive configurations of the walk share most values, so the line is kept between
/// configurations and rebuilt only from the first column whose value changed; lines collect in a
/// large buffer written out in blocks.
fn list(p: &Pruning, excluded: &HashSet<Vec<i64>>, json: bool) -> Result<()> {
    let names: Vec<&str> = p.space.params().iter().map(|q| q.name.as_str()).collect();
    let n = names.len();
    let mut stdout = std::io::stdout().lock();
    let prefixes: Vec<Vec<u8>> = names
        .iter()
        .enumerate()
        .map(|(i, name)| match (json, i) {
            (true, 0) => format!("{{\"{name}\":").into_bytes(),
            (true, _) => format!(",\"{name}\":").into_bytes(),
            (false, 0) => vec![],
            (false, _) => b"\t".to_vec(),
        })
        .collect();
    let end: &[u8] = if json { b"}\n" } else { b"\n" };
    if !json {
        writeln!(stdout, "{}", names.join("\t"))?;
    }
    let mut last: Vec<Option<i64>> = vec![None; n];
    let mut cols: Vec<Vec<u8>> = prefixes.clone();
    let mut starts = vec![0usize; n];
    let mut line = Vec::with_capacity(256);
    let mut block = Vec::with_capacity(1 << 20);
    let mut digits = itoa::Buffer::new();
    let mut failed = None;
    p.space.for_each(|cfg| {
        if excluded.contains(cfg) {
            return ControlFlow::Continue(());
        }
        let mut first_changed = n;
        for (i, &v) in cfg.iter().enumerate() {
            if last[i] != Some(v) {
                last[i] = Some(v);
                cols[i].truncate(prefixes[i].len());
                cols[i].extend_from_slice(digits.format(v).as_bytes());
                first_changed = first_changed.min(i);
            }
        }
        if first_changed < n {
            line.truncate(starts[first_changed]);
            for i in first_changed..n {
                starts[i] = line.len();
                line.extend_from_slice(&cols[i]);
            }
        }
        block.extend_from_slice(&line);
        block.extend_from_slice(end);
        if block.len() >= (1 << 20) - 512 {
            if let Err(e) = stdout.write_all(&block) {
                failed = Some(e);
                return ControlFlow::Break(());
            }
            block.clear();
        }
        ControlFlow::Continue(())
    });
    let result = match failed {
        Some(e) => Err(e),
        None => stdout.write_all(&block).and_then(|()| stdout.flush()),
    };
    match result {
        // A closed pipe (`| head`) is the reader's choice, not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn write_mzn(dir: &std::path::Path, spec: &Spec, devices: &[Device]) -> Result<()> {
    if devices.len() > 1 {
        bail!("--mzn writes the model of one device; pick one with --device, --profile or --profile-file");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    let model =
        mzn::problem_model(&spec.kernel.name, &spec.problem).map_err(|e| spec.locate(&e))?;
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
