//! [`Store`]: reading and writing records, device profiles, scenarios, studies and
//! observations, on either backend. Every statement is written once here; a [`Backend`] runs it.

use crate::backend::{Backend, Row, Value};
use crate::location::Location;
use crate::{fingerprint, Group, Observation, Record, ResultKey, Study};
use ndtune_core::{config_key, Config, Outcome, OutcomeKind};
use ndtune_device::DeviceProfile;
use ndtune_metrics::Definitions;
use serde::de::DeserializeOwned;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::StoreError;

/// How long a store whose PostgreSQL connection broke tries to connect again before an
/// operation fails, unless [`Store::reconnect_for`] says otherwise.
pub const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// The first pause between attempts to connect again; each next one doubles, up to
/// [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);
/// How many times an operation that PostgreSQL rolled back to end a deadlock (or a
/// serialization failure) runs again before its error is returned.
const CONFLICT_RERUNS: u32 = 20;

/// An open results store: an SQLite file or a PostgreSQL database. Every write is its own
/// committed transaction. Where the connection to a PostgreSQL server breaks (the server
/// restarted, the network failed), each operation connects again and runs once more, for at
/// most [`RECONNECT_FOR`]: a transaction is run again from its start, so one that did commit
/// before the connection broke must be safe to run twice (every write of the store is).
pub struct Store {
    db: RefCell<Box<dyn Backend>>,
    /// The location as shown: the file, or the URL without its password.
    path: PathBuf,
    version: u32,
    /// Configurations known to have a result, by group and config key: claims skip them
    /// without asking the database (results are never removed).
    pub(crate) done: RefCell<HashSet<(Group, String)>>,
    reconnect_for: Duration,
    /// Inside [`Store::transaction`]: a lost connection fails the statement, and the whole
    /// transaction is run again.
    in_transaction: Cell<bool>,
}

/// The kind of the studies that keep a campaign's metrics and objective ([`Store::put_metrics`]).
pub const METRICS_STUDY: &str = "metrics";

/// The columns a [`Record`] is read from, in [`Store::record`]'s order.
const RECORD_COLUMNS: &str = "device, kernel, source_hash, setup, constants, config, \
                              outcome_kind, outcome, ndtune_version, started_at, finished_at";

/// A group's columns, in [`group_params`]' order.
pub(crate) const GROUP_COLUMNS: &str = "device, kernel, source_hash, setup, constants";

/// The condition that selects one group's rows, its values as `?1`..`?5` ([`group_params`]).
pub(crate) const GROUP_IS: &str =
    "device = ?1 AND kernel = ?2 AND source_hash = ?3 AND setup = ?4 AND constants = ?5";

/// The condition that selects one configuration's rows, its values as `?1`..`?6`
/// ([`key_params`]).
pub(crate) const KEY_IS: &str = "device = ?1 AND kernel = ?2 AND source_hash = ?3 AND setup = ?4 \
                                 AND constants = ?5 AND config = ?6";

pub(crate) fn group_params(group: &Group) -> Vec<Value> {
    vec![
        (&group.device).into(),
        (&group.kernel).into(),
        (&group.source_hash).into(),
        (&group.setup).into(),
        to_json(&group.constants).into(),
    ]
}

pub(crate) fn key_params(group: &Group, config: &Config) -> Vec<Value> {
    let mut params = group_params(group);
    params.push(config_key(config).into());
    params
}

impl Store {
    /// Opens the store at `location`: a path to an SQLite file, or a `postgres://` /
    /// `postgresql://` URL of a PostgreSQL database (`postgres://user:password@host:port/db`).
    ///
    /// A file is created if it is missing or empty (its directory must exist); a database is
    /// set up if it is empty; either is migrated if it has an older schema. A file or database
    /// that is not an ndtune store (a database of another program), or has a newer schema, is
    /// refused and left untouched, as is everything when the server cannot be reached or
    /// refuses the credentials; the error names the location, a URL's password hidden. An
    /// existing file is first checked read-only with SQLite's `quick_check`, which reads the
    /// whole file once.
    ///
    /// A file that cannot be written (a read-only file system, a directory or file the user
    /// may not write, a full disk) is [`StoreError::CannotWrite`], with the reason.
    pub fn open(location: impl AsRef<OsStr>) -> Result<Store, StoreError> {
        Self::open_with(
            location.as_ref(),
            crate::schema::MIGRATIONS,
            crate::schema::PG_MIGRATIONS,
        )
    }

