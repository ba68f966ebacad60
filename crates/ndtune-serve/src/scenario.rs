//! A scenario as a client describes it, and its features: either the features themselves, or a
//! device (a name the service knows, or a whole profile), a kernel (its OpenCL source, or the
//! hash the service gave for a source it has seen) and a dataset, from which the service computes
//! them (Cummins et al. 2016 §3.2).

use ndtune_core::text::hex;
use ndtune_device::DeviceProfile;
use ndtune_learn::features::{
    client_sandbox, dataset_features, device_features, request_kernel_features, Dataset,
};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock};

use crate::limits::LimitOverrides;

/// The body of `/v1/predict`, and the `scenario` of `/v1/observe`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRequest {
    /// Every feature by name.
    pub features: Option<BTreeMap<String, f64>>,
    /// A device name, or a `DeviceProfile` object.
    pub device: Option<serde_json::Value>,
    pub kernel: Option<KernelRequest>,
    pub dataset: Option<DatasetRequest>,
    /// Device limits replacing those of the features.
    #[serde(default)]
    pub limits: LimitOverrides,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRequest {
    /// OpenCL C source.
    pub source: Option<String>,
    /// Build options of the source.
    #[serde(default)]
    pub options: String,
    /// The `kernel_hash` a prediction answered for a source sent before.
    pub hash: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetRequest {
    pub rows: u64,
    pub cols: u64,
    #[serde(default = "float")]
    pub input: String,
    #[serde(default = "float")]
    pub output: String,
    /// North, south, east, west.
    #[serde(default)]
    pub border: [u32; 4],
}

fn float() -> String {
    "float".into()
}

/// A scenario's features by name, and the hash of its kernel where a source was sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub features: BTreeMap<String, f64>,
    pub kernel_hash: Option<String>,
}

/// Why a request's scenario has no features.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// The request is not a scenario (HTTP 400).
    #[error("{0}")]
    Invalid(String),
    /// It names something the service does not know (HTTP 422).
    #[error("{0}")]
    Unknown(String),
    /// This service cannot do what it asks (HTTP 503): a kernel's source where the machine
    /// cannot wall its compile off from the server's files.
    #[error("{0}")]
    Unavailable(String),
}

/// Turns requests into features; remembers the kernels it has seen so that clients can send a
/// hash instead of the source.
pub struct Resolver {
    devices: Vec<DeviceProfile>,
    kernels: RwLock<HashMap<String, KernelFeatures>>,
}

/// A kernel's features by name, shared by every request that names it.
type KernelFeatures = Arc<Vec<(String, f64)>>;

/// The most kernel sources remembered; beyond it the oldest are not dropped but new ones are not
/// kept, so a client flooding sources cannot grow the service without bound.
const MAX_KERNELS: usize = 10_000;

impl Resolver {
    /// A resolver that knows `devices` by name (live devices and built-in profiles).
    pub fn new(devices: Vec<DeviceProfile>) -> Resolver {
        Resolver {
            devices,
            kernels: RwLock::default(),
        }
    }

    /// The names of the devices it knows.
    pub fn device_names(&self) -> Vec<&str> {
        self.devices.iter().map(|d| d.name.as_str()).collect()
    }

    /// Whether resolving `req` runs clang (a kernel source not seen yet): callers keep that off
    /// the threads that answer requests.
    pub fn compiles(&self, req: &ScenarioRequest) -> bool {
        req.features.is_none()
            && req.kernel.as_ref().is_some_and(|k| {
                k.source.is_some()
                    && !self
                        .kernels
                        .read()
                        .unwrap_or_else(PoisonError::into_inner)
                        .contains_key(&kernel_hash(k.source.as_deref().unwrap_or(""), &k.options))
            })
    }

