//! The service without HTTP: the current model (swapped atomically, never blocking a
//! prediction), predictions, observations and online learning.
//!
//! The model in use is a [`Current`] behind an [`ArcSwap`]: a prediction loads it once and keeps
//! it to the end, whatever is swapped in meanwhile. Swaps (a model file reloaded, a model trained
//! again) are serialised by one lock that predictions never take. A model trained again starts
//! from the model file's own training rows (its `base`) and adds one row per observed scenario:
//! the local size with the lowest mean runtime observed there. A retraining that finishes after
//! the model file was reloaded is dropped, so it never overwrites a newer file.

use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::scenario::{scenario_id, Resolver, ScenarioError, ScenarioRequest};
use arc_swap::ArcSwap;
use ndtune_learn::model::{Model, TrainingRow};
use ndtune_learn::oracle::Wg;
use ndtune_store::{Observation, Store};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The model predictions use now.
pub struct Current {
    pub model: Arc<Model>,
    /// The model as loaded from its file: what retraining starts from.
    pub base: Arc<Model>,
    /// Counts every model swapped in since the service started, from 1.
    pub version: u64,
    /// How many observations (the first ones, in order of arrival) it learnt from.
    pub learnt: usize,
}

/// What the service is configured with.
pub struct Options {
    pub model_path: PathBuf,
    /// Where observations are kept (none: in memory only).
    pub store: Option<Store>,
    /// Devices known by name (live devices, built-in profiles).
    pub devices: Vec<ndtune_device::DeviceProfile>,
    /// Train again once this many observations arrived that the model has not learnt from.
    pub retrain_after: usize,
    pub seed: u64,
}

/// A request the service cannot answer, with the HTTP status that says why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

impl Refusal {
    pub fn bad_request(message: impl Into<String>) -> Refusal {
        Refusal {
            status: 400,
            message: message.into(),
        }
    }

    pub fn unprocessable(message: impl Into<String>) -> Refusal {
        Refusal {
            status: 422,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> Refusal {
        Refusal {
            status: 500,
            message: message.into(),
        }
    }
}

impl From<ScenarioError> for Refusal {
    fn from(e: ScenarioError) -> Refusal {
        match e {
            ScenarioError::Invalid(m) => Refusal::bad_request(m),
            ScenarioError::Unknown(m) => Refusal::unprocessable(m),
        }
    }
}

/// The answer to `/v1/predict`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredictResponse {
    /// `[wc, wr]`: columns, rows.
    pub local: [u64; 2],
    /// The classifier's kind.
    pub model: String,
    pub model_version: u64,
    /// The classifier's own size was not legal here; this is the nearest legal one.
    pub fallback_used: bool,
    /// Microseconds the service took, from the parsed request to the answer.
    pub micros: u64,
    /// The id to report observations of this scenario by.
    pub scenario: String,
    /// The hash to send instead of the kernel source next time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_hash: Option<String>,
    pub limits: Limits,
    /// Features the request sent that neither the model nor the legality check reads: accepted
    /// and ignored (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_features: Vec<String>,
}

/// The answer to `/v1/observe`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObserveResponse {
    pub scenario: String,
    /// The observation's id in the store (none without a store).
    pub stored: Option<i64>,
    /// Observations received so far.
    pub observations: usize,
    /// Observations the model in use has not learnt from.
    pub pending: usize,
}

/// What a client observed for one local size of a scenario.
pub struct ObservedRun {
    pub local: [u64; 2],
    /// `None`: the device refused the size.
    pub runtime_ms: Option<f64>,
}

/// Where an observation's scenario comes from.
pub enum ObservedScenario {
    /// The `scenario` id a prediction answered.
    Id(String),
    Request(Box<ScenarioRequest>),
}

/// Scenario ids predicted recently, with their features, so observations can name them by id.
#[derive(Default)]
struct Recent {
    features: HashMap<String, Arc<BTreeMap<String, f64>>>,
    order: VecDeque<String>,
}

/// How many predicted scenarios are remembered for observations by id.
const RECENT: usize = 65_536;