    /// Opens an existing store for commands that only read it. A file is opened read-only, so
    /// that a store on a read-only file system, in a directory the user cannot write or on a
    /// full disk can be read; a missing file is [`StoreError::Missing`], never created. A
    /// store of an older schema is migrated first, which needs writing it. A PostgreSQL
    /// database is opened as by [`Store::open`]. Writing to a read-only store fails.
    pub fn open_read_only(location: impl AsRef<OsStr>) -> Result<Store, StoreError> {
        let path = match Location::parse(location.as_ref()) {
            Location::File(path) => path,
            Location::Postgres(url) => {
                return Self::open_postgres(&url, crate::schema::PG_MIGRATIONS)
            }
        };
        let supported = crate::schema::MIGRATIONS.len() as u32;
        let (conn, version) = crate::open::open_read_only(&path, supported)?;
        if version == supported {
            let sqlite = crate::sqlite::Sqlite {
                conn,
                path: path.clone(),
            };
            return Ok(Self::new(Box::new(sqlite), path, version));
        }
        drop(conn);
        Self::open_with(
            path.as_os_str(),
            crate::schema::MIGRATIONS,
            crate::schema::PG_MIGRATIONS,
        )
        .map_err(|e| match e {
            StoreError::CannotWrite { .. } => StoreError::Unreadable {
                reason: format!(
                    "it has schema version {version}, which this ndtune reads only after \
                     migrating it to version {supported}, and it cannot be written: {}",
                    crate::open::unwritable(&path).unwrap_or_default()
                ),
                path,
            },
            e => e,
        })
    }

    fn open_postgres(url: &str, steps: &[&str]) -> Result<Store, StoreError> {
        let (pg, version) = crate::pg::open(url, steps)?;
        Ok(Self::new(
            Box::new(pg),
            PathBuf::from(crate::location::redact(url)),
            version,
        ))
    }

    /// How long an operation tries to connect again after the connection to a PostgreSQL
    /// server broke (with pauses from 0.1 s doubling to 5 s) before it fails; zero: one
    /// attempt at once. [`RECONNECT_FOR`] unless set. An SQLite file has no connection to lose.
    pub fn reconnect_for(mut self, limit: Duration) -> Store {
        self.reconnect_for = limit;
        self
    }

    /// [`Store::open`] with the migration steps of either backend given (the tests make stores
    /// of earlier schema versions with them).
    pub(crate) fn open_with(
        location: &OsStr,
        steps: &[&str],
        pg_steps: &[&str],
    ) -> Result<Store, StoreError> {
        match Location::parse(location) {
            Location::File(path) => {
                // Two processes creating one store at once may find it busy: try again.
                let mut reruns = 0;
                let (conn, version) = loop {
                    match crate::open::open(&path, steps) {
                        Err(e) if e.must_rerun() && reruns < CONFLICT_RERUNS => {
                            reruns += 1;
                            std::thread::sleep(FIRST_PAUSE / 10 * reruns);
                        }
                        opened => break opened?,
                    }
                };
                let sqlite = crate::sqlite::Sqlite {
                    conn,
                    path: path.clone(),
                };
                Ok(Self::new(Box::new(sqlite), path, version))
            }
            Location::Postgres(url) => Self::open_postgres(&url, pg_steps),
        }
    }

    fn new(db: Box<dyn Backend>, path: PathBuf, version: u32) -> Store {
        Store {
            db: RefCell::new(db),
            path,
            version,
            done: RefCell::new(HashSet::new()),
            reconnect_for: RECONNECT_FOR,
            in_transaction: Cell::new(false),
        }
    }

    /// Where the store is, as shown to people: the file's path, or for PostgreSQL the URL with
    /// its password hidden.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's schema version (after any migration [`Store::open`] ran).
    pub fn schema_version(&self) -> u32 {
        self.version
    }

