//! Fuzzing ndtune's readers of untrusted input, on stable Rust with proptest, as part of
//! `cargo test` (`tests/targets.rs`, one test per target).
//!
//! A target is a [`Strategy`] of inputs (structured generators that know the format, real
//! inputs mutated, and raw bytes: [`gen`]) and a property ([`props`]): no panic, no hang, and
//! every error a value that says where the input is wrong. [`fuzz`] runs one for a bounded time:
//! `NDTUNE_FUZZ_SECONDS` per target (2 by default; CI may give more), from a seed that
//! `NDTUNE_FUZZ_SEED` fixes (otherwise the clock, printed so that a failure can be replayed). A
//! failing input is shrunk by proptest and printed; a case that runs longer than
//! `NDTUNE_FUZZ_HANG_SECONDS` (30) is a hang: its input is printed and the process aborted. Every
//! input that found a bug is kept in `tests/regressions.rs`.
//!
//! ```
//! use proptest::prelude::*;
//! ndtune_fuzz::fuzz("doc", "[a-z]{0,8}", |s: String| {
//!     (s.len() <= 8).then_some(()).ok_or_else(|| format!("{s} is too long"))
//! });
//! ```

pub mod gen;
pub mod props;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Cases per batch: the budget is checked between batches.
const BATCH: u32 = 16;

/// How long each target runs: `NDTUNE_FUZZ_SECONDS`, 2 s by default.
pub fn budget() -> Duration {
    seconds_from_env("NDTUNE_FUZZ_SECONDS", 2.0)
}

fn seconds_from_env(name: &str, default: f64) -> Duration {
    let seconds = std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(default);
    Duration::from_secs_f64(seconds)
}

/// Runs `property` on inputs of `strategy` for [`budget`] (at least one batch), then prints how
/// many cases ran. Panics with the shrunk input where the property fails or the code under test
/// panics; aborts the process, printing the input, where one case hangs.
pub fn fuzz<S>(name: &str, strategy: S, property: impl Fn(S::Value) -> Result<(), String>)
where
    S: Strategy,
    S::Value: Clone + Debug + Send + 'static,
{
    let seed = std::env::var("NDTUNE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    let watchdog = Watchdog::start(
        name,
        seconds_from_env("NDTUNE_FUZZ_HANG_SECONDS", 30.0),
        seed,
    );
    let started = Instant::now();
    let deadline = started + budget();
    let mut cases = 0u64;
    for batch in 0u64.. {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        bytes[8..16].copy_from_slice(&batch.to_le_bytes());
        let config = Config {
            cases: BATCH,
            failure_persistence: None,
            max_shrink_time: 60_000,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
        let result = runner.run(&strategy, |input| {
            watchdog.arm(&input);
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| property(input)));
            watchdog.disarm();
            // A panic is proptest's to catch and shrink.
            outcome
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .map_err(TestCaseError::fail)
        });
        match result {
            Ok(()) => {}
            Err(TestError::Fail(why, input)) => panic!(
                "fuzz {name}: {why}\nminimal failing input: {input:#?}\n(replay with NDTUNE_FUZZ_SEED={seed})"
            ),
            Err(TestError::Abort(why)) => panic!("fuzz {name}: aborted: {why}"),
        }
        cases += u64::from(BATCH);
        if Instant::now() >= deadline {
            break;
        }
    }
    drop(watchdog);
    eprintln!(
        "fuzz {name}: {cases} cases in {:.1} s, no failure (seed {seed})",
        started.elapsed().as_secs_f64()
    );
}

/// The case running now: when it started and its input.
type Running = Option<(Instant, Box<dyn Debug + Send>)>;

/// A thread that aborts the process, printing the input, when one case runs longer than its
/// limit: a hang would otherwise stop the test run with no word of its cause.
struct Watchdog {
    running: Arc<Mutex<Running>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(name: &str, limit: Duration, seed: u64) -> Watchdog {
        let running: Arc<Mutex<Running>> = Arc::default();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (watched, stopped, name) = (running.clone(), stop.clone(), name.to_string());
        let thread = std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let case = watched.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((since, input)) = case.as_ref() {
                    if since.elapsed() > limit {
                        eprintln!(
                            "fuzz {name}: one case has run for over {limit:?}, a hang; its input: {input:#?}\n(replay with NDTUNE_FUZZ_SEED={seed})"
                        );
                        std::process::abort();
                    }
                }
            }
        });
        Watchdog {
            running,
            stop,
            thread: Some(thread),
        }
    }

    fn arm<T: Clone + Debug + Send + 'static>(&self, input: &T) {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), Box::new(input.clone())));
    }

    fn disarm(&self) {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Drop for Watchdog {
    /// Also while a failure unwinds: the watchdog must not outlive its target.
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
