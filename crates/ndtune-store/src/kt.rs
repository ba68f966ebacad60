//! Kernel Tuner's file formats: its cache files (read and write) and the T4 results schema of
//! the AutoTuning Association (write).
//!
//! A Kernel Tuner cache maps each configuration (key: its values joined by `,` in
//! `tune_params_keys` order) to an entry whose `"time"` is the mean of all runs in ms, with the
//! runs in `"times"`, or an error name. Reading maps them to [`Outcome`]s:
//!
//! | Kernel Tuner `"time"` | [`Outcome`] |
//! |---|---|
//! | a number, runs in `"times"` | `Measured { times_ms: times, best_of: times.len() }` (the mean of all runs, as Kernel Tuner scores) |
//! | `"CompilationFailedConfig"` | `BuildFailed` |
//! | `"RuntimeFailedConfig"` | `Refused` |
//! | `"InvalidConfig"` | `Pruned` |
//!
//! Kernel Tuner 1.4 and later also mark a failed entry with `"__error__"` (the same names), which
//! reading prefers to `"time"` and writing adds; their header's `"objective"` may be a list
//! (several objectives: [`KtHeader::more_objectives`]), as may ndtune's
//! `"objective_higher_is_better"`. A cache of one objective is written as before.
//!
//! Writing maps back the same way (wrong-result, crashed and timed-out become
//! `"RuntimeFailedConfig"`), and also stores the exact ndtune outcome in an extra
//! `"ndtune_outcome"` field of each entry, which reading prefers: a cache written by ndtune reads
//! back to the same outcomes. Kernel Tuner ignores fields it does not know. Cache files may be
//! gzipped, and may be left open as Kernel Tuner leaves them while it tunes (no closing braces).
//!
//! Metrics travel as Kernel Tuner's do: each entry carries every metric's value under the
//! metric's name (`"GFLOP/s": 1948.2`), and the header names the `"objective"`. Reading keeps
//! every numeric field of an entry that is neither a parameter nor one of Kernel Tuner's own
//! ([`KtCache::metrics`]). ndtune also writes `"objective_higher_is_better"` and, under
//! `"ndtune_metrics"`, the metrics' definitions, which reading gives back
//! ([`KtHeader::objective_higher_is_better`], [`KtHeader::metrics`]). The values a front end's
//! observers gave a measurement (`Timing::observed`) are written into its entry as Kernel
//! Tuner writes its observers' (but for a name a field, a parameter or a metric has), and read
//! back as the outcome's, not as metrics.

use crate::{Record, UnixMs};
use ndtune_core::{config_key, Config, Outcome, Timing, Value as ParamValue};
use ndtune_metrics::MetricDef;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The Kernel Tuner cache schema version [`write_kt_cache`] follows.
pub const KT_CACHE_SCHEMA_VERSION: &str = "1.1.0";

/// The T4 results schema version [`write_t4`] follows.
pub const T4_SCHEMA_VERSION: &str = "1.0.0";

/// The entry field of Kernel Tuner 1.4+ that names a failure.
const KT_ERROR: &str = "__error__";

/// The entry field holding ndtune's own outcome.
const NDTUNE_OUTCOME: &str = "ndtune_outcome";

/// The fields of an entry that Kernel Tuner itself writes besides the parameters; any other
/// number is a metric's value.
const KT_FIELDS: [&str; 10] = [
    "time",
    KT_ERROR,
    "times",
    "compile_time",
    "verification_time",
    "benchmark_time",
    "strategy_time",
    "framework_time",
    "timestamp",
    NDTUNE_OUTCOME,
];

/// Each configuration's metric values, by metric name.
pub type MetricValues = BTreeMap<Config, BTreeMap<String, f64>>;

/// Why a Kernel Tuner file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KtError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a Kernel Tuner cache file: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: tunable parameter `{param}` has the value {value}; ndtune parameters take integers, real numbers and identifiers (strings)", path.display())]
    BadValue {
        path: PathBuf,
        param: String,
        value: String,
    },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

