//! The service without HTTP: the current model (swapped atomically, never blocking a
//! prediction), predictions, observations and online learning.
//!
//! The model in use is a [`Current`] behind an [`ArcSwap`]: a prediction loads it once and keeps
//! it to the end, whatever is swapped in meanwhile. Swaps (a model file reloaded, a model trained
//! again) are serialised by one lock that predictions never take. A model trained again starts
//! from the model file's own training rows (its `base`) and adds one row per observed scenario:
//! the local size with the lowest mean runtime observed there. A retraining that finishes after
//! the model file was reloaded is dropped, so it never overwrites a newer file.
//!
//! Online learning never takes an observation that could poison the model ([`Service::observe`]):
//! its run time must be a plausible measurement, its local size legal in its scenario, and each
//! feature the model uses within the model file's [`Reach`]. Observations in the store that fail
//! the same check are skipped at start, counted by reason. A model trained again replaces the
//! one serving only once it passed [`Model::check`]; the outcome of the last retraining, the
//! observations rejected and failed predictions are in `/v1/health`. A lock whose holder
//! panicked is taken over as it is (every update under a lock is a single step), so one failed
//! request never fails the ones after it.

use crate::limits::{LimitOverrides, Limits};
use crate::metrics::Metrics;
use crate::scenario::{scenario_id, Resolver, ScenarioError, ScenarioRequest};
use crate::wisdom::{file_version, FileVersion, WisdomFile};
use arc_swap::ArcSwap;
use ndtune_learn::model::{Model, Reach, TrainingRow};
use ndtune_learn::oracle::{Wg, RUNTIME_MS, WG_SIDE};
use ndtune_store::{Observation, Store};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// The model predictions use now.
pub struct Current {
    pub model: Arc<Model>,
    /// The model as loaded from its file: what retraining starts from.
    pub base: Arc<Model>,
    /// The base model's reach: what the service learns from.
    pub reach: Arc<Reach>,
    /// Counts every model swapped in since the service started, from 1.
    pub version: u64,
    /// How many observations (the first ones, in order of arrival) it learnt from.
    pub learnt: usize,
    /// Predictions this model could not make.
    pub failures: AtomicU64,
    /// The model's feature names, to tell in constant time whether a sent feature is used.
    uses: std::collections::HashSet<String>,
}

impl Current {
    fn new(
        model: Arc<Model>,
        base: Arc<Model>,
        reach: Arc<Reach>,
        version: u64,
        learnt: usize,
    ) -> Current {
        Current {
            uses: model.feature_names.iter().cloned().collect(),
            model,
            base,
            reach,
            version,
            learnt,
            failures: AtomicU64::new(0),
        }
    }

    /// Whether the model is the file's as loaded, or trained again with observations.
    pub fn origin(&self) -> &'static str {
        if Arc::ptr_eq(&self.model, &self.base) {
            "file"
        } else {
            "retrained"
        }
    }
}

/// Why an observation is not learnt from: a short reason (a metric label) and the whole story.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// `objective_not_time`, `runtime_out_of_range`, `local_not_legal`, `limits_unknown` or
    /// `feature_out_of_reach`.
    pub reason: &'static str,
    pub message: String,
}

/// Observations not learnt from so far.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rejected {
    /// Refused when sent, by reason.
    pub sent: BTreeMap<&'static str, u64>,
    /// Skipped in the store at start, by reason.
    pub stored: BTreeMap<&'static str, u64>,
    /// The last one's message.
    pub last: Option<String>,
}

/// How the last retraining went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetrainResult {
    /// `swapped` (the new model serves), `failed` (training or its check failed: the model in
    /// use serves on) or `dropped` (the model file was reloaded meanwhile).
    pub result: &'static str,
    pub message: String,
    /// Observations it was trained with, and observed scenarios among its rows.
    pub observations: usize,
    pub observed_scenarios: usize,
    pub seconds: f64,
    /// When it finished, in seconds since the service started.
    pub at_uptime_s: f64,
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
    /// The wisdom `/v1/config` answers from (none: it answers 404).
    pub wisdom: Option<PathBuf>,
}

/// The body of `/v1/config`: a kernel of the wisdom, a device (a name the service knows or a
/// profile object), the problem's constants (those not given keep the spec's), and for a kernel
/// tuned for several objectives a preference over its front (`"time,power_w<=200"`,
/// [`ndtune_wisdom::Preference`]).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigRequest {
    pub kernel: String,
    pub device: serde_json::Value,
    #[serde(default)]
    pub constants: ndtune_core::Constants,
    #[serde(default)]
    pub prefer: Option<String>,
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
            ScenarioError::Unavailable(m) => Refusal {
                status: 503,
                message: m,
            },
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
    /// Features the model uses whose values lie beyond its reach (far outside its training
    /// data): the answer extrapolates, and an observation of this scenario would be refused
    /// (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub features_out_of_reach: Vec<String>,
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

