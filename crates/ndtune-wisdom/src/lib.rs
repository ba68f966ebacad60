//! Wisdom: what was tuned, in a small file that ships with an application and answers at run
//! time "which configuration, for this device and this problem size?" (docs/deploy.md).
//!
//! - The file ([`Wisdom`], JSON, schema [`SCHEMA`]): per kernel its spec (the TOML text: the
//!   parameters, constraints and launch sizes a pick is checked and sized with), the names its
//!   source turns into defines, the objective, and one [`Entry`] per (device, constants) the
//!   store holds: the best configuration, its objective's value, the setup digest. Written by
//!   `ndtune export --format wisdom` ([`from_store`]), read by [`Wisdom::load`], which refuses
//!   a corrupt file, one of a newer schema or one without the kernel asked for, with the file
//!   and the reason.
//! - [`Picker`] answers a device (profile) and constants: the `exact` entry, else the `nearest`
//!   tuned size on the same device model, else a `predicted` configuration (see [`pick`]);
//!   always one that passes the device's constraints, with its build options and launch sizes.
//!   A kernel tuned for several objectives keeps each entry's Pareto front ([`Entry::front`]),
//!   and a [`Preference`] picks from it: the least of one objective under limits on others
//!   (`time,power_w<=200`: the fastest under 200 W; `energy_j,time<=1.05x`: the least energy
//!   within 5% of the fastest).
//! - [`header`] writes the same as a C header for programs that want no library at all.
//! - [`Runtime`] is what the run-time library (C API, Python, `serve`) holds: an opened file,
//!   its pickers, and the [`capture`] of every question while `NDTUNE_CAPTURE` is set.

pub mod capture;
pub mod header;
pub mod pick;
mod runtime;

pub use pick::{How, Limit, Pick, PickError, Picker, Preference};
pub use runtime::{Runtime, RuntimeError};

use ndtune_core::{Config, Constants, Outcome};
use ndtune_device::DeviceProfile;
use ndtune_metrics::Inputs;
use ndtune_spec::{KernelSource, Spec};
use ndtune_store::kt::KtCache;
use ndtune_store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The schema version this ndtune writes and the newest it reads.
pub const SCHEMA: u32 = 1;

/// The largest wisdom file read: 64 MiB.
const MAX_BYTES: u64 = 64 << 20;

/// A wisdom file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Wisdom {
    pub schema: u32,
    /// The ndtune version that wrote it.
    pub ndtune: String,
    pub kernels: Vec<KernelWisdom>,
}

/// What was tuned of one kernel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelWisdom {
    pub kernel: String,
    /// The spec's file name, for messages.
    pub spec_file: String,
    /// The spec's text (TOML).
    pub spec: String,
    /// The constants and parameters the kernel's source mentions: each becomes `-D NAME=VALUE`.
    pub defines: Vec<String>,
    pub objective: ObjectiveInfo,
    /// The objectives after the first, where it was tuned for several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_objectives: Vec<ObjectiveInfo>,
    pub entries: Vec<Entry>,
}

/// The objective the entries are best at.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObjectiveInfo {
    pub metric: String,
    pub unit: Option<String>,
    pub higher_is_better: bool,
}

/// The best configuration of one campaign: one device, one set of constants.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub device: DeviceProfile,
    /// Every constant of the campaign (the spec's, with those it was tuned with).
    pub constants: Constants,
    pub config: Config,
    /// The objective's value of `config`.
    pub objective: f64,
    /// The setup digest of the campaign it comes from (`ndtune status`).
    pub setup: String,
    /// How many configurations the campaign measured.
    pub measured: usize,
    /// The campaign's best measured configurations, best first (at most [`RANKED`]), with
    /// their objective's values: what a size between two tuned ones is picked from.
    #[serde(default)]
    pub ranked: Vec<Ranked>,
    /// With several objectives, the campaign's Pareto front: the measured configurations no
    /// other beats in every objective, best by the first objective first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub front: Vec<FrontMember>,
}

