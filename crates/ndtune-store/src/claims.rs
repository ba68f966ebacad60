//! Claims: how workers (processes on one or many machines, one device each) share one campaign
//! through one store, on either backend.
//!
//! A worker asks [`Store::claim`] for the next configuration of a group (its candidates in the
//! campaign's order); the store reserves the first one that has no result and no live claim
//! for that worker until a deadline, atomically: on PostgreSQL the claim row is read with
//! `SELECT ... FOR UPDATE SKIP LOCKED` and written in the same transaction; on SQLite the
//! transaction holds the write lock (`BEGIN IMMEDIATE`). The worker evaluates it and calls
//! [`Store::complete`], which stores the record and marks the claim done in one transaction.
//! [`Store::heartbeat`] moves the deadlines of a live worker's claims on; a worker that dies
//! stops beating, its claims expire, and the next [`Store::claim`] of another worker takes them
//! over (a lapse, counted for [`Store::campaign_status`]). So no configuration is evaluated
//! twice unless a live worker stopped beating for longer than its lease, and none is lost.
//!
//! Claims are keyed by the result key (setup included), so devices with the same [`fingerprint`](crate::fingerprint)
//! pool their work and results, and devices of other kinds keep their own.

use crate::store::{group_params, key_params, GROUP_COLUMNS, GROUP_IS, KEY_IS};
use crate::{now_ms, Group, Record, Store, StoreError, UnixMs};
use ndtune_core::{config_key, Config};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// One worker's share of a campaign, as [`Store::campaign_status`] counts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerStatus {
    pub worker: String,
    /// Configurations it holds now, within their deadline.
    pub claimed: u64,
    /// Configurations it evaluated (claims completed).
    pub done: u64,
    /// Its claims that expired: held past their deadline, or taken over by another worker.
    pub expired: u64,
    /// Its last claim, completion or heartbeat, if the store has heard of it.
    pub heartbeat: Option<UnixMs>,
    /// When it claimed its first configuration of the campaign that it still holds or did.
    pub first_claim: Option<UnixMs>,
    /// When it completed its last one.
    pub last_done: Option<UnixMs>,
}

impl WorkerStatus {
    /// Configurations it evaluated per minute, from its first claim to its last completion;
    /// `None` before it completed one.
    pub fn per_minute(&self) -> Option<f64> {
        let span_ms = self.last_done? - self.first_claim?;
        (self.done > 0 && span_ms > 0).then(|| self.done as f64 * 60_000.0 / span_ms as f64)
    }
}

/// A campaign's progress: its results and each worker's share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CampaignStatus {
    pub group: Group,
    /// Records of the group, whoever stored them (workers or a single `tune`).
    pub results: u64,
    /// When the last of them was finished.
    pub last_result: Option<UnixMs>,
    /// Claimed configurations evaluated to a result more than once (by a worker whose lease
    /// ran out while it still worked, and by the one that took the claim over).
    pub measured_twice: u64,
    /// Workers that ever claimed a configuration of it, by id.
    pub workers: Vec<WorkerStatus>,
}

/// How many candidates [`Store::claim`] reads the claims of at once.
const CLAIM_CHUNK: usize = 64;

/// A claim as [`Store::claim`] reads it before trying.
struct Seen {
    worker: String,
    deadline: UnixMs,
    done: bool,
}

/// What [`Store::claim`] found for one candidate.
enum Attempt {
    Claimed,
    /// It has a result: no worker will need it again.
    Done,
    /// Another worker holds it (or is claiming it right now).
    Held,
}

impl Store {
    /// Reserves for `worker` the first of `candidates` (in the campaign's order: every worker
    /// of a campaign passes the same order, or its own proposals) that has no result and no
    /// live claim, until `lease` from now; `None` when every candidate is done or held.
    /// A configuration whose claim expired is taken over. A worker asking again for a
    /// configuration it still holds gets it back (a restarted worker with the same id).
    /// Also records that `worker` is alive (in the claim's transaction).
    pub fn claim(
        &self,
        group: &Group,
        worker: &str,
        candidates: &[Config],
        lease: Duration,
    ) -> Result<Option<Config>, StoreError> {
        Ok(self
            .claim_each(group, worker, candidates, 1, lease)?
            .into_iter()
            .next())
    }

