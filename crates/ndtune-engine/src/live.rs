//! The live evaluator a strategy talks to: it reuses what the store holds, plans builds ahead
//! from the strategy's lookahead, measures in the supervised worker (racing against the best so
//! far, which scouts find early), commits every outcome to the store at once, and accounts the
//! time. In a shared
//! campaign it measures only what it claimed; in a campaign of its own with a guard, only what
//! it could claim (see [`crate::share`]).

use crate::advice::AdviceBook;
use crate::share::{give_back, Claims, Guard, POLL};
use crate::{Event, Observer, PerConfig, Phases, TimeSpent};
use ndtune_bench::builder::{BuildPool, BuildTimes, Built};
use ndtune_bench::evaluate::Moment;
use ndtune_bench::node_builds::Builds;
use ndtune_bench::race::{Limits, Noise};
use ndtune_bench::supervisor::{FrontEnd, Supervisor};
use ndtune_bench::worker::{Generated, OwnCheck};
use ndtune_core::{Codec, Config, Outcome};
use ndtune_metrics::{Inputs, Metrics};
use ndtune_search::{Evaluated, Evaluator, Point};
use ndtune_spec::Race;
use ndtune_store::{Group, Record, ResultKey, Store};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The outcome a strategy sees for points it asks for after the campaign stopped; they are
/// neither run nor stored.
const STOPPED: &str = "campaign stopped";

/// Whether `outcome` is what a point asked for after the campaign stopped gets (neither run
/// nor stored: no part of a summary).
pub(crate) fn asked_after_stop(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Pruned { constraint } if constraint == STOPPED)
}

/// How many scouts a racing campaign measures first ([`Live::scout`]): about as many as racing
/// needs measured in full before it stops any configuration.
pub(crate) const SCOUTS: usize = 12;

/// A configuration's build key (see [`Live::build_key`]).
pub(crate) type BuildKey<'a> = Box<dyn Fn(&[i64]) -> String + 'a>;

pub(crate) struct Live<'a> {
    pub supervisor: Supervisor,
    pub pool: Option<Builds>,
    /// How many builds run at once ([`Evaluator::width`]): the build workers', 1 without.
    pub width: usize,
    /// Stop the build workers while the measurement worker runs (a CPU device: builds would
    /// compete with the timed kernel for its cores).
    pub pause_builds: bool,
    /// A configuration's build key: configurations with the same key share a build (their
    /// define set; on a CPU device, whose builds are primed, with the launch sizes too).
    pub build_key: BuildKey<'a>,
    pub store: &'a Store,
    pub group: Group,
    /// How the space's points hold configurations.
    pub codec: &'a Codec,
    pub existing: HashMap<Config, Outcome>,
    pub observer: &'a mut dyn Observer,
    /// The campaign's metrics and objective: what a measurement costs.
    pub metrics: &'a Metrics,
    /// The best value of the objective measured so far.
    pub best: Option<f64>,
    pub racing: Racing,
    /// Where the time of the last evaluation measured here went.
    pub phases: Phases,
    pub time: TimeSpent,
    /// Whether the user was told that no build worker could start.
    pub unavailable_told: bool,
    /// Why the campaign stopped early; later points are not run.
    pub stopped: Option<String>,
    /// The configuration this campaign last said it waits for (another worker holds it).
    pub waiting_for: Option<Config>,
    /// This worker's claims, where the campaign is shared with other workers.
    pub claims: Option<Claims>,
    /// The claims of a campaign of its own, where it guards against another process.
    pub guard: Option<Guard>,
    /// Stored timings raced under another rule than this campaign's, which it measures again:
    /// their claims were completed, so the guard would give them to no one.
    pub measure_again: HashSet<Config>,
    /// Configurations this worker measured before the strategy asked for them (while another
    /// worker held the one it asked for, or while the build of the one it asked for was not
    /// done): fresh, not reused, when it does.
    pub measured_ahead: HashSet<Config>,
    /// Points the strategy promised to ask for ([`Evaluator::will_ask`]), not measured yet,
    /// with their build keys.
    pub promised: Vec<(String, Point)>,
    /// Whether the campaign measures scouts first ([`Live::scout`]) at its first measurement.
    pub scouting: bool,
    /// The driver's advice per build, from every outcome seen.
    pub advice: AdviceBook<'a>,
    /// Whether strategies are told of the advice ([`Options::advice_prior`](crate::Options)).
    pub advice_prior: bool,
    /// What the front end works out for each configuration, where it does (then there is no
    /// sharing, and only the point asked for is measured).
    pub per_config: Option<&'a mut dyn PerConfig>,
    /// What the front end answered for each point it was asked about (once each: when the
    /// strategy announces the point, or before it is measured), until the point is measured.
    pub configured: HashMap<Point, Option<Generated>>,
    /// The build times learnt by this campaign's builders (on a node, every worker's), as last
    /// read: a shared campaign that may claim in any order claims the longest builds first.
    pub build_times: Option<(Instant, BuildTimes)>,
}

