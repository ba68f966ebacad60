//! Stage two: the raw spec checked and turned into typed values.

use crate::raw::{NumOrExpr, RawArg, RawSpec};
use crate::{BuildOption, SpanKey, Spec, SpecError};
use ndtune_core::text::line_col;
use ndtune_core::{Codec, Constants, Value};
use ndtune_device::backend::Api;
use ndtune_metrics::{Definitions, MetricDef, Metrics, Place};
use ndtune_space::domain::Domain;
use ndtune_space::expr::Expr;
use ndtune_space::platform::Model;
use ndtune_space::problem::{LaunchDecl, Location, ParamDecl, Problem};
use ndtune_space::resolve::{check_exact_divisions, resolve, resolve_constant, Node, Type};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// `[kernel]`.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    /// The language of the source, and so the API whose devices run it: `[kernel] language`,
    /// else CUDA for a `.cu` or `.cuh` first source, else OpenCL.
    pub language: Api,
    /// The source files, resolved relative to the spec file: the compiler gets them as one
    /// text, in this order ([`crate::KernelSource`]). Empty where the spec names none.
    pub sources: Vec<PathBuf>,
    /// Directories searched for `#include`d headers after the sources' own, resolved relative
    /// to the spec file.
    pub include_dirs: Vec<PathBuf>,
    pub build_options: Vec<BuildOption>,
}

impl Kernel {
    /// Every directory the compiler searches for headers besides the sources' own:
    /// `include_dirs`, then each `-I` of `build_options` (as written: the compiler resolves a
    /// relative one from the working directory), also where the option and its folder are two
    /// entries (`["-I", "inc"]`).
    pub fn search_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = self.include_dirs.clone();
        let words = self.literal_option_words();
        let mut words = words.iter();
        while let Some(word) = words.next() {
            match word.as_str() {
                "-I" => dirs.extend(words.next().map(PathBuf::from)),
                w if w.len() > 2 && w.starts_with("-I") => dirs.push(w[2..].into()),
                _ => {}
            }
        }
        dirs
    }

    /// The options of `build_options` that the preprocessor reads (`-I`, `-D`, `-U`,
    /// `-cl-std=`), from the entries without placeholders, as clang's arguments: what the
    /// dependency pass of [`crate::KernelSource`] runs with.
    pub fn preprocessor_options(&self) -> Vec<String> {
        let words = self.literal_option_words();
        let mut words = words.iter();
        let mut kept = Vec::new();
        while let Some(word) = words.next() {
            match word.as_str() {
                "-I" | "-D" | "-U" => {
                    if let Some(value) = words.next() {
                        kept.push(format!("{word}{value}"));
                    }
                }
                w if ["-I", "-D", "-U", "-cl-std="]
                    .iter()
                    .any(|p| w.starts_with(p)) =>
                {
                    kept.push(w.to_string())
                }
                _ => {}
            }
        }
        kept
    }

    /// The words of every entry of `build_options` without placeholders, in order, across
    /// entries (the compiler gets the entries joined by spaces).
    fn literal_option_words(&self) -> Vec<String> {
        self.build_options
            .iter()
            .filter_map(BuildOption::literal_words)
            .flatten()
            .collect()
    }
}

/// OpenCL C element types of buffers and scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemType {
    Char,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    /// Half precision: buffers and scalars where the device has `cl_khr_fp16`.
    Half,
    Float,
    Double,
}

impl ElemType {
    pub const ALL: [(&'static str, ElemType); 11] = [
        ("char", ElemType::Char),
        ("uchar", ElemType::UChar),
        ("short", ElemType::Short),
        ("ushort", ElemType::UShort),
        ("int", ElemType::Int),
        ("uint", ElemType::UInt),
        ("long", ElemType::Long),
        ("ulong", ElemType::ULong),
        ("half", ElemType::Half),
        ("float", ElemType::Float),
        ("double", ElemType::Double),
    ];

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            ElemType::Char | ElemType::UChar => 1,
            ElemType::Short | ElemType::UShort | ElemType::Half => 2,
            ElemType::Int | ElemType::UInt | ElemType::Float => 4,
            ElemType::Long | ElemType::ULong | ElemType::Double => 8,
        }
    }

    /// The OpenCL C name.
    pub fn name(self) -> &'static str {
        ElemType::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether values of the type are real numbers (`half`, `float`, `double`).
    pub fn is_real(self) -> bool {
        matches!(self, ElemType::Half | ElemType::Float | ElemType::Double)
    }

    /// The smallest and largest value of an integer type.
    fn int_range(self) -> (i128, i128) {
        match self {
            ElemType::Char => (i8::MIN as i128, i8::MAX as i128),
            ElemType::UChar => (0, u8::MAX as i128),
            ElemType::Short => (i16::MIN as i128, i16::MAX as i128),
            ElemType::UShort => (0, u16::MAX as i128),
            ElemType::Int => (i32::MIN as i128, i32::MAX as i128),
            ElemType::UInt => (0, u32::MAX as i128),
            ElemType::Long => (i64::MIN as i128, i64::MAX as i128),
            ElemType::ULong => (0, u64::MAX as i128),
            _ => (0, 0),
        }
    }

    /// A scalar argument's bytes, as the kernel receives it (host byte order): an integer type
    /// takes integers within its range, a real type numbers within its range (rounded to its
    /// precision). Anything else is an error saying why.
    pub fn scalar_bytes(self, value: &Value) -> Result<Vec<u8>, String> {
        if self.is_real() {
            let v = value
                .as_f64()
                .ok_or_else(|| format!("{value} is not a number"))?;
            let max = match self {
                ElemType::Half => 65504.0,
                ElemType::Float => f32::MAX as f64,
                _ => f64::MAX,
            };
            if !v.is_finite() || v.abs() > max {
                return Err(format!("{v:?} does not fit a {}", self.name()));
            }
            return Ok(match self {
                ElemType::Half => half::f16::from_f64(v).to_ne_bytes().to_vec(),
                ElemType::Float => (v as f32).to_ne_bytes().to_vec(),
                _ => v.to_ne_bytes().to_vec(),
            });
        }
        let v = match value {
            Value::Int(v) => *v as i128,
            other => {
                return Err(format!(
                    "{other} is {}, and a {} takes integers",
                    other.kind_name(),
                    self.name()
                ))
            }
        };
        let (lo, hi) = self.int_range();
        if v < lo || v > hi {
            return Err(format!("{v} does not fit a {} ({lo} to {hi})", self.name()));
        }
        let bytes = v.to_ne_bytes();
        // The low bytes of the two's complement, in host order.
        Ok(if cfg!(target_endian = "little") {
            bytes[..self.size()].to_vec()
        } else {
            bytes[16 - self.size()..].to_vec()
        })
    }
}

