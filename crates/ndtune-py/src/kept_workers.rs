//! The workers a Python session keeps between its `tune_kernel` calls: a script that tunes
//! one kernel for several sizes (Kernel Tuner's reduction example calls `tune_kernel` twelve
//! times over one 3.2 GB array) would otherwise start its measurement worker (process, driver,
//! context, the array read and uploaded) and its build workers again for each call. The last
//! call's workers wait here ([`ndtune_engine::request::KeptWorkers`]) for the next call, which
//! takes them up where they fit; they end after [`IDLE`] without one, at
//! `ndtune.release_workers()`, and when the interpreter exits (`atexit`).

use ndtune_engine::request::KeptWorkers;
use pyo3::prelude::*;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// How long kept workers wait for the next call: they hold the device's context and the
/// call's inputs in its memory, which the script may want for itself once it tunes no more.
pub const IDLE: Duration = Duration::from_secs(30);

/// The workers kept, the process that started them, and since when they wait.
struct Waiting {
    pid: u32,
    since: Instant,
    workers: KeptWorkers,
}

static WAITING: Mutex<Option<Waiting>> = Mutex::new(None);

fn waiting() -> std::sync::MutexGuard<'static, Option<Waiting>> {
    WAITING.lock().unwrap_or_else(|p| p.into_inner())
}

/// The workers kept for this call (none where there are none, or where they are a parent's: a
/// process forked from the session finds its parent's workers in its memory, which are not its
/// children and must not be ended by it).
pub fn take() -> KeptWorkers {
    match waiting().take() {
        Some(w) if w.pid == std::process::id() => w.workers,
        Some(parents) => {
            std::mem::forget(parents.workers);
            KeptWorkers::default()
        }
        None => KeptWorkers::default(),
    }
}

/// Keeps `workers` for the next call, for [`IDLE`] at most.
pub fn keep(workers: KeptWorkers) {
    if workers.is_empty() {
        return;
    }
    *waiting() = Some(Waiting {
        pid: std::process::id(),
        since: Instant::now(),
        workers,
    });
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        let watch = std::thread::Builder::new().name("ndtune-kept-workers".into());
        // Without the thread the workers end at the next call or at exit: nothing is lost.
        let _ = watch.spawn(|| loop {
            std::thread::sleep(Duration::from_secs(1));
            let mut w = waiting();
            if w.as_ref().is_some_and(|w| w.since.elapsed() >= IDLE) {
                let idle = w.take();
                drop(w);
                drop(idle);
            }
        });
    });
}

/// Ends the workers kept from the last `tune_kernel` call, if any (the package calls it at
/// exit; a script may call it to free the device at once).
#[pyfunction]
pub fn release_workers(py: Python<'_>) {
    let kept = take();
    py.detach(move || drop(kept));
}
