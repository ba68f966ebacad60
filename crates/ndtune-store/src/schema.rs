//! The store's schema: its DDL for SQLite ([`MIGRATIONS`]) and PostgreSQL ([`PG_MIGRATIONS`]),
//! one step per version in both, and how an SQLite database is told apart as empty, an ndtune
//! store, or something else (PostgreSQL's is in [`crate::pg`]).

use rusqlite::{Connection, OptionalExtension};

/// SQLite `PRAGMA application_id` of every ndtune store: "ndtu" in ASCII.
pub const APPLICATION_ID: i32 = 0x6E64_7475;

/// The schema version this ndtune writes (the number of migration steps it knows).
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The SQLite migration steps, in order: step `i` takes a store from version `i` to `i + 1`.
/// Each runs inside the transaction that also records the new version. Never edit a released
/// step; add one.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The PostgreSQL migration steps: the same tables, columns and indexes as [`MIGRATIONS`], step
/// for step, in PostgreSQL's types. Text compares byte by byte (`COLLATE "C"`), as in SQLite,
/// so both order rows alike.
pub(crate) const PG_MIGRATIONS: &[&str] = &[PG_V1, PG_V2, PG_V3, PG_V4, PG_V5, PG_V6];

/// Records a meta value (both databases).
pub(crate) const UPSERT_META: &str = "INSERT INTO meta (key, value) VALUES (?1, ?2)
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Version 1: devices, results, and the meta table that marks the file as an ndtune store.
pub(crate) const V1: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
INSERT INTO meta (key, value) VALUES ('application_id', 'ndtune');
CREATE TABLE devices (
    fingerprint TEXT PRIMARY KEY,           -- ndtune_store::fingerprint
    profile     TEXT NOT NULL               -- DeviceProfile as JSON
) STRICT;
CREATE TABLE results (
    id             INTEGER PRIMARY KEY,     -- order of first insertion
    device         TEXT NOT NULL,           -- device fingerprint
    kernel         TEXT NOT NULL,
    source_hash    TEXT NOT NULL,           -- ndtune_store::source_hash
    constants      TEXT NOT NULL,           -- JSON object, keys sorted
    config         TEXT NOT NULL,           -- ndtune_core::config_key
    outcome_kind   TEXT NOT NULL,           -- OutcomeKind::as_str
    outcome        TEXT NOT NULL,           -- ndtune_core::Outcome as JSON
    times_ms       TEXT,                    -- JSON array of every run; NULL unless measured
    score_ms       REAL,                    -- mean of the best runs; NULL unless measured
    ndtune_version TEXT NOT NULL,
    started_at     INTEGER NOT NULL,        -- Unix ms, UTC
    finished_at    INTEGER NOT NULL         -- Unix ms, UTC
) STRICT;
CREATE UNIQUE INDEX results_key ON results (device, kernel, source_hash, constants, config);
CREATE INDEX results_score ON results (device, kernel, source_hash, constants, score_ms);
";

/// Version 2: scenarios, what a data-collection campaign knows of each (device, kernel, source,
/// constants) group beyond its results: its labels, dataset, grid and features, as JSON.
pub(crate) const V2: &str = "
CREATE TABLE scenarios (
    device      TEXT NOT NULL,              -- device fingerprint
    kernel      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    constants   TEXT NOT NULL,              -- JSON object, keys sorted
    info        TEXT NOT NULL,              -- JSON, written and read by the collecting command
    PRIMARY KEY (device, kernel, source_hash, constants)
) STRICT;
";

/// Version 3: studies, results that are not one configuration's (a co-execution study, a
/// learning evaluation) kept as JSON for reports; observations, what programs measured at run
/// time and reported to the prediction service (online learning).
pub(crate) const V3: &str = "
CREATE TABLE studies (
    kind       TEXT NOT NULL,               -- 'split', 'learn', ...
    name       TEXT NOT NULL,               -- what it studied, e.g. kernel and devices
    body       TEXT NOT NULL,               -- JSON, written and read by the studying command
    created_at INTEGER NOT NULL,            -- Unix ms, UTC
    PRIMARY KEY (kind, name)
) STRICT;
CREATE TABLE observations (
    id          INTEGER PRIMARY KEY,        -- order of arrival
    scenario    TEXT NOT NULL,              -- hash of the scenario's features
    features    TEXT NOT NULL,              -- JSON object: feature name -> value
    wc          INTEGER NOT NULL,           -- local size, columns
    wr          INTEGER NOT NULL,           -- local size, rows
    runtime_ms  REAL,                       -- NULL: the size was refused
    received_at INTEGER NOT NULL            -- Unix ms, UTC
) STRICT;
CREATE INDEX observations_scenario ON observations (scenario);
";