/// How a buffer is filled before a launch: deterministically, the random ones from a stream
/// seeded by `--seed` and the argument's position (docs/spec.md, "Inputs").
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    /// Floats uniform in [-1, 1); unsigned integers uniform in 0..=15, signed in -8..=7.
    Random,
    Zeros,
    Ones,
    Iota,
    /// Random 0s and 1s (cells of a cellular automaton, masks).
    Bits,
    Value(f64),
    /// Floats uniform in [low, high); integers uniform in low..=high.
    Uniform {
        low: f64,
        high: f64,
    },
    /// Normally distributed (integers: rounded to the nearest, saturated at the type's limits).
    Normal {
        mean: f64,
        std_dev: f64,
    },
    /// The elements of a NumPy `.npy` file (resolved relative to the spec), in C order.
    Npy(PathBuf),
    /// The initial contents of another buffer argument of the same type, by name.
    Copy(String),
}

impl Init {
    /// Whether the data depends on the seed (`--seed`).
    pub fn is_seeded(&self) -> bool {
        matches!(self, Init::Random | Init::Bits)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
    /// Read from CUDA's constant memory (`kind = "constant"`, Kernel Tuner's `cmem_args`): the
    /// module's `__constant__` array of the argument's name, filled before each launch, and no
    /// kernel parameter.
    Constant,
}

impl Access {
    /// Whether the kernel may write the buffer (else every configuration may share one copy).
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// One kernel argument, in order. Sizes are expressions over parameters and constants.
#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub kind: ArgKind,
}

#[derive(Debug, Clone)]
pub enum ArgKind {
    Buffer {
        ty: ElemType,
        len: Node,
        init: Init,
        access: Access,
    },
    /// `value` is resolved in the type's own arithmetic: real for `half`, `float` and
    /// `double` (`1 / 2` is 0.5), 64-bit integers otherwise.
    Scalar {
        ty: ElemType,
        value: ScalarValue,
    },
    Local {
        bytes: Node,
    },
}

/// What a configuration's outputs are checked against.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// The outputs of this configuration (Cummins' gold standard), parameter values by name.
    Config(BTreeMap<String, Value>),
    /// A host reference built into ndtune (`builtin:NAME`).
    Builtin(String),
    /// A reference kernel: source file, kernel name and, where it differs from the tuned
    /// kernel's, its global size (expressions over parameters and constants). It gets the same
    /// arguments and the defines of the constants and parameters its source mentions.
    Kernel {
        source: PathBuf,
        name: String,
        global: Option<Vec<Node>>,
    },
    /// A host reference in C, compiled with clang: `void FUNCTION(const ndtune_args *args)`
    /// gets every buffer argument (in `[[args]]` order, with the contents the device starts
    /// from), every scalar argument's value in its type and the constants, and fills the
    /// outputs (docs/spec.md, "Host functions").
    Host(HostFunction),
}

/// A function of a C file, run on the host (`{ host = "file.c", function = "f" }`).
#[derive(Debug, Clone, PartialEq)]
pub struct HostFunction {
    /// The C file, resolved relative to the spec file.
    pub source: PathBuf,
    pub function: String,
}

/// `[verify]`: the outputs compared with a reference, decided by a host check, or both.
#[derive(Debug, Clone)]
pub struct Verify {
    pub outputs: Vec<String>,
    pub reference: Option<Reference>,
    /// `int FUNCTION(const ndtune_args *args, char *message, size_t size)`: gets the inputs,
    /// the outputs, the scalars, the constants and the configuration's parameter values, and
    /// returns 0 where the outputs are right, else fills `message` with why.
    pub check: Option<HostFunction>,
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

/// `[measure]`: Erdem's protocol by default, the mean of the best 5 of 10 runs after 1 warm-up
/// (where a verification run comes first, it is that warm-up). `flops` and `bytes` are
/// metrics ([`FLOPS_METRIC`], [`BYTES_METRIC`]), not part of the measurement.
/// `race`: how configurations that cannot be the best stop early (`None`: every configuration
/// gets every run).
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    pub warmup: u32,
    pub runs: u32,
    pub best_of: u32,
    /// Where the energy is measured: the least duration, in ms, of the window of runs it is
    /// measured over (the timed runs, followed by more runs while the window is shorter).
    pub energy_ms: f64,
    pub race: Option<Race>,
}

/// The metric `[measure] flops = "EXPR"` defines: `(EXPR) / time / 1e6`, in GFLOP/s.
pub const FLOPS_METRIC: &str = "gflops";
/// The metric `[measure] bytes = "EXPR"` defines: `(EXPR) / time / 1e6`, in GB/s.
pub const BYTES_METRIC: &str = "gbytes_per_s";

impl Default for Measure {
    fn default() -> Self {
        Measure {
            warmup: 1,
            runs: 10,
            best_of: 5,
            energy_ms: 200.0,
            race: Some(Race::default()),
        }
    }
}

/// Racing (`[measure] race`, `race_margin`, `race_confidence`): a configuration's timing stops
/// once its fastest run so far is above the best score of the campaign times `1 + margin` times
/// the campaign's measurement noise at `confidence` (`ndtune_bench::race`). A configuration that
/// could be the best always gets the protocol's runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Race {
    /// How much slower than the best, beyond the noise, a configuration must be to stop.
    pub margin: f64,
    /// How sure the noise allowance is: at 0.99 the allowance is what as many consecutive runs
    /// were slowed down by at most, in all but 1% of the campaign's measurements.
    pub confidence: f64,
}

impl Default for Race {
    /// Safe on a shared 2-core CPU (docs/tuning.md, "Racing"): stop only configurations more
    /// than 1.5 times the best beyond what 99% of the campaign's run windows were slowed down.
    fn default() -> Self {
        Race {
            margin: 0.5,
            confidence: 0.99,
        }
    }
}

impl Race {
    /// Checks a margin and a confidence; the reason where they are out of range.
    pub fn new(margin: f64, confidence: f64) -> Result<Race, String> {
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(format!("race_margin must be a number >= 0, not {margin}"));
        }
        if !(confidence > 0.0 && confidence < 1.0) {
            return Err(format!(
                "race_confidence must be between 0 and 1 (exclusive), not {confidence}"
            ));
        }
        Ok(Race { margin, confidence })
    }
}

/// `[split]`: how the buffers follow a split of the NDRange along one dimension, for
/// co-execution. Index `i` of dimension `dim` of the NDRange reads elements
/// `[i * stride - before, (i + 1) * stride + after)` of the buffer and writes
/// `[i * stride, (i + 1) * stride)`; buffers not named here are copied whole to every device.
#[derive(Debug, Clone)]
pub struct Split {
    /// The dimension split by default (0-based, as `get_global_id`).
    pub dim: usize,
    pub buffers: Vec<SplitBuffer>,
}

