//! The spec file: a user's contract with ndtune (TOML; see DESIGN.md and `examples/`).
//!
//! Parsing has two stages, as ripgrep does with its flags: [`raw`] is the file as written (serde,
//! unknown keys refused, every expression with its source span), and [`Spec`] is the validated
//! job: parameters, constraints and launch as an [`ndtune_space::problem::Problem`], typed
//! arguments, verification and measurement. Every error names the file, line and column.
//!
//! ```
//! let spec = ndtune_spec::Spec::parse(
//!     "[kernel]\nname = \"k\"\n[params]\nWG = { pow2 = [1, 256] }\n[space]\nconstraints = [\"WG >= 8\"]\n",
//!     "k.toml".as_ref(),
//! ).unwrap();
//! assert_eq!(spec.problem.params[0].name, "WG");
//! ```

pub mod raw;
mod validate;

pub use validate::{
    Access, Arg, ArgKind, ElemType, Init, Kernel, Measure, Race, Reference, Split, SplitBuffer,
    Verify,
};

use ndtune_core::text::line_col;
use ndtune_space::problem::{Location, Problem, ProblemError};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A validated spec file.
#[derive(Debug, Clone)]
pub struct Spec {
    pub path: PathBuf,
    pub kernel: Kernel,
    pub problem: Problem,
    pub args: Vec<Arg>,
    pub verify: Option<Verify>,
    pub measure: Measure,
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

impl Spec {
    /// Reads and validates a spec file.
    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        Spec::load_with(path, &BTreeMap::new())
    }

    /// Reads and validates a spec file, with some `[constants]` replaced (`--set N=256`).
    /// Constants defined from a replaced one follow it; an unknown name is an error.
    pub fn load_with(path: &Path, overrides: &BTreeMap<String, i64>) -> Result<Spec, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            path: path.display().to_string(),
            line: 0,
            column: 0,
            message: format!("cannot read the spec file: {e}"),
        })?;
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
        overrides: &BTreeMap<String, i64>,
    ) -> Result<Spec, SpecError> {
        let shown = path.display().to_string();
        let raw: raw::RawSpec = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |s| line_col(text, s.start));
            SpecError {
                path: shown.clone(),
                line,
                column,
                message: e.message().trim_end().replace('\n', "; "),
            }
        })?;
        validate::spec(raw, text, path, overrides)
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

    /// The kernel's OpenCL source, where the spec names one.
    pub fn kernel_source(&self) -> Result<Option<String>, SpecError> {
        let Some(src) = &self.kernel.source else {
            return Ok(None);
        };
        std::fs::read_to_string(src).map(Some).map_err(|e| {
            self.error_at(
                &SpanKey::Section("kernel.source"),
                format!("cannot read kernel source {}: {e}", src.display()),
            )
        })
    }
}

#[cfg(test)]
mod tests;

impl Spec {
    /// The OpenCL build options of one configuration (values in parameter declaration order):
    /// the spec's own options, then `-D NAME=VALUE` for each constant and parameter that the
    /// kernel source mentions (`used`, from [`source_names`]). A parameter used only in
    /// `[launch]` is no define, so configurations differing only there share one build.
    pub fn build_options(&self, used: &HashSet<String>, config: &[i64]) -> String {
        let params = self
            .problem
            .params
            .iter()
            .map(|p| p.name.as_str())
            .zip(config.iter().copied());
        let consts = self.problem.constants.iter().map(|(k, v)| (k.as_str(), *v));
        let mut opts = self.kernel.build_options.join(" ");
        for (name, value) in consts.chain(params).filter(|(n, _)| used.contains(*n)) {
            opts.push_str(&format!(" -D {name}={value}"));
        }
        opts.trim_start().to_string()
    }
}

/// Every identifier-like word of an OpenCL C source: the names it may use as defines.
pub fn source_names(source: &str) -> HashSet<String> {
    source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .map(str::to_string)
        .collect()
}