/// How often a shared campaign reads its builders' build times again.
const BUILD_TIMES_READ: Duration = Duration::from_secs(1);

/// What racing knows: the rule, the protocol's runs, the measurement noise seen so far and the
/// best score of the configurations the campaign evaluated.
pub(crate) struct Racing {
    pub rule: Option<Race>,
    pub runs: u32,
    pub noise: Noise,
    pub best_ms: Option<f64>,
}

impl Racing {
    /// The limits of the next evaluation, where racing can stop it.
    fn limits(&self) -> Option<Limits> {
        self.noise.limits(self.rule?, self.best_ms?, self.runs)
    }

    /// A configuration of the campaign ended as `outcome`: the best so far may move.
    fn note(&mut self, outcome: &Outcome) {
        if let Some(ms) = outcome.score_ms().filter(|ms| ms.is_finite()) {
            if self.best_ms.is_none_or(|b| ms < b) {
                self.best_ms = Some(ms);
            }
        }
    }
}

impl Live<'_> {
    /// `point` as a configuration.
    fn config(&self, point: &[i64]) -> Config {
        self.codec.config(point)
    }

    fn key(&self, config: &Config) -> ResultKey {
        ResultKey::new(&self.group, config.clone())
    }

    /// Ends the campaign that started at `started`: gives back the configurations claimed and
    /// not measured, keeps the build times in the store, stops the workers or, to `hand_on`
    /// them, gives them back (the measurement's supervisor, the build pool where it is the campaign's
    /// own); the time account of the whole campaign.
    pub fn finish(
        mut self,
        started: Instant,
        hand_on: bool,
    ) -> (TimeSpent, Option<(Supervisor, Option<BuildPool>)>) {
        let ending = Instant::now();
        let codec = self.codec;
        let held: Option<(&str, Vec<Point>)> = match (&mut self.claims, &mut self.guard) {
            (Some(c), _) => {
                let points = c.take_unmeasured();
                Some((&c.share.worker, points))
            }
            (None, Some(g)) => {
                let points = g.take_held().into_iter().collect();
                Some((&g.share.worker, points))
            }
            (None, None) => None,
        };
        let released = held.map_or(Ok(()), |(worker, points)| {
            give_back(self.store, &self.group, worker, points, |p| codec.config(p))
        });
        if let Err(e) = released {
            self.observer.event(Event::Warning(format!(
                "cannot give back unmeasured claims (they expire after the lease): {e}"
            )));
        }
        let mut time = self.time;
        time.startup_s = self.supervisor.startup_s;
        time.startup_waited_s = self.supervisor.startup_waited_s;
        time.workers_started = self.supervisor.starts;
        if let Some(pool) = &self.pool {
            time.build_workers_s = pool.busy_s();
            time.builders_started = pool.started();
            time.node_builds = pool.node_role();
            let kept = crate::build_history::save(
                self.store,
                &self.group,
                codec.names(),
                &pool.build_times(),
            );
            if let Err(e) = kept {
                self.observer.event(Event::Warning(format!(
                    "cannot keep the build times in the store: {e}"
                )));
            }
        }
        let kept = if hand_on {
            let pool = match self.pool.take() {
                // Nothing more is built for this campaign.
                Some(Builds::Own(pool)) => {
                    pool.plan(Vec::new(), false);
                    Some(pool)
                }
                _ => None,
            };
            Some((self.supervisor, pool))
        } else {
            drop(self.pool.take());
            self.supervisor.stop();
            None
        };
        time.close(
            ending.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64(),
        );
        (time, kept)
    }

    /// The program binary for `point` from the build pool (waiting for it), or the outcome of a
    /// build that failed, crashed or hung; `Ok(None)` where the worker is to build itself.
    fn prebuilt(&mut self, point: &[i64]) -> Result<Option<PathBuf>, Box<Outcome>> {
        if self.pool.is_none() {
            return Ok(None);
        }
        let key = self.build_key_of(point);
        let Some(pool) = &self.pool else {
            return Ok(None);
        };
        match pool.wait(&key, point) {
            Built::Binary(path) => Ok(Some(path)),
            // The worker's build from source finds it in the driver's own cache.
            Built::InDriverCache => Ok(None),
            // A build worker that ran out of time may have been starved (idle priority on a
            // busy machine): not the configuration's outcome. The measurement worker builds it
            // once more under the evaluation's own deadline.
            Built::Failed(Outcome::TimedOut { .. }) => Ok(None),
            Built::Failed(outcome) => Err(Box::new(outcome)),
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
    fn measure(&mut self, point: &[i64], config: &Config) -> Option<Outcome> {
        let waited = Instant::now();
        let prebuilt = self.prebuilt(point);
        let wait_s = waited.elapsed().as_secs_f64();
        let binary = match prebuilt {
            Ok(binary) => binary,
            Err(outcome) => {
                self.time.add_build_outcome(wait_s);
                self.phases = Phases {
                    compile_ms: wait_s * 1e3,
                    ..Phases::default()
                };
                return Some(*outcome);
            }
        };
        let generated = self.generated(point);
        if generated.is_some() {
            // Measured now: its generated code is not needed again (a large space's would
            // otherwise all stay in memory).
            self.configured.remove(point);
        }
        if self.stopped.is_some() {
            return None;
        }
        // On a CPU device the build workers stop while the measurement worker evaluates: the
        // untimed part (restores, the verified run, the comparison) runs faster on a quiet
        // machine too, and a build's priming (PoCL's compile for a work-group size) is part of
        // the build, done before the build counts as done.
        let stopped = self
            .pool
            .as_ref()
            .filter(|_| self.pause_builds)
            .map(|pool| {
                pool.pause();
                (pool, Instant::now())
            });
        let limits = self.racing.limits();
        let mut front = self
            .per_config
            .as_deref_mut()
            .map(|per_config| Measuring { per_config, config });
        let evaluated = self.supervisor.evaluate(
            point,
            binary.as_deref(),
            limits.as_ref(),
            generated.as_ref(),
            front.as_mut().map(|f| f as &mut dyn FrontEnd),
        );
        if let Some((pool, at)) = stopped {
            pool.resume();
            self.time.build_workers_stopped_s += at.elapsed().as_secs_f64();
        }
        match evaluated {
            Ok(e) => {
                self.time.add(&e, wait_s);
                let cost = e.cost.unwrap_or_default();
                self.phases = Phases {
                    compile_ms: wait_s * 1e3 + cost.build_ms,
                    verification_ms: cost.reference_ms + cost.prepare_ms + cost.verify_ms,
                    benchmark_ms: cost.launch_ms,
                };
                if let Outcome::Measured(t) = &e.outcome {
                    self.racing.noise.add(t);
                }
                Some(e.outcome)
            }
            Err(fatal) => {
                self.stopped = Some(fatal.0);
                None
            }
        }
    }
}

impl Live<'_> {
    /// Measures `point`, stores its outcome (completing this worker's claim in a shared
    /// campaign) and tells the observer; `None` when the campaign has to stop.
    fn measure_and_record(&mut self, point: &[i64], config: &Config) -> Option<Outcome> {
        let started_at = ndtune_store::now_ms();
        let outcome = self.measure(point, config)?;
        let writing = Instant::now();
        let record = Record {
            key: self.key(config),
            outcome: outcome.clone(),
            ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
            started_at,
            finished_at: ndtune_store::now_ms(),
        };
        let claimed_by = match (&self.claims, &self.guard) {
            (Some(claims), _) => Some(&claims.share.worker),
            (None, Some(guard)) => Some(&guard.share.worker),
            (None, None) => None,
        };
        let stored = match claimed_by {
            Some(worker) => self.store.complete(worker, &record).map(drop),
            None => self.store.insert(&record),
        };
        self.time.store_s += writing.elapsed().as_secs_f64();
        if let Err(e) = stored {
            self.stopped = Some(format!("cannot record a result: {e}"));
            return None;
        }
        if let Some(guard) = &mut self.guard {
            guard.measured(point);
        }
        if let Some(claims) = &mut self.claims {
            claims.measured(point);
        }
        self.note_best(config, &outcome);
        self.racing.note(&outcome);
        self.observer.event(Event::Evaluated {
            config,
            outcome: &outcome,
            reused: false,
            best: self.best,
            phases: Some(self.phases),
        });
        Some(outcome)
    }

    /// In a shared campaign: `point`'s outcome from whichever worker measures it (`true`: not
    /// this one). This worker measures it if it can claim it; while another worker holds it,
    /// this one measures what it claimed ahead, or waits. `None` when the campaign has to stop.
    fn evaluate_shared(&mut self, point: &[i64], config: &Config) -> Option<(Outcome, bool)> {
        loop {
            if let Some(outcome) = self.stored_elsewhere(config)? {
                return Some((outcome, true));
            }
            let claims = self.claims.as_mut().expect("a shared campaign");
            let mine = claims.held.iter().any(|p| p == point)
                || match self.store.claim(
                    &self.group,
                    &claims.share.worker,
                    std::slice::from_ref(config),
                    claims.share.lease,
                ) {
                    Ok(claimed) => {
                        if claimed.is_some() {
                            claims.held.push_front(point.to_vec());
                        }
                        claimed.is_some()
                    }
                    Err(e) => return self.stop(format!("cannot claim a configuration: {e}")),
                };
            if mine {
                self.measure_held_while_building(point)?;
                let claims = self.claims.as_mut().expect("a shared campaign");
                claims.take(point);
                claims.measuring(point);
                self.top_up()?;
                return self.measure_and_record(point, config).map(|o| (o, false));
            }
            self.top_up()?;
            // Another worker holds it: measure what this one holds meanwhile, or wait.
            match self.claims.as_mut().and_then(|c| c.held.pop_front()) {
                Some(next) => {
                    if let Some(claims) = &mut self.claims {
                        claims.measuring(&next);
                    }
                    self.measure_ahead(&next)?;
                }
                None => self.wait_for_holder(config)?,
            }
        }
    }

    /// Claims ahead up to the worker's depth and has those built ahead; `None` when the
    /// campaign has to stop.
    fn top_up(&mut self) -> Option<()> {
        let claims = self.claims.as_mut()?;
        let (codec, existing) = (self.codec, &self.existing);
        let build_times = match &self.pool {
            Some(pool) if claims.by_build_time() => {
                let stale = self
                    .build_times
                    .as_ref()
                    .is_none_or(|(read, _)| read.elapsed() >= BUILD_TIMES_READ);
                if stale {
                    let learnt = BuildTimes::from_learnt(&pool.build_times());
                    self.build_times = Some((Instant::now(), learnt));
                }
                self.build_times.as_ref().map(|(_, times)| times)
            }
            _ => None,
        };
        let topped = claims.top_up(
            self.store,
            &self.group,
            |p| existing.contains_key(&codec.config(p)),
            |p| codec.config(p),
            build_times,
        );
        if let Err(e) = topped {
            return self.stop(format!("cannot claim a configuration: {e}"));
        }
        if let Some(pool) = &self.pool {
            let build_key = &self.build_key;
            pool.plan(
                claims
                    .held
                    .iter()
                    .map(|p| (build_key(p), p.clone()))
                    .collect(),
                false,
            );
        }
        Some(())
    }

    /// Before `point` is measured: while its build is not done, measures promised points whose
    /// builds are, in the order they finish, so the device never idles while one of them could
    /// run. `None` when the campaign has to stop.
    fn measure_built_ahead(&mut self, point: &[i64]) -> Option<()> {
        self.promised.retain(|(_, p)| p != point);
        if self.pool.is_none() {
            return Some(());
        }
        let key = self.build_key_of(point);
        loop {
            let Some(pool) = &self.pool else {
                return Some(());
            };
            let others: Vec<&str> = self.promised.iter().map(|(k, _)| k.as_str()).collect();
            let Some(i) = first_built(pool, &mut self.time, (&key, point), &others) else {
                return Some(());
            };
            let (_, next) = self.promised.remove(i);
            if self.may_measure(&next)? {
                self.measure_ahead(&next)?;
            }
        }
    }

    /// In a shared campaign, before the held `point` is measured: while its build is not done,
    /// measures the other points this worker holds whose builds are, in the order they finish,
    /// claiming more as it goes, so that neither the device nor the build workers idle behind
    /// one long build. `None` when the campaign has to stop.
    fn measure_held_while_building(&mut self, point: &[i64]) -> Option<()> {
        let key = (self.build_key)(point);
        loop {
            let (Some(pool), Some(claims)) = (&self.pool, &self.claims) else {
                return Some(());
            };
            let others: Vec<(String, Point)> = claims
                .held
                .iter()
                .filter(|p| p.as_slice() != point)
                .map(|p| ((self.build_key)(p), p.clone()))
                .collect();
            let keys: Vec<&str> = others.iter().map(|(k, _)| k.as_str()).collect();
            let Some(i) = first_built(pool, &mut self.time, (&key, point), &keys) else {
                return Some(());
            };
            let next = &others[i].1;
            let claims = self.claims.as_mut().expect("checked above");
            claims.take(next);
            claims.measuring(next);
            self.measure_ahead(next)?;
            self.top_up()?;
        }
    }

    /// Racing stops a configuration by the best score so far, so the sooner a near-best one is
    /// measured, the more runs it spares; but a strategy's promised order may well start with
    /// the slowest (small tiles first in an exhaustive walk of SGEMM's space: the best so far
    /// stayed 2.5 times the optimum for the first 30 configurations). So before its first
    /// measurement a racing campaign measures [`SCOUTS`] of the promised points, evenly spaced
    /// over the promise (a sample of every region of an ordered walk), then follows the
    /// strategy's order. Only the order changes: every promised point is asked for anyway.
    /// `None` when the campaign has to stop.
    fn scout(&mut self, asked: &[i64]) -> Option<()> {
        if !std::mem::take(&mut self.scouting) {
            return Some(());
        }
        // The point asked for is measured next: no scout, and not measured ahead meanwhile.
        self.promised.retain(|(_, p)| p != asked);
        let (n, wanted) = (self.promised.len(), SCOUTS.min(self.promised.len()));
        let scouts: Vec<Point> = (0..wanted)
            .map(|i| self.promised[(2 * i + 1) * n / (2 * wanted)].1.clone())
            .collect();
        // Their builds go first: a pool would otherwise build (and so measure) the promise in
        // its own order, longest first, before reaching them.
        if let Some(pool) = &self.pool {
            pool.hurry(
                scouts
                    .iter()
                    .map(|p| ((self.build_key)(p), p.clone()))
                    .collect(),
            );
        }
        for scout in scouts {
            if self.existing.contains_key(&self.config(&scout)) {
                continue; // measured meanwhile, while an earlier scout's build was not done
            }
            if self.may_measure(&scout)? {
                self.measure_built_ahead(&scout)?;
                self.measure_ahead(&scout)?;
            }
        }
        Some(())
    }

    /// Whether this process may measure `point`: always, unless a guard says another process
    /// holds it or measured it (see [`Guard::claim`]). `None` when the campaign has to stop.
    fn may_measure(&mut self, point: &[i64]) -> Option<bool> {
        let codec = self.codec;
        let Some(guard) = &mut self.guard else {
            return Some(true);
        };
        if self.measure_again.contains(&codec.config(point)) {
            return Some(true);
        }
        let next = self.promised.iter().map(|(_, p)| p);
        match guard.claim(self.store, &self.group, point, next, |p| codec.config(p)) {
            Ok(mine) => Some(mine),
            Err(e) => self.stop(format!("cannot claim a configuration: {e}")),
        }
    }

    /// In a campaign of its own: measures `point`, unless another process tuning the same
    /// campaign in the store holds it; then its result once stored there (`true`: reused),
    /// measuring what this one promised meanwhile, or waiting. `None` when the campaign has to
    /// stop.
    fn evaluate_alone(&mut self, point: &[i64], config: &Config) -> Option<(Outcome, bool)> {
        self.scout(point)?;
        loop {
            if self.may_measure(point)? {
                self.measure_built_ahead(point)?;
                return self.measure_and_record(point, config).map(|o| (o, false));
            }
            if let Some(outcome) = self.stored_elsewhere(config)? {
                return Some((outcome, true));
            }
            match self.promised.first().map(|(_, p)| p.clone()) {
                Some(next) => {
                    self.promised.remove(0);
                    if self.may_measure(&next)? {
                        self.measure_ahead(&next)?;
                    }
                }
                None => self.wait_for_holder(config)?,
            }
        }
    }

    /// The outcome another process stored for `config`, if any, as reused (told to the
    /// observer); `None` when the campaign has to stop.
    fn stored_elsewhere(&mut self, config: &Config) -> Option<Option<Outcome>> {
        let reading = Instant::now();
        let stored = self.store.get(&self.key(config));
        self.time.store_s += reading.elapsed().as_secs_f64();
        match stored {
            Ok(Some(record)) => {
                self.existing.insert(config.clone(), record.outcome.clone());
                self.note_best(config, &record.outcome);
                self.racing.note(&record.outcome);
                if let Outcome::Measured(t) = &record.outcome {
                    self.racing.noise.add(t);
                }
                self.observer.event(Event::Evaluated {
                    config,
                    outcome: &record.outcome,
                    reused: true,
                    best: self.best,
                    phases: None,
                });
                Some(Some(record.outcome))
            }
            Ok(None) => Some(None),
            Err(e) => self.stop(format!("cannot read the store: {e}")),
        }
    }

    /// Measures and records `point` before the strategy asks for it (which then gets it as
    /// fresh). `None` when the campaign has to stop.
    fn measure_ahead(&mut self, point: &[i64]) -> Option<()> {
        let config = self.config(point);
        let outcome = self.measure_and_record(point, &config)?;
        self.existing.insert(config.clone(), outcome);
        self.measured_ahead.insert(config);
        Some(())
    }

    /// Plans the builds of `asked`, then of `hinted`, those the store does not hold; keeps
    /// `asked`, promised, to measure as their builds finish ([`Live::measure_built_ahead`]).
    fn announce(&mut self, asked: &[Point], hinted: &[Point]) {
        self.promised.clear();
        let (asked, hinted) = (self.unmeasured(asked), self.unmeasured(hinted));
        if let Some(claims) = &mut self.claims {
            if asked.is_empty() {
                claims.announce(&hinted, false);
            } else {
                claims.announce(&asked, true);
            }
            self.top_up();
            return;
        }
        let planned: Vec<(String, Point)> = asked
            .into_iter()
            .map(|p| (self.build_key_of(&p), p))
            .collect();
        let then: Vec<(String, Point)> = hinted
            .into_iter()
            .map(|p| (self.build_key_of(&p), p))
            .collect();
        // Built in any order (the longest first) only where all are promised: hinted builds
        // come after the promised ones.
        let any_order = !planned.is_empty() && then.is_empty();
        if let Some(pool) = &self.pool {
            pool.plan(planned.iter().chain(&then).cloned().collect(), any_order);
        }
        // A front end's per-configuration hook sees each point before it is measured: nothing
        // is measured ahead of being asked for.
        if self.per_config.is_none() {
            self.promised = planned;
        }
    }

    /// Of `points`, those the store does not hold and (where the front end excludes some,
    /// never built: it is asked about each point now) the front end does not exclude.
    fn unmeasured(&mut self, points: &[Point]) -> Vec<Point> {
        let mut kept = points.to_vec();
        kept.retain(|p| !self.existing.contains_key(&self.config(p)));
        if self.pool.is_some() && self.per_config.is_some() {
            kept.retain(|p| !self.excluded(p));
        }
        kept
    }

    /// Keeps the objective's value of an evaluated configuration if it is the best so far.
    fn note_best(&mut self, config: &Config, outcome: &Outcome) {
        let inputs = Inputs::new(&self.group.constants, config, outcome);
        if let Some(v) = self.metrics.evaluate(&inputs).objective {
            if self
                .best
                .is_none_or(|b| self.metrics.objective().better(v, b))
            {
                self.best = Some(v);
            }
        }
    }

    /// What the front end works out for `point`: `Ok(None)` where it excludes it, `Ok(Some(_))`
    /// what it runs (`Generated::default()`: the spec's), kept for the evaluation that follows.
    fn configure(&mut self, point: &[i64]) -> Result<Option<Generated>, String> {
        if let Some(generated) = self.configured.get(point) {
            return Ok(generated.clone());
        }
        let config = self.config(point);
        let generated = match &mut self.per_config {
            Some(per_config) => per_config.configure(&config)?,
            None => Some(Generated::default()),
        };
        self.configured.insert(point.to_vec(), generated.clone());
        Ok(generated)
    }

    /// `point`'s build key ([`Live::build_key`]); where the front end generates the point's
    /// code, with the digest of that code and its global size, the code given to the build
    /// pool to build under that key.
    fn build_key_of(&mut self, point: &[i64]) -> String {
        let key = (self.build_key)(point);
        let generates = self.per_config.as_ref().is_some_and(|p| p.generates_code());
        if !generates || self.pool.is_none() {
            return key;
        }
        let Some(generated) = self.generated(point).filter(|g| g.source.is_some()) else {
            return key;
        };
        let text = serde_json::to_string(&generated).expect("serialises");
        let key = format!(
            "{key}\0{}",
            ndtune_core::text::short_sha256(text.as_bytes())
        );
        let provided = self
            .pool
            .as_ref()
            .is_some_and(|p| p.provide(&key, generated));
        if !provided {
            self.stopped.get_or_insert_with(|| {
                "the node's build service cannot build code generated per configuration".into()
            });
        }
        key
    }

    /// What `point` runs in place of the spec's, where the front end generated anything.
    fn generated(&mut self, point: &[i64]) -> Option<Generated> {
        self.per_config.as_ref()?;
        match self.configure(point) {
            Ok(generated) => generated,
            Err(why) => self.stop(why),
        }
    }

    /// Waits a moment for `config`, which another worker holds: says once whose claim it waits
    /// for and until when, and stops (`None`) at once where a signal asks the campaign to.
    fn wait_for_holder(&mut self, config: &Config) -> Option<()> {
        if let Some(why) = ndtune_bench::children::stopping() {
            return self.stop(why);
        }
        if self.waiting_for.as_ref() != Some(config) {
            self.waiting_for = Some(config.clone());
            let held = match self.store.holder(&self.group, config) {
                Ok(held) => held,
                Err(e) => return self.stop(format!("cannot read the store's claims: {e}")),
            };
            if let Some((worker, deadline_ms)) = held {
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                let left = (deadline_ms - now_ms).max(0) as f64 / 1e3;
                self.observer.event(Event::Warning(format!(
                    "waiting for {}: worker `{worker}` holds it; its result is taken when stored, or the configuration once the claim lapses in {left:.0} s if that worker is gone (Ctrl-C stops and sums up)",
                    ndtune_core::config_key(config)
                )));
            }
        }
        std::thread::sleep(POLL);
        Some(())
    }

    fn stop<T>(&mut self, why: String) -> Option<T> {
        self.stopped = Some(why);
        None
    }
}