    pub(crate) fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        self.retrying(|s| s.db.borrow_mut().execute(sql, params))
    }

    pub(crate) fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        self.retrying(|s| s.db.borrow_mut().query(sql, params))
    }

    /// Runs `body` in one transaction: committed if it returns `Ok`, rolled back otherwise.
    /// Run again from its start where the connection broke.
    pub(crate) fn transaction<T>(
        &self,
        body: impl Fn(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.retrying(|s| {
            s.db.borrow_mut().begin()?;
            s.in_transaction.set(true);
            let done = body(s);
            s.in_transaction.set(false);
            // Committed in a statement of its own: a borrow in the match's scrutinee would live
            // through its arms, and the rollback of a failed commit find the connection borrowed.
            let done = done.map(|value| {
                let committed = s.db.borrow_mut().commit();
                (value, committed)
            });
            match done {
                Ok((value, committed)) => match committed {
                    Ok(()) => Ok(value),
                    Err(e) => {
                        // Ended, so that it can run again from its start.
                        let _ = s.db.borrow_mut().rollback();
                        Err(e)
                    }
                },
                Err(e) => {
                    // The body's error says what went wrong; a failed rollback adds nothing.
                    let _ = s.db.borrow_mut().rollback();
                    Err(e)
                }
            }
        })
    }

    /// Runs `op`; where PostgreSQL rolled it back to resolve a conflict with another
    /// transaction, runs it again (up to [`CONFLICT_RERUNS`] times); where it fails because the connection broke, connects again and runs it
    /// again, pausing longer each time, until [`Store::reconnect_for`] has passed. Inside a
    /// transaction, `op` runs once: the transaction is what runs again.
    fn retrying<T>(&self, op: impl Fn(&Store) -> Result<T, StoreError>) -> Result<T, StoreError> {
        if self.in_transaction.get() {
            return op(self);
        }
        let mut deadline = None;
        let mut pause = Duration::ZERO;
        let mut reruns = 0;
        loop {
            let mut last = match op(self) {
                // The server chose this transaction to end a deadlock: the other one goes on,
                // and this one runs again after it.
                Err(e) if e.must_rerun() && reruns < CONFLICT_RERUNS => {
                    reruns += 1;
                    std::thread::sleep(FIRST_PAUSE / 10 * reruns);
                    continue;
                }
                Err(e) if e.connection_lost() => e,
                done => return done,
            };
            let deadline = *deadline.get_or_insert_with(|| Instant::now() + self.reconnect_for);
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() && !pause.is_zero() {
                    let last = last.to_string();
                    let prefix = format!("{}: ", self.path.display());
                    return Err(StoreError::Lost {
                        path: self.path.clone(),
                        after: self.reconnect_for,
                        last: last.strip_prefix(&prefix).unwrap_or(&last).to_string(),
                    });
                }
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).clamp(FIRST_PAUSE, LONGEST_PAUSE);
                match self.db.borrow_mut().reconnect() {
                    Ok(()) => break,
                    Err(e) => last = e,
                }
            }
        }
    }

    /// What a `SELECT` appends to lock the rows it reads (see [`Backend::lock_rows`]).
    pub(crate) fn lock_rows(&self) -> &'static str {
        self.db.borrow().lock_rows()
    }

    /// Records a device profile (replacing the one of the same fingerprint); returns its
    /// [`fingerprint`].
    pub fn put_device(&self, profile: &DeviceProfile) -> Result<String, StoreError> {
        let fp = fingerprint(profile);
        let json = serde_json::to_string(profile).expect("a profile serialises");
        self.execute(
            "INSERT INTO devices (fingerprint, profile) VALUES (?1, ?2)
             ON CONFLICT (fingerprint) DO UPDATE SET profile = excluded.profile",
            &[(&fp).into(), json.into()],
        )?;
        Ok(fp)
    }

    /// The profile recorded under `fingerprint`, if any.
    pub fn device(&self, fingerprint: &str) -> Result<Option<DeviceProfile>, StoreError> {
        let rows = self.query(
            "SELECT profile FROM devices WHERE fingerprint = ?1",
            &[fingerprint.into()],
        )?;
        rows.first()
            .map(|r| self.parse(&self.cell(r.text(0))?, "device profile"))
            .transpose()
    }

    /// Every recorded device, by fingerprint.
    pub fn devices(&self) -> Result<Vec<(String, DeviceProfile)>, StoreError> {
        self.query(
            "SELECT fingerprint, profile FROM devices ORDER BY fingerprint",
            &[],
        )?
        .iter()
        .map(|r| {
            let profile = self.parse(&self.cell(r.text(1))?, "device profile")?;
            Ok((self.cell(r.text(0))?, profile))
        })
        .collect()
    }

    /// Records how one configuration ended, replacing any earlier record of the same key.
    /// Committed when it returns.
    pub fn insert(&self, record: &Record) -> Result<(), StoreError> {
        let k = &record.key;
        let (times, score) = match &record.outcome {
            Outcome::Measured(t) => (Some(to_json(&t.times_ms)), Some(t.score_ms())),
            _ => (None, None),
        };
        let mut params = key_params(&k.group(), &k.config);
        params.extend([
            record.outcome.kind().as_str().into(),
            to_json(&record.outcome).into(),
            times.into(),
            score.into(),
            (&record.ndtune_version).into(),
            record.started_at.into(),
            record.finished_at.into(),
        ]);
        self.execute(
            "INSERT INTO results (device, kernel, source_hash, setup, constants, config,
                 outcome_kind, outcome, times_ms, score_ms, ndtune_version,
                 started_at, finished_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
             ON CONFLICT (device, kernel, source_hash, setup, constants, config) DO UPDATE SET
                 outcome_kind = excluded.outcome_kind, outcome = excluded.outcome,
                 times_ms = excluded.times_ms, score_ms = excluded.score_ms,
                 ndtune_version = excluded.ndtune_version,
                 started_at = excluded.started_at, finished_at = excluded.finished_at",
            &params,
        )?;
        Ok(())
    }

    /// The record of `key`, if any.
    pub fn get(&self, key: &ResultKey) -> Result<Option<Record>, StoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM results WHERE {KEY_IS}");
        let rows = self.query(&sql, &key_params(&key.group(), &key.config))?;
        rows.first().map(|r| self.record(r)).transpose()
    }

    /// Every record of one group, in the order first inserted: what a resumed campaign reuses.
    pub fn records(&self, group: &Group) -> Result<Vec<Record>, StoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM results WHERE {GROUP_IS} ORDER BY id");
        self.query(&sql, &group_params(group))?
            .iter()
            .map(|r| self.record(r))
            .collect()
    }

    /// Records what a campaign knows of a group (replacing what was recorded).
    pub fn put_scenario(&self, group: &Group, info: &serde_json::Value) -> Result<(), StoreError> {
        let mut params = group_params(group);
        params.push(info.to_string().into());
        self.execute(
            "INSERT INTO scenarios (device, kernel, source_hash, setup, constants, info)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (device, kernel, source_hash, setup, constants) DO UPDATE SET
                 info = excluded.info",
            &params,
        )?;
        Ok(())
    }

    /// Every recorded scenario with its info, in the order of its key.
    pub fn scenarios(&self) -> Result<Vec<(Group, serde_json::Value)>, StoreError> {
        self.query(
            &format!("SELECT {GROUP_COLUMNS}, info FROM scenarios ORDER BY {GROUP_COLUMNS}"),
            &[],
        )?
        .iter()
        .map(|r| {
            let info = self.parse(&self.cell(r.text(5))?, "scenario info")?;
            Ok((self.group(r)?, info))
        })
        .collect()
    }

    /// Records a study (replacing the one of the same kind and name).
    pub fn put_study(&self, study: &Study) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO studies (kind, name, body, created_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (kind, name) DO UPDATE SET
                 body = excluded.body, created_at = excluded.created_at",
            &[
                (&study.kind).into(),
                (&study.name).into(),
                study.body.to_string().into(),
                study.created_at.into(),
            ],
        )?;
        Ok(())
    }

    /// Every study of `kind` (every study where `None`), by kind then name.
    pub fn studies(&self, kind: Option<&str>) -> Result<Vec<Study>, StoreError> {
        let (sql, params): (&str, Vec<Value>) = match kind {
            Some(kind) => (
                "SELECT kind, name, body, created_at FROM studies WHERE kind = ?1
                 ORDER BY kind, name",
                vec![kind.into()],
            ),
            None => (
                "SELECT kind, name, body, created_at FROM studies ORDER BY kind, name",
                vec![],
            ),
        };
        self.query(sql, &params)?
            .iter()
            .map(|r| {
                Ok(Study {
                    kind: self.cell(r.text(0))?,
                    name: self.cell(r.text(1))?,
                    body: self.parse(&self.cell(r.text(2))?, "study body")?,
                    created_at: self.cell(r.int(3))?,
                })
            })
            .collect()
    }

    /// Records the metrics and objective `group` was tuned with (replacing what was recorded):
    /// definitions, never values, so reports and exports compute every value from the
    /// measurements with the formulas of the campaign's last run. Kept as a study of kind
    /// [`METRICS_STUDY`] named by the group's JSON.
    pub fn put_metrics(&self, group: &Group, defs: &Definitions) -> Result<(), StoreError> {
        self.put_study(&Study {
            kind: METRICS_STUDY.into(),
            name: to_json(group),
            body: serde_json::to_value(defs).expect("definitions serialise"),
            created_at: crate::now_ms(),
        })
    }

    /// The metrics and objective `group` was last tuned with; `None` where none were recorded
    /// (campaigns of an ndtune before metrics: the time, minimised).
    pub fn metrics(&self, group: &Group) -> Result<Option<Definitions>, StoreError> {
        let rows = self.query(
            "SELECT body FROM studies WHERE kind = ?1 AND name = ?2",
            &[METRICS_STUDY.into(), to_json(group).into()],
        )?;
        rows.first()
            .map(|r| self.parse(&self.cell(r.text(0))?, "metrics"))
            .transpose()
    }

    /// Records what a program measured at run time; returns its id (the order of arrival).
    pub fn add_observation(&self, o: &Observation) -> Result<i64, StoreError> {
        let features: serde_json::Map<String, serde_json::Value> = o
            .features
            .iter()
            .map(|(k, v)| (k.clone(), (*v).into()))
            .collect();
        let rows = self.query(
            "INSERT INTO observations (scenario, features, wc, wr, runtime_ms, received_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
            &[
                (&o.scenario).into(),
                serde_json::Value::Object(features).to_string().into(),
                (o.local[0] as i64).into(),
                (o.local[1] as i64).into(),
                o.runtime_ms.into(),
                o.received_at.into(),
            ],
        )?;
        match rows.first() {
            Some(r) => self.cell(r.int(0)),
            None => Err(self.corrupt("an insert into observations returned no id".into())),
        }
    }

    /// Every observation, in the order they arrived.
    pub fn observations(&self) -> Result<Vec<Observation>, StoreError> {
        self.query(
            "SELECT scenario, features, wc, wr, runtime_ms, received_at FROM observations
             ORDER BY id",
            &[],
        )?
        .iter()
        .map(|r| {
            let map: BTreeMap<String, f64> =
                self.parse(&self.cell(r.text(1))?, "observation features")?;
            Ok(Observation {
                scenario: self.cell(r.text(0))?,
                features: map.into_iter().collect(),
                local: [self.cell(r.int(2))? as u64, self.cell(r.int(3))? as u64],
                runtime_ms: self.cell(r.real_or_null(4))?,
                received_at: self.cell(r.int(5))?,
            })
        })
        .collect()
    }

    /// The distinct (device, kernel, source hash, setup, constants) groups that have results,
    /// sorted (constants by name, then value).
    pub fn groups(&self) -> Result<Vec<Group>, StoreError> {
        let mut groups = self
            .query(
                &format!("SELECT DISTINCT {GROUP_COLUMNS} FROM results"),
                &[],
            )?
            .iter()
            .map(|r| self.group(r))
            .collect::<Result<Vec<_>, StoreError>>()?;
        groups.sort();
        Ok(groups)
    }

    /// The group in a row's first five columns ([`GROUP_COLUMNS`]).
    pub(crate) fn group(&self, row: &Row) -> Result<Group, StoreError> {
        Ok(Group {
            device: self.cell(row.text(0))?,
            kernel: self.cell(row.text(1))?,
            source_hash: self.cell(row.text(2))?,
            setup: self.cell(row.text(3))?,
            constants: self.parse(&self.cell(row.text(4))?, "constants")?,
        })
    }

    /// A record from a row of [`RECORD_COLUMNS`].
    fn record(&self, row: &Row) -> Result<Record, StoreError> {
        let outcome_json = self.cell(row.text(7))?;
        let outcome: Outcome = self.parse(&outcome_json, "outcome")?;
        let outcome_kind = self.cell(row.text(6))?;
        if OutcomeKind::parse(&outcome_kind) != Some(outcome.kind()) {
            return Err(self.corrupt(format!(
                "outcome_kind {outcome_kind:?} does not match outcome {outcome_json}"
            )));
        }
        let group = self.group(row)?;
        Ok(Record {
            key: ResultKey::new(&group, self.parse(&self.cell(row.text(5))?, "config")?),
            outcome,
            ndtune_version: self.cell(row.text(8))?,
            started_at: self.cell(row.int(9))?,
            finished_at: self.cell(row.int(10))?,
        })
    }

    /// A column's value, or the store's error for a column of the wrong type.
    pub(crate) fn cell<T>(&self, value: Result<T, String>) -> Result<T, StoreError> {
        value.map_err(|e| self.corrupt(e))
    }

    pub(crate) fn parse<T: DeserializeOwned>(
        &self,
        json: &str,
        what: &str,
    ) -> Result<T, StoreError> {
        serde_json::from_str(json).map_err(|e| self.corrupt(format!("{what} {json:?}: {e}")))
    }

    pub(crate) fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            detail,
        }
    }
}

pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("maps of integers and outcomes serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{MIGRATIONS, PG_MIGRATIONS, V1};
    use crate::testing::PgServer;
    use ndtune_core::setup::{legacy_description, LEGACY};
    use ndtune_core::Timing;
    use std::time::Duration;

    /// A step a later ndtune might add.
    const FUTURE: &str = "ALTER TABLE results ADD COLUMN note TEXT;
                          CREATE INDEX results_finished ON results (finished_at);";

    /// The group of every row written in the frozen DDL of versions before 6, as version 6
    /// reads it.
    fn legacy_group() -> Group {
        Group {
            device: "d".into(),
            kernel: "k".into(),
            source_hash: "h".into(),
            setup: LEGACY.into(),
            constants: ndtune_core::int_config([("N", 64)]),
        }
    }

    fn config(x: i64) -> Config {
        ndtune_core::int_config([("X", x)])
    }

    /// The record a test writes with [`INSERT_RESULT`] for `config(x)`, as version 6 reads it.
    fn legacy_record(x: i64) -> Record {
        Record {
            key: ResultKey::new(&legacy_group(), config(x)),
            outcome: Outcome::Measured(Timing::new(vec![1.5, 1.25], 1)),
            ndtune_version: "0.0.1".into(),
            started_at: 1 + x,
            finished_at: 2 + x,
        }
    }

    /// A result as versions 1 to 5 wrote it (`?1`: the config key, `?2`: its start, `?3` its
    /// end).
    const INSERT_RESULT: &str = r#"INSERT INTO results (device, kernel, source_hash, constants,
        config, outcome_kind, outcome, times_ms, score_ms, ndtune_version, started_at, finished_at)
        VALUES ('d', 'k', 'h', '{"N":64}', ?1, 'measured',
            '{"outcome":"measured","times_ms":[1.5,1.25],"best_of":1}', '[1.5,1.25]', 1.25,
            '0.0.1', ?2, ?3)"#;

    fn insert_v5_result(store: &Store, x: i64) {
        store
            .execute(
                INSERT_RESULT,
                &[
                    config_key(&config(x)).into(),
                    (1 + x).into(),
                    (2 + x).into(),
                ],
            )
            .unwrap();
    }

    fn v1_store_with_a_record(path: &Path) -> Record {
        let store = Store::open_with(path.as_os_str(), &[V1], &[]).unwrap();
        insert_v5_result(&store, 4);
        legacy_record(4)
    }

    fn meta(path: &Path, key: &str) -> String {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_v1_store_migrates_to_a_later_version_keeping_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.ndtune");
        let rec = v1_store_with_a_record(&path);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version(), MIGRATIONS.len() as u32);
        assert_eq!(store.get(&rec.key).unwrap(), Some(rec.clone()));
        assert!(store.scenarios().unwrap().is_empty());
        drop(store);
        let later: Vec<&str> = MIGRATIONS.iter().copied().chain([FUTURE]).collect();
        let store = Store::open_with(path.as_os_str(), &later, &[]).unwrap();
        let newer = MIGRATIONS.len() as u32 + 1;
        assert_eq!(store.schema_version(), newer);
        assert_eq!(store.get(&rec.key).unwrap(), Some(rec));
        drop(store);
        assert_eq!(meta(&path, "schema_version"), newer.to_string());
        let err = Store::open(&path).err().unwrap();
        assert!(
            matches!(
                err,
                StoreError::NewerSchema { found, supported, .. }
                    if found == newer && supported == newer - 1
            ),
            "{err}"
        );
    }

    #[test]
    fn claims_done_before_version_5_count_as_measured_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.ndtune");
        let v4 = Store::open_with(path.as_os_str(), &MIGRATIONS[..4], &[]).unwrap();
        insert_v5_result(&v4, 1);
        // Version 4's completed claim, without the count.
        v4.execute(
            r#"INSERT INTO claims (device, kernel, source_hash, constants, config, worker,
                 claimed_at, lease_ms, deadline, done_at)
               VALUES ('d', 'k', 'h', '{"N":64}', '{"X":1}', 'w', 1, 60000, 2, 2)"#,
            &[],
        )
        .unwrap();
        drop(v4);
        let store = Store::open(&path).unwrap();
        let completions = store.query("SELECT completions FROM claims", &[]).unwrap();
        assert_eq!(completions[0].int(0), Ok(1));
        let status = store.campaign_status(&legacy_group()).unwrap();
        assert_eq!((status.results, status.measured_twice), (1, 0));
        assert_eq!(status.workers[0].done, 1);
    }

    #[test]
    fn a_campaign_keeps_the_definitions_of_its_last_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.ndtune")).unwrap();
        let group = legacy_group();
        assert_eq!(store.metrics(&group).unwrap(), None);
        let mut defs = Definitions::default();
        defs.metrics
            .push(ndtune_metrics::MetricDef::new("rate", "N / time", None));
        store.put_metrics(&group, &defs).unwrap();
        defs.metrics[0].expr = "2 * N / time".into();
        store.put_metrics(&group, &defs).unwrap();
        assert_eq!(store.metrics(&group).unwrap(), Some(defs));
        let other = Group {
            kernel: "other".into(),
            ..group
        };
        assert_eq!(store.metrics(&other).unwrap(), None);
    }

    #[test]
    fn a_failing_migration_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.ndtune");
        v1_store_with_a_record(&path);
        let broken = "ALTER TABLE results ADD COLUMN note TEXT; SELECT * FROM no_such_table;";
        let err = Store::open_with(path.as_os_str(), &[V1, broken], &[])
            .err()
            .unwrap();
        assert!(err.to_string().contains("no_such_table"), "{err}");
        let store = Store::open_with(path.as_os_str(), &[V1], &[]).unwrap();
        assert_eq!(store.schema_version(), 1);
        let rows = store.query("SELECT config FROM results", &[]).unwrap();
        assert_eq!(rows[0].text(0), Ok(r#"{"X":4}"#.to_string()));
        let notes = store
            .query(
                "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'note'",
                &[],
            )
            .unwrap();
        assert_eq!(notes[0].int(0), Ok(0));
    }

    /// Fills a store of schema version 5 as version 5 wrote it: two results, a scenario, a
    /// claim done, a claim held by a worker until far in the future, one taken over.
    fn fill_v5(store: &Store) {
        assert_eq!(store.schema_version(), 5);
        insert_v5_result(store, 1);
        insert_v5_result(store, 2);
        let far = i64::MAX / 2;
        for sql in [
            r#"INSERT INTO scenarios (device, kernel, source_hash, constants, info)
               VALUES ('d', 'k', 'h', '{"N":64}', '{"dataset":"s"}')"#
                .to_string(),
            r#"INSERT INTO claims (device, kernel, source_hash, constants, config, worker,
                 claimed_at, lease_ms, deadline, done_at, completions)
               VALUES ('d', 'k', 'h', '{"N":64}', '{"X":1}', 'w1', 1, 60000, 3, 3, 1)"#
                .into(),
            format!(
                r#"INSERT INTO claims (device, kernel, source_hash, constants, config, worker,
                     claimed_at, lease_ms, deadline, done_at, completions)
                   VALUES ('d', 'k', 'h', '{{"N":64}}', '{{"X":3}}', 'w2', 4, 60000, {far},
                       NULL, 0)"#
            ),
            r#"INSERT INTO lapses (device, kernel, source_hash, constants, config, worker,
                 taken_by, taken_at)
               VALUES ('d', 'k', 'h', '{"N":64}', '{"X":3}', 'w1', 'w2', 4)"#
                .into(),
            "INSERT INTO workers (worker, started_at, heartbeat) VALUES ('w2', 4, 5)".into(),
        ] {
            store.execute(&sql, &[]).unwrap();
        }
    }

    /// What a store of version 5 filled by [`fill_v5`] must hold once migrated: every row, as
    /// an earlier campaign that a campaign of a computed setup never reuses.
    fn check_migrated(store: &Store) {
        assert_eq!(store.schema_version(), crate::SCHEMA_VERSION);
        let legacy = legacy_group();
        assert_eq!(store.groups().unwrap(), std::slice::from_ref(&legacy));
        assert_eq!(store.campaigns().unwrap(), std::slice::from_ref(&legacy));
        assert_eq!(
            store.records(&legacy).unwrap(),
            [legacy_record(1), legacy_record(2)]
        );
        let scenarios = store.scenarios().unwrap();
        assert_eq!(
            scenarios,
            [(legacy.clone(), serde_json::json!({"dataset": "s"}))]
        );
        let setup = store.setup(LEGACY).unwrap().unwrap();
        assert_eq!(
            (setup.description, setup.first_seen),
            (legacy_description(), 2)
        );
        let status = store.campaign_status(&legacy).unwrap();
        assert_eq!((status.results, status.measured_twice), (2, 0));
        assert_eq!(status.last_result, Some(4));
        let shares: Vec<(&str, u64, u64, u64)> = status
            .workers
            .iter()
            .map(|w| (w.worker.as_str(), w.claimed, w.done, w.expired))
            .collect();
        assert_eq!(shares, [("w1", 0, 1, 1), ("w2", 1, 0, 0)]);

        // A campaign of today's setup of the same problem sees none of it, claims freely, and
        // finds the legacy campaign beside it.
        let today = Group {
            setup: "0123456789abcdef".into(),
            ..legacy.clone()
        };
        assert!(store.records(&today).unwrap().is_empty());
        let lease = Duration::from_secs(60);
        let claimed = store
            .claim(&today, "w3", &[config(1), config(3)], lease)
            .unwrap();
        assert_eq!(claimed, Some(config(1)));
        let mut mine = legacy_record(1);
        mine.key.setup = today.setup.clone();
        assert!(store.complete("w3", &mine).unwrap());
        assert_eq!(store.records(&today).unwrap(), [mine]);
        assert_eq!(store.records(&legacy).unwrap().len(), 2);
        assert_eq!(
            store.other_setups(&today).unwrap(),
            std::slice::from_ref(&legacy)
        );
        assert_eq!(store.other_setups(&legacy).unwrap(), [today]);
    }

    #[test]
    fn a_v5_sqlite_store_migrates_every_row_to_a_legacy_campaign() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v5.ndtune");
        let v5 = Store::open_with(path.as_os_str(), &MIGRATIONS[..5], &[]).unwrap();
        fill_v5(&v5);
        drop(v5);
        check_migrated(&Store::open(&path).unwrap());
        // Reopened, nothing moves.
        let store = Store::open(&path).unwrap();
        assert_eq!(store.records(&legacy_group()).unwrap().len(), 2);
    }

    #[test]
    fn a_v5_postgres_store_migrates_every_row_to_a_legacy_campaign() {
        let Some(server) = PgServer::shared() else {
            return;
        };
        let url = server.create_database("migrate_v5").unwrap();
        let v5 = Store::open_with(url.as_ref(), &[], &PG_MIGRATIONS[..5]).unwrap();
        fill_v5(&v5);
        drop(v5);
        check_migrated(&Store::open(&url).unwrap());
    }

    #[test]
    fn the_legacy_setup_of_both_migrations_is_the_one_ndtune_core_describes() {
        let described = legacy_description().to_string();
        for step in [crate::schema::V6, crate::schema::PG_V6] {
            assert!(step.contains(&format!("'{described}'")), "{step}");
            assert!(step.contains(&format!("'{LEGACY}'")));
        }
    }
}
