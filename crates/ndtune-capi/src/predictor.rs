//! What a predictor does behind the C functions: in process (a loaded model, features computed
//! here) or through a running service (HTTP), each with caches so that a repeated call for the
//! same device and kernel costs neither OpenCL queries nor clang.

use crate::{cl_device_id, Failure, Status};
use ndtune_device::DeviceProfile;
use ndtune_learn::features::{
    dataset_features, device_features, feature_names, kernel_features, Dataset,
};
use ndtune_learn::model::Model;
use ndtune_serve::client::{Address, Client};
use ndtune_serve::limits::{LimitOverrides, Limits};
use serde_json::{json, Value};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::Hasher;
use std::path::Path;
use std::time::Duration;

/// How long a request to the service may wait for each read or write (the first request for a
/// kernel runs clang there).
const SERVICE_TIMEOUT: Duration = Duration::from_secs(30);

/// One launch a prediction or an observation is about: `source` and `options` as the caller's
/// bytes (checked to be UTF-8 only when they are not cached yet).
pub struct Scenario<'a> {
    pub device: cl_device_id,
    pub source: &'a [u8],
    pub options: &'a [u8],
    pub dataset: Dataset,
}

pub enum Predictor {
    Local(Box<Local>),
    Remote(Box<Remote>),
}

impl Predictor {
    pub fn predict(&mut self, s: &Scenario) -> Result<[u64; 2], Failure> {
        match self {
            Predictor::Local(l) => l.predict(s),
            Predictor::Remote(r) => r.predict(s),
        }
    }

    /// Reports a measured runtime (`None`: the device refused the size) of `local`.
    pub fn observe(
        &mut self,
        s: &Scenario,
        local: [u64; 2],
        runtime_ms: Option<f64>,
    ) -> Result<(), Failure> {
        match self {
            Predictor::Local(_) => Err(Failure::new(
                Status::NDTUNE_ERR_UNSUPPORTED,
                "an in-process predictor keeps no observations: report them to a service \
                 (a predictor from ndtune_predictor_connect)",
            )),
            Predictor::Remote(r) => r.observe(s, local, runtime_ms),
        }
    }
}

/// The profile of a device the caller holds, read once per predictor and device.
fn profile(id: cl_device_id) -> Result<DeviceProfile, Failure> {
    ndtune_cl::profile_of(id).map_err(|e| {
        Failure::new(
            Status::NDTUNE_ERR_OPENCL,
            format!("cannot read the device: {e}"),
        )
    })
}

/// Values keyed by a kernel's source and build options. The key is a SipHash of the bytes; an
/// entry matches only when its source and options are equal to the caller's, so a collision
/// costs a comparison, never a wrong answer.
struct SourceCache<V> {
    buckets: HashMap<u64, Vec<SourceEntry<V>>>,
}

struct SourceEntry<V> {
    source: String,
    options: String,
    value: V,
}

impl<V> SourceCache<V> {
    fn new() -> SourceCache<V> {
        SourceCache {
            buckets: HashMap::new(),
        }
    }

    /// The entry of `source` and `options`, made by `make` (with them as UTF-8) when missing.
    fn entry(
        &mut self,
        source: &[u8],
        options: &[u8],
        make: impl FnOnce(&str, &str) -> Result<V, Failure>,
    ) -> Result<&mut SourceEntry<V>, Failure> {
        let mut h = DefaultHasher::new();
        h.write_usize(options.len());
        h.write(options);
        h.write(source);
        let bucket = self.buckets.entry(h.finish()).or_default();
        let found = bucket
            .iter()
            .position(|e| e.source.as_bytes() == source && e.options.as_bytes() == options);
        let i = match found {
            Some(i) => i,
            None => {
                let source = utf8(source, "kernel_source")?;
                let options = utf8(options, "build_options")?;
                let value = make(source, options)?;
                bucket.push(SourceEntry {
                    source: source.to_string(),
                    options: options.to_string(),
                    value,
                });
                bucket.len() - 1
            }
        };
        Ok(&mut bucket[i])
    }
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, Failure> {
    std::str::from_utf8(bytes).map_err(|e| Failure::argument(format!("`{what}` is not UTF-8: {e}")))
}

/// Where one model feature comes from: the n-th device, kernel or dataset value.
#[derive(Clone, Copy)]
enum Slot {
    Device(usize),
    Kernel(usize),
    Data(usize),
}

/// A model in this process. Device and kernel values are kept in the order the model needs them,
/// so a call only adds the dataset's and reads the row off.
pub struct Local {
    model: Model,
    slots: Vec<Slot>,
    /// The model's device and kernel feature names, in model order.
    device_names: Vec<String>,
    kernel_names: Vec<String>,
    devices: HashMap<usize, LocalDevice>,
    kernels: SourceCache<Vec<f64>>,
    row: Vec<f64>,
}

struct LocalDevice {
    /// `device_names`' values.
    values: Vec<f64>,
    /// Every device feature by name (the limits read some).
    features: Vec<(String, f64)>,
}

fn model_error(message: impl Into<String>) -> Failure {
    Failure::new(Status::NDTUNE_ERR_MODEL, message)
}

/// The values of `names` among `features`; a name missing there is a model this ndtune cannot
/// feed.
fn pick(names: &[String], features: &[(String, f64)]) -> Result<Vec<f64>, Failure> {
    names
        .iter()
        .map(|n| {
            features
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    model_error(format!(
                        "the model needs feature `{n}`, which this ndtune does not compute: train it again"
                    ))
                })
        })
        .collect()
}

