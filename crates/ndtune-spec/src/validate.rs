//! Stage two: the raw spec checked and turned into typed values.

use crate::raw::{IntOrExpr, RawArg, RawSpec};
use crate::{SpanKey, Spec, SpecError};
use ndtune_core::text::line_col;
use ndtune_space::domain::Domain;
use ndtune_space::problem::{LaunchDecl, Location, ParamDecl, Problem};
use ndtune_space::resolve::Node;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// `[kernel]`.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    /// The source file, resolved relative to the spec file.
    pub source: Option<PathBuf>,
    pub build_options: Vec<String>,
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
    Float,
    Double,
}

impl ElemType {
    pub const ALL: [(&'static str, ElemType); 10] = [
        ("char", ElemType::Char),
        ("uchar", ElemType::UChar),
        ("short", ElemType::Short),
        ("ushort", ElemType::UShort),
        ("int", ElemType::Int),
        ("uint", ElemType::UInt),
        ("long", ElemType::Long),
        ("ulong", ElemType::ULong),
        ("float", ElemType::Float),
        ("double", ElemType::Double),
    ];

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            ElemType::Char | ElemType::UChar => 1,
            ElemType::Short | ElemType::UShort => 2,
            ElemType::Int | ElemType::UInt | ElemType::Float => 4,
            ElemType::Long | ElemType::ULong | ElemType::Double => 8,
        }
    }
}

/// How a buffer is filled before a launch (deterministically, from a seed for `Random`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    Random,
    Zeros,
    Ones,
    Iota,
    /// Random 0s and 1s (cells of a cellular automaton, masks).
    Bits,
    Value(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
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
    Scalar {
        ty: ElemType,
        value: Node,
    },
    Local {
        bytes: Node,
    },
}

/// What a configuration's outputs are checked against.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// The outputs of this configuration (Cummins' gold standard), parameter values by name.
    Config(BTreeMap<String, i64>),
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
    /// A host reference in C, compiled with clang: `void FUNCTION(void **buffers, const long
    /// long *scalars)` gets every buffer argument (in `[[args]]` order, with the contents the
    /// device starts from) and every scalar argument's value, and fills the outputs.
    Host { source: PathBuf, function: String },
}

/// `[verify]`.
#[derive(Debug, Clone)]
pub struct Verify {
    pub outputs: Vec<String>,
    pub reference: Reference,
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

/// `[measure]`: Erdem's protocol by default, the mean of the best 5 of 10 runs after 1 warm-up
/// (where a verification run comes first, it is that warm-up).
/// `flops` and `bytes` (expressions over parameters and constants) give GFLOP/s and GB/s.
/// `race`: how configurations that cannot be the best stop early (`None`: every configuration
/// gets every run).
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    pub warmup: u32,
    pub runs: u32,
    pub best_of: u32,
    pub flops: Option<Node>,
    pub bytes: Option<Node>,
    pub race: Option<Race>,
}

impl Default for Measure {
    fn default() -> Self {
        Measure {
            warmup: 1,
            runs: 10,
            best_of: 5,
            flops: None,
            bytes: None,
            race: Some(Race::default()),
        }
    }
}

