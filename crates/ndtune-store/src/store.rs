//! [`Store`]: reading and writing records, device profiles, scenarios, studies and
//! observations, on either backend. Every statement is written once here; a [`Backend`] runs it.

use crate::backend::{Backend, Row, Value};
use crate::location::Location;
use crate::{fingerprint, Group, Observation, Record, ResultKey, Study};
use ndtune_core::{config_key, Config, Outcome, OutcomeKind};
use ndtune_device::DeviceProfile;
use ndtune_metrics::Definitions;
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::StoreError;

/// An open results store: an SQLite file or a PostgreSQL database. Every write is its own
/// committed transaction.
pub struct Store {
    db: RefCell<Box<dyn Backend>>,
    /// The location as shown: the file, or the URL without its password.
    path: PathBuf,
    version: u32,
    /// Configurations known to have a result, by group and config key: claims skip them
    /// without asking the database (results are never removed).
    pub(crate) done: RefCell<HashSet<(Group, String)>>,
}

/// The kind of the studies that keep a campaign's metrics and objective ([`Store::put_metrics`]).
pub const METRICS_STUDY: &str = "metrics";

/// The columns a [`Record`] is read from, in [`Store::record`]'s order.
const RECORD_COLUMNS: &str = "device, kernel, source_hash, constants, config, outcome_kind, \
                              outcome, ndtune_version, started_at, finished_at";

/// The condition that selects one group's rows, its values as `?1`..`?4` ([`group_params`]).
pub(crate) const GROUP_IS: &str =
    "device = ?1 AND kernel = ?2 AND source_hash = ?3 AND constants = ?4";

/// The condition that selects one configuration's rows, its values as `?1`..`?5`
/// ([`key_params`]).
pub(crate) const KEY_IS: &str =
    "device = ?1 AND kernel = ?2 AND source_hash = ?3 AND constants = ?4 AND config = ?5";

