//! ndtune's shared vocabulary, used by the tuner, the store, the strategies and the reports:
//!
//! - [`Config`]: one launch configuration, parameter name to [`Value`] (an integer, a real or
//!   an identifier); [`Codec`]: how a point of the search space holds those values.
//! - [`Outcome`]: how the evaluation of one configuration ended. Every configuration ends as
//!   exactly one of measured, pruned, build_failed, refused, wrong_result, crashed, timed_out.
//! - [`Timing`]: the run times of a measured configuration and their statistics (Erdem's score is
//!   the mean of the best 5 of 10 runs), with the [`Energy`] the device drew where it was read;
//!   [`Raced`] where racing stopped its timing early.
//! - [`setup`]: what a result was measured under besides device, constants and configuration,
//!   as a readable description and its digest; what differs between two.
//! - [`text`]: line and column of a position in a file, for errors.
//! - [`tools`]: where the external tools ndtune runs (clang) are; [`bounded`]: running one
//!   within a time, memory and output limit, killed whole; [`sandbox`]: walls the operating
//!   system enforces around a run for an untrusted client (Landlock).
//! - [`cache`]: the user's private cache folder and the checks on what is kept there.
//! - [`pareto`]: Pareto fronts of several objectives and the hypervolume they cover.
//! - [`input`]: reading an input file within bounds (regular files only, a size limit per
//!   kind, gzip unpacked within a limit).
//!
//! ```
//! use ndtune_core::{Outcome, Timing};
//! let t = Timing::new(vec![3.0, 1.0, 2.0, 9.0], 2);
//! assert_eq!(t.score_ms(), 1.5);
//! assert_eq!(Outcome::Measured(t).kind().as_str(), "measured");
//! ```

pub mod bounded;
pub mod cache;
pub mod input;
pub mod pareto;
pub mod sandbox;
pub mod setup;
pub mod text;
pub mod tools;
mod value;

pub use value::{
    int_config, parse_assignment, parse_config, parse_constants, parse_values, sweep, Codec,
    CodecError, Coding, Config, Constants, Value,
};

use serde::{Deserialize, Serialize};
use std::fmt;

/// This machine's host name (`localhost` where it has none): how a worker names itself, and
/// what keeps one host's services apart from another's in a shared home folder.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it or
    // truncates, and the length is bounded below by the search for NUL.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..len]) {
        Ok(name) if ok && !name.is_empty() => name.to_string(),
        _ => "localhost".into(),
    }
}

/// Canonical text of a configuration (`{"A":1,"B":2}`, keys sorted): the store's key.
pub fn config_key(config: &Config) -> String {
    serde_json::to_string(config).expect("a map of values serialises")
}

/// Run times of one configuration under a protocol that scores the mean of the best `best_of`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Every timed run, in milliseconds, in the order run.
    pub times_ms: Vec<f64>,
    pub best_of: usize,
    /// What the driver's queries said of this build, where they were asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<Advice>,
    /// What the device drew while the runs were timed, where a power source could tell (boxed:
    /// most timings have none, and outcomes travel by value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<Box<Energy>>,
    /// Why timing stopped before the protocol's runs, where racing stopped it: then
    /// `times_ms` holds the runs it got and the score is the mean of the best of those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raced: Option<Raced>,
    /// What the front end's observers of the timed runs gave (Kernel Tuner's
    /// `BenchmarkObserver.get_results`), by observer, where it had any (boxed, as the energy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Box<std::collections::BTreeMap<String, serde_json::Value>>>,
    /// The first run's time (the verification or first warm-up run, which the protocol does
    /// not count: it pays for what a first launch does once), where it was timed. Racing learns
    /// from it how much slower a first run is, and may stop a configuration on it alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_ms: Option<f64>,
}

/// The energy a device drew over a window of back-to-back runs of one configuration after its
/// timed runs (and a lead-in of more of them, `ndtune_energy::LEAD_IN`): a window of at least
/// `[measure] energy_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    /// Joules per run: the window's energy over the runs in it.
    pub joules: f64,
    /// Mean power over the window, in watts: its energy over its duration.
    pub watts: f64,
    /// Runs in the window.
    pub runs: u32,
    /// The window's wall time, in milliseconds.
    pub window_ms: f64,
    /// Power samples read during the window.
    pub samples: u32,
    /// Where the energy came from, e.g. `nvml energy counter` or `nvml power samples`.
    pub source: String,
    /// How long the runs went on before the window opened, in milliseconds; `None` for an
    /// energy read before ndtune had a lead-in (read low: such an energy is read again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_in_ms: Option<f64>,
    /// The mean GPU temperature over the window, in degrees Celsius, where its sensor reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f64>,
    /// The mean graphics (core) clock over the window, in MHz, where it is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_clock_mhz: Option<f64>,
    /// The mean memory clock over the window, in MHz, where it is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<f64>,
}