/// A scenario as predicted: its features and the limits its size was legal under.
struct Known {
    features: BTreeMap<String, f64>,
    limits: Limits,
}

/// Scenario ids predicted recently, with their features and limits, so observations can name
/// them by id.
#[derive(Default)]
struct Recent {
    scenarios: HashMap<String, Arc<Known>>,
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
    /// The observations accepted (those that passed the check), in order of arrival.
    observations: Mutex<Vec<Observation>>,
    rejected: Mutex<Rejected>,
    retraining: AtomicBool,
    /// How many observations the last retraining started with (0 after a reload).
    attempted: AtomicUsize,
    last_retrain: Mutex<Option<RetrainResult>>,
    retrain_after: usize,
    recent: Mutex<Recent>,
    model_path: PathBuf,
    /// The version of the model file last loaded (or tried).
    file_seen: Mutex<Option<FileVersion>>,
    seed: u64,
    pub metrics: Metrics,
    started: Instant,
    wisdom: Option<WisdomFile>,
}

impl Service {
    /// Loads the model and the observations the store holds that it can learn from (the others
    /// are skipped, counted by reason).
    pub fn new(options: Options) -> Result<Arc<Service>, String> {
        let file_seen = file_version(&options.model_path);
        let model = Arc::new(Model::load(&options.model_path).map_err(|e| e.to_string())?);
        let reach = Arc::new(model.reach());
        let metrics = Metrics::new();
        let mut rejected = Rejected::default();
        let mut observations = Vec::new();
        let stored = match &options.store {
            Some(store) => store.observations().map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        for o in stored {
            let limits = Limits::from_features(
                |n| o.features.iter().find(|(k, _)| k == n).map(|(_, v)| *v),
                &LimitOverrides::default(),
            );
            let features: BTreeMap<String, f64> = o.features.iter().cloned().collect();
            match admit(
                &model,
                &reach,
                &features,
                limits.as_ref().ok(),
                o.local,
                o.runtime_ms,
            ) {
                Ok(()) => observations.push(o),
                Err(r) => {
                    metrics.reject(r.reason);
                    *rejected.stored.entry(r.reason).or_default() += 1;
                    rejected.last =
                        Some(format!("stored observation {}: {}", o.scenario, r.message));
                }
            }
        }
        if !rejected.stored.is_empty() {
            eprintln!(
                "serve: {} observations in the store skipped: the model cannot learn from them ({})",
                rejected.stored.values().sum::<u64>(),
                rejected
                    .stored
                    .iter()
                    .map(|(reason, n)| format!("{reason}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        metrics.model_version.set(1);
        let service = Arc::new(Service {
            current: ArcSwap::from_pointee(Current::new(model.clone(), model, reach, 1, 0)),
            update: Mutex::new(()),
            next_version: AtomicU64::new(2),
            resolver: Resolver::new(options.devices),
            store: options.store.map(Mutex::new),
            observations: Mutex::new(observations),
            rejected: Mutex::new(rejected),
            retraining: AtomicBool::new(false),
            attempted: AtomicUsize::new(0),
            last_retrain: Mutex::new(None),
            retrain_after: options.retrain_after.max(1),
            recent: Mutex::default(),
            model_path: options.model_path,
            file_seen: Mutex::new(file_seen),
            seed: options.seed,
            metrics,
            started: Instant::now(),
            wisdom: options.wisdom.as_deref().map(WisdomFile::open),
        });
        if let Some(e) = service.wisdom.as_ref().and_then(|w| w.health().error) {
            eprintln!("serve: /v1/config cannot answer until the wisdom file is fixed: {e}");
        }
        service.maybe_retrain();
        Ok(service)
    }

    /// The model in use.
    pub fn current(&self) -> Arc<Current> {
        self.current.load_full()
    }

    /// `/v1/config`: the configuration of `req.kernel` for its device and constants, from the
    /// wisdom (see [`ndtune_wisdom::Picker`]).
    pub fn config(&self, req: &ConfigRequest) -> Result<ndtune_wisdom::Pick, Refusal> {
        let runtime = self
            .wisdom
            .as_ref()
            .ok_or_else(|| Refusal {
                status: 404,
                message: "this service has no wisdom: start it with --wisdom FILE".into(),
            })?
            .runtime();
        let device = self
            .resolver
            .device(&req.device)
            .map_err(|e| Refusal::unprocessable(e.to_string()))?;
        let prefer = req
            .prefer
            .as_deref()
            .map(ndtune_wisdom::Preference::parse)
            .transpose()
            .map_err(Refusal::bad_request)?;
        runtime
            .pick_preferring(&req.kernel, &device, &req.constants, prefer.as_ref())
            .map_err(|e| match e {
                ndtune_wisdom::RuntimeError::Wisdom(ndtune_wisdom::WisdomError::NoKernel {
                    ..
                }) => Refusal {
                    status: 404,
                    message: e.to_string(),
                },
                ndtune_wisdom::RuntimeError::Wisdom(_) => Refusal {
                    status: 503,
                    message: format!("the service's wisdom cannot be used: {e}"),
                },
                ndtune_wisdom::RuntimeError::Pick(_) => Refusal::unprocessable(e.to_string()),
            })
    }

    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    pub fn uptime_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Observations received so far (the store's included).
    pub fn observation_count(&self) -> usize {
        self.observations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
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
                .filter(|n| !current.uses.contains(n.as_str()) && !req.limits.reads(n))
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
        let predicted = model.predict_row(&row, |w| limits.allows(w)).map_err(|e| {
            current.failures.fetch_add(1, Ordering::Relaxed);
            self.metrics.prediction_failures.inc();
            Refusal::internal(format!(
                "the model in use (version {}) cannot predict this scenario: {e}",
                current.version
            ))
        })?;
        let features_out_of_reach: Vec<String> = model
            .feature_names
            .iter()
            .zip(&row)
            .enumerate()
            .filter(|(j, (_, v))| current.reach.outside_at(*j, **v))
            .map(|(_, (n, _))| n.clone())
            .collect();
        let p = predicted.ok_or_else(|| {
            Refusal::unprocessable(format!(
                "no work-group size the model knows is legal here ({} sizes known; limits {})",
                model.ranking.len(),
                serde_json::to_string(&limits).expect("limits serialise")
            ))
        })?;
        let id = scenario_id(&resolved.features);
        self.remember(
            &id,
            Known {
                features: resolved.features,
                limits,
            },
        );
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
            features_out_of_reach,
        })
    }

    fn remember(&self, id: &str, known: Known) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if recent.scenarios.contains_key(id) {
            return;
        }
        if recent.order.len() == RECENT {
            if let Some(old) = recent.order.pop_front() {
                recent.scenarios.remove(&old);
            }
        }
        recent.order.push_back(id.to_string());
        recent.scenarios.insert(id.to_string(), Arc::new(known));
    }

    /// Records what a client measured, if the model can learn from it (see [`admit`]: a refusal
    /// is counted by reason); trains again in the background once enough arrived.
    pub fn observe(
        self: &Arc<Self>,
        scenario: &ObservedScenario,
        run: &ObservedRun,
    ) -> Result<ObserveResponse, Refusal> {
        let known: Arc<Known> = match scenario {
            ObservedScenario::Id(id) => self
                .recent
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .scenarios
                .get(id)
                .cloned()
                .ok_or_else(|| {
                    Refusal::unprocessable(format!(
                        "unknown scenario `{id}`: predict it first, or send the scenario itself"
                    ))
                })?,
            ObservedScenario::Request(req) => {
                let features = self.resolver.resolve(req)?.features;
                let limits = Limits::from_features(|n| features.get(n).copied(), &req.limits)
                    .map_err(|e| {
                        self.reject(Rejection {
                            reason: "limits_unknown",
                            message: format!("cannot check `local`: {e}"),
                        })
                    })?;
                Arc::new(Known { features, limits })
            }
        };
        if run.local.contains(&0) {
            return Err(self.reject(Rejection {
                reason: "local_not_legal",
                message: "`local`: both sizes must be positive".into(),
            }));
        }
        if let Some(t) = run.runtime_ms {
            if !(t.is_finite() && t > 0.0) {
                return Err(self.reject(Rejection {
                    reason: "runtime_out_of_range",
                    message: format!("`runtime_ms`: {t} is not a positive number of milliseconds"),
                }));
            }
        }
        let current = self.current.load();
        admit(
            &current.base,
            &current.reach,
            &known.features,
            Some(&known.limits),
            run.local,
            run.runtime_ms,
        )
        .map_err(|r| {
            let mut refusal = self.reject(r);
            refusal.status = 422;
            refusal
        })?;
        let observation = Observation {
            scenario: scenario_id(&known.features),
            features: known
                .features
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            local: run.local,
            runtime_ms: run.runtime_ms,
            received_at: ndtune_store::now_ms(),
        };
        let stored = match &self.store {
            Some(store) => Some(
                store
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .add_observation(&observation)
                    .map_err(|e| Refusal::internal(format!("cannot store the observation: {e}")))?,
            ),
            None => None,
        };
        let scenario = observation.scenario.clone();
        let observations = {
            let mut all = self
                .observations
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
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

    /// Counts a rejected observation; the refusal (400) that answers it.
    fn reject(&self, r: Rejection) -> Refusal {
        self.metrics.reject(r.reason);
        let mut rejected = self.rejected.lock().unwrap_or_else(PoisonError::into_inner);
        *rejected.sent.entry(r.reason).or_default() += 1;
        rejected.last = Some(r.message.clone());
        Refusal::bad_request(format!("not learnt from: {}", r.message))
    }

    /// The observations not learnt from so far.
    pub fn rejected(&self) -> Rejected {
        self.rejected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How the last retraining went (none yet: `None`).
    pub fn last_retrain(&self) -> Option<RetrainResult> {
        self.last_retrain
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Starts a retraining thread if enough observations are new to the model and to the last
    /// attempt (a failed one is not repeated for every observation that follows), and none runs.
    fn maybe_retrain(self: &Arc<Self>) {
        let since = self
            .current
            .load()
            .learnt
            .max(self.attempted.load(Ordering::Acquire));
        let pending = self.observation_count().saturating_sub(since);
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
            // A panic in training (a library's bug) fails this retraining, not all later ones.
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| service.retrain()))
                    .unwrap_or_else(|_| {
                        service.metrics.retrain_failures.inc();
                        RetrainResult {
                            result: "failed",
                            message: "training again panicked, the model in use serves on".into(),
                            observations: service.observation_count(),
                            observed_scenarios: 0,
                            seconds: 0.0,
                            at_uptime_s: service.uptime_s(),
                        }
                    });
            eprintln!("serve: {}", result.message);
            *service
                .last_retrain
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(result);
            service.retraining.store(false, Ordering::Release);
            // Observations that arrived while it trained.
            service.maybe_retrain();
        });
    }

    fn retrain(&self) -> RetrainResult {
        let started = Instant::now();
        let (base, reach) = {
            let current = self.current.load();
            (current.base.clone(), current.reach.clone())
        };
        let observations: Vec<Observation> = self
            .observations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        self.attempted.store(observations.len(), Ordering::Release);
        // Accepted for this model file; a file reloaded since may reach less far.
        let rows: Vec<TrainingRow> = training_rows(&base.feature_names, &observations)
            .into_iter()
            .filter(|r| reach.outside(&r.features).is_none())
            .collect();
        let result = |result: &'static str, message: String| RetrainResult {
            result,
            message,
            observations: observations.len(),
            observed_scenarios: rows.len(),
            seconds: started.elapsed().as_secs_f64(),
            at_uptime_s: self.uptime_s(),
        };
        // Trained, and checked (Model::check) before it can serve.
        let retrained = match base.retrained(&rows, self.seed) {
            Ok(m) => m,
            Err(e) => {
                self.metrics.retrain_failures.inc();
                return result(
                    "failed",
                    format!(
                        "training again on {} observations failed, the model in use serves on: {e}",
                        observations.len()
                    ),
                );
            }
        };
        let _swapping = self.update.lock().unwrap_or_else(PoisonError::into_inner);
        if !Arc::ptr_eq(&self.current.load().base, &base) {
            return result(
                "dropped",
                "a retrained model was dropped: the model file was reloaded meanwhile".into(),
            );
        }
        let version = self.next_version.fetch_add(1, Ordering::Relaxed);
        self.current.store(Arc::new(Current::new(
            Arc::new(retrained),
            base,
            reach,
            version,
            observations.len(),
        )));
        self.metrics.model_version.set(version as i64);
        self.metrics.retrains.inc();
        result(
            "swapped",
            format!(
                "model version {version}: trained again with {} observed scenarios ({} observations) in {:.2} s",
                rows.len(),
                observations.len(),
                started.elapsed().as_secs_f64()
            ),
        )
    }

    /// Loads the model file again and swaps it in; on failure keeps the model in use.
    pub fn reload(self: &Arc<Self>) -> Result<u64, String> {
        *self
            .file_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = file_version(&self.model_path);
        let model = match Model::load(&self.model_path) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                self.metrics.reload_failures.inc();
                return Err(e.to_string());
            }
        };
        let version = {
            let _swapping = self.update.lock().unwrap_or_else(PoisonError::into_inner);
            let version = self.next_version.fetch_add(1, Ordering::Relaxed);
            let reach = Arc::new(model.reach());
            self.current.store(Arc::new(Current::new(
                model.clone(),
                model,
                reach,
                version,
                0,
            )));
            self.attempted.store(0, Ordering::Release);
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
        now.is_some()
            && now
                != *self
                    .file_seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
    }

    /// The wisdom `/v1/config` answers from, if any.
    pub fn wisdom(&self) -> Option<&WisdomFile> {
        self.wisdom.as_ref()
    }

    /// Whether observations are written to a store.
    pub fn stores(&self) -> bool {
        self.store.is_some()
    }

    pub fn model_path(&self) -> &std::path::Path {
        &self.model_path
    }
}

/// Whether a model can learn from an observation of `local` in a scenario with `features` and
/// `limits` (none: the features do not give them, for an observation kept from before): a run
/// time in [`RUNTIME_MS`] (or none: refused), sides in [`WG_SIDE`] legal under the limits, and
/// every feature the model uses within its reach.
pub fn admit(
    model: &Model,
    reach: &Reach,
    features: &BTreeMap<String, f64>,
    limits: Option<&Limits>,
    local: [u64; 2],
    runtime_ms: Option<f64>,
) -> Result<(), Rejection> {
    if let (Some(objective), Some(_)) = (&model.objective, runtime_ms) {
        return Err(Rejection {
            reason: "objective_not_time",
            message: format!(
                "the model ranks sizes by {objective}, not by run time: a run time cannot teach it (train it again on a collection)"
            ),
        });
    }
    if let Some(t) = runtime_ms.filter(|t| !RUNTIME_MS.contains(t)) {
        return Err(Rejection {
            reason: "runtime_out_of_range",
            message: format!(
                "`runtime_ms` {t} is no measured run time (milliseconds from {:e} to {:e})",
                RUNTIME_MS.start(),
                RUNTIME_MS.end()
            ),
        });
    }
    let wg = (local[0], local[1]);
    if !(WG_SIDE.contains(&wg.0) && WG_SIDE.contains(&wg.1))
        || limits.is_some_and(|l| !l.allows(wg))
    {
        return Err(Rejection {
            reason: "local_not_legal",
            message: format!(
                "`local` {}x{} cannot run in this scenario{}",
                wg.0,
                wg.1,
                limits.map_or(String::new(), |l| format!(
                    " (limits {})",
                    serde_json::to_string(l).unwrap_or_default()
                ))
            ),
        });
    }
    // A feature the observation lacks makes it teach nothing (see `training_rows`), not harm.
    let beyond = model
        .feature_names
        .iter()
        .enumerate()
        .find_map(|(j, name)| {
            let value = *features.get(name)?;
            reach
                .outside_at(j, value)
                .then(|| (name, value, reach.bounds(j)))
        });
    match beyond {
        Some((name, value, Some((lo, hi)))) => Err(Rejection {
            reason: "feature_out_of_reach",
            message: format!(
                "feature `{name}` = {value} is beyond what the model can learn from ({lo} to {hi}: its training range widened by {} times its largest magnitude)",
                ndtune_learn::model::REACH
            ),
        }),
        _ => Ok(()),
    }
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

    #[test]
    fn a_model_for_another_objective_learns_no_run_time() {
        let mut csv =
            String::from("scenario,device,kernel,dataset,f_a,wg_c,wg_r,cost,status,objective\n");
        for (s, a) in [("s1", 1.0), ("s2", 1.5)] {
            csv.push_str(&format!(
                "{s},d,k,x,{a},8,8,0.5,measured,energy_j (lower is better)\n"
            ));
        }
        let data =
            ndtune_learn::data::Data::read(csv.as_bytes(), std::path::Path::new("e.csv")).unwrap();
        let kind = ndtune_learn::models::ClassifierKind::DecisionTree;
        let mut model = Model::train(&data, kind, 1).unwrap();
        let features = BTreeMap::from([("f_a".to_string(), 1.2)]);
        let admitted =
            |model: &Model, ms| admit(model, &model.reach(), &features, None, [8, 8], ms);
        let refused = admitted(&model, Some(1.0)).unwrap_err();
        assert_eq!(refused.reason, "objective_not_time");
        assert!(
            refused
                .message
                .contains("ranks sizes by energy_j (lower is better)"),
            "{}",
            refused.message
        );
        // A refusal says nothing of a cost: it is learnt from.
        assert!(admitted(&model, None).is_ok());
        model.objective = None;
        assert!(admitted(&model, Some(1.0)).is_ok());
    }

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