/// One buffer of `[split.buffers]`.
#[derive(Debug, Clone)]
pub struct SplitBuffer {
    /// Index of the buffer in `[[args]]`.
    pub arg: usize,
    /// The NDRange dimension the buffer follows.
    pub dim: usize,
    /// Elements per index of that dimension.
    pub stride: Node,
    /// Extra elements read before a part's first element (halo).
    pub before: Node,
    /// Extra elements read after a part's last element (halo).
    pub after: Node,
}

impl Split {
    /// The declaration of buffer argument `arg` along dimension `dim`, if any.
    pub fn buffer(&self, arg: usize, dim: usize) -> Option<&SplitBuffer> {
        self.buffers.iter().find(|b| b.arg == arg && b.dim == dim)
    }
}

struct Ctx<'a> {
    text: &'a str,
    path: &'a Path,
    spans: HashMap<SpanKey, Range<usize>>,
}

impl Ctx<'_> {
    fn err(&self, span: &Range<usize>, message: impl Into<String>) -> SpecError {
        let (line, column) = line_col(self.text, span.start);
        SpecError {
            path: self.path.display().to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    fn record(&mut self, key: Location, span: Range<usize>) {
        self.spans.insert(SpanKey::Location(key), span);
    }
}

pub(crate) fn spec(
    raw: RawSpec,
    text: &str,
    path: &Path,
    overrides: &BTreeMap<String, Value>,
) -> Result<Spec, SpecError> {
    let mut cx = Ctx {
        text,
        path,
        spans: HashMap::new(),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let sources = sources(&mut cx, &raw, dir)?;
    let kernel = Kernel {
        name: raw.kernel.name.get_ref().clone(),
        language: language(&cx, &raw, &sources)?,
        sources,
        include_dirs: include_dirs(&cx, &raw, dir)?,
        build_options: Vec::new(),
    };
    if kernel.name.trim().is_empty() {
        return Err(cx.err(&raw.kernel.name.span(), "[kernel] name is empty"));
    }

    let mut problem = Problem {
        constants: constants(&cx, &raw, overrides)?,
        ..Problem::default()
    };
    for (name, value) in &raw.params {
        cx.record(Location::Param(name.clone()), value.span());
        let domain = domain(&cx, name, value)?;
        problem.params.push(ParamDecl {
            name: name.clone(),
            domain,
        });
    }
    if problem.params.is_empty() {
        return Err(cx.err(&(0..0), "[params] declares no parameter"));
    }
    if let Some(space) = &raw.space {
        for (i, c) in space.constraints.iter().enumerate() {
            cx.record(Location::Constraint(i), c.span());
            problem.constraints.push(c.get_ref().clone());
        }
        for (i, c) in space.restrictions.iter().enumerate() {
            cx.record(Location::Restriction(i), c.span());
            problem.restrictions.push(c.get_ref().clone());
        }
        if let Some(p) = &space.platform {
            problem.platform = Model::parse(p.get_ref()).ok_or_else(|| {
                cx.err(
                    &p.span(),
                    format!(
                        "[space] platform is \"erdem\" (eq. 1-3, the default) or \"legal\" (only what the device enforces), not `{}`",
                        p.get_ref()
                    ),
                )
            })?;
        }
    }
    if let Some(launch) = &raw.launch {
        cx.record(Location::Launch, launch.span());
        let l = launch.get_ref();
        let mut decl = LaunchDecl::default();
        for (d, g) in l.global.iter().enumerate() {
            cx.record(Location::Global(d), g.span());
            decl.global.push(g.get_ref().source());
        }
        for (d, g) in l.local.iter().enumerate() {
            cx.record(Location::Local(d), g.span());
            decl.local.push(g.get_ref().source());
        }
        if let Some(m) = &l.local_mem {
            cx.record(Location::LocalMem, m.span());
            decl.local_mem = Some(m.get_ref().source());
        }
        problem.launch = Some(decl);
    }
    let mut spec = Spec {
        path: path.to_path_buf(),
        kernel,
        codec: Codec::default(),
        problem,
        args: vec![],
        verify: None,
        measure: Measure::default(),
        metrics: Metrics::time(),
        split: None,
        text: text.to_string(),
        spans: std::mem::take(&mut cx.spans),
    };
    spec.problem.check().map_err(|e| spec.locate(&e))?;
    let params = spec.problem.resolve_params().map_err(|e| spec.locate(&e))?;
    spec.codec = Codec::new(
        params.iter().map(|p| p.name.clone()).collect(),
        params.iter().map(|p| p.coding.clone()).collect(),
    );
    spec.kernel.build_options = raw
        .kernel
        .build_options
        .iter()
        .map(|o| build_option(&cx, &spec.problem, o))
        .collect::<Result<_, _>>()?;
    spec.args = raw
        .args
        .iter()
        .map(|a| arg(&cx, &spec.problem, a, dir))
        .collect::<Result<_, _>>()?;
    check_copies(&cx, &raw, &spec.args)?;
    constants_are_cuda(&cx, &raw, &spec)?;
    if let Some(v) = &raw.verify {
        spec.spans.insert(SpanKey::Section("verify"), v.span());
        spec.verify = Some(verify(&cx, &spec, v, dir)?);
    }
    if let Some(m) = &raw.measure {
        spec.measure = measure(&cx, &spec.problem, m)?;
    }
    spec.metrics = metrics(&cx, &raw, &spec.problem)?;
    if let Some(sp) = &raw.split {
        spec.spans.insert(SpanKey::Section("split"), sp.span());
        spec.split = Some(split(&cx, &spec, sp)?);
    }
    Ok(spec)
}

/// `[kernel] source`: a file name or a list of them, relative to the spec file.
fn sources(cx: &mut Ctx, raw: &RawSpec, dir: &Path) -> Result<Vec<PathBuf>, SpecError> {
    let Some(source) = &raw.kernel.source else {
        return Ok(Vec::new());
    };
    let span = source.span();
    let wrong = || {
        cx.err(
            &span,
            "[kernel] source is a file name or a list of file names (concatenated in order)",
        )
    };
    let names: Vec<&str> = match source.get_ref() {
        toml::Value::String(s) => vec![s],
        toml::Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|v| v.as_str().ok_or_else(wrong))
            .collect::<Result<_, _>>()?,
        _ => return Err(wrong()),
    };
    // Errors reading a file point at the list, the only span toml keeps for its items.
    for i in 0..names.len() {
        cx.spans.insert(SpanKey::Source(i), span.clone());
    }
    Ok(names.iter().map(|n| dir.join(n)).collect())
}

/// `[kernel] language` (`opencl` or `cuda`, in any case), else by the first source's extension.
fn language(cx: &Ctx, raw: &RawSpec, sources: &[PathBuf]) -> Result<Api, SpecError> {
    match &raw.kernel.language {
        Some(l) => match l.get_ref().to_ascii_lowercase().as_str() {
            "opencl" => Ok(Api::OpenCl),
            "cuda" => Ok(Api::Cuda),
            other => Err(cx.err(
                &l.span(),
                format!("[kernel] language `{other}` is not one ndtune builds (opencl, cuda)"),
            )),
        },
        None => Ok(
            match sources
                .first()
                .and_then(|s| s.extension())
                .and_then(|e| e.to_str())
            {
                Some("cu" | "cuh") => Api::Cuda,
                _ => Api::OpenCl,
            },
        ),
    }
}

/// `[kernel] include_dirs`: directories relative to the spec file, which must exist.
fn include_dirs(cx: &Ctx, raw: &RawSpec, dir: &Path) -> Result<Vec<PathBuf>, SpecError> {
    raw.kernel
        .include_dirs
        .iter()
        .map(|d| {
            let path = dir.join(d.get_ref());
            if path.is_dir() {
                Ok(path)
            } else {
                Err(cx.err(
                    &d.span(),
                    format!(
                        "[kernel] include_dirs: `{}` is not a directory ({})",
                        d.get_ref(),
                        path.display()
                    ),
                ))
            }
        })
        .collect()
}

/// One entry of `[kernel] build_options`: `"-opt"`, `"-DX={NAME}"` or
/// `{ option = "...", when = "EXPR" }`.
fn build_option(
    cx: &Ctx,
    problem: &Problem,
    o: &Spanned<toml::Value>,
) -> Result<BuildOption, SpecError> {
    const FORMS: &str = r#"an entry is "-option" or { option = "-option", when = "EXPR" }"#;
    let at = |m: String| cx.err(&o.span(), format!("[kernel] build_options: {m}"));
    let (text, when) = match o.get_ref() {
        toml::Value::String(s) => (s.as_str(), None),
        toml::Value::Table(t) => {
            if let Some(bad) = t.keys().find(|k| !["option", "when"].contains(&k.as_str())) {
                return Err(at(format!("unknown key `{bad}`; {FORMS}")));
            }
            let Some(text) = t.get("option").and_then(toml::Value::as_str) else {
                return Err(at("a table entry needs `option = \"-option\"`".into()));
            };
            let when = match t.get("when") {
                None => None,
                Some(toml::Value::String(w)) => Some(
                    problem
                        .typed_expr(w, ndtune_space::resolve::Type::Bool)
                        .map_err(|e| at(format!("when = \"{w}\": {e}")))?,
                ),
                Some(other) => {
                    return Err(at(format!(
                        "`when` is a condition in quotes, such as \"MAD == 1\", not {other}"
                    )))
                }
            };
            (text, when)
        }
        other => return Err(at(format!("{FORMS}, not {other}"))),
    };
    let known = |name: &str| {
        problem.constants.contains_key(name) || problem.params.iter().any(|p| p.name == name)
    };
    BuildOption::parse(text, when, known).map_err(|m| at(format!("`{text}`: {m}")))
}

fn constants(
    cx: &Ctx,
    raw: &RawSpec,
    overrides: &BTreeMap<String, Value>,
) -> Result<Constants, SpecError> {
    if let Some(unknown) = overrides.keys().find(|k| !raw.constants.contains_key(*k)) {
        let known: Vec<&str> = raw.constants.keys().map(String::as_str).collect();
        return Err(cx.err(
            &(0..0),
            format!(
                "cannot set `{unknown}`: the spec's constants are {}",
                known.join(", ")
            ),
        ));
    }
    let mut out = Constants::new();
    for (name, value) in &raw.constants {
        if let Some(v) = overrides.get(name) {
            out.insert(name.clone(), v.clone());
            continue;
        }
        let scope = ndtune_space::resolve::Scope {
            constants: out.clone(),
            ..Default::default()
        };
        let src = value.get_ref().source();
        let at = |e: ndtune_space::expr::ExprError| {
            cx.err(&value.span(), format!("[constants] {name}: {e}"))
        };
        let e = Expr::parse(&src).map_err(at)?;
        out.insert(
            name.clone(),
            resolve_constant(&e, &src, &scope).map_err(at)?,
        );
    }
    Ok(out)
}

/// A bound of a range or pow2 domain: an integer, or an expression string over constants.
fn bound(cx: &Ctx, span: &Range<usize>, what: &str, v: &toml::Value) -> Result<String, SpecError> {
    match v {
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::String(e) => Ok(e.clone()),
        other => Err(cx.err(
            span,
            format!(
                "{what}: a bound is an integer or an expression over the constants, not {other}"
            ),
        )),
    }
}

fn bound_pair(
    cx: &Ctx,
    span: &Range<usize>,
    what: &str,
    v: &toml::Value,
) -> Result<(String, String), SpecError> {
    match v.as_array().map(Vec::as_slice) {
        Some([a, b]) => Ok((bound(cx, span, what, a)?, bound(cx, span, what, b)?)),
        _ => Err(cx.err(span, format!("{what} takes two bounds [first, last]"))),
    }
}

fn domain(cx: &Ctx, name: &str, value: &Spanned<toml::Value>) -> Result<Domain, SpecError> {
    let span = value.span();
    let at = |m: String| cx.err(&span, format!("[params] {name}: {m}"));
    match value.get_ref() {
        toml::Value::Array(items) => items
            .iter()
            .map(|v| {
                list_value(v).ok_or_else(|| {
                    at(format!(
                        "values are integers, real numbers or identifiers (strings), not `{v}`{}",
                        if v.is_bool() { " (write 0 and 1)" } else { "" }
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Domain::List),
        toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::String(_) => Ok(
            Domain::List(vec![list_value(value.get_ref())
                .ok_or_else(|| at("a single value must be finite".into()))?]),
        ),
        toml::Value::Table(t) => {
            let keys: Vec<&str> = t.keys().map(String::as_str).collect();
            let kinds: Vec<&str> = keys
                .iter()
                .copied()
                .filter(|k| ["range", "pow2", "divisors"].contains(k))
                .collect();
            if let Some(bad) = keys
                .iter()
                .find(|k| !["range", "step", "pow2", "divisors"].contains(k))
            {
                return Err(at(format!("unknown key `{bad}`; a domain is a list, {{ range = [a, b], step = s }}, {{ pow2 = [a, b] }} or {{ divisors = \"EXPR\" }}")));
            }
            if kinds.len() != 1 || (t.contains_key("step") && kinds[0] != "range") {
                return Err(at(
                    "give exactly one of `range` (with an optional `step`), `pow2` or `divisors`"
                        .into(),
                ));
            }
            match kinds[0] {
                "range" => {
                    let what = format!("[params] {name}: range");
                    let (start, end) = bound_pair(cx, &span, &what, &t["range"])?;
                    let step = match t.get("step") {
                        None => "1".to_string(),
                        Some(s) => bound(cx, &span, &format!("[params] {name}: step"), s)?,
                    };
                    Ok(Domain::Range { start, end, step })
                }
                "pow2" => {
                    let what = format!("[params] {name}: pow2");
                    let (start, end) = bound_pair(cx, &span, &what, &t["pow2"])?;
                    Ok(Domain::Pow2 { start, end })
                }
                _ => match &t["divisors"] {
                    toml::Value::String(s) => Ok(Domain::Divisors(s.clone())),
                    toml::Value::Integer(v) => Ok(Domain::Divisors(v.to_string())),
                    _ => Err(at("divisors takes an expression string, e.g. \"N\"".into())),
                },
            }
        }
        other => Err(at(format!(
            "a domain is a list or a table, not {}",
            other.type_str()
        ))),
    }
}

/// A value of a listed domain: an integer, a finite real or an identifier.
fn list_value(v: &toml::Value) -> Option<Value> {
    match v {
        toml::Value::Integer(i) => Some(Value::Int(*i)),
        toml::Value::Float(f) if f.is_finite() => Some(Value::Real(*f)),
        toml::Value::String(s) => Some(Value::Text(s.clone())),
        _ => None,
    }
}

fn expr(
    cx: &Ctx,
    problem: &Problem,
    what: &str,
    v: &Spanned<NumOrExpr>,
) -> Result<Node, SpecError> {
    problem
        .int_expr(&v.get_ref().source())
        .map_err(|e| cx.err(&v.span(), format!("{what}: {e}")))
}

fn elem_type(
    cx: &Ctx,
    span: &Range<usize>,
    what: &str,
    ty: Option<&str>,
) -> Result<ElemType, SpecError> {
    let ty = ty.ok_or_else(|| cx.err(span, format!("{what}: needs a `type`")))?;
    ElemType::ALL
        .iter()
        .find(|(n, _)| *n == ty)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = ElemType::ALL.iter().map(|(n, _)| *n).collect();
            cx.err(
                span,
                format!("{what}: unknown type `{ty}`; one of {}", names.join(", ")),
            )
        })
}

/// `init` as written: a name, a number, or a table with one key (`npy`, `copy`, `uniform`,
/// `normal`).
fn init(
    cx: &Ctx,
    span: &Range<usize>,
    what: &str,
    v: Option<&toml::Value>,
    dir: &Path,
) -> Result<Init, SpecError> {
    const FORMS: &str = "random, bits, zeros, ones, iota, a number, { npy = \"file.npy\" }, { copy = \"ARG\" }, { uniform = [low, high] } or { normal = [mean, std_dev] }";
    let err = |m: String| cx.err(span, format!("{what}: {m}"));
    let pair = |key: &str, v: &toml::Value| -> Result<(f64, f64), SpecError> {
        let numbers: Option<Vec<f64>> = v.as_array().map(|items| {
            items
                .iter()
                .filter_map(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64)))
                .collect()
        });
        match numbers.as_deref() {
            Some(&[a, b]) if v.as_array().is_some_and(|i| i.len() == 2) => Ok((a, b)),
            _ => Err(err(format!("init.{key} takes two numbers, not {v}"))),
        }
    };
    Ok(match v {
        None => Init::Zeros,
        Some(toml::Value::String(s)) => match s.as_str() {
            "random" => Init::Random,
            "zeros" => Init::Zeros,
            "ones" => Init::Ones,
            "iota" => Init::Iota,
            "bits" => Init::Bits,
            _ => return Err(err(format!("init is {FORMS}, not `{s}`"))),
        },
        Some(toml::Value::Integer(v)) => Init::Value(*v as f64),
        Some(toml::Value::Float(v)) => Init::Value(*v),
        Some(toml::Value::Table(t)) if t.len() == 1 => {
            let (key, value) = t.iter().next().expect("one entry");
            match (key.as_str(), value) {
                ("npy", toml::Value::String(file)) => Init::Npy(dir.join(file)),
                ("copy", toml::Value::String(arg)) => Init::Copy(arg.clone()),
                ("uniform", v) => {
                    let (low, high) = pair(key, v)?;
                    if !(low.is_finite() && high.is_finite() && low <= high) {
                        return Err(err(format!(
                            "init.uniform needs finite bounds with low <= high, not [{low}, {high}]"
                        )));
                    }
                    Init::Uniform { low, high }
                }
                ("normal", v) => {
                    let (mean, std_dev) = pair(key, v)?;
                    if !(mean.is_finite() && std_dev.is_finite() && std_dev >= 0.0) {
                        return Err(err(format!(
                            "init.normal needs a finite mean and standard deviation >= 0, not [{mean}, {std_dev}]"
                        )));
                    }
                    Init::Normal { mean, std_dev }
                }
                ("npy" | "copy", other) => {
                    return Err(err(format!("init.{key} takes a name, not {other}")))
                }
                _ => return Err(err(format!("init is {FORMS}, not a table with `{key}`"))),
            }
        }
        Some(v) => return Err(err(format!("init is {FORMS}, not {v}"))),
    })
}

/// Checks every `init = { copy = "ARG" }`: the source is another buffer of the same type, and
/// copies do not go round in a circle.
fn check_copies(cx: &Ctx, raw: &RawSpec, args: &[Arg]) -> Result<(), SpecError> {
    let copy_of = |i: usize| match &args[i].kind {
        ArgKind::Buffer {
            init: Init::Copy(from),
            ..
        } => Some(from.as_str()),
        _ => None,
    };
    for (i, a) in args.iter().enumerate() {
        let Some(from) = copy_of(i) else { continue };
        let span = raw.args[i].span();
        let what = format!("[[args]] {}", a.name);
        let ArgKind::Buffer { ty, .. } = a.kind else {
            unreachable!("only buffers have an init")
        };
        let Some(j) = args.iter().position(|b| b.name == from) else {
            return Err(cx.err(&span, format!("{what}: init.copy: no argument `{from}`")));
        };
        match args[j].kind {
            ArgKind::Buffer { ty: source, .. } if source == ty => {}
            ArgKind::Buffer { ty: source, .. } => {
                return Err(cx.err(
                    &span,
                    format!(
                        "{what}: init.copy: `{from}` holds {}, not {}: a copy keeps the type",
                        source.name(),
                        ty.name()
                    ),
                ))
            }
            _ => {
                return Err(cx.err(
                    &span,
                    format!("{what}: init.copy: `{from}` is not a buffer"),
                ))
            }
        }
    }
    // Every source exists now: a chain of copies longer than the arguments goes round.
    let source = |i: usize| copy_of(i).and_then(|from| args.iter().position(|b| b.name == from));
    for (i, a) in args.iter().enumerate() {
        let mut at = Some(i);
        for _ in 0..=args.len() {
            at = at.and_then(source);
        }
        if at.is_some() {
            return Err(cx.err(
                &raw.args[i].span(),
                format!("[[args]] {}: init.copy goes round in a circle", a.name),
            ));
        }
    }
    Ok(())
}

/// Constant memory arguments are CUDA's: OpenCL passes a `__constant` pointer as a buffer.
fn constants_are_cuda(cx: &Ctx, raw: &RawSpec, spec: &Spec) -> Result<(), SpecError> {
    if spec.kernel.language == Api::Cuda {
        return Ok(());
    }
    match spec.args.iter().position(|a| {
        matches!(
            a.kind,
            ArgKind::Buffer {
                access: Access::Constant,
                ..
            }
        )
    }) {
        Some(i) => Err(cx.err(
            &raw.args[i].span(),
            format!(
                "[[args]] {}: a constant argument is CUDA's `__constant__` memory; an OpenCL kernel takes a `__constant` pointer: make it a buffer with access = \"read\"",
                spec.args[i].name
            ),
        )),
        None => Ok(()),
    }
}

fn arg(cx: &Ctx, problem: &Problem, a: &Spanned<RawArg>, dir: &Path) -> Result<Arg, SpecError> {
    let span = a.span();
    let r = a.get_ref();
    let what = format!("[[args]] {}", r.name);
    fn need<'a>(
        cx: &Ctx,
        span: &Range<usize>,
        what: &str,
        kind: &str,
        field: &'a Option<Spanned<NumOrExpr>>,
        key: &str,
    ) -> Result<&'a Spanned<NumOrExpr>, SpecError> {
        field
            .as_ref()
            .ok_or_else(|| cx.err(span, format!("{what}: a {kind} argument needs `{key}`")))
    }
    let kind = match r.kind.as_str() {
        "buffer" | "constant" => {
            let init = init(cx, &span, &what, r.init.as_ref(), dir)?;
            let access = match (r.kind.as_str(), r.access.as_deref()) {
                // A buffer the kernel reads from a `__constant__` array of its name (CUDA).
                ("constant", None) => Access::Constant,
                ("constant", Some(_)) => {
                    return Err(cx.err(
                        &span,
                        format!("{what}: a constant argument is read only: leave `access` out"),
                    ))
                }
                (_, None | Some("read_write")) => Access::ReadWrite,
                (_, Some("read")) => Access::Read,
                (_, Some("write")) => Access::Write,
                (_, Some(o)) => {
                    return Err(cx.err(
                        &span,
                        format!("{what}: access is read, write or read_write, not `{o}`"),
                    ))
                }
            };
            ArgKind::Buffer {
                ty: elem_type(cx, &span, &what, r.ty.as_deref())?,
                len: expr(
                    cx,
                    problem,
                    &format!("{what} len"),
                    need(cx, &span, &what, &r.kind, &r.len, "len")?,
                )?,
                init,
                access,
            }
        }
        "scalar" => {
            let ty = elem_type(cx, &span, &what, r.ty.as_deref())?;
            let value = need(cx, &span, &what, &r.kind, &r.value, "value")?;
            ArgKind::Scalar {
                ty,
                value: match wide_ulong(ty, &value.get_ref().source()) {
                    Some(v) => ScalarValue::Unsigned(v),
                    None => ScalarValue::Expr(scalar_value(cx, problem, &what, ty, value)?),
                },
            }
        }
        "local" => ArgKind::Local {
            bytes: expr(
                cx,
                problem,
                &format!("{what} bytes"),
                need(cx, &span, &what, &r.kind, &r.bytes, "bytes")?,
            )?,
        },
        other => {
            return Err(cx.err(
                &span,
                format!("{what}: kind is buffer, scalar, local or constant, not `{other}`"),
            ))
        }
    };
    Ok(Arg {
        name: r.name.clone(),
        kind,
    })
}