/// Version 4: claims, how workers that share a campaign split it. A claim reserves one
/// configuration of a group for one worker until its deadline (moved on by the worker's
/// heartbeats); once the result is in, the claim stays, done, as the record of who evaluated
/// it. Lapses record claims that expired and were taken over by another worker; workers their
/// heartbeats.
pub(crate) const V4: &str = "
CREATE TABLE claims (
    device      TEXT NOT NULL,              -- device fingerprint
    kernel      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    constants   TEXT NOT NULL,              -- JSON object, keys sorted
    config      TEXT NOT NULL,              -- ndtune_core::config_key
    worker      TEXT NOT NULL,              -- who holds (or evaluated) it
    claimed_at  INTEGER NOT NULL,           -- Unix ms, UTC
    lease_ms    INTEGER NOT NULL,           -- how far each heartbeat moves the deadline
    deadline    INTEGER NOT NULL,           -- Unix ms; past it, another worker may take it
    done_at     INTEGER,                    -- Unix ms; NULL while it is being evaluated
    PRIMARY KEY (device, kernel, source_hash, constants, config)
) STRICT;
CREATE INDEX claims_worker ON claims (worker);
CREATE TABLE lapses (
    device      TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    constants   TEXT NOT NULL,
    config      TEXT NOT NULL,
    worker      TEXT NOT NULL,              -- whose claim expired
    taken_by    TEXT NOT NULL,              -- who took it over
    taken_at    INTEGER NOT NULL            -- Unix ms, UTC
) STRICT;
CREATE INDEX lapses_group ON lapses (device, kernel, source_hash, constants);
CREATE TABLE workers (
    worker      TEXT PRIMARY KEY,
    started_at  INTEGER NOT NULL,           -- Unix ms of its first claim or heartbeat
    heartbeat   INTEGER NOT NULL            -- Unix ms of its last sign of life
) STRICT;
";

/// Version 5: how many times each claimed configuration was evaluated to a result, so that a
/// campaign shared by workers can show from the store alone that none was measured twice
/// (a worker that stopped beating past its lease and finished anyway counts a second time).
pub(crate) const V5: &str = "
ALTER TABLE claims ADD COLUMN completions INTEGER NOT NULL DEFAULT 0;
UPDATE claims SET completions = 1 WHERE done_at IS NOT NULL;
";

/// Version 6: results keyed by their setup as well (the digest of everything besides device,
/// constants and configuration that can change a result: sources and headers, build options,
/// launch, arguments and their data, verification, the measurement protocol;
/// [`ndtune_core::setup`]), in every table keyed by a group, and the setups themselves with a
/// readable description. Rows of earlier versions get the setup `legacy`, which no campaign
/// computes: they stay, as earlier campaigns, and are never reused. SQLite cannot change a
/// primary key, so the four tables are rebuilt (rows and their ids kept).
pub(crate) const V6: &str = r#"
CREATE TABLE setups (
    digest      TEXT PRIMARY KEY,           -- ndtune_core::setup::Setup::digest, or 'legacy'
    description TEXT NOT NULL,              -- JSON, keys sorted
    first_seen  INTEGER NOT NULL            -- Unix ms, UTC
) STRICT;
INSERT INTO setups (digest, description, first_seen)
SELECT 'legacy',
    '{"legacy":"recorded before ndtune kept setups (store schema 5 or earlier): its build options, arguments, verification and measurement are unknown"}',
    COALESCE((SELECT min(started_at) FROM results), 0)
WHERE EXISTS (SELECT 1 FROM results) OR EXISTS (SELECT 1 FROM scenarios)
   OR EXISTS (SELECT 1 FROM claims);