/// How racing stopped a configuration's timing early: after `times_ms.len()` runs its fastest
/// run was above `limit_ms`, so with the rule's confidence it could not be the best. The limit is
/// the best score then (`best_ms`) times `1 + margin` times how much as many consecutive runs of
/// the campaign's other configurations were slowed down at most, but for `1 - confidence` of
/// them (`ndtune_bench::race`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Raced {
    /// Timed runs the protocol asked for.
    pub planned: u32,
    /// The best score of the campaign when it stopped.
    pub best_ms: f64,
    /// The limit its fastest run exceeded.
    pub limit_ms: f64,
    /// The rule it was raced under.
    pub margin: f64,
    pub confidence: f64,
    /// Stopped on its first run alone, before any timed run: `times_ms` holds that run (the
    /// timing's `cold_ms`), and `planned` timed runs were spared.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cold: bool,
}

/// What `clGetKernelWorkGroupInfo` says of one build. Advice, not limits: a driver may launch
/// a work-group larger than its `CL_KERNEL_WORK_GROUP_SIZE` (NVIDIA's does), so a configuration
/// is refused only by its launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advice {
    /// `CL_KERNEL_WORK_GROUP_SIZE`.
    pub work_group_size: u64,
    /// `CL_KERNEL_LOCAL_MEM_SIZE`, in bytes.
    pub local_mem_bytes: u64,
    /// Work-items in the launched work-group, to compare with `work_group_size`.
    pub launched_work_group: u64,
}

impl Advice {
    /// Whether the launch went beyond what the query advised.
    pub fn exceeded(&self) -> bool {
        self.launched_work_group > self.work_group_size
    }

    /// The error text of a refused launch: the driver's error, then this advice (read back by
    /// [`Advice::of_refusal`]).
    pub fn refusal(&self, error: &str) -> String {
        format!(
            "{error} {REFUSAL_ADVICE}{} work-items; the build's CL_KERNEL_WORK_GROUP_SIZE is {}, its CL_KERNEL_LOCAL_MEM_SIZE {} bytes)",
            self.launched_work_group, self.work_group_size, self.local_mem_bytes
        )
    }

    /// The advice a refused launch's error text carries ([`Advice::refusal`]), if it does.
    pub fn of_refusal(text: &str) -> Option<Advice> {
        let (_, rest) = text.rsplit_once(REFUSAL_ADVICE)?;
        let (launched, rest) =
            rest.split_once(" work-items; the build's CL_KERNEL_WORK_GROUP_SIZE is ")?;
        let (work_group, rest) = rest.split_once(", its CL_KERNEL_LOCAL_MEM_SIZE ")?;
        let local_mem = rest.strip_suffix(" bytes)")?;
        Some(Advice {
            work_group_size: work_group.parse().ok()?,
            local_mem_bytes: local_mem.parse().ok()?,
            launched_work_group: launched.parse().ok()?,
        })
    }
}

/// Where a refusal's text gives the advice ([`Advice::refusal`]).
const REFUSAL_ADVICE: &str = "(a work-group of ";

impl Timing {
    pub fn new(times_ms: Vec<f64>, best_of: usize) -> Timing {
        Timing {
            times_ms,
            best_of,
            advice: None,
            energy: None,
            raced: None,
            observed: None,
            cold_ms: None,
        }
    }

    fn sorted(&self) -> Vec<f64> {
        let mut t = self.times_ms.clone();
        t.sort_by(f64::total_cmp);
        t
    }

    /// The score: mean of the `best_of` fastest runs (all runs if there are fewer).
    pub fn score_ms(&self) -> f64 {
        let t = self.sorted();
        let k = self.best_of.clamp(1, t.len().max(1)).min(t.len());
        if k == 0 {
            return f64::NAN;
        }
        t[..k].iter().sum::<f64>() / k as f64
    }

    pub fn min_ms(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }

    pub fn median_ms(&self) -> f64 {
        let t = self.sorted();
        match t.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => t[n / 2],
            n => (t[n / 2 - 1] + t[n / 2]) / 2.0,
        }
    }

    /// Relative spread: standard deviation over mean of all runs (0 for fewer than 2 runs).
    pub fn rel_spread(&self) -> f64 {
        let n = self.times_ms.len();
        if n < 2 {
            return 0.0;
        }
        let mean = self.times_ms.iter().sum::<f64>() / n as f64;
        let var = self
            .times_ms
            .iter()
            .map(|t| (t - mean).powi(2))
            .sum::<f64>()
            / (n - 1) as f64;
        var.sqrt() / mean
    }
}