    /// Reserves for `worker`, as [`Store::claim`] does, the first `limit` of `candidates` that
    /// have no result and no live claim of another worker, in their order; returns those it
    /// reserved. The candidates that look free are tried in one transaction per 64 of them.
    pub fn claim_each(
        &self,
        group: &Group,
        worker: &str,
        candidates: &[Config],
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<Config>, StoreError> {
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        // Each candidate's key once: the done cache, the chunk's read and the marks use it.
        let fresh: Vec<(&Config, String)> = candidates
            .iter()
            .map(|c| (c, config_key(c)))
            .filter(|(_, key)| !self.done.borrow().contains(&(group.clone(), key.clone())))
            .collect();
        let mut claimed = Vec::new();
        for chunk in fresh.chunks(CLAIM_CHUNK) {
            if claimed.len() == limit {
                break;
            }
            // One read of the chunk's claims first: only those that look free are tried, in a
            // transaction that reads each one's claim again under the lock.
            let claims = self.claims_of(group, chunk.iter().map(|(_, key)| key))?;
            let now = now_ms();
            let mut free = Vec::new();
            for (config, key) in chunk {
                match claims.get(key) {
                    Some(seen) if seen.done => {
                        self.done.borrow_mut().insert((group.clone(), key.clone()));
                    }
                    Some(seen) if seen.worker != worker && seen.deadline >= now => {}
                    _ => free.push((*config, key)),
                }
            }
            if free.is_empty() {
                continue;
            }
            let wanted = limit - claimed.len();
            let (won, done) = self.transaction(|s| {
                let (mut won, mut done) = (Vec::new(), Vec::new());
                for &(config, key) in &free {
                    match s.try_claim(group, config, worker, lease_ms)? {
                        Attempt::Claimed => won.push(config.clone()),
                        Attempt::Done => done.push(key.clone()),
                        Attempt::Held => {}
                    }
                    if won.len() == wanted {
                        break;
                    }
                }
                Ok((won, done))
            })?;
            for key in done {
                self.done.borrow_mut().insert((group.clone(), key));
            }
            claimed.extend(won);
        }
        if claimed.is_empty() {
            self.beat(worker, now_ms())?;
        }
        Ok(claimed)
    }

    /// The claims in `group` of the configurations with these config keys, by key.
    /// Who holds `config` in `group` and until when (Unix ms), where another worker's claim on
    /// it is live or lapsed but not done; `None` where nobody holds it.
    pub fn holder(
        &self,
        group: &Group,
        config: &Config,
    ) -> Result<Option<(String, i64)>, StoreError> {
        let key = config_key(config);
        Ok(self
            .claims_of(group, std::iter::once(&key))?
            .remove(&key)
            .filter(|seen| !seen.done)
            .map(|seen| (seen.worker, seen.deadline)))
    }

    fn claims_of<'k>(
        &self,
        group: &Group,
        keys: impl Iterator<Item = &'k String>,
    ) -> Result<HashMap<String, Seen>, StoreError> {
        let mut params = group_params(group);
        let first = params.len() + 1;
        params.extend(keys.map(|key| key.into()));
        let slots: Vec<String> = (first..params.len() + 1).map(|i| format!("?{i}")).collect();
        let rows = self.query(
            &format!(
                "SELECT config, worker, deadline, done_at FROM claims
                 WHERE {GROUP_IS} AND config IN ({})",
                slots.join(", ")
            ),
            &params,
        )?;
        let mut seen = HashMap::new();
        for row in &rows {
            seen.insert(
                self.cell(row.text(0))?,
                Seen {
                    worker: self.cell(row.text(1))?,
                    deadline: self.cell(row.int(2))?,
                    done: self.cell(row.int_or_null(3))?.is_some(),
                },
            );
        }
        Ok(seen)
    }

