//! The spec file: a user's contract with ndtune (TOML; see DESIGN.md and `examples/`).
//!
//! Parsing has two stages, as ripgrep does with its flags: [`raw`] is the file as written (serde,
//! unknown keys refused, every expression with its source span), and [`Spec`] is the validated
//! job: parameters, constraints and launch as an [`ndtune_space::problem::Problem`], typed
//! arguments, verification and measurement. Every error names the file, line and column.
//!
//! [`Spec::kernel_source`] reads the kernel's files and the headers they include, bounded
//! ([`sources`]); [`Spec::build_options`] gives one configuration's compiler options (with
//! options that depend on parameters, [`BuildOption`]); [`Spec::setup`] describes and digests
//! everything besides device, constants and configuration that can change a result.
//!
//! ```
//! let spec = ndtune_spec::Spec::parse(
//!     "[kernel]\nname = \"k\"\n[params]\nWG = { pow2 = [1, 256] }\n[space]\nconstraints = [\"WG >= 8\"]\n",
//!     "k.toml".as_ref(),
//! ).unwrap();
//! assert_eq!(spec.problem.params[0].name, "WG");
//! ```

mod options;
pub mod raw;
mod setup;
pub mod sources;
mod validate;

pub use options::BuildOption;
pub use sources::{source_names, KernelSource};
pub use validate::{
    Access, Arg, ArgKind, ElemType, HostFunction, Init, Kernel, Measure, Race, Reference,
    ScalarValue, Split, SplitBuffer, Verify, BYTES_METRIC, FLOPS_METRIC,
};

use ndtune_core::text::line_col;
use ndtune_core::{Codec, Value};
use ndtune_metrics::{Definitions, MetricError, Metrics};
use ndtune_space::problem::{Location, Problem, ProblemError};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A validated spec file.
#[derive(Debug, Clone)]
pub struct Spec {
    pub path: PathBuf,
    pub kernel: Kernel,
    pub problem: Problem,
    /// The parameters, in declaration order, and how points hold their values.
    pub codec: Codec,
    pub args: Vec<Arg>,
    pub verify: Option<Verify>,
    pub measure: Measure,
    /// `[metrics]` and `[objective]` (with `[measure]`'s rates as the first metrics): what the
    /// campaign optimises and shows beside the time.
    pub metrics: Metrics,
    /// `[split]`: how buffers follow a split of the NDRange (co-execution).
    pub split: Option<Split>,
    text: String,
    spans: HashMap<SpanKey, Range<usize>>,
}

/// What a recorded span belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum SpanKey {
    Location(Location),
    Section(&'static str),
    /// The `i`th file of `[kernel] source`.
    Source(usize),
}

/// An error in a spec file, at a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.path, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for SpecError {}

/// The largest spec file read, in bytes.
pub const MAX_SPEC_BYTES: u64 = 16 << 20;