pub struct Service {
    current: ArcSwap<Current>,
    update: Mutex<()>,
    next_version: AtomicU64,
    resolver: Resolver,
    store: Option<Mutex<Store>>,
    observations: Mutex<Vec<Observation>>,
    retraining: AtomicBool,
    retrain_after: usize,
    recent: Mutex<Recent>,
    model_path: PathBuf,
    /// The version of the model file last loaded (or tried).
    file_seen: Mutex<Option<FileVersion>>,
    seed: u64,
    pub metrics: Metrics,
    started: Instant,
}

impl Service {
    /// Loads the model and any observations the store holds.
    pub fn new(options: Options) -> Result<Arc<Service>, String> {
        let file_seen = file_version(&options.model_path);
        let model = Arc::new(Model::load(&options.model_path).map_err(|e| e.to_string())?);
        let observations = match &options.store {
            Some(store) => store.observations().map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        let metrics = Metrics::new();
        metrics.model_version.set(1);
        let service = Arc::new(Service {
            current: ArcSwap::from_pointee(Current {
                model: model.clone(),
                base: model,
                version: 1,
                learnt: 0,
            }),
            update: Mutex::new(()),
            next_version: AtomicU64::new(2),
            resolver: Resolver::new(options.devices),
            store: options.store.map(Mutex::new),
            observations: Mutex::new(observations),
            retraining: AtomicBool::new(false),
            retrain_after: options.retrain_after.max(1),
            recent: Mutex::default(),
            model_path: options.model_path,
            file_seen: Mutex::new(file_seen),
            seed: options.seed,
            metrics,
            started: Instant::now(),
        });
        service.maybe_retrain();
        Ok(service)
    }

    /// The model in use.
    pub fn current(&self) -> Arc<Current> {
        self.current.load_full()
    }

    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    pub fn uptime_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Observations received so far (the store's included).
    pub fn observation_count(&self) -> usize {
        self.observations.lock().expect("observations lock").len()
    }

    /// A legal local size for `req`'s scenario.
    pub fn predict(
        &self,
        req: &ScenarioRequest,
        started: Instant,
    ) -> Result<PredictResponse, Refusal> {
        let resolved = self.resolver.resolve(req)?;
        let current = self.current.load();
        let model = &current.model;
        // Features the request sent that neither the model nor the legality check reads: a
        // client may send more than one model uses (all it knows of a scenario).
        let ignored_features: Vec<String> = match &req.features {
            Some(sent) => sent
                .keys()
                .filter(|n| !model.feature_names.contains(n) && !req.limits.reads(n))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        let row = model
            .feature_names
            .iter()
            .map(|n| {
                resolved.features.get(n).copied().ok_or_else(|| {
                    Refusal::bad_request(format!(
                        "missing feature `{n}` the model needs (it has {} features, `{}` to `{}`)",
                        model.feature_names.len(),
                        model.feature_names.first().map_or("", String::as_str),
                        model.feature_names.last().map_or("", String::as_str),
                    ))
                })
            })
            .collect::<Result<Vec<f64>, Refusal>>()?;
        let limits = Limits::from_features(|n| resolved.features.get(n).copied(), &req.limits)
            .map_err(Refusal::bad_request)?;
        let p = model
            .predict_row(&row, |w| limits.allows(w))
            .ok_or_else(|| {
                Refusal::unprocessable(format!(
                    "no work-group size the model knows is legal here ({} sizes known; limits {})",
                    model.ranking.len(),
                    serde_json::to_string(&limits).expect("limits serialise")
                ))
            })?;
        let id = scenario_id(&resolved.features);
        self.remember(&id, resolved.features);
        Ok(PredictResponse {
            local: [p.wg.0, p.wg.1],
            model: model.classifier.kind().name().to_string(),
            model_version: current.version,
            fallback_used: p.fell_back,
            micros: started.elapsed().as_micros() as u64,
            scenario: id,
            kernel_hash: resolved.kernel_hash,
            limits,
            ignored_features,
        })
    }

    fn remember(&self, id: &str, features: BTreeMap<String, f64>) {
        let mut recent = self.recent.lock().expect("recent lock");
        if recent.features.contains_key(id) {
            return;
        }
        if recent.order.len() == RECENT {
            if let Some(old) = recent.order.pop_front() {
                recent.features.remove(&old);
            }
        }
        recent.order.push_back(id.to_string());
        recent.features.insert(id.to_string(), Arc::new(features));
    }

    /// Records what a client measured; trains again in the background once enough arrived.
    pub fn observe(
        self: &Arc<Self>,
        scenario: &ObservedScenario,
        run: &ObservedRun,
    ) -> Result<ObserveResponse, Refusal> {
        let features: Arc<BTreeMap<String, f64>> = match scenario {
            ObservedScenario::Id(id) => self
                .recent
                .lock()
                .expect("recent lock")
                .features
                .get(id)
                .cloned()
                .ok_or_else(|| {
                    Refusal::unprocessable(format!(
                        "unknown scenario `{id}`: predict it first, or send the scenario itself"
                    ))
                })?,
            ObservedScenario::Request(req) => Arc::new(self.resolver.resolve(req)?.features),
        };
        if run.local.contains(&0) {
            return Err(Refusal::bad_request("`local`: both sizes must be positive"));
        }
        if let Some(t) = run.runtime_ms {
            if !(t.is_finite() && t > 0.0) {
                return Err(Refusal::bad_request(format!(
                    "`runtime_ms`: {t} is not a positive number of milliseconds"
                )));
            }
        }
        let observation = Observation {
            scenario: scenario_id(&features),
            features: features.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            local: run.local,
            runtime_ms: run.runtime_ms,
            received_at: ndtune_store::now_ms(),
        };
        let stored = match &self.store {
            Some(store) => Some(
                store
                    .lock()
                    .expect("store lock")
                    .add_observation(&observation)
                    .map_err(|e| Refusal::internal(format!("cannot store the observation: {e}")))?,
            ),
            None => None,
        };
        let scenario = observation.scenario.clone();
        let observations = {
            let mut all = self.observations.lock().expect("observations lock");
            all.push(observation);
            all.len()
        };
        self.metrics.observations.inc();
        self.maybe_retrain();
        Ok(ObserveResponse {
            scenario,
            stored,
            observations,
            pending: observations.saturating_sub(self.current.load().learnt),
        })
    }

    /// Starts a retraining thread if enough observations are new to the model and none runs.
    fn maybe_retrain(self: &Arc<Self>) {
        let pending = self.observation_count() - self.current.load().learnt;
        if pending < self.retrain_after
            || self
                .retraining
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return;
        }
        let service = self.clone();
        std::thread::spawn(move || {
            service.retrain();
            service.retraining.store(false, Ordering::Release);
            // Observations that arrived while it trained.
            service.maybe_retrain();
        });
    }

    fn retrain(&self) {
        let started = Instant::now();
        let base = self.current.load().base.clone();
        let observations: Vec<Observation> =
            self.observations.lock().expect("observations lock").clone();
        let rows = training_rows(&base.feature_names, &observations);
        let retrained = match base.retrained(&rows, self.seed) {
            Ok(m) => m,
            Err(e) => {
                self.metrics.retrain_failures.inc();
                eprintln!(
                    "serve: training again on {} observations failed: {e}",
                    observations.len()
                );
                return;
            }
        };
        let _swapping = self.update.lock().expect("update lock");
        if !Arc::ptr_eq(&self.current.load().base, &base) {
            eprintln!(
                "serve: a retrained model was dropped: the model file was reloaded meanwhile"
            );
            return;
        }
        let version = self.next_version.fetch_add(1, Ordering::Relaxed);
        self.current.store(Arc::new(Current {
            model: Arc::new(retrained),
            base,
            version,
            learnt: observations.len(),
        }));
        self.metrics.model_version.set(version as i64);
        self.metrics.retrains.inc();
        eprintln!(
            "serve: model version {version}: trained again with {} observed scenarios ({} observations) in {:.2} s",
            rows.len(),
            observations.len(),
            started.elapsed().as_secs_f64()
        );
    }

    /// Loads the model file again and swaps it in; on failure keeps the model in use.
    pub fn reload(self: &Arc<Self>) -> Result<u64, String> {
        *self.file_seen.lock().expect("file lock") = file_version(&self.model_path);
        let model = match Model::load(&self.model_path) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                self.metrics.reload_failures.inc();
                return Err(e.to_string());
            }
        };
        let version = {
            let _swapping = self.update.lock().expect("update lock");
            let version = self.next_version.fetch_add(1, Ordering::Relaxed);
            self.current.store(Arc::new(Current {
                model: model.clone(),
                base: model,
                version,
                learnt: 0,
            }));
            version
        };
        self.metrics.model_version.set(version as i64);
        self.metrics.reloads.inc();
        self.maybe_retrain();
        Ok(version)
    }