/// A scalar argument's value: an expression of constants and parameters, or a `ulong` literal
/// beyond what expressions compute in (2^63 and up, which 64-bit signed arithmetic cannot hold).
#[derive(Debug, Clone)]
pub enum ScalarValue {
    Expr(Node),
    Unsigned(u64),
}

impl ScalarValue {
    /// The bytes the kernel gets for configuration `point` (values in parameter declaration
    /// order): `None` where the expression divides by zero or overflows; `Err` where the value
    /// does not fit `ty`.
    pub fn bytes(&self, ty: ElemType, point: &[i64]) -> Option<Result<Vec<u8>, String>> {
        match self {
            ScalarValue::Expr(node) => node.value(point).map(|v| ty.scalar_bytes(&v)),
            ScalarValue::Unsigned(v) => Some(Ok(v.to_ne_bytes().to_vec())),
        }
    }
}

/// A `ulong` value written as a literal of 2^63 or more (`"18446744073709551615"`, or in
/// hexadecimal `"0xffffffffffffffff"`), which no expression computes.
fn wide_ulong(ty: ElemType, src: &str) -> Option<u64> {
    if ty != ElemType::ULong {
        return None;
    }
    let src = src.trim();
    let v = match src.strip_prefix("0x").or_else(|| src.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => src.parse::<u64>().ok()?,
    };
    (v > i64::MAX as u64).then_some(v)
}

