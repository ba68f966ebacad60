//! Opening a store file safely: whatever is not an ndtune store (or is one of a newer schema) is
//! recognised with read-only access and refused before anything is written to it. A store is
//! opened for writing ([`open`]) or only for reading ([`open_read_only`]: on a read-only file
//! system, in a directory the user cannot write, on a full disk); a store that cannot be written
//! is refused for writing with the reason, found by asking the file system.

use crate::error::{At, StoreError};
use crate::schema::{contents, migrate, Contents};
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior, MAIN_DB};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a write waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (or creates) the store at `path` and brings it to version `steps.len()`.
/// Returns the connection and the schema version.
pub(crate) fn open(path: &Path, steps: &[&str]) -> Result<(Connection, u32), StoreError> {
    let supported = steps.len() as u32;
    let exists = probe(path, supported)?;
    let opened = connect(path, !exists).at(path).and_then(|mut conn| {
        // SQLite opens a file it may not write read-only without saying so.
        if conn.is_readonly(MAIN_DB).at(path)? {
            let why =
                unwritable(path).unwrap_or_else(|| "SQLite could only open it read-only".into());
            return Err(cannot_write(path, why));
        }
        let version = bring_up_to_date(&mut conn, path, steps)?;
        Ok((conn, version))
    });
    opened.map_err(|e| explain_write_failure(path, e))
}

/// Opens the existing store at `path` only for reading: nothing is written to it or beside it
/// where it cannot be. Returns the connection and the store's schema version (0 for an empty
/// file); one below `supported` has to be migrated before it is read.
pub(crate) fn open_read_only(path: &Path, supported: u32) -> Result<(Connection, u32), StoreError> {
    if !path.exists() {
        return Err(StoreError::Missing {
            path: path.to_path_buf(),
        });
    }
    probe(path, supported)?;
    let (conn, found) = connect_read_only(path)?;
    match found {
        Contents::Empty => Ok((conn, 0)),
        Contents::Store(v) if v > supported => Err(newer_schema(path, v, supported)),
        Contents::Store(v) => Ok((conn, v)),
        Contents::NotAStore(reason) => Err(not_a_store(path, reason)),
    }
}

/// A read-only connection and what the database holds. `mode=ro` first: SQLite takes its locks
/// and sees what other processes commit. Where SQLite cannot set up the write-ahead log's
/// shared memory for that (a directory it cannot write, a full disk) and no log holds anything,
/// the file alone is the whole database: it is read `immutable`, without locks.
fn connect_read_only(path: &Path) -> Result<(Connection, Contents), StoreError> {
    let conn = match open_uri(path, "mode=ro") {
        Ok(conn) => conn,
        Err(e) if write_failure(&e) && !wal_holds_data(path) => {
            open_uri(path, "immutable=1").at(path)?
        }
        Err(e) if write_failure(&e) => {
            return Err(StoreError::Unreadable {
                path: path.to_path_buf(),
                reason: format!(
                    "its write-ahead log {} holds results not yet in the file, and SQLite \
                     cannot set up the shared memory to read it ({}): open the store once \
                     where it can be written",
                    sibling(path, "-wal").display(),
                    unwritable(path).unwrap_or_else(|| e.to_string())
                ),
            })
        }
        Err(e) => return Err(e).at(path),
    };
    let found = contents(&conn).at(path)?;
    Ok((conn, found))
}

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether the store's write-ahead log exists and is not empty.
fn wal_holds_data(path: &Path) -> bool {
    std::fs::metadata(sibling(path, "-wal")).is_ok_and(|m| m.len() > 0)
}

/// Whether an SQLite error says it could not write or create a file (its journal, its shared
/// memory, the database).
fn write_failure(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            ErrorCode::ReadOnly
                | ErrorCode::CannotOpen
                | ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::PermissionDenied
        )
    )
}

fn cannot_write(path: &Path, why: String) -> StoreError {
    StoreError::CannotWrite {
        path: path.to_path_buf(),
        reason: format!(
            "{why}; commands that only read it (status, report, export, tune --replay) still work"
        ),
    }
}

/// An SQLite error of opening for writing, explained where the file system says why it cannot
/// be written.
fn explain_write_failure(path: &Path, e: StoreError) -> StoreError {
    match &e {
        StoreError::Sqlite { error, .. } if write_failure(error) => match unwritable(path) {
            Some(why) => cannot_write(path, why),
            None => e,
        },
        _ => e,
    }
}