    /// Whether the model file is not the one last loaded (or tried): a new file renamed over it,
    /// or the file written in place.
    pub fn model_file_changed(&self) -> bool {
        let now = file_version(&self.model_path);
        now.is_some() && now != *self.file_seen.lock().expect("file lock")
    }

    /// Whether observations are written to a store.
    pub fn stores(&self) -> bool {
        self.store.is_some()
    }

    pub fn model_path(&self) -> &std::path::Path {
        &self.model_path
    }
}

/// What tells a file's versions apart: modification time, length, inode.
type FileVersion = (std::time::SystemTime, u64, u64);

fn file_version(path: &std::path::Path) -> Option<FileVersion> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

/// One training row per observed scenario whose features cover `names`: the local size with the
/// lowest mean runtime observed there. Scenarios where every size was refused teach nothing.
pub fn training_rows(names: &[String], observations: &[Observation]) -> Vec<TrainingRow> {
    /// Per local size: the sum of the runtimes observed and how many.
    type Sums = BTreeMap<Wg, (f64, u32)>;
    let mut by_scenario: BTreeMap<&str, (&Observation, Sums)> = BTreeMap::new();
    for o in observations {
        let entry = by_scenario
            .entry(o.scenario.as_str())
            .or_insert_with(|| (o, BTreeMap::new()));
        if let Some(t) = o.runtime_ms {
            let sum = entry.1.entry((o.local[0], o.local[1])).or_default();
            sum.0 += t;
            sum.1 += 1;
        }
    }
    by_scenario
        .into_values()
        .filter_map(|(first, sums)| {
            let oracle = sums
                .iter()
                .map(|(wg, (sum, n))| (*wg, sum / f64::from(*n)))
                .min_by(|a, b| a.1.total_cmp(&b.1))?
                .0;
            let features = names
                .iter()
                .map(|n| first.features.iter().find(|(k, _)| k == n).map(|(_, v)| *v))
                .collect::<Option<Vec<f64>>>()?;
            Some(TrainingRow { features, oracle })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(scenario: &str, a: f64, local: [u64; 2], runtime_ms: Option<f64>) -> Observation {
        Observation {
            scenario: scenario.into(),
            features: vec![("f_b".into(), 2.0), ("f_a".into(), a)],
            local,
            runtime_ms,
            received_at: 0,
        }
    }

    #[test]
    fn each_scenario_learns_its_fastest_mean_size_in_the_model_order() {
        let names = vec!["f_a".to_string(), "f_b".to_string()];
        let rows = training_rows(
            &names,
            &[
                obs("s1", 1.0, [8, 8], Some(1.0)),
                obs("s1", 1.0, [16, 4], Some(0.5)),
                obs("s1", 1.0, [16, 4], Some(2.0)), // mean 1.25: slower than 8x8
                obs("s1", 1.0, [32, 8], None),      // refused
                obs("s2", 7.0, [32, 8], None),      // only refused: nothing to learn
                obs("s3", 3.0, [64, 1], Some(4.0)),
            ],
        );
        assert_eq!(
            rows,
            vec![
                TrainingRow {
                    features: vec![1.0, 2.0],
                    oracle: (8, 8)
                },
                TrainingRow {
                    features: vec![3.0, 2.0],
                    oracle: (64, 1)
                },
            ]
        );
        // A model that needs a feature the observations lack learns nothing from them.
        let more = vec!["f_a".to_string(), "f_c".to_string()];
        assert!(training_rows(&more, &[obs("s1", 1.0, [8, 8], Some(1.0))]).is_empty());
    }
}
