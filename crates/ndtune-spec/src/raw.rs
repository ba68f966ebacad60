//! Stage one: the spec file exactly as written, with source spans, unknown keys refused.

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub kernel: RawKernel,
    #[serde(default)]
    pub constants: IndexMap<String, Spanned<NumOrExpr>>,
    pub params: IndexMap<String, Spanned<toml::Value>>,
    pub launch: Option<Spanned<RawLaunch>>,
    pub space: Option<RawSpaceSection>,
    #[serde(default)]
    pub args: Vec<Spanned<RawArg>>,
    pub verify: Option<Spanned<RawVerify>>,
    pub measure: Option<Spanned<RawMeasure>>,
    pub split: Option<Spanned<RawSplit>>,
    /// User metrics, in order: name = expression (or `{ expr, unit }`).
    #[serde(default)]
    pub metrics: IndexMap<String, Spanned<RawMetric>>,
    pub objective: Option<Spanned<RawObjective>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernel {
    pub name: Spanned<String>,
    /// `"opencl"` or `"cuda"`; by the source's extension where absent.
    pub language: Option<Spanned<String>>,
    /// A file name or a list of them (checked in validation, for clear errors).
    pub source: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub include_dirs: Vec<Spanned<String>>,
    /// Strings, or tables `{ option = "...", when = "EXPR" }` (checked in validation).
    #[serde(default)]
    pub build_options: Vec<Spanned<toml::Value>>,
}

/// A number or an expression string (`global = [1024, "N / VW"]`, `value = 0.5`).
#[derive(Debug, Clone)]
pub enum NumOrExpr {
    Int(i64),
    Real(f64),
    Expr(String),
}

impl NumOrExpr {
    /// The expression's source (a number as the language writes it).
    pub fn source(&self) -> String {
        match self {
            NumOrExpr::Int(v) => v.to_string(),
            NumOrExpr::Real(v) => format!("{v:?}"),
            NumOrExpr::Expr(s) => s.clone(),
        }
    }
}

/// Accepts an integer, a real or a string, and says so when it finds anything else (serde's
/// untagged enums only say that nothing matched).
impl<'de> Deserialize<'de> for NumOrExpr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = NumOrExpr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number or an expression string such as \"N / 4\"")
            }
            fn visit_i64<E>(self, v: i64) -> Result<NumOrExpr, E> {
                Ok(NumOrExpr::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NumOrExpr, E> {
                i64::try_from(v)
                    .map(NumOrExpr::Int)
                    .map_err(|_| E::custom(format!("{v} is not a 64-bit integer")))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<NumOrExpr, E> {
                if v.is_finite() {
                    Ok(NumOrExpr::Real(v))
                } else {
                    Err(E::custom(format!("{v} is not a finite number")))
                }
            }
            fn visit_str<E>(self, v: &str) -> Result<NumOrExpr, E> {
                Ok(NumOrExpr::Expr(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A metric: an expression string, or `{ expr = "...", unit = "GFLOP/s" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetricTable {
    pub expr: String,
    pub unit: Option<String>,
}

/// `[metrics] NAME = ...` as written.
#[derive(Debug, Clone)]
pub struct RawMetric {
    pub expr: String,
    pub unit: Option<String>,
}

/// Accepts an expression string or a `{ expr, unit }` table, and says so when it finds
/// anything else.
impl<'de> Deserialize<'de> for RawMetric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawMetric;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an expression string such as \"2 * N * N * N / time / 1e6\", or { expr = \"...\", unit = \"GFLOP/s\" }",
                )
            }
            fn visit_str<E>(self, v: &str) -> Result<RawMetric, E> {
                Ok(RawMetric {
                    expr: v.to_string(),
                    unit: None,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RawMetric, A::Error> {
                let t =
                    RawMetricTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RawMetric {
                    expr: t.expr,
                    unit: t.unit,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[objective]`: what strategies optimise.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawObjective {
    /// One metric, or a list of them: several objectives (a Pareto front).
    pub metric: OneOrMany<String>,
    /// Kernel Tuner's `objective_higher_is_better`, one per metric; needed for a metric of the
    /// user's.
    pub higher_is_better: Option<OneOrMany<bool>>,
}

/// A value, or a list of them (`metric = "time"`, `metric = ["time", "energy_j"]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

impl RawObjective {
    /// The objectives it says, in order; where one's direction is unsaid and not the measured
    /// quantities' own, or the lists' lengths differ, why (the caller adds where it stands).
    pub fn objectives(&self) -> Result<Vec<ndtune_metrics::Objective>, String> {
        let metrics = self.metric.to_vec();
        if metrics.is_empty() {
            return Err("[objective] metric: an empty list; name at least one".into());
        }
        let said = self.higher_is_better.as_ref().map(OneOrMany::to_vec);
        if let Some(said) = said.as_ref().filter(|s| s.len() != metrics.len()) {
            return Err(format!(
                "[objective]: {} metrics but {} values of higher_is_better; give one per metric",
                metrics.len(),
                said.len()
            ));
        }
        metrics
            .iter()
            .enumerate()
            .map(|(i, metric)| {
                let higher_is_better = said
                    .as_ref()
                    .map(|s| s[i])
                    .or_else(|| ndtune_metrics::Objective::default_direction(metric))
                    .ok_or_else(|| {
                        format!(
                            "[objective] metric `{metric}`: say whether more is better, `higher_is_better = true` (GFLOP/s) or `false` (joules); ndtune does not guess"
                        )
                    })?;
                Ok(ndtune_metrics::Objective {
                    metric: metric.clone(),
                    higher_is_better,
                })
            })
            .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLaunch {
    pub global: Vec<Spanned<NumOrExpr>>,
    pub local: Vec<Spanned<NumOrExpr>>,
    pub local_mem: Option<Spanned<NumOrExpr>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpaceSection {
    /// Constraints in the spec's language (C's operators and precedence).
    #[serde(default)]
    pub constraints: Vec<Spanned<String>>,
    /// Constraints as Kernel Tuner restrictions, in Python's syntax and meaning.
    #[serde(default)]
    pub restrictions: Vec<Spanned<String>>,
    pub platform: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawArg {
    pub name: String,
    pub kind: String,
    #[serde(rename = "type")]
    pub ty: Option<String>,
    pub len: Option<Spanned<NumOrExpr>>,
    pub value: Option<Spanned<NumOrExpr>>,
    pub bytes: Option<Spanned<NumOrExpr>>,
    pub init: Option<toml::Value>,
    pub access: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVerify {
    pub outputs: Vec<String>,
    pub reference: Option<toml::Value>,
    pub check: Option<toml::Value>,
    pub tolerance: Option<f64>,
    pub atol: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeasure {
    pub warmup: Option<u32>,
    pub runs: Option<u32>,
    pub best_of: Option<u32>,
    pub race: Option<bool>,
    pub race_margin: Option<Spanned<f64>>,
    pub race_confidence: Option<Spanned<f64>>,
    pub flops: Option<Spanned<NumOrExpr>>,
    pub bytes: Option<Spanned<NumOrExpr>>,
    /// The least duration of the window the energy is measured over, in ms.
    pub energy_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSplit {
    pub dim: Option<Spanned<i64>>,
    #[serde(default)]
    pub buffers: IndexMap<String, Spanned<RawSplitBuffer>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSplitBuffer {
    pub stride: Spanned<NumOrExpr>,
    pub before: Option<Spanned<NumOrExpr>>,
    pub after: Option<Spanned<NumOrExpr>>,
    pub dim: Option<Spanned<i64>>,
}
