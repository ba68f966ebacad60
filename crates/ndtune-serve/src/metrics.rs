//! The service's Prometheus metrics (prometheus-client): requests by endpoint and status, their
//! latency, the model version, observations (and those rejected), failed predictions, panics,
//! retrainings and reloads.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub endpoint: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    pub endpoint: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

/// Latency buckets in seconds: fine below a millisecond, where predictions are.
const LATENCY_BUCKETS: [f64; 14] = [
    25e-6, 50e-6, 100e-6, 200e-6, 300e-6, 500e-6, 750e-6, 1e-3, 2e-3, 5e-3, 10e-3, 50e-3, 0.25, 1.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub latency: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    pub model_version: Gauge,
    pub observations: Counter,
    pub rejected: Family<ReasonLabels, Counter>,
    pub prediction_failures: Counter,
    pub panics: Counter,
    pub retrains: Counter,
    pub retrain_failures: Counter,
    pub reloads: Counter,
    pub reload_failures: Counter,
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("ndtune");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<EndpointLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let model_version = Gauge::default();
        let observations = Counter::default();
        let rejected = Family::<ReasonLabels, Counter>::default();
        let prediction_failures = Counter::default();
        let panics = Counter::default();
        let retrains = Counter::default();
        let retrain_failures = Counter::default();
        let reloads = Counter::default();
        let reload_failures = Counter::default();
        registry.register("requests", "HTTP requests answered", requests.clone());
        registry.register(
            "request_duration_seconds",
            "Time from a request's arrival to its answer",
            latency.clone(),
        );
        registry.register(
            "model_version",
            "Version of the model in use (1 at start, +1 per reload or retraining)",
            model_version.clone(),
        );
        registry.register(
            "observations",
            "Observations received",
            observations.clone(),
        );
        registry.register(
            "observations_rejected",
            "Observations not learnt from, by reason (sent, or found in the store at start)",
            rejected.clone(),
        );
        registry.register(
            "prediction_failures",
            "Predictions the model in use could not make (answered 500)",
            prediction_failures.clone(),
        );
        registry.register(
            "panics",
            "Requests whose handler panicked (answered 500)",
            panics.clone(),
        );
        registry.register(
            "retrains",
            "Models trained again with observations",
            retrains.clone(),
        );
        registry.register(
            "retrain_failures",
            "Retrainings that failed",
            retrain_failures.clone(),
        );
        registry.register("model_reloads", "Model files reloaded", reloads.clone());
        registry.register(
            "model_reload_failures",
            "Model files that could not be loaded (the model in use was kept)",
            reload_failures.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            model_version,
            observations,
            rejected,
            prediction_failures,
            panics,
            retrains,
            retrain_failures,
            reloads,
            reload_failures,
        }
    }

    /// Counts one observation not learnt from.
    pub fn reject(&self, reason: &str) {
        self.rejected
            .get_or_create(&ReasonLabels {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Counts one answered request.
    pub fn record(&self, endpoint: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                endpoint: endpoint.to_string(),
                status: status.to_string(),
            })
            .inc();
        self.latency
            .get_or_create(&EndpointLabels {
                endpoint: endpoint.to_string(),
            })
            .observe(seconds);
    }

    /// The metrics in the Prometheus / OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}