/// Why the store at `path` cannot be written, if the file system says: the file, its
/// write-ahead log files or its directory read-only (a read-only file system, or no write
/// permission for this user), or the file system full.
pub(crate) fn unwritable(path: &Path) -> Option<String> {
    let dir = directory(path);
    let files = [
        path.to_path_buf(),
        sibling(path, "-wal"),
        sibling(path, "-shm"),
    ];
    for file in files.iter().filter(|f| f.exists()) {
        if let Some(why) = denied(file, "the file") {
            return Some(why);
        }
    }
    if let Some(why) = denied(dir, "the directory") {
        return Some(format!(
            "{why} (SQLite keeps its write-ahead log, `-wal` and `-shm` files, beside the store)"
        ));
    }
    full(dir).then(|| format!("the file system of {} is full", dir.display()))
}

/// Why this process may not write `file`, if it may not.
fn denied(file: &Path, what: &str) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(file.as_os_str().as_bytes()).ok()?;
    // SAFETY: access(2) with a NUL-terminated path that lives across the call.
    if unsafe { libc::access(name.as_ptr(), libc::W_OK) } == 0 {
        return None;
    }
    let e = std::io::Error::last_os_error();
    let shown = file.display();
    Some(match e.raw_os_error() {
        Some(libc::EROFS) => format!("{what} {shown} is on a read-only file system"),
        Some(libc::EACCES | libc::EPERM) => {
            // SAFETY: geteuid(2) has no preconditions.
            let uid = unsafe { libc::geteuid() };
            format!("{what} {shown} is read-only to this user (uid {uid})")
        }
        _ => format!("{what} {shown}: {e}"),
    })
}

/// Whether the file system holding `dir` has no space left for this user.
fn full(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(name) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: statvfs(2) fills the buffer it is given when it returns 0.
    let ok = unsafe { libc::statvfs(name.as_ptr(), stat.as_mut_ptr()) } == 0;
    // SAFETY: initialised by the successful call.
    ok && unsafe { stat.assume_init() }.f_bavail == 0
}

/// The directory a store file is in.
fn directory(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
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
        Err(error) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                error,
            })
        }
        Ok(meta) => meta,
    };
    if !meta.is_file() {
        return Err(not_a_store(path, "not a regular file"));
    }
    if meta.len() > 0 {
        check_database(path, supported)?;
    }
    Ok(true)
}

fn require_directory(path: &Path) -> Result<(), StoreError> {
    let dir = directory(path);
    if dir.is_dir() {
        Ok(())
    } else {
        Err(StoreError::NoDirectory {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        })
    }
}

/// Opens the database read-only and checks its integrity and what it holds. The file is read
/// by SQLite only: closing a descriptor of a file drops every POSIX lock the process holds on
/// it, so a file opened and closed here beside a connection of this process to the same store
/// (the heartbeat's store beside the campaign's) would leave that connection unlocked, and
/// another process closing the last connection it knows of would delete the write-ahead log
/// under it. SQLite keeps such descriptors open until its last connection to the file closes.
fn check_database(path: &Path, supported: u32) -> Result<(), StoreError> {
    let found = inspect_read_only(path).map_err(|e| match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => not_a_store(
            path,
            "not an SQLite database: SQLite does not recognise its header",
        ),
        Some(ErrorCode::DatabaseCorrupt) => not_a_store(
            path,
            format!("an unreadable or damaged SQLite database: {e}"),
        ),
        _ => StoreError::Sqlite {
            path: path.to_path_buf(),
            error: e,
        },
    })?;
    match found {
        Contents::NotAStore(reason) => Err(not_a_store(path, reason)),
        Contents::Store(v) if v > supported => Err(newer_schema(path, v, supported)),
        Contents::Empty | Contents::Store(_) => Ok(()),
    }
}

/// Reads what the database holds. Without a `-wal` file beside it, the file alone is the whole
/// database: it is opened `immutable`, so that SQLite creates no `-wal`/`-shm` files next to it;
/// so it is too where SQLite cannot set up the shared memory of an empty log.
fn inspect_read_only(path: &Path) -> rusqlite::Result<Contents> {
    let conn = if sibling(path, "-wal").exists() {
        match open_uri(path, "mode=ro") {
            Err(e) if write_failure(&e) && !wal_holds_data(path) => open_uri(path, "immutable=1")?,
            opened => opened?,
        }
    } else {
        open_uri(path, "immutable=1")?
    };
    if let Some(damage) = damage(&conn)? {
        return Ok(Contents::NotAStore(format!("a damaged database: {damage}")));
    }
    contents(&conn)
}

/// A read-only connection to the database at `path`, opened by URI with `parameters`
/// (`mode=ro`, `immutable=1`); its first read happens here, so that an error shows now.
fn open_uri(path: &Path, parameters: &str) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let uri = format!("file:{}?{parameters}", uri_path(path));
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
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