/// A scalar argument's value, resolved in its type's arithmetic; an integer division of
/// constants that is not exact is an error, and so is a constant value that does not fit the
/// type (one that depends on parameters is checked for each configuration).
fn scalar_value(
    cx: &Ctx,
    problem: &Problem,
    what: &str,
    ty: ElemType,
    v: &Spanned<NumOrExpr>,
) -> Result<Node, SpecError> {
    let src = v.get_ref().source();
    let at = |m: String| cx.err(&v.span(), format!("{what} value: {m}"));
    let scope = problem.scope(None).map_err(|e| at(e.to_string()))?;
    let e = Expr::parse(&src).map_err(|e| at(e.to_string()))?;
    let want = if ty.is_real() { Type::Real } else { Type::Int };
    let node = resolve(&e, &src, &scope, want).map_err(|e| at(e.to_string()))?;
    if !ty.is_real() {
        check_exact_divisions(&e, &src, &scope).map_err(|e| at(e.to_string()))?;
    }
    let mut vars = Vec::new();
    node.vars(&mut vars);
    if vars.is_empty() {
        let value = node
            .value(&[])
            .ok_or_else(|| at("divides by zero or overflows".into()))?;
        ty.scalar_bytes(&value).map_err(at)?;
    }
    Ok(node)
}

