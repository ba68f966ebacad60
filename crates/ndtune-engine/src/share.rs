//! Sharing one campaign among workers — processes on one or many machines, one device each,
//! all with the same spec, strategy and seed — through the store's claims
//! ([`ndtune_store::Store::claim`]). Nothing else coordinates them.
//!
//! Each worker runs the strategy itself. A point the strategy asks for is taken from the store
//! if any worker measured it, measured here if this worker can claim it, and otherwise (another
//! worker holds it) this worker measures what it claimed ahead meanwhile, or waits for it. The
//! worker keeps [`claims_ahead`] points of the strategy's announced order
//! ([`ndtune_search::Evaluator::upcoming`]) claimed ahead, which are also what its build workers
//! compile: no worker builds what another will measure. Where the strategy promised to ask for
//! every announced point, those whose builds are expected to take longest are claimed first
//! ([`BuildTimes::longest_first`]). While the build of the point it measures
//! next is not done, it measures those of its claims whose builds are. Every worker sees every result, so workers with the same seed
//! propose alike and split each batch (exhaustive, random, a generation of `ga`); sequential
//! strategies share best with a seed per worker.
//!
//! A heartbeat thread with its own connection moves the deadlines of this worker's claims on
//! every third of a lease, also while a long build or measurement runs. A worker that dies
//! stops beating; its claims expire after a lease and another worker takes them over.
//!
//! A campaign of its own (a plain `ndtune tune`) claims too, with a [`Guard`]: each point just
//! before it measures it, with the next points it promised to ask for, so that another process
//! tuning the same campaign in the same store (a second `tune`, a worker) never measures them
//! too; a point another process holds it takes from the store once measured there.

use ndtune_bench::builder::BuildTimes;
use ndtune_core::Config;
use ndtune_search::Point;
use ndtune_store::{Group, Store, StoreError};
use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How many points a worker keeps claimed ahead per build job: enough for its build workers to
/// go on while one long build holds up the measurement (with one per build job, an SGEMM
/// campaign on one H200 waited 57 of its 68 s for builds, its build workers busy 43% of the
/// time).
const CLAIMS_PER_BUILD_JOB: usize = 3;

/// How many points a worker with `build_jobs` build workers keeps claimed ahead.
pub fn claims_ahead(build_jobs: usize) -> usize {
    build_jobs.max(1) * CLAIMS_PER_BUILD_JOB
}

/// A worker's name where none is given: `host:pid:device` (the device's selector).
pub fn default_worker_id(device: &ndtune_backend::AnyDevice) -> String {
    format!(
        "{}:{}:{}",
        ndtune_core::host_name(),
        std::process::id(),
        device.selector()
    )
}

/// How long the claims of a campaign of its own ([`crate::Options::guard`]) outlive its last
/// heartbeat (a shared campaign's workers give theirs with `--lease`).
pub const GUARD_LEASE: Duration = Duration::from_secs(60);

/// How a campaign is shared: who this worker is and how long its claims last.
#[derive(Debug, Clone)]
pub struct Share {
    /// This worker's name in the store (`ndtune status` shows it); a worker restarted with
    /// the same name gets back the claims it still holds.
    pub worker: String,
    /// How long a claim lasts without a heartbeat: a dead worker's configurations wait this
    /// long before another worker takes them over.
    pub lease: Duration,
    /// The store's location (file or URL), for the heartbeat's own connection.
    pub location: OsString,
}

/// How often a waiting worker looks again for a result another worker is measuring.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// How many points of the strategy's order a claim looks through at once.
const CLAIM_WINDOW: usize = 256;

/// One worker's claims on a shared campaign.
pub(crate) struct Claims {
    pub share: Share,
    /// How many points to keep claimed ahead of the one being measured.
    depth: usize,
    /// The strategy's announced order, as last told.
    ahead: Vec<Point>,
    /// Whether the strategy will ask for every announced point, in any order: then the points
    /// whose builds are expected to take longest are claimed first, so that the campaign's
    /// last builds are short ones (the workers' own order ends on whatever it ends on).
    any_order: bool,
    /// Points this worker claimed and has not measured yet, in claim order.
    pub held: VecDeque<Point>,
    /// The claimed point being measured now, until its result is recorded: a campaign stopped
    /// meanwhile gives it back with the others.
    in_flight: Option<Point>,
    _heartbeat: Heartbeat,
}