impl Evaluator for Live<'_> {
    fn cost(&self, point: &[i64], outcome: &Outcome) -> Option<f64> {
        let config = self.config(point);
        self.metrics
            .cost(&Inputs::new(&self.group.constants, &config, outcome))
    }

    fn costs(&self, point: &[i64], outcome: &Outcome) -> Option<Vec<f64>> {
        let config = self.config(point);
        self.metrics
            .costs(&Inputs::new(&self.group.constants, &config, outcome))
    }

    fn objectives(&self) -> usize {
        self.metrics.objectives().len()
    }

    fn will_ask(&mut self, points: &[Point]) {
        self.announce(points, &[]);
    }

    fn will_ask_then(&mut self, asked: &[Point], hinted: &[Point]) {
        self.announce(asked, hinted);
    }

    fn upcoming(&mut self, points: &[Point]) {
        self.announce(&[], points);
    }

    fn width(&self) -> usize {
        self.width
    }

    fn first_ready(&mut self, points: &[Point]) -> usize {
        if let Some(i) = points
            .iter()
            .position(|p| self.existing.contains_key(&self.config(p)))
        {
            return i;
        }
        // A shared campaign measures what it holds, a front end's hook what it is asked for.
        if self.claims.is_some() || self.per_config.is_some() || points.len() < 2 {
            return 0;
        }
        let keys: Vec<String> = points.iter().map(|p| self.build_key_of(p)).collect();
        let Some(pool) = &self.pool else { return 0 };
        let others: Vec<&str> = keys[1..].iter().map(String::as_str).collect();
        first_built(pool, &mut self.time, (&keys[0], &points[0]), &others).map_or(0, |i| i + 1)
    }

    fn exceeds_advice(&mut self, point: &[i64]) -> Option<bool> {
        self.advice.exceeds(point).filter(|_| self.advice_prior)
    }

    fn measuring(&self) -> bool {
        true
    }

    fn stored(&mut self, point: &[i64]) -> bool {
        self.existing.contains_key(&self.config(point))
    }

    fn decided(&mut self, total: u128, why: &str) {
        self.observer.event(Event::Started {
            total: total.try_into().unwrap_or(usize::MAX),
        });
        self.observer
            .event(Event::Warning(format!("strategy auto: {why}")));
    }

    fn excluded(&mut self, point: &[i64]) -> bool {
        if self.per_config.is_none() || self.stopped.is_some() {
            return false;
        }
        match self.configure(point) {
            Ok(generated) => generated.is_none(),
            Err(why) => {
                self.stopped = Some(why);
                false
            }
        }
    }

    fn evaluate(&mut self, point: &[i64]) -> Evaluated {
        let evaluated = self.evaluate_here(point);
        self.advice.note(point, &evaluated.outcome);
        evaluated
    }
}

