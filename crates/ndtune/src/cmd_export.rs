//! `ndtune export`: one recorded campaign (selected by kernel, device, constants and setup) as a
//! Kernel Tuner cache or as T4 results JSON, each configuration with its metric values (computed
//! now from its measurements, with the definitions the campaign was last tuned with and those of
//! the command line) and the objective; or the wisdom of spec kernels (`ndtune_wisdom`): their
//! best configuration per device and constants, as JSON or a C header.

use crate::cli::ExportArgs;
use anyhow::{anyhow, bail, Context, Result};
use ndtune_engine::select::{export, Criteria, ExportFormat};
use ndtune_spec::Spec;
use ndtune_wisdom::Picker;

pub fn run(args: &ExportArgs) -> Result<()> {
    if matches!(args.format.as_str(), "wisdom" | "header") {
        return wisdom(args);
    }
    if !args.spec.is_empty() {
        bail!("--spec is for --format wisdom and header; a `{}` export selects its campaign with --kernel, --device, --set and --setup", args.format);
    }
    let store = args.store.open_read_only()?;
    let c = &args.campaign;
    let criteria = Criteria {
        kernel: c.kernel.as_deref(),
        device: c.device.as_deref(),
        constants: c.constants.single()?,
        setup: c.setup.as_deref(),
    };
    let format = match args.format.as_str() {
        "kt" => ExportFormat::Kt,
        _ => ExportFormat::T4,
    };
    let done = export(
        &store,
        &criteria,
        args.metrics.metrics.clone(),
        args.metrics.objectives()?,
        format,
        &args.out,
    )?;
    eprintln!(
        "wrote {} records of `{}` on {} to {} (objective {})",
        done.records,
        done.kernel,
        done.device_name,
        args.out.display(),
        done.objective
    );
    Ok(())
}

/// `--format wisdom` and `header`: every campaign of each spec's kernel.
fn wisdom(args: &ExportArgs) -> Result<()> {
    let c = &args.campaign;
    if c.kernel.is_some() || c.device.is_some() || !c.constants.set.is_empty() || c.setup.is_some()
    {
        bail!("--format {} writes every device and constants of each --spec's kernel; --kernel, --device, --set and --setup select one campaign for `kt` and `t4`", args.format);
    }
    match (args.format.as_str(), args.spec.len()) {
        (_, 0) => bail!(
            "--format {} needs --spec: the spec of the kernel to export",
            args.format
        ),
        ("header", n) if n > 1 => bail!("--format header writes one kernel: give one --spec"),
        _ => {}
    }
    let store = args.store.open_read_only()?;
    let objectives = args.metrics.objectives()?;
    let mut kernels = Vec::new();
    for path in &args.spec {
        let mut spec = Spec::load(path)?;
        let defs = spec
            .metrics
            .definitions()
            .clone()
            .with(args.metrics.metrics.clone(), objectives.clone());
        spec.set_metrics(defs)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let source = spec.kernel_source()?.ok_or_else(|| {
            anyhow!(
                "{}: [kernel] source is needed to export its wisdom",
                path.display()
            )
        })?;
        let (kernel, left) = ndtune_wisdom::from_store(&store, &spec, &source)?;
        if left.other_source > 0 {
            eprintln!(
                "note: {} campaigns of `{}` were of another source (the kernel changed since) and are left out",
                left.other_source, kernel.kernel
            );
        }
        if kernel.entries.is_empty() {
            bail!(
                "{}: the store holds no measured configuration of kernel `{}` with this source",
                store.path().display(),
                kernel.kernel
            );
        }
        kernels.push(kernel);
    }
    let text = if args.format == "header" {
        let picker = Picker::new(&kernels[0], &args.out.display().to_string())?;
        ndtune_wisdom::header::header(&kernels[0], &picker)?
    } else {
        ndtune_wisdom::wisdom(kernels.clone()).to_json()
    };
    std::fs::write(&args.out, text + "\n")
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    for k in &kernels {
        let objectives: Vec<&str> = std::iter::once(&k.objective)
            .chain(&k.more_objectives)
            .map(|o| o.metric.as_str())
            .collect();
        let fronts = match k.more_objectives.len() {
            0 => String::new(),
            _ => ", each with its Pareto front".to_string(),
        };
        eprintln!(
            "wrote the {} of `{}` ({} devices and constants{fronts}, objective {}) to {}",
            args.format,
            k.kernel,
            k.entries.len(),
            objectives.join(", "),
            args.out.display()
        );
    }
    Ok(())
}
