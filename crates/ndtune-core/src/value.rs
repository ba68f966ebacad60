//! Typed values of parameters and constants, and how a point of the search space (one `i64` per
//! parameter) holds them.
//!
//! A parameter's values are integers, real numbers or identifiers (`TYPE = ["float", "half"]`
//! is passed to the compiler as `-D TYPE=float`). Points stay vectors of `i64` so the pruner and
//! the strategies work on integers: an integer parameter's point value is the integer itself,
//! any other parameter's is the index of its value in the parameter's table ([`Coding`]).

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The value of a parameter or constant. Serialised untagged: `1`, `0.5`, `"float"`, so
/// configurations of integers keep the JSON they always had.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    /// A value as written on a command line or in a constants string: an integer, a real
    /// number (`0.5`, `1e-3`) or an identifier (`float`).
    pub fn parse(text: &str) -> Result<Value, String> {
        if let Ok(v) = text.parse::<i64>() {
            return Ok(Value::Int(v));
        }
        if let Ok(v) = text.parse::<f64>() {
            return if v.is_finite() {
                Ok(Value::Real(v))
            } else {
                Err(format!("`{text}` is not a finite number"))
            };
        }
        let identifier = !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
            && !text.starts_with(|c: char| c.is_ascii_digit());
        if identifier {
            Ok(Value::Text(text.to_string()))
        } else {
            Err(format!(
                "`{text}` is not an integer, a real number or an identifier"
            ))
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The number, if this is one (an integer as a real).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::Real(v) => Some(*v),
            Value::Text(_) => None,
        }
    }

    /// `an integer`, `a real number` or `an identifier`, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Real(_) => "a real number",
            Value::Text(_) => "an identifier",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Int(_) => 0,
            Value::Real(_) => 1,
            Value::Text(_) => 2,
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}

/// Values of different kinds never compare equal (`1` is not `1.0`): a real parameter keeps
/// its reals. Reals compare by their bits' total order.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Real(a), Value::Real(b)) => a.total_cmp(b),
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// An integer value equals the integer (a convenience for code and tests that handle integer
/// parameters).
impl PartialEq<i64> for Value {
    fn eq(&self, other: &i64) -> bool {
        matches!(self, Value::Int(v) if v == other)
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Value::Int(v) => v.hash(state),
            Value::Real(v) => v.to_bits().hash(state),
            Value::Text(v) => v.hash(state),
        }
    }
}

/// As a define's value and in tables: a real always reads as a real in C (`1.0`, `0.5`,
/// `1e-7`), an identifier as written.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Real(v) => write!(f, "{v:?}"),
            Value::Text(v) => f.write_str(v),
        }
    }
}

/// How a point holds one parameter's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coding {
    /// The point value is the integer.
    Int,
    /// The point value is an index into this table of the parameter's values.
    Table(Arc<[Value]>),
}

impl Coding {
    /// How a parameter with these values (distinct) is best held: integers as they are; any
    /// other values in a table, numbers ascending (so neighbouring indices are neighbouring
    /// values), identifiers in the order given.
    pub fn of(values: impl IntoIterator<Item = Value>) -> Coding {
        let mut table: Vec<Value> = values.into_iter().collect();
        if table.iter().all(|v| matches!(v, Value::Int(_))) {
            return Coding::Int;
        }
        if table.iter().all(|v| v.as_f64().is_some()) {
            table.sort_by(|a, b| {
                a.as_f64()
                    .unwrap_or(0.0)
                    .total_cmp(&b.as_f64().unwrap_or(0.0))
            });
        }
        Coding::Table(table.into())
    }

    /// The value a point holds as `v`.
    pub fn value(&self, v: i64) -> Value {
        match self {
            Coding::Int => Value::Int(v),
            Coding::Table(t) => usize::try_from(v)
                .ok()
                .and_then(|i| t.get(i))
                .cloned()
                .unwrap_or(Value::Int(v)),
        }
    }

    /// The point value of `value`, if the parameter can take it.
    pub fn encode(&self, value: &Value) -> Option<i64> {
        match (self, value) {
            (Coding::Int, Value::Int(v)) => Some(*v),
            (Coding::Int, _) => None,
            (Coding::Table(t), v) => t.iter().position(|x| x == v).map(|i| i as i64),
        }
    }
}

