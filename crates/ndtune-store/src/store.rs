//! [`Store`]: reading and writing records and device profiles.

use crate::error::{At, StoreError};
use crate::{fingerprint, Group, Observation, Record, ResultKey, Study, UnixMs};
use ndtune_core::{config_key, Config, Outcome, OutcomeKind};
use ndtune_device::DeviceProfile;
use rusqlite::{Connection, OptionalExtension, Row};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An open results store. Every write is its own committed transaction.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    version: u32,
}

/// The columns a [`Record`] is read from, in [`StoredRow`]'s order.
const RECORD_COLUMNS: &str = "device, kernel, source_hash, constants, config, outcome_kind, \
                              outcome, ndtune_version, started_at, finished_at";

impl Store {
    /// Opens the store at `path`, creating it if the file is missing or empty (its directory
    /// must exist) and migrating it if it has an older schema. A file that is not an ndtune
    /// store, or has a newer schema, is refused and left untouched. An existing store is first
    /// checked read-only with SQLite's `quick_check`, which reads the whole file once.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Self::open_with(path, crate::schema::MIGRATIONS)
    }

    pub(crate) fn open_with(path: &Path, steps: &[&str]) -> Result<Store, StoreError> {
        let (conn, version) = crate::open::open(path, steps)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            version,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's schema version (after any migration [`Store::open`] ran).
    pub fn schema_version(&self) -> u32 {
        self.version
    }

    /// Records a device profile (replacing the one of the same fingerprint); returns its
    /// [`fingerprint`].
    pub fn put_device(&self, profile: &DeviceProfile) -> Result<String, StoreError> {
        let fp = fingerprint(profile);
        let json = serde_json::to_string(profile).expect("a profile serialises");
        self.conn
            .prepare_cached(
                "INSERT INTO devices (fingerprint, profile) VALUES (?1, ?2)
                 ON CONFLICT (fingerprint) DO UPDATE SET profile = excluded.profile",
            )
            .and_then(|mut s| s.execute((&fp, &json)))
            .at(&self.path)?;
        Ok(fp)
    }

    /// The profile recorded under `fingerprint`, if any.
    pub fn device(&self, fingerprint: &str) -> Result<Option<DeviceProfile>, StoreError> {
        let json: Option<String> = self
            .conn
            .query_row(
                "SELECT profile FROM devices WHERE fingerprint = ?1",
                [fingerprint],
                |r| r.get(0),
            )
            .optional()
            .at(&self.path)?;
        json.map(|j| self.parse(&j, "device profile")).transpose()
    }

    /// Every recorded device, by fingerprint.
    pub fn devices(&self) -> Result<Vec<(String, DeviceProfile)>, StoreError> {
        let rows: Vec<(String, String)> = self
            .conn
            .prepare_cached("SELECT fingerprint, profile FROM devices ORDER BY fingerprint")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .at(&self.path)?;
        rows.into_iter()
            .map(|(fp, json)| Ok((fp, self.parse(&json, "device profile")?)))
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
        self.conn
            .prepare_cached(
                "INSERT INTO results (device, kernel, source_hash, constants, config,
                     outcome_kind, outcome, times_ms, score_ms, ndtune_version,
                     started_at, finished_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT (device, kernel, source_hash, constants, config) DO UPDATE SET
                     outcome_kind = excluded.outcome_kind, outcome = excluded.outcome,
                     times_ms = excluded.times_ms, score_ms = excluded.score_ms,
                     ndtune_version = excluded.ndtune_version,
                     started_at = excluded.started_at, finished_at = excluded.finished_at",
            )
            .and_then(|mut s| {
                s.execute(rusqlite::params![
                    k.device,
                    k.kernel,
                    k.source_hash,
                    to_json(&k.constants),
                    config_key(&k.config),
                    record.outcome.kind().as_str(),
                    to_json(&record.outcome),
                    times,
                    score,
                    record.ndtune_version,
                    record.started_at,
                    record.finished_at,
                ])
            })
            .at(&self.path)?;
        Ok(())
    }

    /// The record of `key`, if any.
    pub fn get(&self, key: &ResultKey) -> Result<Option<Record>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM results WHERE device = ?1 AND kernel = ?2
             AND source_hash = ?3 AND constants = ?4 AND config = ?5"
        );
        let row = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_row(
                    (
                        &key.device,
                        &key.kernel,
                        &key.source_hash,
                        to_json(&key.constants),
                        config_key(&key.config),
                    ),
                    StoredRow::read,
                )
                .optional()
            })
            .at(&self.path)?;
        row.map(|r| self.record(r)).transpose()
    }

    /// Every record of one (device, kernel, source hash, constants), in the order first
    /// inserted: what a resumed campaign reuses.
    pub fn records(
        &self,
        device: &str,
        kernel: &str,
        source_hash: &str,
        constants: &BTreeMap<String, i64>,
    ) -> Result<Vec<Record>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM results WHERE device = ?1 AND kernel = ?2
             AND source_hash = ?3 AND constants = ?4 ORDER BY id"
        );
        let rows: Vec<StoredRow> = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_map(
                    (device, kernel, source_hash, to_json(constants)),
                    StoredRow::read,
                )?
                .collect()
            })
            .at(&self.path)?;
        rows.into_iter().map(|r| self.record(r)).collect()
    }

    /// Records what a campaign knows of a group (replacing what was recorded).
    pub fn put_scenario(&self, group: &Group, info: &serde_json::Value) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO scenarios (device, kernel, source_hash, constants, info)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (device, kernel, source_hash, constants) DO UPDATE SET
                     info = excluded.info",
            )
            .and_then(|mut s| {
                s.execute((
                    &group.device,
                    &group.kernel,
                    &group.source_hash,
                    to_json(&group.constants),
                    info.to_string(),
                ))
            })
            .at(&self.path)?;
        Ok(())
    }

    /// Every recorded scenario with its info, in the order of its key.
    pub fn scenarios(&self) -> Result<Vec<(Group, serde_json::Value)>, StoreError> {
        let rows: Vec<[String; 5]> = self
            .conn
            .prepare_cached(
                "SELECT device, kernel, source_hash, constants, info FROM scenarios
                 ORDER BY device, kernel, source_hash, constants",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?])
                })?
                .collect()
            })
            .at(&self.path)?;
        rows.into_iter()
            .map(|[device, kernel, source_hash, constants, info]| {
                Ok((
                    Group {
                        device,
                        kernel,
                        source_hash,
                        constants: self.parse(&constants, "scenario constants")?,
                    },
                    self.parse(&info, "scenario info")?,
                ))
            })
            .collect()
    }

    /// Records a study (replacing the one of the same kind and name).
    pub fn put_study(&self, study: &Study) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO studies (kind, name, body, created_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (kind, name) DO UPDATE SET
                     body = excluded.body, created_at = excluded.created_at",
            )
            .and_then(|mut s| {
                s.execute((
                    &study.kind,
                    &study.name,
                    study.body.to_string(),
                    study.created_at,
                ))
            })
            .at(&self.path)?;
        Ok(())
    }

    /// Every study of `kind` (every study where `None`), by kind then name.
    pub fn studies(&self, kind: Option<&str>) -> Result<Vec<Study>, StoreError> {
        let rows: Vec<(String, String, String, UnixMs)> = self
            .conn
            .prepare_cached(
                "SELECT kind, name, body, created_at FROM studies
                 WHERE ?1 IS NULL OR kind = ?1 ORDER BY kind, name",
            )
            .and_then(|mut s| {
                s.query_map([kind], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                    .collect()
            })
            .at(&self.path)?;
        rows.into_iter()
            .map(|(kind, name, body, created_at)| {
                Ok(Study {
                    body: self.parse(&body, "study body")?,
                    kind,
                    name,
                    created_at,
                })
            })
            .collect()
    }

    /// Records what a program measured at run time; returns its id (the order of arrival).
    pub fn add_observation(&self, o: &Observation) -> Result<i64, StoreError> {
        let features: serde_json::Map<String, serde_json::Value> = o
            .features
            .iter()
            .map(|(k, v)| (k.clone(), (*v).into()))
            .collect();
        self.conn
            .prepare_cached(
                "INSERT INTO observations (scenario, features, wc, wr, runtime_ms, received_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| {
                s.execute(rusqlite::params![
                    o.scenario,
                    serde_json::Value::Object(features).to_string(),
                    o.local[0] as i64,
                    o.local[1] as i64,
                    o.runtime_ms,
                    o.received_at,
                ])
            })
            .at(&self.path)?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Every observation, in the order they arrived.
    pub fn observations(&self) -> Result<Vec<Observation>, StoreError> {
        type Row = (String, String, i64, i64, Option<f64>, UnixMs);
        let rows: Vec<Row> = self
            .conn
            .prepare_cached(
                "SELECT scenario, features, wc, wr, runtime_ms, received_at FROM observations
                 ORDER BY id",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })?
                .collect()
            })
            .at(&self.path)?;
        rows.into_iter()
            .map(|(scenario, features, wc, wr, runtime_ms, received_at)| {
                let map: BTreeMap<String, f64> = self.parse(&features, "observation features")?;
                Ok(Observation {
                    scenario,
                    features: map.into_iter().collect(),
                    local: [wc as u64, wr as u64],
                    runtime_ms,
                    received_at,
                })
            })
            .collect()
    }

    /// The distinct (device, kernel, source hash, constants) groups in the store, sorted
    /// (constants by name, then value).
    pub fn groups(&self) -> Result<Vec<Group>, StoreError> {
        let rows: Vec<[String; 4]> = self
            .conn
            .prepare_cached("SELECT DISTINCT device, kernel, source_hash, constants FROM results")
            .and_then(|mut s| {
                s.query_map([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]))?
                    .collect()
            })
            .at(&self.path)?;
        let mut groups = rows
            .into_iter()
            .map(|[device, kernel, source_hash, constants]| {
                Ok(Group {
                    device,
                    kernel,
                    source_hash,
                    constants: self.parse(&constants, "constants")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        groups.sort();
        Ok(groups)
    }

    fn record(&self, row: StoredRow) -> Result<Record, StoreError> {
        let outcome: Outcome = self.parse(&row.outcome, "outcome")?;
        if OutcomeKind::parse(&row.outcome_kind) != Some(outcome.kind()) {
            return Err(self.corrupt(format!(
                "outcome_kind {:?} does not match outcome {}",
                row.outcome_kind, row.outcome
            )));
        }
        let config: Config = self.parse(&row.config, "config")?;
        Ok(Record {
            key: ResultKey {
                device: row.device,
                kernel: row.kernel,
                source_hash: row.source_hash,
                constants: self.parse(&row.constants, "constants")?,
                config,
            },
            outcome,
            ndtune_version: row.ndtune_version,
            started_at: row.started_at,
            finished_at: row.finished_at,
        })
    }

    fn parse<T: DeserializeOwned>(&self, json: &str, what: &str) -> Result<T, StoreError> {
        serde_json::from_str(json).map_err(|e| self.corrupt(format!("{what} {json:?}: {e}")))
    }

    fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            detail,
        }
    }
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("maps of integers and outcomes serialise")
}

/// One `results` row as stored, before its JSON columns are parsed.
struct StoredRow {
    device: String,
    kernel: String,
    source_hash: String,
    constants: String,
    config: String,
    outcome_kind: String,
    outcome: String,
    ndtune_version: String,
    started_at: i64,
    finished_at: i64,
}

impl StoredRow {
    fn read(r: &Row<'_>) -> rusqlite::Result<StoredRow> {
        Ok(StoredRow {
            device: r.get(0)?,
            kernel: r.get(1)?,
            source_hash: r.get(2)?,
            constants: r.get(3)?,
            config: r.get(4)?,
            outcome_kind: r.get(5)?,
            outcome: r.get(6)?,
            ndtune_version: r.get(7)?,
            started_at: r.get(8)?,
            finished_at: r.get(9)?,
        })
    }
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
                constants: [("N".to_string(), 64)].into(),
                config: [("X".to_string(), 4)].into(),
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
        let conn = Connection::open(path).unwrap();
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
        let has_note: bool = store
            .conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'note'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(!has_note);
    }
}
