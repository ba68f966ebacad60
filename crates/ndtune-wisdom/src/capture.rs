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

/// The most a process writes to its capture file: past it, later questions are not captured
/// (said once). [`read`] takes files up to 64 MiB.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Where this process records, and what it recorded already.
pub struct Capture {
    file: PathBuf,
    limit: u64,
    state: Mutex<State>,
}

/// What a capture did so far.
#[derive(Default)]
struct State {
    /// The lines written (each distinct question once).
    seen: HashSet<String>,
    /// The file, opened at the first question.
    out: Option<std::fs::File>,
    written: u64,
    /// Why capturing stopped (a failure or the size limit): said once, then nothing is tried.
    stopped: bool,
}

impl Capture {
    /// The capture `NDTUNE_CAPTURE` asks for, if any.
    pub fn from_env() -> Option<Capture> {
        let dir = std::env::var_os(ENV).filter(|d| !d.is_empty())?;
        Some(Capture::to(Path::new(&dir)))
    }

    /// A capture into `dir` (made where missing at the first record, readable by its owner only).
    pub fn to(dir: &Path) -> Capture {
        Capture::with_limit(dir, MAX_FILE_BYTES)
    }

    /// [`Capture::to`] writing at most `limit` bytes.
    pub fn with_limit(dir: &Path, limit: u64) -> Capture {
        Capture {
            file: dir.join(format!(
                "capture-{}-{}.jsonl",
                ndtune_core::host_name(),
                std::process::id()
            )),
            limit,
            state: Mutex::new(State::default()),
        }
    }

    /// The file this process captures to.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Records `question` unless this process recorded it already. The first failure (the
    /// folder or file is not safe to write, the disk is full, the size limit is reached) is
    /// returned once; capturing then stops, and later questions are neither written nor kept.
    pub fn record(&self, question: &Captured) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.stopped {
            return Ok(());
        }
        let line = serde_json::to_string(question).expect("a capture serialises") + "\n";
        if state.seen.contains(&line) {
            return Ok(());
        }
        let outcome = self.write(&mut state, &line);
        match outcome {
            Ok(()) => {
                state.written += line.len() as u64;
                state.seen.insert(line);
                Ok(())
            }
            Err(why) => {
                state.stopped = true;
                state.out = None;
                Err(format!(
                    "cannot capture to {}: {why}; later questions of this process are not captured",
                    self.file.display()
                ))
            }
        }
    }

    fn write(&self, state: &mut State, line: &str) -> Result<(), String> {
        if state.written + line.len() as u64 > self.limit {
            return Err(format!(
                "the file reached its limit of {} bytes",
                self.limit
            ));
        }
        if state.out.is_none() {
            state.out = Some(open_capture_file(&self.file)?);
        }
        let out = state.out.as_mut().expect("opened above");
        // One write of the whole line: lines of processes sharing the folder never interleave.
        out.write_all(line.as_bytes()).map_err(|e| e.to_string())
    }
}