/// Racing (`[measure] race`, `race_margin`, `race_confidence`): a configuration's timing stops
/// once its fastest run so far is above the best score of the campaign times `1 + margin` times
/// the campaign's measurement noise at `confidence` (`ndtune_bench::race`). A configuration that
/// could be the best always gets the protocol's runs.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    overrides: &BTreeMap<String, i64>,
) -> Result<Spec, SpecError> {
    let mut cx = Ctx {
        text,
        path,
        spans: HashMap::new(),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    if let Some(src) = &raw.kernel.source {
        cx.spans
            .insert(SpanKey::Section("kernel.source"), src.span());
    }
    let kernel = Kernel {
        name: raw.kernel.name.get_ref().clone(),
        source: raw.kernel.source.as_ref().map(|s| dir.join(s.get_ref())),
        build_options: raw.kernel.build_options.clone(),
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
        problem,
        args: vec![],
        verify: None,
        measure: Measure::default(),
        split: None,
        text: text.to_string(),
        spans: std::mem::take(&mut cx.spans),
    };
    spec.problem.check().map_err(|e| spec.locate(&e))?;
    spec.args = raw
        .args
        .iter()
        .map(|a| arg(&cx, &spec.problem, a))
        .collect::<Result<_, _>>()?;
    if let Some(v) = &raw.verify {
        spec.verify = Some(verify(&cx, &spec, v, dir)?);
    }
    if let Some(m) = &raw.measure {
        spec.measure = measure(&cx, &spec.problem, m)?;
    }
    if let Some(sp) = &raw.split {
        spec.spans.insert(SpanKey::Section("split"), sp.span());
        spec.split = Some(split(&cx, &spec, sp)?);
    }
    Ok(spec)
}

fn constants(
    cx: &Ctx,
    raw: &RawSpec,
    overrides: &BTreeMap<String, i64>,
) -> Result<BTreeMap<String, i64>, SpecError> {
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
    let mut out = BTreeMap::new();
    for (name, value) in &raw.constants {
        if let Some(v) = overrides.get(name) {
            out.insert(name.clone(), *v);
            continue;
        }
        let probe = Problem {
            constants: out.clone(),
            ..Problem::default()
        };
        let src = value.get_ref().source();
        let v = probe
            .int_expr(&src)
            .map_err(|e| cx.err(&value.span(), format!("[constants] {name}: {e}")))?
            .eval(&[])
            .ok_or_else(|| {
                cx.err(
                    &value.span(),
                    format!("[constants] {name}: divides by zero or overflows"),
                )
            })?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

fn int_pair(
    cx: &Ctx,
    span: &Range<usize>,
    what: &str,
    v: &toml::Value,
) -> Result<(i64, i64), SpecError> {
    match v
        .as_array()
        .map(|a| a.iter().map(toml::Value::as_integer).collect::<Vec<_>>())
    {
        Some(items) if items.len() == 2 && items.iter().all(Option::is_some) => {
            Ok((items[0].unwrap_or_default(), items[1].unwrap_or_default()))
        }
        _ => Err(cx.err(span, format!("{what} takes two integers [first, last]"))),
    }
}

fn domain(cx: &Ctx, name: &str, value: &Spanned<toml::Value>) -> Result<Domain, SpecError> {
    let span = value.span();
    let at = |m: String| cx.err(&span, format!("[params] {name}: {m}"));
    match value.get_ref() {
        toml::Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_integer()
                    .ok_or_else(|| at(format!("values must be integers, found `{v}`")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Domain::List),
        toml::Value::Integer(v) => Ok(Domain::List(vec![*v])),
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
                    let (start, end) =
                        int_pair(cx, &span, &format!("[params] {name}: range"), &t["range"])?;
                    let step = match t.get("step") {
                        None => 1,
                        Some(s) => s
                            .as_integer()
                            .ok_or_else(|| at("step must be an integer".into()))?,
                    };
                    Ok(Domain::Range { start, end, step })
                }
                "pow2" => {
                    let (start, end) =
                        int_pair(cx, &span, &format!("[params] {name}: pow2"), &t["pow2"])?;
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

fn expr(
    cx: &Ctx,
    problem: &Problem,
    what: &str,
    v: &Spanned<IntOrExpr>,
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

fn arg(cx: &Ctx, problem: &Problem, a: &Spanned<RawArg>) -> Result<Arg, SpecError> {
    let span = a.span();
    let r = a.get_ref();
    let what = format!("[[args]] {}", r.name);
    fn need<'a>(
        cx: &Ctx,
        span: &Range<usize>,
        what: &str,
        kind: &str,
        field: &'a Option<Spanned<IntOrExpr>>,
        key: &str,
    ) -> Result<&'a Spanned<IntOrExpr>, SpecError> {
        field
            .as_ref()
            .ok_or_else(|| cx.err(span, format!("{what}: a {kind} argument needs `{key}`")))
    }
    let kind = match r.kind.as_str() {
        "buffer" => {
            let init = match &r.init {
                None => Init::Zeros,
                Some(toml::Value::String(s)) => match s.as_str() {
                    "random" => Init::Random,
                    "zeros" => Init::Zeros,
                    "ones" => Init::Ones,
                    "iota" => Init::Iota,
                    "bits" => Init::Bits,
                    _ => {
                        return Err(cx.err(
                            &span,
                            format!(
                                "{what}: init is random, bits, zeros, ones, iota or a number, not `{s}`"
                            ),
                        ))
                    }
                },
                Some(toml::Value::Integer(v)) => Init::Value(*v as f64),
                Some(toml::Value::Float(v)) => Init::Value(*v),
                Some(v) => {
                    return Err(cx.err(&span, format!("{what}: init cannot be {}", v.type_str())))
                }
            };
            let access = match r.access.as_deref() {
                None | Some("read_write") => Access::ReadWrite,
                Some("read") => Access::Read,
                Some("write") => Access::Write,
                Some(o) => {
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
        "scalar" => ArgKind::Scalar {
            ty: elem_type(cx, &span, &what, r.ty.as_deref())?,
            value: expr(
                cx,
                problem,
                &format!("{what} value"),
                need(cx, &span, &what, &r.kind, &r.value, "value")?,
            )?,
        },
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
                format!("{what}: kind is buffer, scalar or local, not `{other}`"),
            ))
        }
    };
    Ok(Arg {
        name: r.name.clone(),
        kind,
    })
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
            }) if *access != Access::Read => {}
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
    let reference = match &r.reference {
        toml::Value::String(s) => match s.strip_prefix("builtin:") {
            Some(name) => Reference::Builtin(name.to_string()),
            None => return Err(cx.err(&span, format!("[verify] reference `{s}`: a string reference is `builtin:NAME`"))),
        },
        toml::Value::Table(t) if t.contains_key("config") => {
            let Some(cfg) = t["config"].as_table() else {
                return Err(cx.err(&span, "[verify] reference.config is a table of parameter values"));
            };
            let mut values = BTreeMap::new();
            for (k, val) in cfg {
                if !spec.problem.params.iter().any(|p| &p.name == k) {
                    return Err(cx.err(&span, format!("[verify] reference.config: `{k}` is not a parameter")));
                }
                let n = val.as_integer().ok_or_else(|| cx.err(&span, format!("[verify] reference.config.{k} must be an integer")))?;
                values.insert(k.clone(), n);
            }
            if let Some(missing) = spec.problem.params.iter().find(|p| !values.contains_key(&p.name)) {
                return Err(cx.err(&span, format!("[verify] reference.config lacks parameter `{}`", missing.name)));
            }
            Reference::Config(values)
        }
        toml::Value::Table(t) if t.contains_key("kernel") => {
            let source = t["kernel"].as_str().ok_or_else(|| cx.err(&span, "[verify] reference.kernel is a file name"))?;
            let name = t.get("name").and_then(|n| n.as_str()).unwrap_or(&spec.kernel.name);
            if let Some(bad) = t.keys().find(|k| !["kernel", "name", "global"].contains(&k.as_str())) {
                return Err(cx.err(&span, format!("[verify] reference: unknown key `{bad}` (kernel, name, global)")));
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
                                .map_err(|e| cx.err(&span, format!("[verify] reference.global: {e}")))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                Some(_) => return Err(cx.err(&span, "[verify] reference.global is a list of 1 to 3 sizes")),
            };
            Reference::Kernel {
                source: dir.join(source),
                name: name.to_string(),
                global,
            }
        }
        toml::Value::Table(t) if t.contains_key("host") => {
            let source = t["host"].as_str().ok_or_else(|| cx.err(&span, "[verify] reference.host is a C file name"))?;
            if let Some(bad) = t.keys().find(|k| !["host", "function"].contains(&k.as_str())) {
                return Err(cx.err(&span, format!("[verify] reference: unknown key `{bad}` (host, function)")));
            }
            let function = match t.get("function") {
                None => "ndtune_reference".to_string(),
                Some(toml::Value::String(f)) if is_c_identifier(f) => f.clone(),
                Some(other) => return Err(cx.err(&span, format!("[verify] reference.function must be a C function name, not {other}"))),
            };
            Reference::Host {
                source: dir.join(source),
                function,
            }
        }
        _ => return Err(cx.err(&span, "[verify] reference is { config = { ... } }, \"builtin:NAME\", { kernel = \"file.cl\", name = \"...\" } or { host = \"file.c\", function = \"...\" }")),
    };
    let rtol = r.tolerance.unwrap_or(1e-4);
    let atol = r.atol.unwrap_or(1e-6);
    if !(rtol >= 0.0 && atol >= 0.0) {
        return Err(cx.err(&span, "[verify] tolerances must be non-negative numbers"));
    }
    Ok(Verify {
        outputs: r.outputs.clone(),
        reference,
        rtol,
        atol,
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
        flops: r
            .flops
            .as_ref()
            .map(|e| expr(cx, problem, "[measure] flops", e))
            .transpose()?,
        bytes: r
            .bytes
            .as_ref()
            .map(|e| expr(cx, problem, "[measure] bytes", e))
            .transpose()?,
        best_of: r
            .best_of
            .unwrap_or(r.runs.map_or(d.best_of, |runs| runs.min(d.best_of))),
        race: race(cx, r)?,
    };
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
        let halo = |e: &Option<Spanned<IntOrExpr>>, key: &str| match e {
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