/// How the evaluation of one configuration ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Ran and verified; its run times.
    Measured(Timing),
    /// Removed by a constraint before anything ran.
    Pruned { constraint: String },
    /// The program did not build with this configuration's defines; the build log.
    BuildFailed { log: String },
    /// The driver rejected the launch (CL_OUT_OF_RESOURCES, CL_INVALID_WORK_GROUP_SIZE, ...).
    Refused { error: String },
    /// Ran, but its outputs differ from the reference beyond the tolerance.
    WrongResult { detail: String },
    /// The worker process died while evaluating it (segfault, abort, ...).
    Crashed { detail: String },
    /// Did not finish within the per-evaluation timeout.
    TimedOut { seconds: f64 },
}

/// The kind of an [`Outcome`], without its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    Measured,
    Pruned,
    BuildFailed,
    Refused,
    WrongResult,
    Crashed,
    TimedOut,
}

impl OutcomeKind {
    pub const ALL: [OutcomeKind; 7] = [
        OutcomeKind::Measured,
        OutcomeKind::Pruned,
        OutcomeKind::BuildFailed,
        OutcomeKind::Refused,
        OutcomeKind::WrongResult,
        OutcomeKind::Crashed,
        OutcomeKind::TimedOut,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Measured => "measured",
            OutcomeKind::Pruned => "pruned",
            OutcomeKind::BuildFailed => "build_failed",
            OutcomeKind::Refused => "refused",
            OutcomeKind::WrongResult => "wrong_result",
            OutcomeKind::Crashed => "crashed",
            OutcomeKind::TimedOut => "timed_out",
        }
    }

    pub fn parse(s: &str) -> Option<OutcomeKind> {
        OutcomeKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Outcome {
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Measured(_) => OutcomeKind::Measured,
            Outcome::Pruned { .. } => OutcomeKind::Pruned,
            Outcome::BuildFailed { .. } => OutcomeKind::BuildFailed,
            Outcome::Refused { .. } => OutcomeKind::Refused,
            Outcome::WrongResult { .. } => OutcomeKind::WrongResult,
            Outcome::Crashed { .. } => OutcomeKind::Crashed,
            Outcome::TimedOut { .. } => OutcomeKind::TimedOut,
        }
    }

    /// The driver's advice on this outcome's build, where it was asked: a measurement keeps it
    /// in its timing, a refusal in its error text.
    pub fn advice(&self) -> Option<Advice> {
        match self {
            Outcome::Measured(t) => t.advice,
            Outcome::Refused { error } => Advice::of_refusal(error),
            _ => None,
        }
    }

    /// Why a configuration failed, in one line: the compiler's first error line, the driver's
    /// error, the first mismatch (index, expected, got) or the check's message, how the worker
    /// died, the deadline. `None` for measured and pruned configurations.
    pub fn reason(&self) -> Option<String> {
        let first_line = |text: &str| {
            text.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("(no message)")
                .to_string()
        };
        match self {
            Outcome::Measured(_) | Outcome::Pruned { .. } => None,
            Outcome::BuildFailed { log } => Some(
                log.lines()
                    .map(str::trim)
                    .find(|l| l.to_ascii_lowercase().contains("error"))
                    .map_or_else(|| first_line(log), str::to_string),
            ),
            Outcome::Refused { error } => Some(first_line(error)),
            Outcome::WrongResult { detail } => Some(first_line(detail)),
            Outcome::Crashed { detail } => Some(first_line(detail)),
            Outcome::TimedOut { seconds } => Some(format!("no outcome within {seconds} s")),
        }
    }

    /// The score of a measured configuration; `None` for every other outcome (never the best).
    pub fn score_ms(&self) -> Option<f64> {
        match self {
            Outcome::Measured(t) => Some(t.score_ms()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erdem_protocol_scores_the_mean_of_the_best_five_of_ten() {
        let t = Timing::new(vec![10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0], 5);
        assert_eq!(t.score_ms(), 3.0);
        assert_eq!(t.min_ms(), 1.0);
        assert_eq!(t.median_ms(), 5.5);
        assert!((t.rel_spread() - 0.5504818825631803).abs() < 1e-12);
        assert_eq!(Timing::new(vec![4.0], 5).score_ms(), 4.0);
    }

    #[test]
    fn outcomes_round_trip_through_json_with_their_kind() {
        let all = [
            Outcome::Measured(Timing::new(vec![1.0, 2.0], 1)),
            Outcome::Pruned {
                constraint: "X > 2".into(),
            },
            Outcome::BuildFailed {
                log: "error: x".into(),
            },
            Outcome::Refused {
                error: "CL_INVALID_WORK_GROUP_SIZE".into(),
            },
            Outcome::WrongResult {
                detail: "C[3]: 1 != 2".into(),
            },
            Outcome::Crashed {
                detail: "signal 11".into(),
            },
            Outcome::TimedOut { seconds: 5.0 },
        ];
        for (o, kind) in all.iter().zip(OutcomeKind::ALL) {
            let text = serde_json::to_string(o).unwrap();
            assert!(
                text.contains(&format!("\"outcome\":\"{}\"", kind.as_str())),
                "{text}"
            );
            assert_eq!(&serde_json::from_str::<Outcome>(&text).unwrap(), o);
            assert_eq!(o.kind(), kind);
            assert_eq!(OutcomeKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(all[0].score_ms(), Some(1.0));
        assert_eq!(all[3].score_ms(), None);
    }

    #[test]
    fn a_refusal_carries_the_advice_in_its_text() {
        let advice = Advice {
            work_group_size: 768,
            local_mem_bytes: 4096,
            launched_work_group: 1024,
        };
        let text = advice.refusal("CL_OUT_OF_RESOURCES (launch (1024, 1, 1))");
        assert_eq!(
            text,
            "CL_OUT_OF_RESOURCES (launch (1024, 1, 1)) (a work-group of 1024 work-items; the build's CL_KERNEL_WORK_GROUP_SIZE is 768, its CL_KERNEL_LOCAL_MEM_SIZE 4096 bytes)"
        );
        let refused = Outcome::Refused { error: text };
        assert_eq!(refused.advice(), Some(advice));
        assert!(refused.advice().unwrap().exceeded());
        let plain = Outcome::Refused {
            error: "CL_INVALID_WORK_GROUP_SIZE".into(),
        };
        assert_eq!(plain.advice(), None);
        let mut timing = Timing::new(vec![1.0], 1);
        timing.advice = Some(advice);
        assert_eq!(Outcome::Measured(timing).advice(), Some(advice));
    }

    #[test]
    fn a_timing_stored_before_racing_reads_and_a_raced_one_round_trips() {
        let old = r#"{"outcome":"measured","times_ms":[2.0,1.0,3.0],"best_of":2}"#;
        let Outcome::Measured(t) = serde_json::from_str::<Outcome>(old).unwrap() else {
            panic!("measured")
        };
        assert_eq!((t.raced, t.score_ms()), (None, 1.5));
        assert!(!serde_json::to_string(&t).unwrap().contains("raced"));
        let mut raced = Timing::new(vec![9.0, 8.0], 5);
        raced.raced = Some(Raced {
            planned: 10,
            best_ms: 1.0,
            limit_ms: 4.5,
            margin: 0.5,
            confidence: 0.99,
            cold: false,
        });
        assert_eq!(raced.score_ms(), 8.5, "the mean of the runs it got");
        let text = serde_json::to_string(&Outcome::Measured(raced.clone())).unwrap();
        assert_eq!(
            serde_json::from_str::<Outcome>(&text).unwrap(),
            Outcome::Measured(raced)
        );
    }

    #[test]
    fn a_failure_gives_the_first_line_of_its_reason() {
        let build = Outcome::BuildFailed {
            log: "\n<source>:3:2: warning: unused\n<source>:5:2: error: this mode does not build\n#error\n".into(),
        };
        assert_eq!(
            build.reason().unwrap(),
            "<source>:5:2: error: this mode does not build"
        );
        let crashed = Outcome::Crashed {
            detail: "killed by signal 11 (SIGSEGV)\nlast lines: ...".into(),
        };
        assert_eq!(crashed.reason().unwrap(), "killed by signal 11 (SIGSEGV)");
        assert_eq!(
            Outcome::TimedOut { seconds: 5.0 }.reason().unwrap(),
            "no outcome within 5 s"
        );
        assert_eq!(Outcome::Measured(Timing::new(vec![1.0], 1)).reason(), None);
    }

    #[test]
    fn config_keys_are_canonical() {
        let a = int_config([("B", 2), ("A", 1)]);
        assert_eq!(config_key(&a), r#"{"A":1,"B":2}"#);
    }
}