CREATE TABLE results_v6 (
    id             INTEGER PRIMARY KEY,
    device         TEXT NOT NULL,
    kernel         TEXT NOT NULL,
    source_hash    TEXT NOT NULL,
    setup          TEXT NOT NULL,           -- setups.digest
    constants      TEXT NOT NULL,
    config         TEXT NOT NULL,
    outcome_kind   TEXT NOT NULL,
    outcome        TEXT NOT NULL,
    times_ms       TEXT,
    score_ms       REAL,
    ndtune_version TEXT NOT NULL,
    started_at     INTEGER NOT NULL,
    finished_at    INTEGER NOT NULL
) STRICT;
INSERT INTO results_v6 SELECT id, device, kernel, source_hash, 'legacy', constants, config,
    outcome_kind, outcome, times_ms, score_ms, ndtune_version, started_at, finished_at
    FROM results;
DROP TABLE results;
ALTER TABLE results_v6 RENAME TO results;
CREATE UNIQUE INDEX results_key ON results (device, kernel, source_hash, setup, constants, config);
CREATE INDEX results_score ON results (device, kernel, source_hash, setup, constants, score_ms);
CREATE TABLE scenarios_v6 (
    device      TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    setup       TEXT NOT NULL,
    constants   TEXT NOT NULL,
    info        TEXT NOT NULL,
    PRIMARY KEY (device, kernel, source_hash, setup, constants)
) STRICT;
INSERT INTO scenarios_v6 SELECT device, kernel, source_hash, 'legacy', constants, info
    FROM scenarios;
DROP TABLE scenarios;
ALTER TABLE scenarios_v6 RENAME TO scenarios;
CREATE TABLE claims_v6 (
    device      TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    setup       TEXT NOT NULL,
    constants   TEXT NOT NULL,
    config      TEXT NOT NULL,
    worker      TEXT NOT NULL,
    claimed_at  INTEGER NOT NULL,
    lease_ms    INTEGER NOT NULL,
    deadline    INTEGER NOT NULL,
    done_at     INTEGER,
    completions INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (device, kernel, source_hash, setup, constants, config)
) STRICT;
INSERT INTO claims_v6 SELECT device, kernel, source_hash, 'legacy', constants, config, worker,
    claimed_at, lease_ms, deadline, done_at, completions FROM claims;
DROP TABLE claims;
ALTER TABLE claims_v6 RENAME TO claims;
CREATE INDEX claims_worker ON claims (worker);
CREATE TABLE lapses_v6 (
    device      TEXT NOT NULL,
    kernel      TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    setup       TEXT NOT NULL,
    constants   TEXT NOT NULL,
    config      TEXT NOT NULL,
    worker      TEXT NOT NULL,
    taken_by    TEXT NOT NULL,
    taken_at    INTEGER NOT NULL
) STRICT;
INSERT INTO lapses_v6 SELECT device, kernel, source_hash, 'legacy', constants, config, worker,
    taken_by, taken_at FROM lapses;
DROP TABLE lapses;
ALTER TABLE lapses_v6 RENAME TO lapses;
CREATE INDEX lapses_group ON lapses (device, kernel, source_hash, setup, constants);
"#;

