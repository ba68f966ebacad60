//! `ndtune tune --replay PATH`: runs a strategy on recorded results instead of a device
//! (`ndtune_engine::replay`), from an ndtune store's campaign (selected by `--kernel`/the spec,
//! `--device`, `--set` and `--setup`) or a Kernel Tuner cache file, and prints how close it got
//! to the recording's optimum by its objective with how many evaluations.

use crate::cli::TuneArgs;
use anyhow::{bail, Result};
use ndtune_engine::replay::{replay, Recording};
use ndtune_engine::select::Criteria;
use ndtune_search::Budget;
use std::path::Path;

pub fn run(args: &TuneArgs, path: &Path) -> Result<()> {
    let kernel = match &args.spec {
        Some(spec) => Some(ndtune_spec::Spec::load(spec)?.kernel.name),
        None => None,
    };
    let criteria = Criteria {
        kernel: kernel.as_deref(),
        device: args.device.as_deref(),
        constants: args.campaign.constants.single()?,
        setup: args.setup.as_deref(),
    };
    let rec = Recording::load(path, &criteria)?;
    let metrics = rec.metrics(args.metrics.metrics.clone(), args.metrics.objectives()?)?;
    let given = Budget {
        evaluations: args.campaign.budget,
        time: args.search.time,
    };
    let report = replay(
        &rec,
        &metrics,
        &args.campaign.strategy,
        given,
        args.campaign.seed,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print!("{}", report.text(&rec.names, &metrics));
    if report.best.is_none() {
        bail!("no evaluated configuration was measured");
    }
    Ok(())
}
