//! `ndtune show`: stored results printed whole, selected by kernel (or spec), device and
//! configuration: the full outcome (the whole build log, every run time, the driver's advice, the
//! whole mismatch or check message), the energy where it was measured, the campaign's metrics
//! with their units (computed now from the measurement, with the definitions of its last run),
//! when it was evaluated and by which ndtune.

use crate::cli::ShowArgs;
use anyhow::{bail, Result};
use ndtune_core::Outcome;
use ndtune_engine::show_constants;
use ndtune_report::stored::{self, when, Metric, Selected, Selection};
use ndtune_spec::Spec;
use ndtune_store::Record;

pub fn run(args: &ShowArgs) -> Result<()> {
    let store = args.store.open_read_only()?;
    let mut selection = Selection {
        kernel: args.kernel.clone(),
        source: None,
        device: args.device.clone(),
        constants: args.constants.single()?,
        config: args.config.iter().cloned().collect(),
        front: args.front,
    };
    let mut names: Option<Vec<String>> = None;
    if let Some(path) = &args.spec {
        let spec = Spec::load_with(path, &selection.constants)?;
        let source = spec.kernel_source()?.map(|s| s.text).unwrap_or_default();
        selection.kernel = Some(spec.kernel.name.clone());
        selection.source = Some((
            ndtune_store::source_hash(&source),
            spec.problem.constants.clone(),
        ));
        names = Some(spec.problem.params.iter().map(|p| p.name.clone()).collect());
        if let Some(unknown) = selection
            .config
            .keys()
            .find(|k| !spec.problem.params.iter().any(|p| &p.name == *k))
        {
            bail!(
                "--config {unknown}: `{}` has no parameter `{unknown}`",
                path.display()
            );
        }
    }
    let Selected { shown, held } = stored::select(&store, &selection)?;
    if shown.is_empty() {
        bail!(
            "no result in {} matches; it holds {}",
            store.path().display(),
            match held.is_empty() {
                true => "none".to_string(),
                false => {
                    let held: Vec<String> = held
                        .iter()
                        .map(|(g, device_name, results)| {
                            format!(
                                "`{}`{} on {device_name}, setup {}: {results} results",
                                g.kernel,
                                show_constants(&g.constants),
                                g.setup
                            )
                        })
                        .collect();
                    format!("these campaigns:\n  {}", held.join("\n  "))
                }
            }
        );
    }
    if args.json {
        let all: Vec<serde_json::Value> = shown
            .iter()
            .map(|(d, r, m)| stored::json(d, r, m))
            .collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        for (i, (device_name, r, metrics)) in shown.iter().enumerate() {
            if i > 0 {
                println!();
            }
            let names = names
                .clone()
                .unwrap_or_else(|| r.key.config.keys().cloned().collect());
            print(device_name, r, &names, metrics);
        }
    }
    Ok(())
}

/// Prints `text` indented under a heading, every line of it.
fn block(heading: &str, text: &str) {
    println!("  {heading}");
    for line in text.lines() {
        println!("    {line}");
    }
}

fn print(device_name: &str, r: &Record, names: &[String], metrics: &[Metric]) {
    let k = &r.key;
    println!(
        "`{}` {} on {device_name}",
        k.kernel,
        crate::output::show_config(names, &k.config)
    );
    println!(
        "  campaign    source {}, setup {}, constants{}, device {}",
        k.source_hash,
        k.setup,
        match show_constants(&k.constants) {
            c if c.is_empty() => " none".to_string(),
            c => c,
        },
        k.device
    );
    println!("  outcome     {}", r.outcome.kind());
    match &r.outcome {
        Outcome::Measured(t) => {
            println!(
                "  score       {:.6} ms: the mean of the best {} of {} runs (median {:.6}, min {:.6}, spread {:.1}%)",
                t.score_ms(),
                t.best_of.min(t.times_ms.len()),
                t.times_ms.len(),
                t.median_ms(),
                t.min_ms(),
                t.rel_spread() * 100.0
            );
            let runs: Vec<String> = t.times_ms.iter().map(|ms| format!("{ms:.6}")).collect();
            println!("  runs (ms)   {}", runs.join(" "));
            if let Some(a) = t.advice {
                println!(
                    "  advice      CL_KERNEL_WORK_GROUP_SIZE {}, CL_KERNEL_LOCAL_MEM_SIZE {} bytes; a work-group of {} work-items was launched",
                    a.work_group_size, a.local_mem_bytes, a.launched_work_group
                );
            }
            if let Some(e) = &t.energy {
                println!(
                    "  energy      {:.6} J per run, {:.1} W: {} runs over {:.1} ms, {} power samples, from the {}",
                    e.joules, e.watts, e.runs, e.window_ms, e.samples, e.source
                );
                let sensors: Vec<String> = [
                    ("temperature", e.temperature_c, "°C"),
                    ("core clock", e.core_clock_mhz, "MHz"),
                    ("memory clock", e.mem_clock_mhz, "MHz"),
                ]
                .into_iter()
                .filter_map(|(name, v, unit)| Some(format!("{name} {:.0} {unit}", v?)))
                .collect();
                if !sensors.is_empty() {
                    println!(
                        "  sensors     {} (means over the window)",
                        sensors.join(", ")
                    );
                }
            }
            if !metrics.is_empty() {
                let shown: Vec<String> = metrics
                    .iter()
                    .map(|m| match &m.unit {
                        Some(unit) => format!("{} {:.6} {unit}", m.name, m.value),
                        None => format!("{} {:.6}", m.name, m.value),
                    })
                    .collect();
                println!("  metrics     {}", shown.join(", "));
            }
        }
        Outcome::Pruned { constraint } => println!("  constraint  {constraint}"),
        Outcome::BuildFailed { log } => block("build log", log),
        Outcome::Refused { error } => block("error", error),
        Outcome::WrongResult { detail } => block("detail", detail),
        Outcome::Crashed { detail } => block("detail", detail),
        Outcome::TimedOut { seconds } => println!("  deadline    {seconds} s"),
    }
    println!(
        "  when        {} to {} ({} ms)",
        when(r.started_at),
        when(r.finished_at),
        r.finished_at - r.started_at
    );
    println!("  by          ndtune {}", r.ndtune_version);
}
