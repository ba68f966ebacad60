//! [`StoreError`]: why a store could not be opened, read or written. Every variant names the
//! store: its file, or its PostgreSQL location with the password hidden (in the `path` fields
//! too). Each message says its cause once: the database errors are kept as values but not as
//! `source()`s, so that a chain printed with its causes does not repeat them.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file or database exists but is not an ndtune store; it was left untouched.
    #[error("{}: not a usable ndtune results store: {reason}; refused, it was not modified", path.display())]
    NotAStore { path: PathBuf, reason: String },
    /// The store was written by a newer ndtune; it was left untouched.
    #[error("{}: the store has schema version {found}, newer than version {supported} that this ndtune ({}) supports; open it with a newer ndtune", path.display(), crate::NDTUNE_VERSION)]
    NewerSchema {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// A new store cannot be created because its directory does not exist.
    #[error("{}: cannot create the store: directory {} does not exist", path.display(), dir.display())]
    NoDirectory { path: PathBuf, dir: PathBuf },
    /// A command that only reads was given a file that does not exist.
    #[error("{}: no such store (`ndtune tune`, `collect`, `split` and `learn eval --db` write one)", path.display())]
    Missing { path: PathBuf },
    /// The store (or its directory) cannot be written: read-only, not the user's, or full.
    #[error("{}: cannot write the store: {reason}", path.display())]
    CannotWrite { path: PathBuf, reason: String },
    /// The store exists but cannot be read as it is (see the reason).
    #[error("{}: cannot read the store: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: SQLite: {}", path.display(), sqlite_text(error))]
    Sqlite {
        path: PathBuf,
        error: rusqlite::Error,
    },
    /// A PostgreSQL server could not be reached, refused the credentials, or has no such
    /// database; nothing was touched.
    #[error(
        "{url}: cannot open the PostgreSQL store: {hint}: {}",
        postgres_text(error)
    )]
    Connect {
        /// The location, its password hidden.
        url: String,
        hint: String,
        error: postgres::Error,
    },
    #[error("{}: PostgreSQL: {}", path.display(), postgres_text(error))]
    Postgres {
        path: PathBuf,
        error: postgres::Error,
    },
    /// The connection to a PostgreSQL server broke and could not be made again in time.
    #[error("{}: PostgreSQL: the connection was lost and could not be made again in {} s: {last}", path.display(), after.as_secs_f64())]
    Lost {
        path: PathBuf,
        after: Duration,
        /// The last error, connecting again.
        last: String,
    },
    /// A stored value does not parse back (the file was edited or damaged by something else).
    #[error("{}: damaged store: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
}

impl StoreError {
    /// Whether the error is a lost connection to a PostgreSQL server (closed, reset, or a
    /// server shutting down or starting up) after which connecting again may succeed.
    pub fn connection_lost(&self) -> bool {
        match self {
            StoreError::Postgres { error, .. } | StoreError::Connect { error, .. } => lost(error),
            _ => false,
        }
    }
}

impl StoreError {
    /// Whether PostgreSQL ended the transaction to resolve a conflict with another one (a
    /// deadlock, 40P01, or a serialization failure, 40001): it was rolled back, and running it
    /// again is the documented remedy.
    pub fn must_rerun(&self) -> bool {
        match self {
            StoreError::Postgres { error, .. } => error
                .code()
                .is_some_and(|c| matches!(c.code(), "40P01" | "40001")),
            // SQLite gives up without its busy handler where waiting could deadlock (a file
            // another process is creating, switching to its write-ahead log or recovering it):
            // the statement or transaction runs again once the other is through.
            StoreError::Sqlite {
                error: rusqlite::Error::SqliteFailure(e, _),
                ..
            } => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            _ => false,
        }
    }
}

fn lost(error: &postgres::Error) -> bool {
    use std::error::Error;
    let class = error.code().map(|c| c.code().get(..2).unwrap_or(""));
    error.is_closed()
        // 08: connection exception; 57P01-57P03: admin or crash shutdown, cannot connect now.
        || matches!(class, Some("08"))
        || error.code().is_some_and(|c| c.code().starts_with("57P0"))
        || error
            .source()
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
}

/// An SQLite error in one line: its message, with the extended code's name where SQLite gives
/// no message of its own.
fn sqlite_text(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(e, Some(message)) if message != &e.to_string() => {
            format!("{message} ({e})")
        }
        other => other.to_string(),
    }
}

/// A PostgreSQL error in one line: the server's own report (severity, message, detail, hint)
/// for a database error, else the client's description with its causes.
fn postgres_text(error: &postgres::Error) -> String {
    use std::error::Error;
    match error.as_db_error() {
        Some(db) => {
            let mut text = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            text
        }
        None => {
            let mut text = error.to_string();
            let mut cause = error.source();
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            text
        }
    }
}

/// Attaches the store's path to an SQLite error.
pub(crate) trait At<T> {
    fn at(self, path: &Path) -> Result<T, StoreError>;
}

impl<T> At<T> for rusqlite::Result<T> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|error| StoreError::Sqlite {
            path: path.to_path_buf(),
            error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::StoreError;

    #[test]
    fn a_busy_sqlite_file_runs_again_and_other_failures_do_not() {
        let sqlite = |code| StoreError::Sqlite {
            path: "s.db".into(),
            error: rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None),
        };
        assert!(sqlite(rusqlite::ffi::SQLITE_BUSY).must_rerun());
        assert!(sqlite(rusqlite::ffi::SQLITE_LOCKED).must_rerun());
        assert!(!sqlite(rusqlite::ffi::SQLITE_CORRUPT).must_rerun());
        assert!(!sqlite(rusqlite::ffi::SQLITE_FULL).must_rerun());
    }
}
