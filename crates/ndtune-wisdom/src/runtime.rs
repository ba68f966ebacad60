//! The run-time library's core, shared by the C API, Python and the service: a wisdom file
//! opened once (a file that cannot be used is remembered, and every pick says why, so the
//! program keeps its own defaults), one [`Picker`] per kernel, and the capture of every question
//! asked while `NDTUNE_CAPTURE` is set (also when the wisdom could not be used: the first run
//! of a program has none yet).

use crate::capture::{Capture, Captured};
use crate::{Pick, PickError, Picker, Wisdom, WisdomError};
use ndtune_core::Constants;
use ndtune_device::DeviceProfile;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Why a pick gave no configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// The wisdom file cannot be used (corrupt, newer, missing, no such kernel).
    #[error(transparent)]
    Wisdom(#[from] WisdomError),
    /// No configuration fits (or the constants are not the spec's).
    #[error(transparent)]
    Pick(#[from] PickError),
}

/// A wisdom file opened for picking.
pub struct Runtime {
    path: String,
    wisdom: Result<Wisdom, WisdomError>,
    pickers: Mutex<HashMap<String, Result<Arc<Picker>, WisdomError>>>,
    capture: Option<Arc<Capture>>,
}

impl Runtime {
    /// Opens `path`; a file that cannot be used is no error here: each pick returns it. The
    /// capture is `NDTUNE_CAPTURE`'s.
    pub fn open(path: &Path) -> Runtime {
        Runtime::open_with(path, Capture::from_env().map(Arc::new))
    }

    /// [`Runtime::open`] with the capture given (shared, so that a file opened again captures
    /// on where the one before left off).
    pub fn open_with(path: &Path, capture: Option<Arc<Capture>>) -> Runtime {
        Runtime {
            path: path.display().to_string(),
            wisdom: Wisdom::load(path),
            pickers: Mutex::new(HashMap::new()),
            capture,
        }
    }

    /// Why the file cannot be used, if it cannot.
    pub fn load_error(&self) -> Option<&WisdomError> {
        self.wisdom.as_ref().err()
    }

    /// Whether questions are being captured.
    pub fn capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// The capture questions go to, if any.
    pub fn capture(&self) -> Option<&Arc<Capture>> {
        self.capture.as_ref()
    }

    /// The configuration of `kernel` for `device` at `constants` (see [`Picker::pick`]); the
    /// question is captured first where capturing. A capture that cannot be written is a
    /// warning on stderr, never the program's failure.
    pub fn pick(
        &self,
        kernel: &str,
        device: &DeviceProfile,
        constants: &Constants,
    ) -> Result<Pick, RuntimeError> {
        self.pick_preferring(kernel, device, constants, None)
    }

    /// [`Runtime::pick`], from the tuned front by `prefer` where given
    /// ([`Picker::pick_preferring`]).
    pub fn pick_preferring(
        &self,
        kernel: &str,
        device: &DeviceProfile,
        constants: &Constants,
        prefer: Option<&crate::Preference>,
    ) -> Result<Pick, RuntimeError> {
        if let Some(capture) = &self.capture {
            let question = Captured {
                kernel: kernel.to_string(),
                device: device.clone(),
                constants: constants.clone(),
            };
            if let Err(e) = capture.record(&question) {
                eprintln!("ndtune: {e}");
            }
        }
        Ok(self
            .picker(kernel)?
            .pick_preferring(device, constants, prefer)?)
    }

    /// The picker of `kernel`, made at its first question. Only the wisdom's own kernels are
    /// remembered: a name it does not hold is answered without being kept.
    fn picker(&self, kernel: &str) -> Result<Arc<Picker>, WisdomError> {
        let wisdom = self.wisdom.as_ref().map_err(Clone::clone)?;
        let mut pickers = self.pickers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(picker) = pickers.get(kernel) {
            return picker.clone();
        }
        let made = Picker::new(wisdom.kernel(kernel, &self.path)?, &self.path).map(Arc::new);
        pickers.insert(kernel.to_string(), made.clone());
        made
    }

    /// How many kernels have a picker (at most the wisdom's kernels).
    pub fn pickers(&self) -> usize {
        self.pickers.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