/// Opens `file` to append this process's captures, safely in a folder others may write: the
/// folder is made (0700) where missing; one writable by others is refused unless sticky (as
/// `/tmp`); the file is created exclusively without following a link, or, where it exists (a
/// process of the same id before), reopened without following a link and kept only where it is
/// a regular file of this user's with no other name.
fn open_capture_file(file: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    let dir = file.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let folder = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (others_write, sticky) = (folder.mode() & 0o002 != 0, folder.mode() & 0o1000 != 0);
    if others_write && !sticky {
        return Err(format!(
            "{} is writable by every user (mode {:o}) and not sticky: another user could put a link where the capture goes; capture into a folder only you can write",
            dir.display(),
            folder.mode() & 0o7777
        ));
    }
    let options = |create: bool| {
        let mut o = std::fs::OpenOptions::new();
        o.append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        if create {
            o.create_new(true).mode(0o600);
        }
        o
    };
    match options(true).open(file) {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let f = options(false)
                .open(file)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::ELOOP) => "it is a symbolic link: refused".to_string(),
                    _ => e.to_string(),
                })?;
            let m = f.metadata().map_err(|e| e.to_string())?;
            // SAFETY: geteuid(2) cannot fail.
            let me = unsafe { libc::geteuid() };
            if !m.is_file() || m.uid() != me || m.nlink() != 1 {
                return Err(format!(
                    "it exists and is not a regular file of this user's with one name (owner {}, links {}): refused",
                    m.uid(),
                    m.nlink()
                ));
            }
            Ok(f)
        }
        Err(e) => Err(e.to_string()),
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
    // Each question's canonical line: duplicates are found in constant time.
    let mut seen: HashSet<String> = HashSet::new();
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
            if seen.insert(serde_json::to_string(&c).expect("a capture serialises")) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn question(kernel: &str, n: i64) -> Captured {
        Captured {
            kernel: kernel.into(),
            device: ndtune_device::builtin::find("gtx-titan").unwrap(),
            constants: Constants::from([("N".to_string(), ndtune_core::Value::Int(n))]),
        }
    }

    fn mode(dir: &Path, mode: u32) {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_planted_link_is_not_followed_and_the_failure_is_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "root's\n").unwrap();
        let capture = Capture::to(&dir.path().join("captures"));
        std::fs::create_dir(dir.path().join("captures")).unwrap();
        std::os::unix::fs::symlink(&victim, capture.file()).unwrap();
        let e = capture.record(&question("k", 1)).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(e.contains("not captured"), "{e}");
        // Said once: later questions are neither written nor reported.
        assert_eq!(capture.record(&question("k", 2)), Ok(()));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's\n");
    }

    #[test]
    fn a_folder_others_can_write_is_refused_unless_sticky() {
        let dir = tempfile::tempdir().unwrap();
        mode(dir.path(), 0o777);
        let e = Capture::to(dir.path())
            .record(&question("k", 1))
            .unwrap_err();
        assert!(e.contains("writable by every user (mode 777)"), "{e}");
        mode(dir.path(), 0o1777);
        let capture = Capture::to(dir.path());
        capture.record(&question("k", 1)).unwrap();
        let m = std::fs::metadata(capture.file()).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        assert_eq!(read(dir.path()).unwrap(), vec![question("k", 1)]);
        // A new folder is the user's alone.
        let made = dir.path().join("new");
        Capture::to(&made).record(&question("k", 1)).unwrap();
        assert_eq!(
            std::fs::metadata(&made).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    #[test]
    fn an_existing_file_of_this_user_is_appended_to_a_hard_link_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let first = Capture::to(dir.path());
        first.record(&question("k", 1)).unwrap();
        // A process with the same id later (ids are reused) appends to the same file.
        let again = Capture::to(dir.path());
        again.record(&question("k", 2)).unwrap();
        assert_eq!(read(dir.path()).unwrap().len(), 2);
        let other = tempfile::tempdir().unwrap();
        let linked = Capture::to(other.path());
        std::fs::hard_link(first.file(), linked.file()).unwrap();
        let e = linked.record(&question("k", 3)).unwrap_err();
        assert!(e.contains("links 2"), "{e}");
    }

    #[test]
    fn a_capture_file_stops_at_its_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let capture = Capture::with_limit(dir.path(), 4096);
        let mut refused = Vec::new();
        for n in 0..1000 {
            if let Err(e) = capture.record(&question("k", n)) {
                refused.push(e);
            }
        }
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("limit of 4096 bytes"), "{}", refused[0]);
        let size = std::fs::metadata(capture.file()).unwrap().len();
        assert!(size <= 4096 && size > 3000, "{size}");
    }

    #[test]
    fn many_captured_questions_are_read_once_each_in_the_order_first_asked() {
        let dir = tempfile::tempdir().unwrap();
        // 40,000 questions of 20,000 distinct sizes, over four files (a quadratic search for
        // duplicates made this minutes).
        for f in 0..4 {
            let text: String = (0..10_000)
                .map(|i| {
                    serde_json::to_string(&question("k", (i + f * 5_000) % 20_000)).unwrap() + "\n"
                })
                .collect();
            std::fs::write(dir.path().join(format!("capture-h-{f}.jsonl")), text).unwrap();
        }
        let all = read(dir.path()).unwrap();
        assert_eq!(all.len(), 20_000);
        let first: Vec<i64> = [0, 1, 10_000, 19_999]
            .iter()
            .map(|&i| all[i].constants["N"].as_int().unwrap())
            .collect();
        assert_eq!(first, [0, 1, 10_000, 19_999]);
    }
}