/// What a Kernel Tuner cache was tuned for: the kernel, the device and the parameter values.
#[derive(Debug, Clone, PartialEq)]
pub struct KtHeader {
    /// As Kernel Tuner names the device ("" when it could not tell).
    pub device_name: String,
    pub kernel_name: String,
    /// As Kernel Tuner wrote it: an integer, a list of integers, or a string.
    pub problem_size: Value,
    /// Parameter names, in the order the cache keys list their values.
    pub tune_params_keys: Vec<String>,
    /// Each parameter's values.
    pub tune_params: BTreeMap<String, Vec<ParamValue>>,
    /// What the cache was tuned for: Kernel Tuner's `"objective"` (`"time"` where it names
    /// none).
    pub objective: String,
    /// Whether higher is better for the objective, where the cache says (ndtune writes it;
    /// Kernel Tuner's caches do not).
    pub objective_higher_is_better: Option<bool>,
    /// The objectives after the first, where the cache has several (Kernel Tuner 1.4+'s
    /// `"objective"` list), each with its direction where the cache says.
    pub more_objectives: Vec<(String, Option<bool>)>,
    /// The definitions of the metrics whose values the entries carry, where ndtune wrote the
    /// cache.
    pub metrics: Vec<MetricDef>,
}

impl KtHeader {
    /// How points hold this space's configurations ([`ndtune_core::Coding::of`] each
    /// parameter's listed values).
    pub fn codec(&self) -> ndtune_core::Codec {
        let codings = self
            .tune_params_keys
            .iter()
            .map(|k| ndtune_core::Coding::of(self.tune_params.get(k).cloned().unwrap_or_default()))
            .collect();
        ndtune_core::Codec::new(self.tune_params_keys.clone(), codings)
    }
}

/// A Kernel Tuner cache file: its header, the outcome of every configuration in it and the
/// metric values recorded with each.
#[derive(Debug, Clone, PartialEq)]
pub struct KtCache {
    pub header: KtHeader,
    pub entries: BTreeMap<Config, Outcome>,
    /// The metric values of each configuration that has any.
    pub metrics: MetricValues,
}

/// Reads a Kernel Tuner cache file, gzipped or plain JSON.
pub fn read_kt_cache(path: &Path) -> Result<KtCache, KtError> {
    let bytes = ndtune_core::input::read_bytes(path, ndtune_core::input::RECORDING)
        .map_err(|e| io_error(path)(e.into()))?;
    parse_kt_cache(&bytes, path)
}