impl Local {
    pub fn load(path: &Path) -> Result<Local, Failure> {
        let model = Model::load(path).map_err(|e| model_error(e.to_string()))?;
        let data_names: Vec<String> = feature_names()
            .into_iter()
            .filter(|n| n.starts_with("f_data_"))
            .collect();
        let (mut device_names, mut kernel_names) = (Vec::new(), Vec::new());
        let mut slots = Vec::with_capacity(model.feature_names.len());
        for name in &model.feature_names {
            let slot = if name.starts_with("f_dev_") {
                device_names.push(name.clone());
                Slot::Device(device_names.len() - 1)
            } else if name.starts_with("f_ker_") {
                kernel_names.push(name.clone());
                Slot::Kernel(kernel_names.len() - 1)
            } else if let Some(i) = data_names.iter().position(|n| n == name) {
                Slot::Data(i)
            } else {
                return Err(model_error(format!(
                    "{}: feature `{name}` is none this ndtune computes: train the model again",
                    path.display()
                )));
            };
            slots.push(slot);
        }
        Ok(Local {
            row: Vec::with_capacity(slots.len()),
            model,
            slots,
            device_names,
            kernel_names,
            devices: HashMap::new(),
            kernels: SourceCache::new(),
        })
    }

    fn predict(&mut self, s: &Scenario) -> Result<[u64; 2], Failure> {
        let device = match self.devices.entry(s.device as usize) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let features = device_features(&profile(s.device)?);
                e.insert(LocalDevice {
                    values: pick(&self.device_names, &features)?,
                    features,
                })
            }
        };
        let kernel_names = &self.kernel_names;
        let kernel = &self
            .kernels
            .entry(s.source, s.options, |source, options| {
                let features = kernel_features(source, options).map_err(|e| {
                    Failure::new(
                        Status::NDTUNE_ERR_KERNEL,
                        format!("cannot extract the kernel's features: {e}"),
                    )
                })?;
                pick(kernel_names, &features)
            })?
            .value;
        let data = dataset_features(&s.dataset);
        self.row.clear();
        self.row.extend(self.slots.iter().map(|slot| match *slot {
            Slot::Device(i) => device.values[i],
            Slot::Kernel(i) => kernel[i],
            Slot::Data(i) => data[i].1,
        }));
        let get = |name: &str| {
            let from = if name.starts_with("f_data_") {
                &data
            } else {
                &device.features
            };
            from.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
        };
        let limits = Limits::from_features(get, &LimitOverrides::default())
            .map_err(|e| Failure::new(Status::NDTUNE_ERR_MODEL, e))?;
        let p = self
            .model
            .predict_row(&self.row, |wg| limits.allows(wg))
            .map_err(|e| model_error(e.to_string()))?
            .ok_or_else(|| {
                Failure::new(
                    Status::NDTUNE_ERR_NO_LEGAL_SIZE,
                    format!(
                        "none of the {} work-group sizes the model knows is legal here \
                         (at most {} work-items, {:?} per dimension, {} bytes of local memory \
                         for the tile)",
                        self.model.ranking.len(),
                        limits.max_work_group_size,
                        limits.max_work_item_sizes,
                        limits.local_mem_size
                    ),
                )
            })?;
        Ok([p.wg.0, p.wg.1])
    }
}