pub(crate) fn group_params(group: &Group) -> Vec<Value> {
    vec![
        (&group.device).into(),
        (&group.kernel).into(),
        (&group.source_hash).into(),
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
    pub fn open(location: impl AsRef<OsStr>) -> Result<Store, StoreError> {
        match Location::parse(location.as_ref()) {
            Location::File(path) => Self::open_with(&path, crate::schema::MIGRATIONS),
            Location::Postgres(url) => {
                let (pg, version) = crate::pg::open(&url, crate::schema::PG_MIGRATIONS)?;
                Ok(Self::new(
                    Box::new(pg),
                    PathBuf::from(crate::location::redact(&url)),
                    version,
                ))
            }
        }
    }

    pub(crate) fn open_with(path: &Path, steps: &[&str]) -> Result<Store, StoreError> {
        let (conn, version) = crate::open::open(path, steps)?;
        let sqlite = crate::sqlite::Sqlite {
            conn,
            path: path.to_path_buf(),
        };
        Ok(Self::new(Box::new(sqlite), path.to_path_buf(), version))
    }

    fn new(db: Box<dyn Backend>, path: PathBuf, version: u32) -> Store {
        Store {
            db: RefCell::new(db),
            path,
            version,
            done: RefCell::new(HashSet::new()),
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
        self.db.borrow_mut().execute(sql, params)
    }

    pub(crate) fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        self.db.borrow_mut().query(sql, params)
    }

    /// Runs `body` in one transaction: committed if it returns `Ok`, rolled back otherwise.
    pub(crate) fn transaction<T>(
        &self,
        body: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.db.borrow_mut().begin()?;
        match body(self) {
            Ok(value) => {
                self.db.borrow_mut().commit()?;
                Ok(value)
            }
            Err(e) => {
                // The body's error says what went wrong; a failed rollback adds nothing.
                let _ = self.db.borrow_mut().rollback();
                Err(e)
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
            "INSERT INTO results (device, kernel, source_hash, constants, config,
                 outcome_kind, outcome, times_ms, score_ms, ndtune_version,
                 started_at, finished_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (device, kernel, source_hash, constants, config) DO UPDATE SET
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

    /// Every record of one (device, kernel, source hash, constants), in the order first
    /// inserted: what a resumed campaign reuses.
    pub fn records(
        &self,
        device: &str,
        kernel: &str,
        source_hash: &str,
        constants: &ndtune_core::Constants,
    ) -> Result<Vec<Record>, StoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM results WHERE {GROUP_IS} ORDER BY id");
        let params = [
            device.into(),
            kernel.into(),
            source_hash.into(),
            to_json(constants).into(),
        ];
        self.query(&sql, &params)?
            .iter()
            .map(|r| self.record(r))
            .collect()
    }

    /// Records what a campaign knows of a group (replacing what was recorded).
    pub fn put_scenario(&self, group: &Group, info: &serde_json::Value) -> Result<(), StoreError> {
        let mut params = group_params(group);
        params.push(info.to_string().into());
        self.execute(
            "INSERT INTO scenarios (device, kernel, source_hash, constants, info)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (device, kernel, source_hash, constants) DO UPDATE SET
                 info = excluded.info",
            &params,
        )?;
        Ok(())
    }

    /// Every recorded scenario with its info, in the order of its key.
    pub fn scenarios(&self) -> Result<Vec<(Group, serde_json::Value)>, StoreError> {
        self.query(
            "SELECT device, kernel, source_hash, constants, info FROM scenarios
             ORDER BY device, kernel, source_hash, constants",
            &[],
        )?
        .iter()
        .map(|r| {
            let info = self.parse(&self.cell(r.text(4))?, "scenario info")?;
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

    /// The distinct (device, kernel, source hash, constants) groups in the store, sorted
    /// (constants by name, then value).
    pub fn groups(&self) -> Result<Vec<Group>, StoreError> {
        let mut groups = self
            .query(
                "SELECT DISTINCT device, kernel, source_hash, constants FROM results",
                &[],
            )?
            .iter()
            .map(|r| self.group(r))
            .collect::<Result<Vec<_>, StoreError>>()?;
        groups.sort();
        Ok(groups)
    }

    /// The group in a row's first four columns (device, kernel, source hash, constants).
    pub(crate) fn group(&self, row: &Row) -> Result<Group, StoreError> {
        Ok(Group {
            device: self.cell(row.text(0))?,
            kernel: self.cell(row.text(1))?,
            source_hash: self.cell(row.text(2))?,
            constants: self.parse(&self.cell(row.text(3))?, "constants")?,
        })
    }

    /// A record from a row of [`RECORD_COLUMNS`].
    fn record(&self, row: &Row) -> Result<Record, StoreError> {
        let outcome_json = self.cell(row.text(6))?;
        let outcome: Outcome = self.parse(&outcome_json, "outcome")?;
        let outcome_kind = self.cell(row.text(5))?;
        if OutcomeKind::parse(&outcome_kind) != Some(outcome.kind()) {
            return Err(self.corrupt(format!(
                "outcome_kind {outcome_kind:?} does not match outcome {outcome_json}"
            )));
        }
        let group = self.group(row)?;
        Ok(Record {
            key: ResultKey {
                device: group.device,
                kernel: group.kernel,
                source_hash: group.source_hash,
                constants: group.constants,
                config: self.parse(&self.cell(row.text(4))?, "config")?,
            },
            outcome,
            ndtune_version: self.cell(row.text(7))?,
            started_at: self.cell(row.int(8))?,
            finished_at: self.cell(row.int(9))?,
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
    use crate::schema::{MIGRATIONS, V1};
    use ndtune_core::Timing;

    /// A later schema, as a future migration step would add it.
    /// A step a later ndtune might add.
    const FUTURE: &str = "ALTER TABLE results ADD COLUMN note TEXT;
                          CREATE INDEX results_finished ON results (finished_at);";

    fn record() -> Record {
        Record {
            key: ResultKey {
                device: "d".into(),
                kernel: "k".into(),
                source_hash: "h".into(),
                constants: ndtune_core::int_config([("N", 64)]),
                config: ndtune_core::int_config([("X", 4)]),
            },
            outcome: Outcome::Measured(Timing::new(vec![1.5, 1.25], 1)),
            ndtune_version: "0.0.1".into(),
            started_at: 1,
            finished_at: 2,
        }
    }

    fn v1_store_with_a_record(path: &Path) -> Record {
        let store = Store::open_with(path, &[V1]).unwrap();
        store.insert(&record()).unwrap();
        record()
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
        let store = Store::open_with(&path, &later).unwrap();
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
        let rec = record();
        let group = rec.key.group();
        let v4 = Store::open_with(&path, &MIGRATIONS[..4]).unwrap();
        let lease = std::time::Duration::from_secs(60);
        let claimed = v4.claim(&group, "w", std::slice::from_ref(&rec.key.config), lease);
        assert_eq!(claimed.unwrap(), Some(rec.key.config.clone()));
        // Version 4's completion, without the count.
        v4.insert(&rec).unwrap();
        v4.execute("UPDATE claims SET done_at = 1", &[]).unwrap();
        drop(v4);
        let store = Store::open(&path).unwrap();
        let completions = store.query("SELECT completions FROM claims", &[]).unwrap();
        assert_eq!(completions[0].int(0), Ok(1));
        assert_eq!(store.campaign_status(&group).unwrap().measured_twice, 0);
    }

    #[test]
    fn a_campaign_keeps_the_definitions_of_its_last_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.ndtune")).unwrap();
        let group = record().key.group();
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
        let rec = v1_store_with_a_record(&path);
        let broken = "ALTER TABLE results ADD COLUMN note TEXT; SELECT * FROM no_such_table;";
        let err = Store::open_with(&path, &[V1, broken]).err().unwrap();
        assert!(err.to_string().contains("no_such_table"), "{err}");
        let store = Store::open_with(&path, &[V1]).unwrap();
        assert_eq!(store.schema_version(), 1);
        assert_eq!(store.get(&rec.key).unwrap(), Some(rec));
        let notes = store
            .query(
                "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'note'",
                &[],
            )
            .unwrap();
        assert_eq!(notes[0].int(0), Ok(0));
    }
}