/// A configuration on an entry's front, with each objective's value (the wisdom's objectives'
/// order).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FrontMember {
    pub config: Config,
    pub values: Vec<f64>,
}

/// One measured configuration of a campaign and its objective's value.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ranked {
    pub config: Config,
    pub objective: f64,
}

/// How many of a campaign's best configurations an entry keeps.
pub const RANKED: usize = 64;

/// Why a wisdom file cannot be used; each names the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WisdomError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}:{line}:{column}: not a wisdom file: {message}")]
    Corrupt {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: wisdom schema {found} is newer than this ndtune reads (up to {SCHEMA}); read it with a newer ndtune or export it again")]
    Newer { path: String, found: u32 },
    #[error("{path}: no kernel `{kernel}` in this wisdom (it holds {have})")]
    NoKernel {
        path: String,
        kernel: String,
        have: String,
    },
    #[error("{path}: kernel `{kernel}`: {message}")]
    Kernel {
        path: String,
        kernel: String,
        message: String,
    },
}

impl Wisdom {
    /// Reads and checks a wisdom file.
    pub fn load(path: &Path) -> Result<Wisdom, WisdomError> {
        let shown = path.display().to_string();
        let text = ndtune_spec::read_text(path, MAX_BYTES, "wisdom file").map_err(|e| {
            WisdomError::Read {
                path: shown.clone(),
                message: e.message,
            }
        })?;
        Wisdom::parse(&text, &shown)
    }

    /// Checks wisdom text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Wisdom, WisdomError> {
        let corrupt = |e: serde_json::Error| WisdomError::Corrupt {
            path: path.to_string(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        };
        // The schema first: a newer file may hold what this version cannot parse.
        #[derive(Deserialize)]
        struct Version {
            schema: u32,
        }
        let version: Version = serde_json::from_str(text).map_err(corrupt)?;
        if version.schema > SCHEMA {
            return Err(WisdomError::Newer {
                path: path.to_string(),
                found: version.schema,
            });
        }
        let wisdom: Wisdom = serde_json::from_str(text).map_err(corrupt)?;
        for k in &wisdom.kernels {
            if let Some(e) = k.entries.iter().find(|e| !e.objective.is_finite()) {
                return Err(WisdomError::Kernel {
                    path: path.to_string(),
                    kernel: k.kernel.clone(),
                    message: format!("an entry's objective is {}", e.objective),
                });
            }
        }
        Ok(wisdom)
    }

    /// The kernel `name`'s wisdom.
    pub fn kernel(&self, name: &str, path: &str) -> Result<&KernelWisdom, WisdomError> {
        self.kernels
            .iter()
            .find(|k| k.kernel == name)
            .ok_or_else(|| WisdomError::NoKernel {
                path: path.to_string(),
                kernel: name.to_string(),
                have: match self.kernels.len() {
                    0 => "no kernel".into(),
                    _ => self
                        .kernels
                        .iter()
                        .map(|k| format!("`{}`", k.kernel))
                        .collect::<Vec<_>>()
                        .join(", "),
                },
            })
    }

    /// The file's JSON, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("wisdom serialises")
    }
}

/// What [`from_store`] left out, for the user to know.
#[derive(Debug, Default, PartialEq)]
pub struct LeftOut {
    /// Campaigns of the kernel's name but another source (stale: the source changed since).
    pub other_source: usize,
    /// Campaigns with no measured configuration of the spec's parameters.
    pub nothing_measured: usize,
}