/// A Kernel Tuner cache from the bytes of its file (gzipped or plain JSON); `path` names it in
/// errors.
pub fn parse_kt_cache(bytes: &[u8], path: &Path) -> Result<KtCache, KtError> {
    let text = read_text(bytes, path)?;
    let raw = parse_cache(&text).map_err(|source| KtError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let header = read_header(path, &raw)?;
    let mut entries = BTreeMap::new();
    let mut metrics = MetricValues::new();
    for (key, entry) in &raw.cache {
        let (config, outcome, values) = read_entry(path, &header.tune_params_keys, key, entry)?;
        if !values.is_empty() {
            metrics.insert(config.clone(), values);
        }
        entries.insert(config, outcome);
    }
    Ok(KtCache {
        header,
        entries,
        metrics,
    })
}

#[derive(Deserialize)]
struct RawCache {
    device_name: String,
    kernel_name: String,
    #[serde(default)]
    problem_size: Value,
    tune_params_keys: Vec<String>,
    tune_params: Map<String, Value>,
    #[serde(default)]
    objective: Option<OneOrMany<String>>,
    #[serde(default)]
    objective_higher_is_better: Option<OneOrMany<Option<bool>>>,
    #[serde(default)]
    ndtune_metrics: Vec<MetricDef>,
    cache: Map<String, Value>,
}

/// A header field that holds one value, or a list with one per objective.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

fn invalid(path: &Path, message: impl Into<String>) -> KtError {
    KtError::Invalid {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> KtError + '_ {
    move |source| KtError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read_text(bytes: &[u8], path: &Path) -> Result<String, KtError> {
    let bytes = ndtune_core::input::unpack(bytes, ndtune_core::input::RECORDING)
        .map_err(|e| invalid(path, &e))?;
    String::from_utf8(bytes.into_owned())
        .map_err(|_| invalid(path, "not a Kernel Tuner cache file: not UTF-8 text"))
}

/// Parses a cache, closing it first if Kernel Tuner left it open (it appends `"key": {...},`
/// per configuration and closes the file only when tuning ends).
fn parse_cache(text: &str) -> serde_json::Result<RawCache> {
    match serde_json::from_str(text) {
        Err(e) if e.is_eof() => {
            let open = text.trim_end();
            let open = open.strip_suffix(',').unwrap_or(open);
            serde_json::from_str(&format!("{open}}}\n}}")).map_err(|_| e)
        }
        parsed => parsed,
    }
}

fn read_header(path: &Path, raw: &RawCache) -> Result<KtHeader, KtError> {
    let mut tune_params = BTreeMap::new();
    for name in &raw.tune_params_keys {
        let values = raw.tune_params.get(name).and_then(Value::as_array);
        let values = values.ok_or_else(|| {
            invalid(
                path,
                format!("tune_params has no list of values for `{name}`"),
            )
        })?;
        let values = values
            .iter()
            .map(|v| param_value(path, name, v))
            .collect::<Result<_, _>>()?;
        tune_params.insert(name.clone(), values);
    }
    let objectives = raw
        .objective
        .as_ref()
        .map_or_else(|| vec!["time".to_string()], OneOrMany::to_vec);
    let mut directions = raw
        .objective_higher_is_better
        .as_ref()
        .map_or_else(Vec::new, OneOrMany::to_vec);
    if objectives.is_empty() {
        return Err(invalid(path, "\"objective\" is an empty list"));
    }
    if !directions.is_empty() && directions.len() != objectives.len() {
        return Err(invalid(
            path,
            format!(
                "{} objectives but {} values of \"objective_higher_is_better\"",
                objectives.len(),
                directions.len()
            ),
        ));
    }
    directions.resize(objectives.len(), None);
    let mut objectives = objectives.into_iter().zip(directions);
    let (objective, objective_higher_is_better) = objectives.next().expect("not empty");
    Ok(KtHeader {
        device_name: raw.device_name.clone(),
        kernel_name: raw.kernel_name.clone(),
        problem_size: raw.problem_size.clone(),
        tune_params_keys: raw.tune_params_keys.clone(),
        tune_params,
        objective,
        objective_higher_is_better,
        more_objectives: objectives.collect(),
        metrics: raw.ndtune_metrics.clone(),
    })
}

/// A parameter value as Kernel Tuner wrote it: an integer, a real (`0.5`, `2.0` stays real),
/// a string, or a boolean (as Python writes it in a define: `True`).
fn param_value(path: &Path, param: &str, value: &Value) -> Result<ParamValue, KtError> {
    let v = match value {
        Value::Number(n) => n
            .as_i64()
            .map(ParamValue::Int)
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(ParamValue::Real)),
        Value::String(s) => Some(ParamValue::Text(s.clone())),
        Value::Bool(b) => Some(ParamValue::Text(if *b { "True" } else { "False" }.into())),
        _ => None,
    };
    v.ok_or_else(|| KtError::BadValue {
        path: path.to_path_buf(),
        param: param.to_string(),
        value: value.to_string(),
    })
}

/// One entry: its configuration, its outcome and its metric values.
fn read_entry(
    path: &Path,
    keys: &[String],
    key: &str,
    entry: &Value,
) -> Result<(Config, Outcome, BTreeMap<String, f64>), KtError> {
    let at = |message: String| invalid(path, format!("cache entry \"{key}\": {message}"));
    let entry = entry
        .as_object()
        .ok_or_else(|| at("not a JSON object".into()))?;
    let mut config = Config::new();
    for name in keys {
        let value = entry
            .get(name)
            .ok_or_else(|| at(format!("lacks parameter `{name}`")))?;
        config.insert(name.clone(), param_value(path, name, value)?);
    }
    let outcome = entry_outcome(entry).map_err(at)?;
    // An observer's value is the outcome's, not a metric's.
    let observed: BTreeSet<&str> = observed_values(&outcome).map(|(name, _)| name).collect();
    let metrics = entry
        .iter()
        .filter(|(field, _)| !keys.contains(field) && !KT_FIELDS.contains(&field.as_str()))
        .filter(|(field, _)| !observed.contains(field.as_str()))
        .filter_map(|(field, v)| Some((field.clone(), v.as_f64().filter(|x| x.is_finite())?)))
        .collect();
    Ok((config, outcome, metrics))
}

fn entry_outcome(entry: &Map<String, Value>) -> Result<Outcome, String> {
    if let Some(outcome) = entry.get(NDTUNE_OUTCOME) {
        return Outcome::deserialize(outcome).map_err(|e| format!("{NDTUNE_OUTCOME}: {e}"));
    }
    if let Some(error) = entry.get(KT_ERROR) {
        return match error {
            Value::String(name) => error_outcome(name),
            other => Err(format!("\"{KT_ERROR}\" is {other}, not an error's name")),
        };
    }
    match entry.get("time") {
        Some(Value::Number(time)) => measured(time.as_f64(), entry.get("times")),
        Some(Value::String(name)) => error_outcome(name),
        _ => Err("has no \"time\"".into()),
    }
}

fn measured(time: Option<f64>, times: Option<&Value>) -> Result<Outcome, String> {
    let times: Vec<f64> = match times {
        Some(times) => Vec::deserialize(times).map_err(|e| format!("\"times\": {e}"))?,
        None => time.into_iter().collect(),
    };
    let runs = times.len();
    Ok(Outcome::Measured(Timing::new(times, runs)))
}

fn error_outcome(name: &str) -> Result<Outcome, String> {
    let said = format!("Kernel Tuner: {name}");
    match name {
        "CompilationFailedConfig" => Ok(Outcome::BuildFailed { log: said }),
        "RuntimeFailedConfig" => Ok(Outcome::Refused { error: said }),
        "InvalidConfig" => Ok(Outcome::Pruned { constraint: said }),
        _ => Err(format!("unknown error {name:?}")),
    }
}

/// Writes `records` as a Kernel Tuner cache file (plain JSON, closed the way Kernel Tuner closes
/// it, so Kernel Tuner can also resume from it), each entry with its configuration's `metrics`
/// values. Every record's configuration must have exactly the parameters of
/// `header.tune_params_keys`. Kernel Tuner's overhead timings, which ndtune does not record,
/// are written as 0; the timestamp is the record's `finished_at`.
pub fn write_kt_cache(
    path: &Path,
    header: &KtHeader,
    records: &[Record],
    metrics: &MetricValues,
) -> Result<(), KtError> {
    if records.is_empty() {
        // Kernel Tuner cannot append to a closed cache that has no entry.
        return Err(invalid(path, "no records to write to a Kernel Tuner cache"));
    }
    let tune_params = header
        .tune_params_keys
        .iter()
        .map(|name| match header.tune_params.get(name) {
            Some(values) => Ok((name.as_str(), values)),
            None => Err(invalid(path, format!("tune_params lacks `{name}`"))),
        })
        .collect::<Result<_, _>>()?;
    let no_values = BTreeMap::new();
    for name in metrics.values().flat_map(BTreeMap::keys) {
        if KT_FIELDS.contains(&name.as_str()) || header.tune_params_keys.contains(name) {
            return Err(invalid(
                path,
                format!("metric `{name}` has the name of a field of the cache's entries"),
            ));
        }
    }
    let mut keys = BTreeSet::new();
    let mut cache = Vec::with_capacity(records.len());
    for record in records {
        let values = metrics.get(&record.key.config).unwrap_or(&no_values);
        let (key, entry) = cache_entry(path, &header.tune_params_keys, record, values)?;
        if !keys.insert(key.clone()) {
            return Err(invalid(path, format!("two records of configuration {key}")));
        }
        cache.push((key, entry));
    }
    let file = CacheFile {
        schema_version: KT_CACHE_SCHEMA_VERSION,
        device_name: &header.device_name,
        kernel_name: &header.kernel_name,
        problem_size: &header.problem_size,
        tune_params_keys: &header.tune_params_keys,
        tune_params: InOrder(tune_params),
        objective: objectives_field(header, |(name, _)| Value::from(name.as_str())),
        // Only where every objective's direction is known.
        objective_higher_is_better: std::iter::once(&header.objective_higher_is_better)
            .chain(header.more_objectives.iter().map(|(_, d)| d))
            .all(Option::is_some)
            .then(|| objectives_field(header, |(_, d)| Value::from(d.expect("known")))),
        ndtune_metrics: &header.metrics,
        cache: InOrder(cache),
    };
    let mut text = serde_json::to_string(&file).expect("a cache serialises");
    // End with "}\n}": what Kernel Tuner looks for to tell a closed cache from an open one.
    text.insert(text.len() - 1, '\n');
    std::fs::write(path, text).map_err(io_error(path))
}

/// A header field of every objective: one value where the cache has one objective (the format
/// before Kernel Tuner 1.4), else a list.
fn objectives_field(header: &KtHeader, value: impl Fn((&String, &Option<bool>)) -> Value) -> Value {
    let first = (&header.objective, &header.objective_higher_is_better);
    if header.more_objectives.is_empty() {
        return value(first);
    }
    let more = header.more_objectives.iter().map(|(n, d)| (n, d));
    Value::Array(std::iter::once(first).chain(more).map(value).collect())
}

/// A JSON object that keeps its keys in the given order (serde_json's maps sort them).
struct InOrder<K, V>(Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for InOrder<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// A cache file in Kernel Tuner's field order; `cache` must come last.
#[derive(Serialize)]
struct CacheFile<'a> {
    schema_version: &'static str,
    device_name: &'a str,
    kernel_name: &'a str,
    problem_size: &'a Value,
    tune_params_keys: &'a [String],
    tune_params: InOrder<&'a str, &'a Vec<ParamValue>>,
    objective: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    objective_higher_is_better: Option<Value>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    ndtune_metrics: &'a [MetricDef],
    cache: InOrder<String, CacheEntry<'a>>,
}

#[derive(Serialize)]
struct CacheEntry<'a> {
    #[serde(flatten)]
    params: InOrder<&'a str, &'a ParamValue>,
    time: Value,
    #[serde(rename = "__error__", skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    times: Option<&'a [f64]>,
    compile_time: f64,
    verification_time: f64,
    benchmark_time: f64,
    strategy_time: f64,
    framework_time: f64,
    timestamp: String,
    #[serde(flatten)]
    metrics: &'a BTreeMap<String, f64>,
    /// What the front end's observers gave (Kernel Tuner's entries carry them as it does
    /// its results), but for a name that a field, a parameter or a metric has.
    #[serde(flatten)]
    observed: BTreeMap<&'a str, &'a Value>,
    ndtune_outcome: &'a Outcome,
}

fn cache_entry<'a>(
    path: &Path,
    keys: &'a [String],
    record: &'a Record,
    metrics: &'a BTreeMap<String, f64>,
) -> Result<(String, CacheEntry<'a>), KtError> {
    let config = &record.key.config;
    let params: Vec<(&str, &ParamValue)> = keys
        .iter()
        .filter_map(|name| config.get(name).map(|v| (name.as_str(), v)))
        .collect();
    if params.len() != keys.len() || params.len() != config.len() {
        return Err(invalid(
            path,
            format!(
                "configuration {} does not have exactly the parameters {keys:?}",
                config_key(config)
            ),
        ));
    }
    let key = params
        .iter()
        .map(|(_, v)| python_str(v))
        .collect::<Vec<_>>()
        .join(",");
    let (time, times) = kt_time(&record.outcome);
    let taken = |name: &str| {
        KT_FIELDS.contains(&name) || keys.iter().any(|k| k == name) || metrics.contains_key(name)
    };
    let observed = observed_values(&record.outcome)
        .filter(|(name, _)| !taken(name))
        .collect();
    let entry = CacheEntry {
        params: InOrder(params),
        error: time.is_string().then(|| time.clone()),
        time,
        times,
        compile_time: 0.0,
        verification_time: 0.0,
        benchmark_time: 0.0,
        strategy_time: 0.0,
        framework_time: 0.0,
        timestamp: utc_text(record.finished_at),
        metrics,
        observed,
        ndtune_outcome: &record.outcome,
    };
    Ok((key, entry))
}

