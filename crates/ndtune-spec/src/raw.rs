//! Stage one: the spec file exactly as written, with source spans, unknown keys refused.

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub kernel: RawKernel,
    #[serde(default)]
    pub constants: IndexMap<String, Spanned<IntOrExpr>>,
    pub params: IndexMap<String, Spanned<toml::Value>>,
    pub launch: Option<Spanned<RawLaunch>>,
    pub space: Option<RawSpaceSection>,
    #[serde(default)]
    pub args: Vec<Spanned<RawArg>>,
    pub verify: Option<Spanned<RawVerify>>,
    pub measure: Option<Spanned<RawMeasure>>,
    pub split: Option<Spanned<RawSplit>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernel {
    pub name: Spanned<String>,
    pub source: Option<Spanned<String>>,
    #[serde(default)]
    pub build_options: Vec<String>,
}

/// A number or an expression string (`global = [1024, "N / VW"]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum IntOrExpr {
    Int(i64),
    Expr(String),
}

impl IntOrExpr {
    pub fn source(&self) -> String {
        match self {
            IntOrExpr::Int(v) => v.to_string(),
            IntOrExpr::Expr(s) => s.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLaunch {
    pub global: Vec<Spanned<IntOrExpr>>,
    pub local: Vec<Spanned<IntOrExpr>>,
    pub local_mem: Option<Spanned<IntOrExpr>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpaceSection {
    #[serde(default)]
    pub constraints: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawArg {
    pub name: String,
    pub kind: String,
    #[serde(rename = "type")]
    pub ty: Option<String>,
    pub len: Option<Spanned<IntOrExpr>>,
    pub value: Option<Spanned<IntOrExpr>>,
    pub bytes: Option<Spanned<IntOrExpr>>,
    pub init: Option<toml::Value>,
    pub access: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVerify {
    pub outputs: Vec<String>,
    pub reference: toml::Value,
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
    pub flops: Option<Spanned<IntOrExpr>>,
    pub bytes: Option<Spanned<IntOrExpr>>,
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
    pub stride: Spanned<IntOrExpr>,
    pub before: Option<Spanned<IntOrExpr>>,
    pub after: Option<Spanned<IntOrExpr>>,
    pub dim: Option<Spanned<i64>>,
}