    /// Inside a transaction: claims one configuration if it is free.
    fn try_claim(
        &self,
        group: &Group,
        config: &Config,
        worker: &str,
        lease_ms: i64,
    ) -> Result<Attempt, StoreError> {
        let key = key_params(group, config);
        let sql = format!(
            "SELECT worker, deadline, done_at FROM claims WHERE {KEY_IS}{}",
            self.lock_rows()
        );
        let claim = self.query(&sql, &key)?;
        let now = now_ms();
        let previous = match claim.first() {
            Some(row) => {
                let holder = self.cell(row.text(0))?;
                let deadline = self.cell(row.int(1))?;
                if self.cell(row.int_or_null(2))?.is_some() {
                    return Ok(Attempt::Done);
                }
                if deadline >= now && holder != worker {
                    return Ok(Attempt::Held);
                }
                Some(holder)
            }
            None => None,
        };
        let has_result = !self
            .query(&format!("SELECT 1 FROM results WHERE {KEY_IS}"), &key)?
            .is_empty();
        if has_result {
            return Ok(Attempt::Done);
        }
        let mut params = key.clone();
        params.extend([
            worker.into(),
            now.into(),
            lease_ms.into(),
            now.saturating_add(lease_ms).into(),
        ]);
        match previous {
            Some(holder) => {
                self.execute(
                    &format!(
                        "UPDATE claims SET worker = ?7, claimed_at = ?8, lease_ms = ?9,
                         deadline = ?10 WHERE {KEY_IS}"
                    ),
                    &params,
                )?;
                if holder != worker {
                    let mut lapse = key;
                    lapse.extend([holder.into(), worker.into(), now.into()]);
                    self.execute(
                        "INSERT INTO lapses (device, kernel, source_hash, setup, constants,
                             config, worker, taken_by, taken_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                        &lapse,
                    )?;
                }
                self.beat(worker, now)?;
                Ok(Attempt::Claimed)
            }
            None => {
                let inserted = self.execute(
                    "INSERT INTO claims (device, kernel, source_hash, setup, constants, config,
                         worker, claimed_at, lease_ms, deadline)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                     ON CONFLICT (device, kernel, source_hash, setup, constants, config)
                     DO NOTHING",
                    &params,
                )?;
                if inserted == 0 {
                    return Ok(Attempt::Held);
                }
                self.beat(worker, now)?;
                Ok(Attempt::Claimed)
            }
        }
    }

    /// Stores `record` (as [`Store::insert`]) and marks `worker`'s claim of it done, in one
    /// transaction. Returns whether `worker` still held the claim: `false` when its lease had
    /// expired and another worker took the configuration over (the record is stored anyway,
    /// and replaced by the other worker's).
    pub fn complete(&self, worker: &str, record: &Record) -> Result<bool, StoreError> {
        let now = now_ms();
        let held = self.transaction(|s| {
            let mut params = key_params(&record.key.group(), &record.key.config);
            params.extend([worker.into(), now.into()]);
            // Run again after a lost connection, this completion may have committed already.
            let committed = s.query(
                &format!("SELECT 1 FROM claims WHERE {KEY_IS} AND worker = ?7 AND done_at = ?8"),
                &params,
            )?;
            if !committed.is_empty() {
                return Ok(true);
            }
            s.insert(record)?;
            let marked = s.execute(
                &format!(
                    "UPDATE claims SET done_at = ?8, deadline = ?8
                     WHERE {KEY_IS} AND worker = ?7 AND done_at IS NULL"
                ),
                &params,
            )?;
            s.execute(
                &format!("UPDATE claims SET completions = completions + 1 WHERE {KEY_IS}"),
                &params[..6],
            )?;
            s.beat(worker, now)?;
            Ok(marked == 1)
        })?;
        self.done
            .borrow_mut()
            .insert((record.key.group(), config_key(&record.key.config)));
        Ok(held)
    }

    /// Gives back `worker`'s claim of `config` without a result (a worker that stops early),
    /// so another worker takes it at once. Returns whether it held the claim.
    pub fn release(
        &self,
        group: &Group,
        worker: &str,
        config: &Config,
    ) -> Result<bool, StoreError> {
        let mut params = key_params(group, config);
        params.push(worker.into());
        let released = self.execute(
            &format!("DELETE FROM claims WHERE {KEY_IS} AND worker = ?7 AND done_at IS NULL"),
            &params,
        )?;
        Ok(released == 1)
    }

    /// Records that `worker` is alive and moves the deadline of each claim it holds to a lease
    /// from now. A worker calls it more often than its lease (a third of it, say), also while a
    /// long evaluation runs (from a thread of its own, with a store of its own).
    pub fn heartbeat(&self, worker: &str) -> Result<(), StoreError> {
        let now = now_ms();
        self.transaction(|s| {
            s.beat(worker, now)?;
            s.execute(
                "UPDATE claims SET deadline = ?2 + lease_ms
                 WHERE worker = ?1 AND done_at IS NULL",
                &[worker.into(), now.into()],
            )
        })?;
        Ok(())
    }

    fn beat(&self, worker: &str, now: UnixMs) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO workers (worker, started_at, heartbeat) VALUES (?1, ?2, ?2)
             ON CONFLICT (worker) DO UPDATE SET heartbeat = excluded.heartbeat",
            &[worker.into(), now.into()],
        )?;
        Ok(())
    }

    /// Every group that has results or claims, sorted.
    pub fn campaigns(&self) -> Result<Vec<Group>, StoreError> {
        let mut groups = self.groups()?;
        for row in self.query(&format!("SELECT DISTINCT {GROUP_COLUMNS} FROM claims"), &[])? {
            groups.push(self.group(&row)?);
        }
        groups.sort();
        groups.dedup();
        Ok(groups)
    }

    /// A campaign's progress: its results, and per worker its claims held, done and expired,
    /// and its last heartbeat.
    pub fn campaign_status(&self, group: &Group) -> Result<CampaignStatus, StoreError> {
        let now = now_ms();
        let params = group_params(group);
        let count = self.query(
            &format!("SELECT count(*), max(finished_at) FROM results WHERE {GROUP_IS}"),
            &params,
        )?;
        let results = self.cell(count[0].int(0))? as u64;
        let last_result = self.cell(count[0].int_or_null(1))?;
        let twice = self.query(
            &format!("SELECT count(*) FROM claims WHERE {GROUP_IS} AND completions > 1"),
            &params,
        )?;
        let measured_twice = self.cell(twice[0].int(0))? as u64;
        let mut workers = BTreeMap::<String, WorkerStatus>::new();
        let mut with_now = params.clone();
        with_now.push(now.into());
        let claims = self.query(
            &format!(
                "SELECT worker,
                     sum(CASE WHEN done_at IS NULL AND deadline >= ?6 THEN 1 ELSE 0 END),
                     sum(CASE WHEN done_at IS NOT NULL THEN 1 ELSE 0 END),
                     sum(CASE WHEN done_at IS NULL AND deadline < ?6 THEN 1 ELSE 0 END),
                     min(claimed_at), max(done_at)
                 FROM claims WHERE {GROUP_IS} GROUP BY worker"
            ),
            &with_now,
        )?;
        for row in &claims {
            let status = share(&mut workers, self.cell(row.text(0))?);
            status.claimed = self.cell(row.int(1))? as u64;
            status.done = self.cell(row.int(2))? as u64;
            status.expired = self.cell(row.int(3))? as u64;
            status.first_claim = self.cell(row.int_or_null(4))?;
            status.last_done = self.cell(row.int_or_null(5))?;
        }
        let lapses = self.query(
            &format!("SELECT worker, count(*) FROM lapses WHERE {GROUP_IS} GROUP BY worker"),
            &params,
        )?;
        for row in &lapses {
            share(&mut workers, self.cell(row.text(0))?).expired += self.cell(row.int(1))? as u64;
        }
        for row in self.query("SELECT worker, heartbeat FROM workers", &[])? {
            if let Some(status) = workers.get_mut(&self.cell(row.text(0))?) {
                status.heartbeat = Some(self.cell(row.int(1))?);
            }
        }
        Ok(CampaignStatus {
            group: group.clone(),
            results,
            last_result,
            measured_twice,
            workers: workers.into_values().collect(),
        })
    }
}

impl Store {
    /// Which worker evaluated each configuration of `group` that a claim completed, by
    /// configuration key ([`ndtune_core::config_key`]): who measured what, for a timeline.
    pub fn evaluated_by(&self, group: &Group) -> Result<HashMap<String, String>, StoreError> {
        let rows = self.query(
            &format!("SELECT config, worker FROM claims WHERE {GROUP_IS} AND done_at IS NOT NULL"),
            &group_params(group),
        )?;
        rows.iter()
            .map(|row| Ok((self.cell(row.text(0))?, self.cell(row.text(1))?)))
            .collect()
    }
}

/// `worker`'s entry in `workers`, added with nothing counted yet if missing.
fn share(workers: &mut BTreeMap<String, WorkerStatus>, worker: String) -> &mut WorkerStatus {
    workers.entry(worker.clone()).or_insert(WorkerStatus {
        worker,
        claimed: 0,
        done: 0,
        expired: 0,
        heartbeat: None,
        first_claim: None,
        last_done: None,
    })
}