fn verify(
    cx: &Ctx,
    spec: &Spec,
    v: &Spanned<crate::raw::RawVerify>,
    dir: &Path,
) -> Result<Verify, SpecError> {
    let span = v.span();
    let r = v.get_ref();
    for o in &r.outputs {
        match spec.args.iter().find(|a| &a.name == o) {
            Some(Arg {
                kind: ArgKind::Buffer { access, .. },
                ..
            }) if access.writes() => {}
            Some(_) => {
                return Err(cx.err(
                    &span,
                    format!("[verify] output `{o}` must be a buffer the kernel writes"),
                ))
            }
            None => {
                return Err(cx.err(
                    &span,
                    format!("[verify] output `{o}` is not one of the [[args]]"),
                ))
            }
        }
    }
    let reference = r
        .reference
        .as_ref()
        .map(|value| reference(cx, spec, &span, value, dir))
        .transpose()?;
    let check = match &r.check {
        None => None,
        Some(toml::Value::Table(t)) if t.contains_key("host") => {
            Some(host_function(cx, &span, "check", t, dir)?)
        }
        Some(_) => {
            return Err(cx.err(
                &span,
                "[verify] check is { host = \"file.c\", function = \"...\" }",
            ))
        }
    };
    if reference.is_none() && check.is_none() {
        return Err(cx.err(&span, "[verify] needs a reference, a check, or both"));
    }
    let rtol = r.tolerance.unwrap_or(1e-4);
    let atol = r.atol.unwrap_or(1e-6);
    if !(rtol >= 0.0 && atol >= 0.0) {
        return Err(cx.err(&span, "[verify] tolerances must be non-negative numbers"));
    }
    Ok(Verify {
        outputs: r.outputs.clone(),
        reference,
        check,
        rtol,
        atol,
    })
}