/// The values a measurement's observers gave, by name, over all its observers.
fn observed_values(outcome: &Outcome) -> impl Iterator<Item = (&str, &Value)> {
    let observed = match outcome {
        Outcome::Measured(t) => t.observed.as_deref(),
        _ => None,
    };
    observed
        .into_iter()
        .flat_map(|by| by.values())
        .filter_map(Value::as_object)
        .flat_map(|values| values.iter().map(|(k, v)| (k.as_str(), v)))
}

/// A value as Python's `str` writes it, as Kernel Tuner joins them into a cache key.
fn python_str(v: &ParamValue) -> String {
    match v {
        ParamValue::Real(x) if x.fract() == 0.0 && x.abs() < 1e16 => format!("{x:.1}"),
        ParamValue::Real(x) => {
            let text = format!("{x:?}");
            // Rust writes 1e-7, Python 1e-07.
            match text.split_once('e') {
                Some((m, e)) => {
                    let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
                    format!("{m}e{sign}{digits:0>2}")
                }
                None => text,
            }
        }
        other => other.to_string(),
    }
}

/// Kernel Tuner's `"time"` (mean of all runs, or an error name) and `"times"` of an outcome.
fn kt_time(outcome: &Outcome) -> (Value, Option<&[f64]>) {
    let error = |name: &str| (Value::from(name), None);
    match outcome {
        Outcome::Measured(t) => {
            let mean = t.times_ms.iter().sum::<f64>() / t.times_ms.len() as f64;
            (Value::from(mean), Some(&t.times_ms))
        }
        Outcome::Pruned { .. } => error("InvalidConfig"),
        Outcome::BuildFailed { .. } => error("CompilationFailedConfig"),
        Outcome::Refused { .. }
        | Outcome::WrongResult { .. }
        | Outcome::Crashed { .. }
        | Outcome::TimedOut { .. } => error("RuntimeFailedConfig"),
    }
}

