//! [`StoreError`]: why a store could not be opened, read or written. Every variant names the
//! store: its file, or its PostgreSQL URL with the password hidden (in the `path` fields too).

use std::path::{Path, PathBuf};

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
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: SQLite: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// A PostgreSQL server could not be reached, refused the credentials, or has no such
    /// database; nothing was touched.
    #[error("{url}: cannot open the PostgreSQL store: {hint}: {source}")]
    Connect {
        /// The URL, its password hidden.
        url: String,
        hint: String,
        source: postgres::Error,
    },
    #[error("{}: PostgreSQL: {source}", path.display())]
    Postgres {
        path: PathBuf,
        source: postgres::Error,
    },
    /// A stored value does not parse back (the file was edited or damaged by something else).
    #[error("{}: damaged store: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
}

/// Attaches the store's path to an SQLite error.
pub(crate) trait At<T> {
    fn at(self, path: &Path) -> Result<T, StoreError>;
}

impl<T> At<T> for rusqlite::Result<T> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        })
    }
}
