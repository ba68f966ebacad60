//! `ndtune show`: stored results printed whole, selected by kernel (or spec), device and
//! configuration: the full outcome (the whole build log, every run time, the driver's advice, the
//! whole mismatch or check message), the energy where it was measured, the campaign's metrics
//! with their units (computed now from the measurement, with the definitions of its last run),
//! when it was evaluated and by which ndtune.

use crate::cli::ShowArgs;
use anyhow::{bail, Result};
use ndtune_core::text::show_constants;
use ndtune_report::stored::{self, Selected, Selection};
use ndtune_report::terminal;
use ndtune_spec::Spec;

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
            print!("{}", terminal::record(device_name, r, &names, metrics));
        }
    }
    Ok(())
}