/// The wisdom of `spec`'s kernel (its source `source`) from `store`: for each device and set
/// of constants, the best measured configuration by the spec's objective over every setup of
/// that campaign. Only campaigns of this very source count (a changed kernel's results would
/// be silently wrong), and only configurations of the spec's parameters and values.
pub fn from_store(
    store: &Store,
    spec: &Spec,
    source: &KernelSource,
) -> Result<(KernelWisdom, LeftOut), StoreError> {
    let source_hash = ndtune_store::source_hash(&source.text);
    let mut left = LeftOut::default();
    // (device fingerprint, constants) -> the best entry so far, with its cost; and every
    // configuration measured there, by its best cost over the setups.
    let mut best: BTreeMap<(String, String), (f64, Entry)> = BTreeMap::new();
    let mut measured_at: BTreeMap<(String, String), BTreeMap<String, (f64, Ranked)>> =
        BTreeMap::new();
    // With several objectives, each configuration's values of them (its first setup's).
    let mut values_at: BTreeMap<(String, String), BTreeMap<String, FrontMember>> = BTreeMap::new();
    for g in store.groups()? {
        if g.kernel != spec.kernel.name {
            continue;
        }
        if g.source_hash != source_hash {
            left.other_source += 1;
            continue;
        }
        let Some(device) = store.device(&g.device)? else {
            continue;
        };
        let records = store.records(&g)?;
        let measured = records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Measured(_)))
            .count();
        let mut found = false;
        for r in &records {
            let Some((cost, value)) = scored(spec, &g.constants, &r.key.config, &r.outcome) else {
                continue;
            };
            found = true;
            let key = (g.device.clone(), constants_key(&g.constants));
            if let Some(values) = all_values(spec, &g.constants, &r.key.config, &r.outcome) {
                values_at
                    .entry(key.clone())
                    .or_default()
                    .entry(ndtune_core::config_key(&r.key.config))
                    .or_insert(FrontMember {
                        config: r.key.config.clone(),
                        values,
                    });
            }
            let all = measured_at.entry(key.clone()).or_default();
            let config_key = ndtune_core::config_key(&r.key.config);
            if all.get(&config_key).is_none_or(|(c, _)| cost < *c) {
                let ranked = Ranked {
                    config: r.key.config.clone(),
                    objective: value,
                };
                all.insert(config_key, (cost, ranked));
            }
            if best.get(&key).is_none_or(|(c, _)| cost < *c) {
                let entry = Entry {
                    device: device.clone(),
                    constants: g.constants.clone(),
                    config: r.key.config.clone(),
                    objective: value,
                    setup: g.setup.clone(),
                    measured,
                    ranked: Vec::new(),
                    front: Vec::new(),
                };
                best.insert(key, (cost, entry));
            }
        }
        if !found {
            left.nothing_measured += 1;
        }
    }
    let defines = spec
        .problem
        .constants
        .keys()
        .chain(spec.codec.names())
        .filter(|n| source.mentions(n))
        .cloned()
        .collect();
    let entries = best
        .into_iter()
        .map(|(key, (_, mut e))| {
            let all = measured_at.remove(&key).unwrap_or_default().into_values();
            e.ranked = ranked(all.collect());
            let values = values_at.remove(&key).unwrap_or_default().into_values();
            e.front = front(spec, values.collect());
            e
        })
        .collect();
    Ok((kernel_wisdom(spec, defines, entries), left))
}

/// The wisdom of `spec`'s kernel holding `entries`, whose source turns `defines` into `-D`s.
pub fn kernel_wisdom(spec: &Spec, defines: Vec<String>, entries: Vec<Entry>) -> KernelWisdom {
    let metrics = &spec.metrics;
    let objective = metrics.objective();
    KernelWisdom {
        kernel: spec.kernel.name.clone(),
        spec_file: spec.path.file_name().map_or_else(
            || spec.path.display().to_string(),
            |n| n.to_string_lossy().into(),
        ),
        spec: spec.text().to_string(),
        defines,
        objective: ObjectiveInfo {
            metric: objective.metric.clone(),
            unit: metrics.unit(&objective.metric).map(str::to_string),
            higher_is_better: objective.higher_is_better,
        },
        more_objectives: metrics
            .definitions()
            .more_objectives
            .iter()
            .map(|o| ObjectiveInfo {
                metric: o.metric.clone(),
                unit: metrics.unit(&o.metric).map(str::to_string),
                higher_is_better: o.higher_is_better,
            })
            .collect(),
        entries,
    }
}