/// Reads a regular file of at most `limit` bytes: a larger file and anything but a regular file
/// (a directory, a device such as `/dev/zero` that never ends, a pipe) are errors naming the
/// file, never an unbounded read.
pub fn read_bytes(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, SpecError> {
    ndtune_core::input::read_bytes(path, ndtune_core::input::Kind::new(what, limit)).map_err(|e| {
        SpecError {
            path: path.display().to_string(),
            line: 0,
            column: 0,
            message: e.message,
        }
    })
}

/// Reads a text file of at most `limit` bytes ([`read_bytes`]): NUL bytes and bytes that are
/// not UTF-8 are errors naming the file, line and column.
pub fn read_text(path: &Path, limit: u64, what: &'static str) -> Result<String, SpecError> {
    let bytes = read_bytes(path, limit, what)?;
    let at = |offset: usize, message: String| {
        let (line, column) = ndtune_core::text::byte_line_col(&bytes, offset);
        SpecError {
            path: path.display().to_string(),
            line,
            column,
            message,
        }
    };
    let text = String::from_utf8(bytes.clone()).map_err(|e| {
        at(
            e.utf8_error().valid_up_to(),
            format!("the {what} is not UTF-8 text"),
        )
    })?;
    if let Some(nul) = text.find('\0') {
        return Err(at(nul, format!("the {what} holds a NUL byte")));
    }
    Ok(text)
}

impl Spec {
    /// Reads and validates a spec file.
    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        Spec::load_with(path, &BTreeMap::new())
    }

    /// Reads and validates a spec file, with some `[constants]` replaced (`--set N=256`).
    /// Constants defined from a replaced one follow it; an unknown name is an error.
    pub fn load_with(path: &Path, overrides: &BTreeMap<String, Value>) -> Result<Spec, SpecError> {
        let text = read_text(path, MAX_SPEC_BYTES, "spec file")?;
        Spec::parse_with(&text, path, overrides)
    }

    /// Validates spec text; `path` names it in errors and anchors relative file names.
    pub fn parse(text: &str, path: &Path) -> Result<Spec, SpecError> {
        Spec::parse_with(text, path, &BTreeMap::new())
    }

    /// [`Spec::parse`] with `[constants]` overrides (see [`Spec::load_with`]).
    pub fn parse_with(
        text: &str,
        path: &Path,
        overrides: &BTreeMap<String, Value>,
    ) -> Result<Spec, SpecError> {
        let shown = path.display().to_string();
        let raw: raw::RawSpec = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |s| line_col(text, s.start));
            let message = e.message().trim_end().replace('\n', "; ");
            SpecError {
                path: shown.clone(),
                line,
                column,
                // toml names no cause for some characters (a bare carriage return: fuzzing).
                message: if message.is_empty() {
                    "not valid TOML here".into()
                } else {
                    message
                },
            }
        })?;
        validate::spec(raw, text, path, overrides)
    }

    /// A spec handed over as a document (the Python package's dict of sections, as a spec
    /// file's TOML holds them): written as `directory/spec.toml`, so that the workers and every
    /// later command read the same file, then validated. The text is TOML's own rendering of
    /// the document, so the same document writes the same file; a file that already holds it
    /// is left alone (a campaign's workers check that what they read is unchanged). An error
    /// names the written file's line and column.
    pub fn write_document(directory: &Path, document: &toml::Table) -> Result<Spec, SpecError> {
        let path = directory.join("spec.toml");
        let failed = |message: String| SpecError {
            path: path.display().to_string(),
            line: 0,
            column: 0,
            message,
        };
        let text = toml::to_string(document)
            .map_err(|e| failed(format!("the document is no spec file: {e}")))?;
        if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
            let tmp = directory.join(format!(".spec.toml.{}", std::process::id()));
            std::fs::write(&tmp, &text)
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(|e| failed(format!("cannot write it: {e}")))?;
        }
        Spec::parse(&text, &path)
    }

    /// The spec's text, as read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// An error at a recorded span (or at the file, where none was recorded).
    fn error_at(&self, key: &SpanKey, message: String) -> SpecError {
        let (line, column) = self
            .spans
            .get(key)
            .map_or((0, 0), |s| line_col(&self.text, s.start));
        SpecError {
            path: self.path.display().to_string(),
            line,
            column,
            message,
        }
    }

    /// Places a problem error at its position in this file.
    pub fn locate(&self, e: &ProblemError) -> SpecError {
        self.error_at(&SpanKey::Location(e.location.clone()), e.to_string())
    }

    /// An error about `[split]`, placed at that section (or at the file where it has none).
    pub fn split_error(&self, message: String) -> SpecError {
        self.error_at(&SpanKey::Section("split"), message)
    }

    /// Replaces the spec's metrics and objective with `defs` (the spec's own, with those of the
    /// command line: [`Definitions::with`]), checked against the spec's names.
    pub fn set_metrics(&mut self, defs: Definitions) -> Result<(), MetricError> {
        let scope = self
            .problem
            .scope(None)
            .expect("the parameters resolved when the spec was validated");
        self.metrics = Metrics::check(defs, &scope, &[])?;
        Ok(())
    }

    /// The kernel's OpenCL source, where the spec names one: its files concatenated, with
    /// the headers they include ([`KernelSource::read`]) and every other file the preprocessor
    /// reads for it with the spec's build options ([`KernelSource::add_preprocessed`]). A file
    /// that cannot be read, is too large, is no regular file or is not UTF-8 text is an error
    /// at `[kernel] source`.
    pub fn kernel_source(&self) -> Result<Option<KernelSource>, SpecError> {
        if self.kernel.sources.is_empty() {
            return Ok(None);
        }
        let at_source = |file: usize, message: String| {
            self.error_at(
                &SpanKey::Source(file),
                format!("[kernel] source: {message}"),
            )
        };
        let mut source = KernelSource::read(&self.kernel.sources, &self.kernel.search_dirs())
            .map_err(|e| at_source(e.file, e.message))?;
        source
            .add_preprocessed(&self.kernel.preprocessor_options())
            .map_err(|e| at_source(0, e))?;
        Ok(Some(source))
    }
}

#[cfg(test)]
mod tests;

impl Spec {
    /// The OpenCL build options of one configuration of `source` (a point: values in parameter
    /// declaration order): the spec's own options that apply to it, placeholders filled in;
    /// `-I` for the directories headers are searched in; then `-D NAME=VALUE` for each constant
    /// and parameter that the source or a header it includes mentions, each value as it reads
    /// in C (`64`, `0.5`, `float`). A parameter used only in `[launch]` is no define, so
    /// configurations differing only there share one build; configurations whose options
    /// differ in any way never do.
    pub fn build_options(&self, source: &KernelSource, point: &[i64]) -> String {
        self.build_options_with(&|n| source.mentions(n), &source.include_options, point)
    }

    /// [`Spec::build_options`] where the source is known only by the names it `mentions` and
    /// the `include_options` it needs (a wisdom file's program, built from the application's
    /// own source).
    pub fn build_options_with(
        &self,
        mentions: &dyn Fn(&str) -> bool,
        include_options: &str,
        point: &[i64],
    ) -> String {
        let value = |name: &str| self.value_text(name, point);
        let mut opts: Vec<String> = self
            .kernel
            .build_options
            .iter()
            .filter_map(|o| o.for_config(point, value))
            .collect();
        if !include_options.is_empty() {
            opts.push(include_options.to_string());
        }
        let names = self.problem.constants.keys().chain(self.codec.names());
        for name in names.filter(|n| mentions(n)) {
            opts.push(format!("-D {name}={}", value(name)));
        }
        opts.retain(|o| !o.is_empty());
        opts.join(" ")
    }

    /// The value of a constant or parameter in a configuration, as it reads in C.
    fn value_text(&self, name: &str, point: &[i64]) -> String {
        if let Some(v) = self.problem.constants.get(name) {
            return v.to_string();
        }
        let p = self
            .codec
            .names()
            .iter()
            .position(|n| n == name)
            .expect("validated: a build option names a constant or a parameter");
        self.codec.value(p, point[p]).to_string()
    }
}