/// A running service. The device goes to it as a whole profile (the service needs no device of
/// its own), the kernel as its source the first time and as the hash the service answered
/// afterwards.
pub struct Remote {
    address: String,
    client: Client,
    devices: HashMap<usize, Value>,
    /// The `kernel_hash` the service gave for each source, once it gave one.
    kernels: SourceCache<Option<String>>,
}

fn service_error(message: impl Into<String>) -> Failure {
    Failure::new(Status::NDTUNE_ERR_SERVICE, message)
}

fn unreachable(address: &str, e: std::io::Error) -> Failure {
    service_error(format!("cannot reach the service at {address}: {e}"))
}

impl Remote {
    /// A client of the service at `address`, which must answer `GET /v1/health`.
    pub fn connect(address: &str) -> Result<Remote, Failure> {
        let parsed = Address::parse(address).map_err(Failure::argument)?;
        let mut remote = Remote {
            address: address.trim().to_string(),
            client: Client::new(parsed, SERVICE_TIMEOUT),
            devices: HashMap::new(),
            kernels: SourceCache::new(),
        };
        let response = remote
            .client
            .get("/v1/health")
            .map_err(|e| unreachable(&remote.address, e))?;
        if response.status != 200 {
            return Err(service_error(format!(
                "{}: GET /v1/health answered HTTP {}: is it an ndtune service?",
                remote.address, response.status
            )));
        }
        Ok(remote)
    }

    fn predict(&mut self, s: &Scenario) -> Result<[u64; 2], Failure> {
        let answer = self.send(s, "/v1/predict", |scenario| scenario)?;
        let local = answer["local"]
            .as_array()
            .filter(|a| a.len() == 2)
            .and_then(|a| Some([a[0].as_u64()?, a[1].as_u64()?]))
            .filter(|l| l[0] > 0 && l[1] > 0)
            .ok_or_else(|| {
                service_error(format!(
                    "{}: an answer without a `local` size: {answer}",
                    self.address
                ))
            })?;
        Ok(local)
    }

    fn observe(
        &mut self,
        s: &Scenario,
        local: [u64; 2],
        runtime_ms: Option<f64>,
    ) -> Result<(), Failure> {
        self.send(s, "/v1/observe", |scenario| {
            let mut body = json!({"scenario": scenario, "local": local});
            match runtime_ms {
                Some(t) => body["runtime_ms"] = json!(t),
                None => body["refused"] = json!(true),
            }
            body
        })
        .map(drop)
    }

    /// Posts to `path` the body `wrap` makes of the scenario object; answers its JSON. A kernel
    /// hash the service no longer knows (it was restarted) is replaced by the source once.
    fn send(
        &mut self,
        s: &Scenario,
        path: &str,
        wrap: impl Fn(Value) -> Value,
    ) -> Result<Value, Failure> {
        let Remote {
            address,
            client,
            devices,
            kernels,
        } = self;
        let device = match devices.entry(s.device as usize) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(serde_json::to_value(profile(s.device)?).expect("a profile serialises"))
            }
        };
        let kernel = kernels.entry(s.source, s.options, |_, _| Ok(None))?;
        let d = &s.dataset;
        let dataset = json!({
            "rows": d.rows, "cols": d.cols, "input": d.input, "output": d.output, "border": d.border,
        });
        loop {
            let kernel_json = match &kernel.value {
                Some(hash) => json!({"hash": hash}),
                None => json!({"source": kernel.source, "options": kernel.options}),
            };
            let body = wrap(json!({"device": device, "kernel": kernel_json, "dataset": dataset}));
            let response = client
                .post_json(path, &body)
                .map_err(|e| unreachable(address, e))?;
            let answer = response
                .json()
                .map_err(|e| service_error(format!("{address}: {e}")))?;
            if response.status == 200 {
                if let Some(hash) = answer["kernel_hash"].as_str() {
                    kernel.value = Some(hash.to_string());
                }
                return Ok(answer);
            }
            let message = answer["error"].as_str().unwrap_or_default();
            if kernel.value.is_some()
                && response.status == 422
                && message.starts_with("unknown kernel hash")
            {
                kernel.value = None;
                continue;
            }
            return Err(service_error(format!(
                "{address}: POST {path}: HTTP {}: {message}",
                response.status
            )));
        }
    }
}