impl Live<'_> {
    /// [`Evaluator::evaluate`]: from the store, or measured now.
    fn evaluate_here(&mut self, point: &[i64]) -> Evaluated {
        let config = self.config(point);
        if let Some(outcome) = self.existing.get(&config) {
            let outcome = outcome.clone();
            if self.measured_ahead.remove(&config) {
                return Evaluated {
                    outcome,
                    reused: false,
                };
            }
            self.note_best(&config, &outcome);
            self.racing.note(&outcome);
            self.observer.event(Event::Evaluated {
                config: &config,
                outcome: &outcome,
                reused: true,
                best: self.best,
                phases: None,
            });
            return Evaluated {
                outcome,
                reused: true,
            };
        }
        let evaluated = match self.stopped {
            Some(_) => None,
            None if self.claims.is_some() => self.evaluate_shared(point, &config),
            None => self.evaluate_alone(point, &config),
        };
        match evaluated {
            Some((outcome, reused)) => Evaluated { outcome, reused },
            // Points asked for after the campaign stopped are neither run nor stored.
            None => Evaluated {
                outcome: Outcome::Pruned {
                    constraint: STOPPED.into(),
                },
                reused: false,
            },
        }
    }
}

/// Waits until the build of `point` (its build `key`) or one of `others` is done
/// ([`Builds::first_done`]), counting the wait as time spent on builds: the index of the other
/// that came first, `None` once `point`'s is done.
fn first_built(
    pool: &Builds,
    time: &mut TimeSpent,
    (key, point): (&str, &[i64]),
    others: &[&str],
) -> Option<usize> {
    let waited = Instant::now();
    let first = pool.first_done(key, point, others);
    time.add_wait(waited.elapsed().as_secs_f64());
    first
}

/// The front end's part in measuring one configuration: its check of the outputs, its
/// observers of the timed runs.
struct Measuring<'a> {
    per_config: &'a mut dyn PerConfig,
    config: &'a Config,
}

impl FrontEnd for Measuring<'_> {
    fn own_check(&self) -> Option<&OwnCheck> {
        self.per_config.own_check()
    }

    fn check(&mut self, outputs: &BTreeMap<String, PathBuf>) -> Result<Option<String>, String> {
        self.per_config.check(outputs)
    }

    fn observers(&self) -> Vec<String> {
        self.per_config.observers()
    }

    fn observe(&mut self, moment: Moment) -> Result<(), String> {
        self.per_config.observe(self.config, moment)
    }

    fn observed(&mut self) -> Result<BTreeMap<String, serde_json::Value>, String> {
        self.per_config.observed()
    }
}
