//! `ndtune report`: the seed papers' tables and figures for what a store holds (ndtune-report),
//! written as one HTML page or as Markdown with PNG files; a summary on stderr, the path on stdout.

use crate::cli::ReportArgs;
use anyhow::Result;
use ndtune_report::{Format, Report};

pub fn run(args: &ReportArgs) -> Result<()> {
    let format = match args.format.as_str() {
        "md" => Format::Markdown,
        _ => Format::Html,
    };
    // A report only reads: a missing file is a mistake, not an empty store to create, and a
    // store that cannot be written is read all the same.
    let constants = args.constants.single()?;
    let store = args.store.open_read_only()?;
    let report = Report::read_selected(&store, &constants)?;
    let written = ndtune_report::write(&report, &args.out, format)?;
    let heatmaps = report.collection.as_ref().map_or(0, |c| c.scenarios.len());
    eprintln!(
        "report of {}: {} devices, {heatmaps} collected scenarios, {} co-execution studies, {} learning evaluations; {} figures, {:.1} kB{}",
        store.path().display(),
        report.devices.len(),
        report.splits.len(),
        report.learning.len(),
        written.figures,
        written.bytes as f64 / 1e3,
        if written.files.is_empty() {
            String::new()
        } else {
            format!(" and {} PNG files beside it", written.files.len())
        }
    );
    println!("{}", written.path.display());
    Ok(())
}
