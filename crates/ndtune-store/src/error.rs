//! [`StoreError`]: why a store could not be opened, read or written. Every variant names the file.

use std::path::{Path, PathBuf};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not an ndtune store; it was left untouched.
    #[error("{}: not a usable ndtune results store: {reason}; refused, the file was not modified", path.display())]
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