/// The parameters of a space, by name, with how points hold their values: converts points to
/// configurations and back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Codec {
    names: Vec<String>,
    codings: Vec<Coding>,
}

/// Why a configuration is not a point of a space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// The configuration lacks a parameter.
    Missing(String),
    /// The configuration sets a name that is not a parameter.
    Unknown(String),
    /// The parameter cannot take the value.
    Value { param: String, value: Value },
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Missing(n) => write!(f, "a configuration lacks `{n}`"),
            CodecError::Unknown(n) => write!(
                f,
                "a configuration sets `{n}`, which is not a parameter of the space"
            ),
            CodecError::Value { param, value } => {
                write!(f, "`{param}` cannot be {value} ({})", value.kind_name())
            }
        }
    }
}

impl std::error::Error for CodecError {}

impl Codec {
    pub fn new(names: Vec<String>, codings: Vec<Coding>) -> Codec {
        assert_eq!(names.len(), codings.len(), "one coding per name");
        Codec { names, codings }
    }

    /// Parameters of integers only.
    pub fn ints(names: Vec<String>) -> Codec {
        let codings = vec![Coding::Int; names.len()];
        Codec { names, codings }
    }

    /// The codec of recorded configurations over `names`: each parameter coded as
    /// [`Coding::of`] its recorded values, in the order they first appear.
    pub fn infer<'a>(names: Vec<String>, configs: impl IntoIterator<Item = &'a Config>) -> Codec {
        let mut seen: Vec<Vec<&Value>> = vec![Vec::new(); names.len()];
        let mut known: Vec<std::collections::HashSet<&Value>> =
            vec![Default::default(); names.len()];
        for config in configs {
            for (p, name) in names.iter().enumerate() {
                if let Some(v) = config.get(name) {
                    if known[p].insert(v) {
                        seen[p].push(v);
                    }
                }
            }
        }
        let codings = seen
            .into_iter()
            .map(|values| Coding::of(values.into_iter().cloned()))
            .collect();
        Codec { names, codings }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn codings(&self) -> &[Coding] {
        &self.codings
    }

    /// Value `v` of parameter `p`.
    pub fn value(&self, p: usize, v: i64) -> Value {
        self.codings[p].value(v)
    }

    /// A point as a configuration.
    pub fn config(&self, point: &[i64]) -> Config {
        self.names
            .iter()
            .zip(&self.codings)
            .zip(point)
            .map(|((n, c), &v)| (n.clone(), c.value(v)))
            .collect()
    }

    /// A configuration as a point (values in the order of the names).
    pub fn point(&self, config: &Config) -> Result<Vec<i64>, CodecError> {
        if let Some(unknown) = config.keys().find(|k| !self.names.contains(k)) {
            return Err(CodecError::Unknown(unknown.clone()));
        }
        self.names
            .iter()
            .zip(&self.codings)
            .map(|(n, c)| {
                let value = config
                    .get(n)
                    .ok_or_else(|| CodecError::Missing(n.clone()))?;
                c.encode(value).ok_or_else(|| CodecError::Value {
                    param: n.clone(),
                    value: value.clone(),
                })
            })
            .collect()
    }
}

/// One configuration: parameter name to value, ordered by name (a canonical form for keys).
pub type Config = std::collections::BTreeMap<String, Value>;

/// Constants of a problem, by name.
pub type Constants = std::collections::BTreeMap<String, Value>;

/// Constants written `NAME=VALUE`, separated by spaces (`N=768 T=float`; empty: none), each
/// value as [`Value::parse`] reads it; a name given twice is an error.
pub fn parse_constants(text: &str) -> Result<Constants, String> {
    let mut constants = Constants::new();
    for item in text.split_whitespace() {
        let (name, value) = parse_assignment(item)?;
        if constants.insert(name.clone(), value).is_some() {
            return Err(format!("`{name}` is given twice"));
        }
    }
    Ok(constants)
}

/// `NAME=VALUE`, one value as [`Value::parse`] reads it (`--set`, `show --config`).
pub fn parse_assignment(s: &str) -> Result<(String, Value), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
    let value = Value::parse(value.trim()).map_err(|e| format!("{e} (in `{s}`)"))?;
    Ok((name.trim().to_string(), value))
}