/// What T4 results say besides the records: the objectives, each configuration's metric values
/// and their units.
#[derive(Debug, Clone, Copy)]
pub struct T4Metrics<'a> {
    pub objectives: &'a [&'a str],
    pub values: &'a MetricValues,
    /// Units by metric name, where known.
    pub units: &'a BTreeMap<String, String>,
}

/// Writes `records` in the T4 results schema ([`T4_SCHEMA_VERSION`]): one result per record with
/// its `timestamp` (`finished_at`), `configuration`, `objectives` (their names),
/// `times.runtimes` (every run in ms; empty unless measured), `invalidity`, `correctness` (0 for
/// a wrong result, else 1, as Kernel Tuner writes it) and `measurements` (for measured
/// configurations only: `time`, ndtune's score in ms, then each metric's value with its unit).
pub fn write_t4(path: &Path, records: &[Record], metrics: T4Metrics) -> Result<(), KtError> {
    let doc = T4File {
        schema_version: T4_SCHEMA_VERSION,
        results: records.iter().map(|r| t4_result(r, metrics)).collect(),
    };
    let text = serde_json::to_string_pretty(&doc).expect("T4 results serialise");
    std::fs::write(path, text).map_err(io_error(path))
}

#[derive(Serialize)]
struct T4File<'a> {
    schema_version: &'static str,
    results: Vec<T4Result<'a>>,
}

