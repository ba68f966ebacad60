//! The live evaluator a strategy talks to: it reuses what the store holds, plans builds ahead
//! from the strategy's lookahead, measures in the supervised worker, commits every outcome to the
//! store at once, and accounts the time.

use crate::{Event, Observer, TimeSpent};
use ndtune_bench::builder::{BuildPool, Built};
use ndtune_bench::supervisor::Supervisor;
use ndtune_core::{Config, Outcome};
use ndtune_search::{Evaluated, Evaluator, Point};
use ndtune_store::{Group, Record, ResultKey, Store};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

/// The outcome a strategy sees for points it asks for after the campaign stopped; they are
/// neither run nor stored.
const STOPPED: &str = "campaign stopped";

/// A configuration's build key (see [`Live::build_key`]).
pub(crate) type BuildKey<'a> = Box<dyn Fn(&[i64]) -> String + 'a>;

pub(crate) struct Live<'a> {
    pub supervisor: Supervisor,
    pub pool: Option<BuildPool>,
    /// Stop the build workers while the measurement worker runs (a CPU device: builds would
    /// compete with the timed kernel for its cores).
    pub pause_builds: bool,
    /// A configuration's build key: configurations with the same key share a build (their
    /// define set; on a CPU device, whose builds are primed, with the launch sizes too).
    pub build_key: BuildKey<'a>,
    pub store: &'a Store,
    pub group: Group,
    /// The space's parameter names, in the order of a point's values.
    pub names: &'a [String],
    pub existing: HashMap<Config, Outcome>,
    pub observer: &'a mut dyn Observer,
    pub best_ms: Option<f64>,
    pub time: TimeSpent,
    /// Whether the user was told that no build worker could start.
    pub unavailable_told: bool,
    /// Why the campaign stopped early; later points are not run.
    pub stopped: Option<String>,
}

impl Live<'_> {
    /// `point` as a configuration.
    fn config(&self, point: &[i64]) -> Config {
        self.names
            .iter()
            .cloned()
            .zip(point.iter().copied())
            .collect()
    }

    /// The time account, with the build workers' own time and the worker start-up added.
    pub fn finish(self) -> TimeSpent {
        let mut time = self.time;
        time.startup_s = self.supervisor.startup_s;
        time.build_workers_s = self.pool.as_ref().map_or(0.0, BuildPool::busy_s);
        time
    }

    /// The program binary for `point` from the build pool (waiting for it), or the outcome of a
    /// build that failed, crashed or hung; `Ok(None)` where the worker is to build itself.
    fn prebuilt(&mut self, point: &[i64]) -> Result<Option<PathBuf>, Outcome> {
        let Some(pool) = &self.pool else {
            return Ok(None);
        };
        match pool.wait(&(self.build_key)(point), point) {
            Built::Binary(path) => Ok(Some(path)),
            Built::Failed(outcome) => Err(outcome),
            Built::Unavailable(why) => {
                if !self.unavailable_told {
                    self.unavailable_told = true;
                    self.observer.event(Event::Warning(format!(
                        "builds go on in the measurement worker: {why}"
                    )));
                }
                Ok(None)
            }
        }
    }

    /// Measures `point` in the worker; a build outcome from the pool stands for the
    /// measurement. `None` when the campaign has to stop.
    fn measure(&mut self, point: &[i64]) -> Option<Outcome> {
        let waited = Instant::now();
        let prebuilt = self.prebuilt(point);
        let wait_s = waited.elapsed().as_secs_f64();
        let binary = match prebuilt {
            Ok(binary) => binary,
            Err(outcome) => {
                self.time.add_build_outcome(wait_s);
                return Some(outcome);
            }
        };
        if let Some(pool) = &self.pool {
            // A GPU measures while the host is free: the worker loads the binaries made so far
            // on threads of its own meanwhile (on a CPU device that would disturb the timing).
            for (config, binary) in pool.take_finished() {
                if !self.pause_builds {
                    self.supervisor.preload(&config, &binary);
                }
            }
        }
        let pool = self.pool.as_ref().filter(|_| self.pause_builds);
        if let Some(pool) = pool {
            pool.pause();
        }
        let evaluated = self.supervisor.evaluate(point, binary.as_deref());
        if let Some(pool) = pool {
            pool.resume();
        }
        match evaluated {
            Ok(e) => {
                self.time.add(&e, wait_s);
                Some(e.outcome)
            }
            Err(fatal) => {
                self.stopped = Some(fatal.0);
                None
            }
        }
    }
}

impl Evaluator for Live<'_> {
    fn upcoming(&mut self, points: &[Point]) {
        let Some(pool) = &self.pool else { return };
        let builds = points
            .iter()
            .filter(|p| !self.existing.contains_key(&self.config(p)))
            .map(|p| ((self.build_key)(p), p.clone()));
        pool.plan(builds);
    }

    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        let config = self.config(point);
        if let Some(outcome) = self.existing.get(&config) {
            self.observer.event(Event::Evaluated {
                config: &config,
                outcome,
                reused: true,
                best_ms: self.best_ms,
            });
            return Evaluated {
                outcome: outcome.clone(),
                reused: true,
            };
        }
        let stopped = || Evaluated {
            outcome: Outcome::Pruned {
                constraint: STOPPED.into(),
            },
            reused: false,
        };
        if self.stopped.is_some() {
            return stopped();
        }
        let started_at = ndtune_store::now_ms();
        let Some(outcome) = self.measure(point) else {
            return stopped();
        };
        let record = Record {
            key: ResultKey {
                device: self.group.device.clone(),
                kernel: self.group.kernel.clone(),
                source_hash: self.group.source_hash.clone(),
                constants: self.group.constants.clone(),
                config: config.clone(),
            },
            outcome: outcome.clone(),
            ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
            started_at,
            finished_at: ndtune_store::now_ms(),
        };
        if let Err(e) = self.store.insert(&record) {
            self.stopped = Some(format!("cannot record a result: {e}"));
            return stopped();
        }
        if let Some(ms) = outcome.score_ms().filter(|ms| ms.is_finite()) {
            if self.best_ms.is_none_or(|b| ms < b) {
                self.best_ms = Some(ms);
            }
        }
        self.observer.event(Event::Evaluated {
            config: &config,
            outcome: &outcome,
            reused: false,
            best_ms: self.best_ms,
        });
        Evaluated {
            outcome,
            reused: false,
        }
    }
}