impl Claims {
    /// Starts the heartbeat (its own store connection) for `share`'s worker.
    pub fn start(share: Share, depth: usize) -> Result<Claims, StoreError> {
        let heartbeat = Heartbeat::start(&share)?;
        Ok(Claims {
            share,
            depth: depth.max(1),
            ahead: Vec::new(),
            any_order: false,
            held: VecDeque::new(),
            in_flight: None,
            _heartbeat: heartbeat,
        })
    }

    /// The strategy announced its next points; `any_order`: it will ask for every one of them.
    pub fn announce(&mut self, points: &[Point], any_order: bool) {
        self.ahead = points.to_vec();
        self.any_order = any_order;
    }

    /// Whether the points to claim next are chosen by their expected build times.
    pub fn by_build_time(&self) -> bool {
        self.any_order
    }

    /// Whether this worker holds `point`; forgets it (the caller measures it now).
    pub fn take(&mut self, point: &[i64]) -> bool {
        let at = self.held.iter().position(|p| p == point);
        at.map(|i| self.held.remove(i)).is_some()
    }

    /// `point` is being measured now: claiming ahead must not take it again (a worker that
    /// claims a configuration it holds gets it back).
    pub fn measuring(&mut self, point: &[i64]) {
        self.ahead.retain(|p| p != point);
        self.in_flight = Some(point.to_vec());
    }

    /// `point`'s result is recorded (its claim completed).
    pub fn measured(&mut self, point: &[i64]) {
        if self.in_flight.as_deref() == Some(point) {
            self.in_flight = None;
        }
    }

    /// The points claimed and not measured (the one in flight included), forgotten here (to
    /// give them back, [`give_back`]).
    pub fn take_unmeasured(&mut self) -> Vec<Point> {
        let mut points: Vec<Point> = std::mem::take(&mut self.held).into();
        points.extend(self.in_flight.take());
        points
    }

    /// Claims points of the announced order until `depth` are held; `known` tells the points
    /// that have an outcome here already. `config` turns a point into its configuration. Where
    /// any order will do and `build_times` are given, the builds expected to take longest are
    /// claimed first.
    pub fn top_up(
        &mut self,
        store: &Store,
        group: &Group,
        known: impl Fn(&[i64]) -> bool,
        config: impl Fn(&[i64]) -> Config,
        build_times: Option<&BuildTimes>,
    ) -> Result<(), StoreError> {
        let mut candidates: Vec<Point> = self
            .ahead
            .iter()
            .filter(|p| !known(p) && !self.held.contains(p))
            .cloned()
            .collect();
        if let (true, Some(times)) = (self.any_order, build_times) {
            let points: Vec<&[i64]> = candidates.iter().map(Vec::as_slice).collect();
            let order = times.longest_first(&points);
            candidates = order.into_iter().map(|i| candidates[i].clone()).collect();
        }
        while self.held.len() < self.depth {
            let window: Vec<&Point> = candidates
                .iter()
                .filter(|p| !self.held.contains(p))
                .take(CLAIM_WINDOW)
                .collect();
            if window.is_empty() {
                return Ok(());
            }
            let configs: Vec<Config> = window.iter().map(|p| config(p)).collect();
            let Some(claimed) =
                store.claim(group, &self.share.worker, &configs, self.share.lease)?
            else {
                return Ok(());
            };
            let at = configs
                .iter()
                .position(|c| *c == claimed)
                .expect("a claim is one of the candidates");
            self.held.push_back(window[at].clone());
        }
        Ok(())
    }
}

/// Gives back `worker`'s claims of `points` that it did not complete, so that other workers
/// take them at once.
pub(crate) fn give_back(
    store: &Store,
    group: &Group,
    worker: &str,
    points: impl IntoIterator<Item = Point>,
    config: impl Fn(&[i64]) -> Config,
) -> Result<(), StoreError> {
    for point in points {
        store.release(group, worker, &config(&point))?;
    }
    Ok(())
}

/// How many points a [`Guard`] claims at once: the one to measure now and the next ones promised.
const GUARD_CHUNK: usize = 32;

/// The claims of a campaign of its own (see the module's header).
pub(crate) struct Guard {
    pub share: Share,
    /// Points claimed and not measured yet.
    held: HashSet<Point>,
    _heartbeat: Heartbeat,
}

impl Guard {
    /// Starts the heartbeat (its own store connection) for `share`'s worker.
    pub fn start(share: Share) -> Result<Guard, StoreError> {
        let heartbeat = Heartbeat::start(&share)?;
        Ok(Guard {
            share,
            held: HashSet::new(),
            _heartbeat: heartbeat,
        })
    }