#[derive(Serialize)]
struct T4Result<'a> {
    timestamp: String,
    configuration: &'a Config,
    objectives: &'a [&'a str],
    times: T4Times<'a>,
    invalidity: &'static str,
    correctness: u8,
    measurements: Vec<T4Measurement<'a>>,
}

#[derive(Serialize)]
struct T4Times<'a> {
    runtimes: &'a [f64],
}

#[derive(Serialize)]
struct T4Measurement<'a> {
    name: &'a str,
    value: f64,
    unit: &'a str,
}

fn t4_result<'a>(record: &'a Record, metrics: T4Metrics<'a>) -> T4Result<'a> {
    let outcome = &record.outcome;
    let runtimes: &[f64] = match outcome {
        Outcome::Measured(t) => &t.times_ms,
        _ => &[],
    };
    let mut measurements: Vec<T4Measurement> = outcome
        .score_ms()
        .map(|value| T4Measurement {
            name: "time",
            value,
            unit: "ms",
        })
        .into_iter()
        .collect();
    if !measurements.is_empty() {
        if let Some(values) = metrics.values.get(&record.key.config) {
            measurements.extend(values.iter().map(|(name, value)| T4Measurement {
                name,
                value: *value,
                unit: metrics.units.get(name).map_or("", String::as_str),
            }));
        }
    }
    T4Result {
        timestamp: utc_text(record.finished_at),
        configuration: &record.key.config,
        objectives: metrics.objectives,
        times: T4Times { runtimes },
        invalidity: t4_invalidity(outcome),
        correctness: u8::from(!matches!(outcome, Outcome::WrongResult { .. })),
        measurements,
    }
}