/// With several objectives, each objective's value of a configuration of `spec`'s parameters
/// with this outcome; `None` with one, or where one has none.
fn all_values(
    spec: &Spec,
    constants: &Constants,
    config: &Config,
    outcome: &Outcome,
) -> Option<Vec<f64>> {
    let metrics = &spec.metrics;
    if !metrics.several() || spec.codec.point(config).is_err() {
        return None;
    }
    metrics.objective_values(&metrics.evaluate(&Inputs::new(constants, config, outcome)))
}

/// The Pareto front of `measured` by `spec`'s objectives, best by the first first.
fn front(spec: &Spec, measured: Vec<FrontMember>) -> Vec<FrontMember> {
    let values: Vec<Vec<f64>> = measured.iter().map(|m| m.values.clone()).collect();
    spec.metrics
        .front(&values)
        .into_iter()
        .map(|i| measured[i].clone())
        .collect()
}

/// The entry of a campaign Kernel Tuner measured on `device` (its cache file): the best of the
/// configurations of `spec`'s parameters by the spec's objective, and the [`RANKED`] best. `None`
/// where none of them was measured.
pub fn entry_from_kt_cache(
    cache: &KtCache,
    spec: &Spec,
    device: DeviceProfile,
    origin: &str,
) -> Option<Entry> {
    let constants = &spec.problem.constants;
    let all: Vec<(f64, Ranked)> = cache
        .entries
        .iter()
        .filter_map(|(config, outcome)| {
            let (cost, objective) = scored(spec, constants, config, outcome)?;
            let config = config.clone();
            Some((cost, Ranked { config, objective }))
        })
        .collect();
    let measured = all.len();
    let ranked = ranked(all);
    let best = ranked.first()?.clone();
    Some(Entry {
        device,
        constants: constants.clone(),
        config: best.config,
        objective: best.objective,
        setup: origin.to_string(),
        measured,
        ranked,
        front: Vec::new(),
    })
}

/// The cost (lower is better) and the objective's value of a configuration of `spec`'s
/// parameters with this outcome; `None` where it has none (not measured, another space).
fn scored(
    spec: &Spec,
    constants: &Constants,
    config: &Config,
    outcome: &Outcome,
) -> Option<(f64, f64)> {
    spec.codec.point(config).ok()?;
    let metrics = &spec.metrics;
    let value = metrics
        .evaluate(&Inputs::new(constants, config, outcome))
        .objective?;
    Some((metrics.objective().cost(value)?, value))
}

/// A campaign's configurations with their costs, best first, at most [`RANKED`].
fn ranked(mut all: Vec<(f64, Ranked)>) -> Vec<Ranked> {
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    all.into_iter().take(RANKED).map(|(_, r)| r).collect()
}

/// A wisdom file holding `kernels`, by this ndtune.
pub fn wisdom(kernels: Vec<KernelWisdom>) -> Wisdom {
    Wisdom {
        schema: SCHEMA,
        ndtune: env!("CARGO_PKG_VERSION").to_string(),
        kernels,
    }
}

fn constants_key(c: &Constants) -> String {
    serde_json::to_string(c).expect("constants serialise")
}

/// The device model an entry is for: what a run-time device must share with it for its
/// entries to be `exact` or `nearest` (the driver version may differ).
pub fn same_model(a: &DeviceProfile, b: &DeviceProfile) -> bool {
    model_of(a) == model_of(b)
}

/// What tells a device model apart ([`same_model`]), as a key for hashing.
pub fn model_of(d: &DeviceProfile) -> (&str, &str, ndtune_device::DeviceType, u64) {
    (&d.name, &d.vendor, d.device_type, d.compute_units)
}

/// Where a spec in a wisdom file is said to be, for its messages and relative names.
fn spec_path(k: &KernelWisdom, wisdom_path: &str) -> PathBuf {
    PathBuf::from(format!("{wisdom_path}#{}", k.spec_file))
}

#[cfg(test)]
mod tests;
