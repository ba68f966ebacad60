//! Capture: what a running program asks for (kernel, device, constants), recorded so that
//! `ndtune tune SPEC --captured DIR` tunes exactly the sizes and devices seen.
//!
//! A program that picks its configurations through the run-time library ([`crate::Runtime`]:
//! the C API, Python's `ndtune.best`) records each distinct question once per process while
//! `NDTUNE_CAPTURE=DIR` is set: one JSON line ([`Captured`]) appended to
//! `DIR/capture-HOST-PID.jsonl`. Without the variable nothing is recorded and nothing is paid.

use ndtune_core::Constants;
use ndtune_device::DeviceProfile;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The environment variable naming the folder captures go to.
pub const ENV: &str = "NDTUNE_CAPTURE";

/// One question a program asked: a kernel on a device at constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Captured {
    pub kernel: String,
    pub device: DeviceProfile,
    pub constants: Constants,
}

/// Where this process records, and what it recorded already.
pub struct Capture {
    file: PathBuf,
    seen: Mutex<HashSet<String>>,
}

impl Capture {
    /// The capture `NDTUNE_CAPTURE` asks for, if any.
    pub fn from_env() -> Option<Capture> {
        let dir = std::env::var_os(ENV).filter(|d| !d.is_empty())?;
        Some(Capture::to(Path::new(&dir)))
    }

    /// A capture into `dir` (made where missing at the first record).
    pub fn to(dir: &Path) -> Capture {
        Capture {
            file: dir.join(format!(
                "capture-{}-{}.jsonl",
                ndtune_core::host_name(),
                std::process::id()
            )),
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Records `question` unless this process recorded it already.
    pub fn record(&self, question: &Captured) -> Result<(), String> {
        let line = serde_json::to_string(question).expect("a capture serialises");
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(&line) {
            return Ok(());
        }
        let fail = |e: std::io::Error| format!("cannot capture to {}: {e}", self.file.display());
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
            .map_err(fail)?;
        // One write of the whole line: lines of processes sharing the folder never interleave.
        f.write_all(format!("{line}\n").as_bytes()).map_err(fail)?;
        seen.insert(line);
        Ok(())
    }
}

/// Every question captured in `dir` (its `*.jsonl` files), duplicates removed, in the order
/// first met. A line that is not a capture is an error naming its file and line.
pub fn read(dir: &Path) -> Result<Vec<Captured>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut all: Vec<Captured> = Vec::new();
    for file in &files {
        let text =
            ndtune_spec::read_text(file, 64 << 20, "capture file").map_err(|e| e.to_string())?;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let c: Captured = serde_json::from_str(line)
                .map_err(|e| format!("{}:{}: not a capture: {e}", file.display(), i + 1))?;
            if !all.contains(&c) {
                all.push(c);
            }
        }
    }
    if all.is_empty() {
        return Err(format!(
            "{}: no capture here (a program run with {ENV}={} writes capture-*.jsonl)",
            dir.display(),
            dir.display()
        ));
    }
    Ok(all)
}
