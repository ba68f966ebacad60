//! The report of an ndtune store: the seed papers' tables and figures for what the store holds,
//! as one self-contained HTML page (or Markdown with PNG files beside it).
//!
//! This crate owns:
//! - [`Report::read`]: one pass over a [`Store`](ndtune_store::Store) into plain structs
//!   ([`model`]): per device the pruned spaces that were tuned (studies of kind `space`, which
//!   tuning records) and each campaign's best configuration; the collected work-group scenarios
//!   with the oracle analysis of `ndtune-learn`; the co-execution (`split`) and learning (`learn`)
//!   studies; each campaign's objective and metrics, computed from its measurements with the
//!   definitions its last run kept in the store;
//! - the layout of the page ([`document`]): sections, tables, captions, and which figures; its
//!   tuning section (`tuning`): per campaign the convergence in evaluation order, the
//!   distribution of measured times with the outcomes counted, the effect of each parameter, and
//!   the comparison across devices;
//! - the figures ([`figures`]), drawn with plotters in an embedded font (DejaVu Sans), so that
//!   no system font is needed: SVG inlined in the HTML ([`html`]), PNG for Markdown
//!   ([`markdown`]).
//!
//! - [`stored`]: the stored results one by one, with their device's name and metrics (what
//!   `ndtune show` prints and Python's `Store.results()` returns), and the campaigns' progress
//!   per worker (`ndtune status`); [`terminal`]: both as the terminal shows them.
//!
//! It never measures, tunes or writes to the store; a section the store has nothing for says so
//! and how to fill it, instead of drawing an empty figure.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let store = ndtune_store::Store::open(&dir.path().join("empty.db")).unwrap();
//! let report = ndtune_report::Report::read(&store).unwrap();
//! assert!(report.is_empty());
//! let page = ndtune_report::html(&report).unwrap();
//! assert!(page.contains("The store holds no tuning results"));
//! ```

pub mod document;
pub mod figures;
pub mod html;
pub mod markdown;
pub mod model;
pub mod stored;
pub mod strategies;
pub mod terminal;
mod tuning;

pub use model::Report;

use std::path::{Path, PathBuf};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] ndtune_store::StoreError),
    /// A study's body does not read as this ndtune's type of its kind.
    #[error("{}: the {kind} study `{name}` cannot be read by this ndtune: {detail}", store.display())]
    Study {
        store: PathBuf,
        kind: String,
        name: String,
        detail: String,
    },
    /// What selects stored results cannot select them (`ndtune show --front` of one objective).
    #[error("{0}")]
    Select(String),
    #[error("cannot draw the figure `{figure}`: {detail}")]
    Draw { figure: String, detail: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How a report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One HTML file, figures inline.
    Html,
    /// A Markdown file and one PNG file per figure beside it.
    Markdown,
}

/// What [`write`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// The report's file.
    pub path: PathBuf,
    pub bytes: usize,
    pub figures: usize,
    /// Files written beside it (Markdown's PNG files).
    pub files: Vec<PathBuf>,
}

/// The report as an HTML page.
pub fn html(report: &Report) -> Result<String, Error> {
    html::render(&document::document(report))
}

/// Writes the report to `out` in `format`.
pub fn write(report: &Report, out: &Path, format: Format) -> Result<Written, Error> {
    let doc = document::document(report);
    let figures = doc.figures().count();
    let (text, files) = match format {
        Format::Html => (html::render(&doc)?, Vec::new()),
        Format::Markdown => markdown::render(&doc, out)?,
    };
    std::fs::write(out, &text).map_err(|source| Error::Write {
        path: out.to_path_buf(),
        source,
    })?;
    Ok(Written {
        path: out.to_path_buf(),
        bytes: text.len(),
        figures,
        files,
    })
}