/// PostgreSQL version 1: see [`V1`].
pub(crate) const PG_V1: &str = r#"
CREATE TABLE meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);
INSERT INTO meta (key, value) VALUES ('application_id', 'ndtune');
CREATE TABLE devices (
    fingerprint TEXT COLLATE "C" PRIMARY KEY,
    profile     TEXT COLLATE "C" NOT NULL
);
CREATE TABLE results (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    device         TEXT COLLATE "C" NOT NULL,
    kernel         TEXT COLLATE "C" NOT NULL,
    source_hash    TEXT COLLATE "C" NOT NULL,
    constants      TEXT COLLATE "C" NOT NULL,
    config         TEXT COLLATE "C" NOT NULL,
    outcome_kind   TEXT COLLATE "C" NOT NULL,
    outcome        TEXT COLLATE "C" NOT NULL,
    times_ms       TEXT COLLATE "C",
    score_ms       DOUBLE PRECISION,
    ndtune_version TEXT COLLATE "C" NOT NULL,
    started_at     BIGINT NOT NULL,
    finished_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX results_key ON results (device, kernel, source_hash, constants, config);
CREATE INDEX results_score ON results (device, kernel, source_hash, constants, score_ms);
"#;

/// PostgreSQL version 2: see [`V2`].
pub(crate) const PG_V2: &str = r#"
CREATE TABLE scenarios (
    device      TEXT COLLATE "C" NOT NULL,
    kernel      TEXT COLLATE "C" NOT NULL,
    source_hash TEXT COLLATE "C" NOT NULL,
    constants   TEXT COLLATE "C" NOT NULL,
    info        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (device, kernel, source_hash, constants)
);
"#;

/// PostgreSQL version 3: see [`V3`].
pub(crate) const PG_V3: &str = r#"
CREATE TABLE studies (
    kind       TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    body       TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (kind, name)
);
CREATE TABLE observations (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scenario    TEXT COLLATE "C" NOT NULL,
    features    TEXT COLLATE "C" NOT NULL,
    wc          BIGINT NOT NULL,
    wr          BIGINT NOT NULL,
    runtime_ms  DOUBLE PRECISION,
    received_at BIGINT NOT NULL
);
CREATE INDEX observations_scenario ON observations (scenario);
"#;

/// PostgreSQL version 4: see [`V4`].
pub(crate) const PG_V4: &str = r#"
CREATE TABLE claims (
    device      TEXT COLLATE "C" NOT NULL,
    kernel      TEXT COLLATE "C" NOT NULL,
    source_hash TEXT COLLATE "C" NOT NULL,
    constants   TEXT COLLATE "C" NOT NULL,
    config      TEXT COLLATE "C" NOT NULL,
    worker      TEXT COLLATE "C" NOT NULL,
    claimed_at  BIGINT NOT NULL,
    lease_ms    BIGINT NOT NULL,
    deadline    BIGINT NOT NULL,
    done_at     BIGINT,
    PRIMARY KEY (device, kernel, source_hash, constants, config)
);
CREATE INDEX claims_worker ON claims (worker);
CREATE TABLE lapses (
    device      TEXT COLLATE "C" NOT NULL,
    kernel      TEXT COLLATE "C" NOT NULL,
    source_hash TEXT COLLATE "C" NOT NULL,
    constants   TEXT COLLATE "C" NOT NULL,
    config      TEXT COLLATE "C" NOT NULL,
    worker      TEXT COLLATE "C" NOT NULL,
    taken_by    TEXT COLLATE "C" NOT NULL,
    taken_at    BIGINT NOT NULL
);
CREATE INDEX lapses_group ON lapses (device, kernel, source_hash, constants);
CREATE TABLE workers (
    worker      TEXT COLLATE "C" PRIMARY KEY,
    started_at  BIGINT NOT NULL,
    heartbeat   BIGINT NOT NULL
);
"#;

/// PostgreSQL version 5: see [`V5`].
pub(crate) const PG_V5: &str = "
ALTER TABLE claims ADD COLUMN completions BIGINT NOT NULL DEFAULT 0;
UPDATE claims SET completions = 1 WHERE done_at IS NOT NULL;
";

/// PostgreSQL version 6: see [`V6`]; PostgreSQL adds the column and changes the keys in place.
pub(crate) const PG_V6: &str = r#"
CREATE TABLE setups (
    digest      TEXT COLLATE "C" PRIMARY KEY,
    description TEXT COLLATE "C" NOT NULL,
    first_seen  BIGINT NOT NULL
);
INSERT INTO setups (digest, description, first_seen)
SELECT 'legacy',
    '{"legacy":"recorded before ndtune kept setups (store schema 5 or earlier): its build options, arguments, verification and measurement are unknown"}',
    COALESCE((SELECT min(started_at) FROM results), 0)
WHERE EXISTS (SELECT 1 FROM results) OR EXISTS (SELECT 1 FROM scenarios)
   OR EXISTS (SELECT 1 FROM claims);
ALTER TABLE results ADD COLUMN setup TEXT COLLATE "C" NOT NULL DEFAULT 'legacy';
ALTER TABLE results ALTER COLUMN setup DROP DEFAULT;
DROP INDEX results_key;
DROP INDEX results_score;
CREATE UNIQUE INDEX results_key ON results (device, kernel, source_hash, setup, constants, config);
CREATE INDEX results_score ON results (device, kernel, source_hash, setup, constants, score_ms);
ALTER TABLE scenarios ADD COLUMN setup TEXT COLLATE "C" NOT NULL DEFAULT 'legacy';
ALTER TABLE scenarios ALTER COLUMN setup DROP DEFAULT;
ALTER TABLE scenarios DROP CONSTRAINT scenarios_pkey;
ALTER TABLE scenarios ADD PRIMARY KEY (device, kernel, source_hash, setup, constants);
ALTER TABLE claims ADD COLUMN setup TEXT COLLATE "C" NOT NULL DEFAULT 'legacy';
ALTER TABLE claims ALTER COLUMN setup DROP DEFAULT;
ALTER TABLE claims DROP CONSTRAINT claims_pkey;
ALTER TABLE claims ADD PRIMARY KEY (device, kernel, source_hash, setup, constants, config);
ALTER TABLE lapses ADD COLUMN setup TEXT COLLATE "C" NOT NULL DEFAULT 'legacy';
ALTER TABLE lapses ALTER COLUMN setup DROP DEFAULT;
DROP INDEX lapses_group;
CREATE INDEX lapses_group ON lapses (device, kernel, source_hash, setup, constants);
"#;

/// What a database holds, as far as ndtune is concerned.
#[derive(Debug, PartialEq)]
pub(crate) enum Contents {
    /// No tables, no application id: becomes a new store.
    Empty,
    /// An ndtune store at this schema version.
    Store(u32),
    /// Anything else, with the reason it is not a store.
    NotAStore(String),
}

/// Tells what `conn`'s database holds, reading only. The header's ids and the tables are read
/// by one statement, so from one snapshot: read apart, another process creating the store
/// between the reads made it look like another application's (no id, ndtune's tables).
pub(crate) fn contents(conn: &Connection) -> rusqlite::Result<Contents> {
    let (app_id, version, tables): (i32, u32, Option<String>) = conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id()), \
                (SELECT user_version FROM pragma_user_version()), \
                (SELECT group_concat(name, char(10)) FROM \
                    (SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name))",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let tables: Vec<String> = tables
        .map(|t| t.split('\n').map(str::to_string).collect())
        .unwrap_or_default();
    if app_id == 0 && version == 0 && tables.is_empty() {
        return Ok(Contents::Empty);
    }
    if app_id != APPLICATION_ID {
        return Ok(Contents::NotAStore(format!(
            "an SQLite database of another application: application_id {app_id:#x}, tables [{}]",
            tables.join(", ")
        )));
    }
    if !tables.iter().any(|t| t == "meta") {
        return Ok(Contents::NotAStore(
            "has ndtune's application_id but no meta table".into(),
        ));
    }
    let meta = |key: &str| -> rusqlite::Result<Option<String>> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
    };
    if meta("application_id")?.as_deref() != Some("ndtune") {
        return Ok(Contents::NotAStore(
            "its meta table does not name ndtune".into(),
        ));
    }
    let recorded = meta("schema_version")?;
    if recorded != Some(version.to_string()) {
        return Ok(Contents::NotAStore(format!(
            "inconsistent schema version: meta says {recorded:?}, the header says {version}"
        )));
    }
    Ok(Contents::Store(version))
}

/// Applies `steps[from..]` and records the new version; the caller holds the transaction.
pub(crate) fn migrate(conn: &Connection, from: u32, steps: &[&str]) -> rusqlite::Result<u32> {
    for step in &steps[from as usize..] {
        conn.execute_batch(step)?;
    }
    let to = steps.len() as u32;
    conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    conn.pragma_update(None, "user_version", to)?;
    for (key, value) in [
        ("schema_version", to.to_string()),
        ("ndtune_version", crate::NDTUNE_VERSION.to_string()),
    ] {
        conn.execute(UPSERT_META, (key, value))?;
    }
    Ok(to)
}