/// T4's `invalidity`: "correct" or what made the configuration invalid.
fn t4_invalidity(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Measured(_) => "correct",
        Outcome::Pruned { .. } => "constraints",
        Outcome::BuildFailed { .. } => "compile",
        Outcome::Refused { .. } | Outcome::Crashed { .. } => "runtime",
        Outcome::WrongResult { .. } => "correctness",
        Outcome::TimedOut { .. } => "timeout",
    }
}

/// A UTC time as Kernel Tuner writes timestamps: `2023-12-22 09:54:05.502000+00:00`.
fn utc_text(ms: UnixMs) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, min) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60);
    let (s, milli) = (ms_of_day / 1000 % 60, ms_of_day % 1000);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{min:02}:{s:02}.{milli:03}000+00:00")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_as_kernel_tuner_writes_them() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00.000000+00:00");
        assert_eq!(
            utc_text(1_703_238_845_502),
            "2023-12-22 09:54:05.502000+00:00"
        );
        assert_eq!(
            utc_text(951_868_799_999),
            "2000-02-29 23:59:59.999000+00:00"
        );
        assert_eq!(utc_text(-1500), "1969-12-31 23:59:58.500000+00:00");
    }

    #[test]
    fn an_open_cache_is_closed_before_parsing() {
        let open = r#"{"device_name": "d", "kernel_name": "k", "tune_params_keys": ["x"],
            "tune_params": {"x": [1]}, "cache": {
            "1": {"x": 1, "time": 2.0, "times": [2.0]},"#;
        let raw = parse_cache(open).unwrap();
        assert_eq!(raw.cache.len(), 1);
        let header_only = r#"{"device_name": "d", "kernel_name": "k", "tune_params_keys": [],
            "tune_params": {}, "cache": {"#;
        assert!(parse_cache(header_only).unwrap().cache.is_empty());
        assert!(parse_cache("{\"device_name\": 3}").is_err());
    }
}