    /// Whether this process may measure `point`: it holds it, or claims it now (with up to
    /// [`GUARD_CHUNK`] − 1 of the points `next` that it does not hold, in one transaction).
    /// `false`: another process holds it or measured it.
    pub fn claim<'p>(
        &mut self,
        store: &Store,
        group: &Group,
        point: &[i64],
        next: impl Iterator<Item = &'p Point>,
        config: impl Fn(&[i64]) -> Config,
    ) -> Result<bool, StoreError> {
        if self.held.contains(point) {
            return Ok(true);
        }
        let points: Vec<Point> = std::iter::once(point.to_vec())
            .chain(
                next.filter(|p| p.as_slice() != point && !self.held.contains(*p))
                    .take(GUARD_CHUNK - 1)
                    .cloned(),
            )
            .collect();
        let configs: Vec<Config> = points.iter().map(|p| config(p)).collect();
        let claimed: HashSet<Config> = store
            .claim_each(
                group,
                &self.share.worker,
                &configs,
                configs.len(),
                self.share.lease,
            )?
            .into_iter()
            .collect();
        for (p, c) in points.into_iter().zip(&configs) {
            if claimed.contains(c) {
                self.held.insert(p);
            }
        }
        Ok(self.held.contains(point))
    }

    /// `point` was measured and its claim completed.
    pub fn measured(&mut self, point: &[i64]) {
        self.held.remove(point);
    }

    /// The points claimed and not measured, forgotten here (to give them back, [`give_back`]).
    pub fn take_held(&mut self) -> HashSet<Point> {
        std::mem::take(&mut self.held)
    }
}

/// A thread that keeps a worker's claims alive until dropped.
struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Opens a connection of its own and beats every third of the lease.
    fn start(share: &Share) -> Result<Heartbeat, StoreError> {
        let (stop, stopped) = mpsc::channel::<()>();
        let (ready, opened) = mpsc::channel::<Result<(), StoreError>>();
        let (location, worker) = (share.location.clone(), share.worker.clone());
        let every = share.lease / 3;
        let thread = std::thread::spawn(move || {
            // A beat that finds the connection broken connects again once; the next beat comes
            // a third of a lease later anyway.
            let store = match Store::open(&location).map(|s| s.reconnect_for(Duration::ZERO)) {
                Ok(store) => {
                    let _ = ready.send(Ok(()));
                    store
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            // A failed beat is not fatal: the claims may lapse, and `complete` says so.
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                let _ = store.heartbeat(&worker);
            }
        });
        opened
            .recv()
            .expect("the heartbeat thread answers before it ends")?;
        Ok(Heartbeat {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> Group {
        Group {
            device: "0123456789abcdef".into(),
            kernel: "sgemm".into(),
            source_hash: "aaaabbbbccccdddd".into(),
            setup: "1111222233334444".into(),
            constants: ndtune_core::int_config([("N", 1024)]),
        }
    }

    fn config(point: &[i64]) -> Config {
        ndtune_core::int_config([("TS", point[0]), ("UNROLL", point[1])])
    }

    /// Two workers of one campaign, a strategy that will ask for every point: the builds
    /// expected longest are claimed first, by one worker or the other; a strategy that only
    /// announces its next points gets them claimed in its order.
    #[test]
    fn where_any_order_will_do_the_longest_builds_are_claimed_first() {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().join("campaign.ndtune");
        let store = Store::open(&location).unwrap();
        let share = |worker: &str| Share {
            worker: worker.into(),
            lease: Duration::from_secs(60),
            location: location.clone().into(),
        };
        let learnt = BuildTimes::from_learnt(&[
            (vec![8, 1], 0.1),
            (vec![8, 32], 9.0),
            (vec![16, 1], 0.2),
            (vec![16, 32], 12.0),
        ]);
        let order: Vec<Point> = vec![vec![8, 1], vec![16, 1], vec![8, 32], vec![16, 32]];
        let mut a = Claims::start(share("a"), 1).unwrap();
        let mut b = Claims::start(share("b"), 1).unwrap();
        for claims in [&mut a, &mut b] {
            claims.announce(&order, true);
            claims
                .top_up(&store, &group(), |_| false, config, Some(&learnt))
                .unwrap();
        }
        assert_eq!(Vec::from(a.held.clone()), vec![vec![16, 32]]);
        assert_eq!(Vec::from(b.held.clone()), vec![vec![8, 32]]);

        let mut c = Claims::start(share("c"), 2).unwrap();
        c.announce(&order, false);
        c.top_up(&store, &group(), |_| false, config, Some(&learnt))
            .unwrap();
        assert_eq!(Vec::from(c.held.clone()), vec![vec![8, 1], vec![16, 1]]);
    }
}
