//! The wisdom `POST /v1/config` answers from (`serve --wisdom FILE`): reloaded as the model is,
//! when the file changes and on SIGHUP, swapped in without blocking an answer; its state for
//! `/v1/health`.
//!
//! A file that loads replaces the one in use. One that does not is kept out while a usable one
//! answers (health says the reload failed and why); where none was usable yet (the file was
//! corrupt at start), the new failure is what answers, 503 with its reason, until a good file
//! comes. The capture of questions (`NDTUNE_CAPTURE`) goes on across reloads in one file.

use arc_swap::ArcSwap;
use ndtune_wisdom::capture::Capture;
use ndtune_wisdom::Runtime;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// What tells a file's versions apart: modification time, length, inode.
pub(crate) type FileVersion = (std::time::SystemTime, u64, u64);

/// The version of the file at `path` now, where it can be read.
pub(crate) fn file_version(path: &Path) -> Option<FileVersion> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

/// A wisdom file and the runtime answering from it.
pub struct WisdomFile {
    path: PathBuf,
    runtime: ArcSwap<Runtime>,
    capture: Option<Arc<Capture>>,
    /// The version last loaded (or tried), and the last reload's failure while a usable wisdom
    /// answers in its place.
    seen: Mutex<(Option<FileVersion>, Option<String>)>,
}

/// The wisdom's state in `/v1/health`.
#[derive(Debug, Serialize)]
pub struct WisdomHealth {
    pub path: PathBuf,
    /// `ok`, `unusable` (no usable wisdom: `/v1/config` answers 503) or `stale` (a reload
    /// failed; the wisdom loaded before answers).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl WisdomFile {
    /// Opens `path`; a file that cannot be used is no error here (see the module's header).
    pub fn open(path: &Path) -> WisdomFile {
        let capture = Capture::from_env().map(Arc::new);
        let seen = file_version(path);
        WisdomFile {
            path: path.to_path_buf(),
            runtime: ArcSwap::from_pointee(Runtime::open_with(path, capture.clone())),
            capture,
            seen: Mutex::new((seen, None)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The runtime answering now.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime.load_full()
    }

    /// Whether the file is not the version last loaded (or tried).
    pub fn changed(&self) -> bool {
        let now = file_version(&self.path);
        now.is_some() && now != self.seen.lock().unwrap_or_else(PoisonError::into_inner).0
    }

    /// Loads the file again: `Ok` where it can be used (it answers from now on), else why not
    /// (the wisdom in use, if usable, goes on answering).
    pub fn reload(&self) -> Result<(), String> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.0 = file_version(&self.path);
        let fresh = Runtime::open_with(&self.path, self.capture.clone());
        match fresh.load_error().map(|e| e.to_string()) {
            None => {
                self.runtime.store(Arc::new(fresh));
                seen.1 = None;
                Ok(())
            }
            Some(e) if self.runtime.load().load_error().is_some() => {
                self.runtime.store(Arc::new(fresh));
                seen.1 = None;
                Err(e)
            }
            Some(e) => {
                seen.1 = Some(e.clone());
                Err(e)
            }
        }
    }

    pub fn health(&self) -> WisdomHealth {
        let stale = self
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
            .clone();
        let (status, error) = match (self.runtime.load().load_error(), stale) {
            (Some(e), _) => ("unusable", Some(e.to_string())),
            (None, Some(e)) => (
                "stale",
                Some(format!(
                    "the file was changed and does not load ({e}): the wisdom loaded before answers"
                )),
            ),
            (None, None) => ("ok", None),
        };
        WisdomHealth {
            path: self.path.clone(),
            status,
            error,
        }
    }
}