/// `[verify] reference` as written.
fn reference(
    cx: &Ctx,
    spec: &Spec,
    span: &Range<usize>,
    value: &toml::Value,
    dir: &Path,
) -> Result<Reference, SpecError> {
    Ok(match value {
        toml::Value::String(s) => match s.strip_prefix("builtin:") {
            Some(name) => Reference::Builtin(name.to_string()),
            None => return Err(cx.err(span, format!("[verify] reference `{s}`: a string reference is `builtin:NAME`"))),
        },
        toml::Value::Table(t) if t.contains_key("config") => {
            let Some(cfg) = t["config"].as_table() else {
                return Err(cx.err(span, "[verify] reference.config is a table of parameter values"));
            };
            let mut values = BTreeMap::new();
            for (k, val) in cfg {
                if !spec.problem.params.iter().any(|p| &p.name == k) {
                    return Err(cx.err(span, format!("[verify] reference.config: `{k}` is not a parameter")));
                }
                let n = list_value(val).ok_or_else(|| cx.err(span, format!("[verify] reference.config.{k} must be one of the parameter's values")))?;
                let slot = spec.codec.names().iter().position(|p| p == k).unwrap_or(0);
                if spec.codec.codings()[slot].encode(&n).is_none() {
                    return Err(cx.err(span, format!("[verify] reference.config.{k} = {n} is {}, not a value `{k}` can take", n.kind_name())));
                }
                values.insert(k.clone(), n);
            }
            if let Some(missing) = spec.problem.params.iter().find(|p| !values.contains_key(&p.name)) {
                return Err(cx.err(span, format!("[verify] reference.config lacks parameter `{}`", missing.name)));
            }
            Reference::Config(values)
        }
        toml::Value::Table(t) if t.contains_key("kernel") => {
            let source = t["kernel"].as_str().ok_or_else(|| cx.err(span, "[verify] reference.kernel is a file name"))?;
            let name = t.get("name").and_then(|n| n.as_str()).unwrap_or(&spec.kernel.name);
            if let Some(bad) = t.keys().find(|k| !["kernel", "name", "global"].contains(&k.as_str())) {
                return Err(cx.err(span, format!("[verify] reference: unknown key `{bad}` (kernel, name, global)")));
            }
            let global = match t.get("global") {
                None => None,
                Some(toml::Value::Array(items)) if (1..=3).contains(&items.len()) => Some(
                    items
                        .iter()
                        .map(|v| {
                            let src = match v {
                                toml::Value::Integer(i) => i.to_string(),
                                toml::Value::String(e) => e.clone(),
                                other => other.to_string(),
                            };
                            spec.problem
                                .int_expr(&src)
                                .map_err(|e| cx.err(span, format!("[verify] reference.global: {e}")))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                Some(_) => return Err(cx.err(span, "[verify] reference.global is a list of 1 to 3 sizes")),
            };
            Reference::Kernel {
                source: dir.join(source),
                name: name.to_string(),
                global,
            }
        }
        toml::Value::Table(t) if t.contains_key("host") => Reference::Host(host_function(cx, span, "reference", t, dir)?),
        _ => return Err(cx.err(span, "[verify] reference is { config = { ... } }, \"builtin:NAME\", { kernel = \"file.cl\", name = \"...\" } or { host = \"file.c\", function = \"...\" }")),
    })
}

/// `{ host = "file.c", function = "f" }` of `[verify] key`.
fn host_function(
    cx: &Ctx,
    span: &Range<usize>,
    key: &str,
    t: &toml::map::Map<String, toml::Value>,
    dir: &Path,
) -> Result<HostFunction, SpecError> {
    let source = t["host"]
        .as_str()
        .ok_or_else(|| cx.err(span, format!("[verify] {key}.host is a C file name")))?;
    if let Some(bad) = t
        .keys()
        .find(|k| !["host", "function"].contains(&k.as_str()))
    {
        return Err(cx.err(
            span,
            format!("[verify] {key}: unknown key `{bad}` (host, function)"),
        ));
    }
    let function = match t.get("function") {
        None => format!("ndtune_{key}"),
        Some(toml::Value::String(f)) if is_c_identifier(f) => f.clone(),
        Some(other) => {
            return Err(cx.err(
                span,
                format!("[verify] {key}.function must be a C function name, not {other}"),
            ))
        }
    };
    Ok(HostFunction {
        source: dir.join(source),
        function,
    })
}

/// `[metrics]` and `[objective]`, with the rates of `[measure]` (`flops`, `bytes`) as the first
/// metrics, checked against the problem's names; errors point at the definition.
fn metrics(cx: &Ctx, raw: &RawSpec, problem: &Problem) -> Result<Metrics, SpecError> {
    let mut defs = Definitions::default();
    let mut spans = Vec::new();
    if let Some(m) = &raw.measure {
        let m = m.get_ref();
        for (value, name, unit) in [
            (&m.flops, FLOPS_METRIC, "GFLOP/s"),
            (&m.bytes, BYTES_METRIC, "GB/s"),
        ] {
            if let Some(v) = value {
                defs.metrics.push(MetricDef::new(
                    name,
                    &format!("({}) / time / 1e6", v.get_ref().source()),
                    Some(unit),
                ));
                spans.push(v.span());
            }
        }
    }
    for (name, m) in &raw.metrics {
        let r = m.get_ref();
        defs.metrics.push(MetricDef {
            name: name.clone(),
            expr: r.expr.clone(),
            unit: r.unit.clone(),
        });
        spans.push(m.span());
    }
    let objective_span = raw.objective.as_ref().map_or(0..0, |o| o.span());
    if let Some(o) = &raw.objective {
        let objectives = o.get_ref().objectives().map_err(|e| cx.err(&o.span(), e))?;
        defs = defs.with(Vec::new(), objectives);
    }
    let scope = problem
        .scope(None)
        .map_err(|e| cx.err(&(0..0), e.to_string()))?;
    Metrics::check(defs, &scope, &[]).map_err(|e| {
        let span = match e.place {
            Place::Metric(i) => spans[i].clone(),
            Place::Objective => objective_span,
        };
        let section = match e.place {
            Place::Metric(i) if i < spans.len() - raw.metrics.len() => "[measure]",
            Place::Metric(_) => "[metrics]",
            Place::Objective => "[objective]",
        };
        cx.err(&span, format!("{section} {e}"))
    })
}

fn measure(
    cx: &Ctx,
    problem: &Problem,
    m: &Spanned<crate::raw::RawMeasure>,
) -> Result<Measure, SpecError> {
    let d = Measure::default();
    let r = m.get_ref();
    let out = Measure {
        warmup: r.warmup.unwrap_or(d.warmup),
        runs: r.runs.unwrap_or(d.runs),
        best_of: r
            .best_of
            .unwrap_or(r.runs.map_or(d.best_of, |runs| runs.min(d.best_of))),
        energy_ms: r.energy_ms.unwrap_or(d.energy_ms),
        race: race(cx, r)?,
    };
    if !(out.energy_ms.is_finite() && (0.0..=60_000.0).contains(&out.energy_ms)) {
        return Err(cx.err(
            &m.span(),
            format!(
                "[measure] energy_ms is a duration of 0 to 60000 ms, not {}",
                out.energy_ms
            ),
        ));
    }
    // Rates are metrics; their expressions are checked there, as integers as before.
    for (key, e) in [("flops", &r.flops), ("bytes", &r.bytes)] {
        if let Some(e) = e {
            expr(cx, problem, &format!("[measure] {key}"), e)?;
        }
    }
    if out.runs == 0 || out.best_of == 0 || out.best_of > out.runs {
        return Err(cx.err(
            &m.span(),
            format!(
                "[measure] needs 1 <= best_of <= runs (best_of = {}, runs = {})",
                out.best_of, out.runs
            ),
        ));
    }
    Ok(out)
}

/// `race`, `race_margin`, `race_confidence` of `[measure]`: racing is on unless `race = false`.
fn race(cx: &Ctx, r: &crate::raw::RawMeasure) -> Result<Option<Race>, SpecError> {
    let d = Race::default();
    let margin = r.race_margin.as_ref();
    let confidence = r.race_confidence.as_ref();
    if r.race == Some(false) {
        if let Some(key) = margin.or(confidence) {
            return Err(cx.err(
                &key.span(),
                "[measure] race = false: a race_margin or race_confidence has nothing to set",
            ));
        }
        return Ok(None);
    }
    let value = |v: Option<&Spanned<f64>>, default| v.map_or(default, |v| *v.get_ref());
    Race::new(value(margin, d.margin), value(confidence, d.confidence))
        .map(Some)
        .map_err(|why| {
            let span = if why.starts_with("race_margin") {
                margin
            } else {
                confidence
            };
            cx.err(
                &span.expect("a default is in range").span(),
                format!("[measure] {why}"),
            )
        })
}

fn split(cx: &Ctx, spec: &Spec, sp: &Spanned<crate::raw::RawSplit>) -> Result<Split, SpecError> {
    let r = sp.get_ref();
    let dims = spec.problem.launch.as_ref().map_or(0, |l| l.global.len());
    if dims == 0 {
        return Err(cx.err(
            &sp.span(),
            "[split] needs [launch]: it splits the launch's NDRange",
        ));
    }
    let dim_of = |d: Option<&Spanned<i64>>, default: usize, what: &str| match d {
        None => Ok(default),
        Some(d) => usize::try_from(*d.get_ref())
            .ok()
            .filter(|&v| v < dims)
            .ok_or_else(|| {
                cx.err(
                    &d.span(),
                    format!(
                        "{what}: the launch has dimensions 0 to {} (as get_global_id), not {}",
                        dims - 1,
                        d.get_ref()
                    ),
                )
            }),
    };
    let dim = dim_of(r.dim.as_ref(), 0, "[split] dim")?;
    let mut buffers = Vec::new();
    for (name, b) in &r.buffers {
        let what = format!("[split.buffers] {name}");
        let arg = spec
            .args
            .iter()
            .position(|a| &a.name == name && matches!(a.kind, ArgKind::Buffer { .. }))
            .ok_or_else(|| {
                let buffers: Vec<&str> = spec
                    .args
                    .iter()
                    .filter(|a| matches!(a.kind, ArgKind::Buffer { .. }))
                    .map(|a| a.name.as_str())
                    .collect();
                cx.err(
                    &b.span(),
                    format!(
                        "{what}: no buffer argument `{name}`; the buffers are: {}",
                        buffers.join(", ")
                    ),
                )
            })?;
        let b = b.get_ref();
        let halo = |e: &Option<Spanned<NumOrExpr>>, key: &str| match e {
            Some(e) => expr(cx, &spec.problem, &format!("{what} {key}"), e),
            None => spec
                .problem
                .int_expr("0")
                .map_err(|e| cx.err(&(0..0), e.to_string())),
        };
        buffers.push(SplitBuffer {
            arg,
            dim: dim_of(b.dim.as_ref(), dim, &format!("{what} dim"))?,
            stride: expr(cx, &spec.problem, &format!("{what} stride"), &b.stride)?,
            before: halo(&b.before, "before")?,
            after: halo(&b.after, "after")?,
        });
    }
    Ok(Split { dim, buffers })
}

fn is_c_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