    pub fn resolve(&self, req: &ScenarioRequest) -> Result<Resolved, ScenarioError> {
        let invalid = |m: &str| Err(ScenarioError::Invalid(m.to_string()));
        if let Some(features) = &req.features {
            if req.device.is_some() || req.kernel.is_some() || req.dataset.is_some() {
                return invalid(
                    "give either `features` or `device`, `kernel` and `dataset`, not both",
                );
            }
            return Ok(Resolved {
                features: features.clone(),
                kernel_hash: None,
            });
        }
        let (Some(device), Some(kernel), Some(dataset)) = (&req.device, &req.kernel, &req.dataset)
        else {
            return invalid(
                "a scenario needs `features`, or all of `device`, `kernel` and `dataset`",
            );
        };
        let profile = self.device(device)?;
        let dataset = Dataset {
            rows: dataset.rows,
            cols: dataset.cols,
            input: dataset.input.clone(),
            output: dataset.output.clone(),
            border: dataset.border,
        };
        if dataset.rows == 0 || dataset.cols == 0 {
            return invalid("`dataset`: `rows` and `cols` must be positive");
        }
        let (hash, kernel_values) = self.kernel(kernel)?;
        let device_and_data = scenario_features_without_kernel(&profile, &dataset)?;
        let mut features: BTreeMap<String, f64> = device_and_data.into_iter().collect();
        features.extend(kernel_values.iter().cloned());
        Ok(Resolved {
            features,
            kernel_hash: Some(hash),
        })
    }

    /// A request's `device`: a name it knows (or a built-in profile's), or a profile object.
    pub fn device(&self, device: &serde_json::Value) -> Result<DeviceProfile, ScenarioError> {
        match device {
            serde_json::Value::String(name) => self
                .devices
                .iter()
                .find(|d| d.name.eq_ignore_ascii_case(name.trim()))
                .cloned()
                .or_else(|| ndtune_device::builtin::find(name.trim()))
                .ok_or_else(|| {
                    ScenarioError::Unknown(format!(
                        "unknown device `{name}`; known: {} (or built-in profiles {}), or send a whole profile object",
                        self.device_names().join(", "),
                        ndtune_device::builtin::keys().join(", ")
                    ))
                }),
            serde_json::Value::Object(_) => {
                DeviceProfile::from_json(&device.to_string(), "`device`")
                    .map_err(|e| ScenarioError::Invalid(e.to_string()))
            }
            _ => Err(ScenarioError::Invalid(
                "`device`: a device name or a profile object".into(),
            )),
        }
    }

    fn kernel(&self, kernel: &KernelRequest) -> Result<(String, KernelFeatures), ScenarioError> {
        match (&kernel.source, &kernel.hash) {
            (Some(source), None) => {
                let hash = kernel_hash(source, &kernel.options);
                if let Some(hit) = self
                    .kernels
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&hash)
                {
                    return Ok((hash, hit.clone()));
                }
                client_sandbox()
                    .map_err(|e| ScenarioError::Unavailable(format!("`kernel.source`: {e}")))?;
                let values = Arc::new(
                    request_kernel_features(source, &kernel.options)
                        .map_err(|e| ScenarioError::Invalid(format!("`kernel`: {e}")))?,
                );
                let mut kernels = self.kernels.write().unwrap_or_else(PoisonError::into_inner);
                if kernels.len() < MAX_KERNELS {
                    kernels.insert(hash.clone(), values.clone());
                }
                Ok((hash, values))
            }
            (None, Some(hash)) => self
                .kernels
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(hash)
                .map(|v| (hash.clone(), v.clone()))
                .ok_or_else(|| {
                    ScenarioError::Unknown(format!(
                        "unknown kernel hash `{hash}`: send the kernel's `source` once"
                    ))
                }),
            _ => Err(ScenarioError::Invalid(
                "`kernel`: give either `source` (and `options`) or `hash`".into(),
            )),
        }
    }
}

/// Device and dataset features of a scenario (the dataset's types checked).
fn scenario_features_without_kernel(
    profile: &DeviceProfile,
    dataset: &Dataset,
) -> Result<Vec<(String, f64)>, ScenarioError> {
    dataset
        .check_types()
        .map_err(|e| ScenarioError::Invalid(format!("`dataset`: {e}")))?;
    let mut features = device_features(profile);
    features.extend(dataset_features(dataset));
    Ok(features)
}

/// The hash a kernel source and its build options are known by.
pub fn kernel_hash(source: &str, options: &str) -> String {
    let mut h = Sha256::new();
    h.update((options.len() as u64).to_le_bytes());
    h.update(options);
    h.update(source);
    hex(&h.finalize()[..12])
}

/// The id of a scenario: a hash of its features (names and values), independent of order.
pub fn scenario_id(features: &BTreeMap<String, f64>) -> String {
    let mut h = Sha256::new();
    for (name, value) in features {
        h.update((name.len() as u64).to_le_bytes());
        h.update(name);
        h.update(value.to_bits().to_le_bytes());
    }
    hex(&h.finalize()[..12])
}
