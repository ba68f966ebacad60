//! Opening a store file safely: whatever is not an ndtune store (or is one of a newer schema) is
//! recognised with read-only access and refused before anything is written to it.

use crate::error::{At, StoreError};
use crate::schema::{contents, migrate, Contents};
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// How long a write waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The 16 bytes every SQLite database file starts with.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Opens (or creates) the store at `path` and brings it to version `steps.len()`.
/// Returns the connection and the schema version.
pub(crate) fn open(path: &Path, steps: &[&str]) -> Result<(Connection, u32), StoreError> {
    let supported = steps.len() as u32;
    let exists = probe(path, supported)?;
    let mut conn = connect(path, !exists).at(path)?;
    let version = bring_up_to_date(&mut conn, path, steps)?;
    Ok((conn, version))
}

fn not_a_store(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::NotAStore {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn newer_schema(path: &Path, found: u32, supported: u32) -> StoreError {
    StoreError::NewerSchema {
        path: path.to_path_buf(),
        found,
        supported,
    }
}

/// Checks, without writing, that `path` is missing, empty, or an ndtune store this version can
/// open. Returns whether the file exists.
fn probe(path: &Path, supported: u32) -> Result<bool, StoreError> {
    let meta = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            require_directory(path)?;
            return Ok(false);
        }
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
        Ok(meta) => meta,
    };
    if !meta.is_file() {
        return Err(not_a_store(path, "not a regular file"));
    }
    if meta.len() > 0 {
        check_header(path)?;
        check_database(path, supported)?;
    }
    Ok(true)
}

fn require_directory(path: &Path) -> Result<(), StoreError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if dir.is_dir() {
        Ok(())
    } else {
        Err(StoreError::NoDirectory {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        })
    }
}

fn check_header(path: &Path) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut head = Vec::with_capacity(SQLITE_MAGIC.len());
    std::fs::File::open(path)
        .map_err(io)?
        .take(SQLITE_MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    if head != SQLITE_MAGIC {
        return Err(not_a_store(
            path,
            "not an SQLite database: it does not start with the SQLite header",
        ));
    }
    Ok(())
}

/// Opens the database read-only and checks its integrity and what it holds.
fn check_database(path: &Path, supported: u32) -> Result<(), StoreError> {
    let found = inspect_read_only(path).map_err(|e| match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => not_a_store(
            path,
            format!("an unreadable or damaged SQLite database: {e}"),
        ),
        _ => StoreError::Sqlite {
            path: path.to_path_buf(),
            source: e,
        },
    })?;
    match found {
        Contents::NotAStore(reason) => Err(not_a_store(path, reason)),
        Contents::Store(v) if v > supported => Err(newer_schema(path, v, supported)),
        Contents::Empty | Contents::Store(_) => Ok(()),
    }
}

/// Reads what the database holds. Without a `-wal` file beside it, the file alone is the whole
/// database: it is opened `immutable`, so that SQLite creates no `-wal`/`-shm` files next to it.
fn inspect_read_only(path: &Path) -> rusqlite::Result<Contents> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let immutable = if Path::new(&wal).exists() { "0" } else { "1" };
    let uri = format!("file:{}?immutable={immutable}", uri_path(path));
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    if let Some(damage) = damage(&conn)? {
        return Ok(Contents::NotAStore(format!("a damaged database: {damage}")));
    }
    contents(&conn)
}

/// `path` percent-encoded for a `file:` URI.
fn uri_path(path: &Path) -> String {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What `PRAGMA quick_check` finds wrong, if anything (its first three complaints).
fn damage(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let mut stmt = conn.prepare("PRAGMA quick_check(3)")?;
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok((rows != ["ok"]).then(|| rows.join("; ").replace('\n', " ")))
}

/// A read-write connection set up for durable writes: WAL journal, a sync at every commit.
fn connect(path: &Path, create: bool) -> rusqlite::Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// Runs the migrations the store lacks, in one write transaction that first checks again (under
/// the write lock, in case another process got there first) what the file holds.
fn bring_up_to_date(conn: &mut Connection, path: &Path, steps: &[&str]) -> Result<u32, StoreError> {
    let supported = steps.len() as u32;
    if contents(conn).at(path)? == Contents::Store(supported) {
        return Ok(supported);
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .at(path)?;
    let from = match contents(&tx).at(path)? {
        Contents::Empty => 0,
        Contents::Store(v) if v > supported => return Err(newer_schema(path, v, supported)),
        Contents::Store(v) => v,
        Contents::NotAStore(reason) => return Err(not_a_store(path, reason)),
    };
    if from == supported {
        return Ok(from); // another process migrated it while this one waited for the lock
    }
    let to = migrate(&tx, from, steps).at(path)?;
    tx.commit().at(path)?;
    Ok(to)
}