/// `NAME=V1,V2,...` (or one value): a name and its values for a [`sweep`], each value as
/// [`Value::parse`] reads it.
pub fn parse_values(s: &str) -> Result<(String, Vec<Value>), String> {
    let (name, values) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
    let values = values
        .split(',')
        .map(|v| Value::parse(v.trim()).map_err(|e| format!("{e} (in `{s}`)")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((name.trim().to_string(), values))
}

/// A whole configuration, `NAME=VALUE,NAME=VALUE` (`tune --config`); a name given twice is an
/// error.
pub fn parse_config(s: &str) -> Result<Config, String> {
    let mut config = Config::new();
    for part in s.split(',') {
        let (name, value) = parse_assignment(part)?;
        if config.insert(name.clone(), value).is_some() {
            return Err(format!("`{name}` is given twice in `{s}`"));
        }
    }
    Ok(config)
}

/// A sweep over constants: every combination of the values given for each name (`N` in
/// `[256, 512]` and `K` in `[3, 5]` make four), the first name varying slowest; one empty map
/// for no names. A name given twice is an error.
pub fn sweep(values: &[(String, Vec<Value>)]) -> Result<Vec<Constants>, String> {
    let mut combinations = vec![Constants::new()];
    for (i, (name, vs)) in values.iter().enumerate() {
        if values[..i].iter().any(|(other, _)| other == name) {
            return Err(format!("names `{name}` twice"));
        }
        combinations = combinations
            .iter()
            .flat_map(|c| {
                vs.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(name.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    Ok(combinations)
}

/// A configuration of integer parameters (tests, recorded integer spaces).
pub fn int_config<'a>(pairs: impl IntoIterator<Item = (&'a str, i64)>) -> Config {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), Value::Int(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_read_one_value_several_or_a_configuration() {
        assert_eq!(
            parse_assignment(" WG = 8"),
            Ok(("WG".into(), Value::Int(8)))
        );
        assert!(parse_assignment("WG").unwrap_err().contains("NAME=VALUE"));
        assert_eq!(
            parse_values("T=float, half").unwrap().1,
            [Value::from("float"), Value::from("half")]
        );
        assert_eq!(
            parse_values("N=1,2x").unwrap_err(),
            "`2x` is not an integer, a real number or an identifier (in `N=1,2x`)"
        );
        assert!(parse_values("N").unwrap_err().contains("not NAME=VALUE"));
        assert_eq!(
            parse_config("A=1,B=2").unwrap(),
            int_config([("A", 1), ("B", 2)])
        );
        assert!(parse_config("A=1,A=2")
            .unwrap_err()
            .contains("`A` is given twice"));
    }

    #[test]
    fn values_keep_their_kind_through_json() {
        let c: Config = [
            ("A".to_string(), Value::Int(1)),
            ("F".to_string(), Value::Real(0.5)),
            ("G".to_string(), Value::Real(2.0)),
            ("T".to_string(), Value::Text("float".into())),
        ]
        .into_iter()
        .collect();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(text, r#"{"A":1,"F":0.5,"G":2.0,"T":"float"}"#);
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), c);
        assert_ne!(Value::Int(2), Value::Real(2.0));
    }

    #[test]
    fn defines_read_as_their_kind_in_c() {
        assert_eq!(Value::Int(3).to_string(), "3");
        assert_eq!(Value::Real(1.0).to_string(), "1.0");
        assert_eq!(Value::Real(0.5).to_string(), "0.5");
        assert_eq!(Value::Real(1e-7).to_string(), "1e-7");
        assert_eq!(Value::Text("half".into()).to_string(), "half");
    }

    #[test]
    fn a_codec_converts_points_and_configurations_both_ways() {
        let types: Arc<[Value]> = vec![Value::from("float"), Value::from("half")].into();
        let codec = Codec::new(
            vec!["WG".into(), "TYPE".into()],
            vec![Coding::Int, Coding::Table(types)],
        );
        let config = codec.config(&[64, 1]);
        assert_eq!(config["TYPE"], Value::from("half"));
        assert_eq!(config["WG"], Value::Int(64));
        assert_eq!(codec.point(&config).unwrap(), vec![64, 1]);
        let mut bad = config.clone();
        bad.insert("TYPE".into(), Value::from("double"));
        assert!(matches!(codec.point(&bad), Err(CodecError::Value { .. })));
        bad.remove("TYPE");
        assert_eq!(codec.point(&bad), Err(CodecError::Missing("TYPE".into())));
    }
}
