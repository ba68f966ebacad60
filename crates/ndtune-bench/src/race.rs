//! Racing: stop timing a configuration that cannot be the best.
//!
//! A run's time is the kernel's own time stretched by whatever else the machine does (another
//! process on the cores, a clock that drops): noise slows runs down, it never speeds a kernel up.
//! So after `k` timed runs, a configuration whose fastest run `L` is above `B · (1 + margin) · g`
//! (`B` the best score so far) could still be as fast as `B · (1 + margin)` only if each of its
//! `k` runs was slowed down by more than `g`. [`Noise`] learns from the configurations measured
//! in full how often `k` consecutive runs were all slowed down by more than `g` (each window's
//! fastest run over its configuration's fastest), and the limit after `k` runs takes the `g`
//! that at most a fraction `1 - confidence` of those windows exceeded: a conformal test, valid
//! as long as the runs still to come are slowed down like the ones seen. The margin guards
//! against what that misses (a burst of load that starts with one configuration).
//!
//! The best configuration is the one that must not be stopped, and only it: stopping any other
//! cannot change which is best. Its risk is at most `1 - confidence` whatever the size of the
//! space, and a configuration is stopped only once the campaign holds enough windows to say so.
//!
//! The first run (the verification or first warm-up run, outside the protocol's count) is timed
//! too, and is slower by what a first launch does once. Its stretch over its configuration's
//! fastest run is learnt the same way, one window per configuration, and a configuration whose
//! first run alone is above `B · (1 + margin) · g₀` is stopped before any timed run: a
//! reduction's smallest grids, hundreds of times the best, cost one run instead of two.
//!
//! The engine computes the [`Limits`] of each evaluation; the worker only compares.

use ndtune_core::{Raced, Timing};
use ndtune_spec::Race;
use serde::{Deserialize, Serialize};

/// How much runs were slowed down, learnt from timings measured in full: for each window
/// length `k`, each window's fastest run over its configuration's fastest run.
#[derive(Debug, Default, Clone)]
pub struct Noise {
    /// `stretch[k - 1]`: the windows of `k` consecutive runs.
    stretch: Vec<Vec<f64>>,
    /// Each first run over its configuration's fastest timed run.
    cold: Vec<f64>,
}

impl Noise {
    /// Learns from a configuration's runs, in the order they ran (a timing stopped by racing
    /// is not a sample of the noise: its runs are the slow ones).
    pub fn add(&mut self, timing: &Timing) {
        let times = &timing.times_ms;
        if timing.raced.is_some() || times.len() < 2 {
            return;
        }
        let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
        if !(fastest > 0.0 && fastest.is_finite()) {
            return;
        }
        if let Some(cold) = timing.cold_ms.filter(|c| c.is_finite()) {
            self.cold.push(cold / fastest);
        }
        if self.stretch.len() < times.len() - 1 {
            self.stretch.resize(times.len() - 1, Vec::new());
        }
        for (k, samples) in self.stretch.iter_mut().enumerate().take(times.len() - 1) {
            for window in times.windows(k + 1) {
                let least = window.iter().copied().fold(f64::INFINITY, f64::min);
                samples.push(least / fastest);
            }
        }
    }

    /// The stretch that `k` consecutive runs exceeded in at most a fraction `1 - confidence` of
    /// the windows seen, counting the configuration under test as one more (a conformal
    /// p-value: `(exceeding + 1) / (windows + 1)`); `None` while too few windows were seen.
    pub fn allowance(&self, k: usize, confidence: f64) -> Option<f64> {
        conformal(self.stretch.get(k.checked_sub(1)?)?, confidence)
    }

    /// The stretch of a first run, as [`Noise::allowance`] of the first runs seen.
    pub fn cold_allowance(&self, confidence: f64) -> Option<f64> {
        conformal(&self.cold, confidence)
    }

    /// The limits of one evaluation under `rule`, with `best_ms` the best score so far and
    /// `runs` the protocol's timed runs; `None` where no run could stop it.
    pub fn limits(&self, rule: Race, best_ms: f64, runs: u32) -> Option<Limits> {
        if !(best_ms > 0.0 && best_ms.is_finite()) {
            return None;
        }
        let limit = |g: f64| best_ms * (1.0 + rule.margin) * g;
        let above_ms: Vec<Option<f64>> = (1..runs as usize)
            .map(|k| self.allowance(k, rule.confidence).map(limit))
            .collect();
        let cold_above_ms = self.cold_allowance(rule.confidence).map(limit);
        (above_ms.iter().any(Option::is_some) || cold_above_ms.is_some()).then_some(Limits {
            best_ms,
            above_ms,
            cold_above_ms,
            margin: rule.margin,
            confidence: rule.confidence,
        })
    }
}

/// The value that at most a fraction `1 - confidence` of `samples` exceeded, counting the one
/// under test as one more (a conformal p-value: `(exceeding + 1) / (samples + 1)`); `None`
/// while too few were seen.
fn conformal(samples: &[f64], confidence: f64) -> Option<f64> {
    let alpha = 1.0 - confidence;
    // At most `exceeding` samples may lie above the allowance.
    let exceeding = (alpha * (samples.len() + 1) as f64 + 1e-9).floor() as usize;
    let exceeding = exceeding.checked_sub(1)?;
    let mut sorted = samples.to_vec();
    let at = exceeding.min(sorted.len() - 1);
    let (_, &mut nth, _) = sorted.select_nth_unstable_by(at, |a, b| b.total_cmp(a));
    Some(nth)
}

/// When one evaluation stops: after `k` timed runs (`k` < the protocol's runs), if its fastest
/// run so far is above `above_ms[k - 1]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub best_ms: f64,
    pub above_ms: Vec<Option<f64>>,
    /// The limit of the first run alone, once enough first runs were seen.
    #[serde(default)]
    pub cold_above_ms: Option<f64>,
    /// The rule the limits come from, kept with a timing it stops.
    pub margin: f64,
    pub confidence: f64,
}

impl Limits {
    /// Whether timing stops after `times` (the runs so far, the protocol asking for `planned`),
    /// and if so the note kept with the timing.
    pub fn stop(&self, times: &[f64], planned: u32) -> Option<Raced> {
        let k = times.len();
        if k == 0 || k >= planned as usize {
            return None;
        }
        let limit_ms = (*self.above_ms.get(k - 1)?)?;
        let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
        (fastest > limit_ms).then_some(self.raced(planned, limit_ms, false))
    }

    /// Whether timing stops on the first run alone, before any of the `planned` timed runs.
    pub fn stop_cold(&self, cold_ms: f64, planned: u32) -> Option<Raced> {
        let limit_ms = self.cold_above_ms?;
        (planned > 1 && cold_ms > limit_ms).then_some(self.raced(planned, limit_ms, true))
    }

    fn raced(&self, planned: u32, limit_ms: f64, cold: bool) -> Raced {
        Raced {
            planned,
            best_ms: self.best_ms,
            limit_ms,
            margin: self.margin,
            confidence: self.confidence,
            cold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(times: &[f64]) -> Timing {
        Timing::new(times.to_vec(), 5)
    }

    #[test]
    fn the_allowance_is_the_conformal_quantile_of_the_windows_and_needs_enough_of_them() {
        let mut noise = Noise::default();
        // 9 configurations of 10 runs: 90 single-run windows, one run in ten slowed 3x.
        for _ in 0..9 {
            noise.add(&timing(&[
                1.0, 1.1, 1.0, 3.0, 1.0, 1.05, 1.0, 1.0, 1.2, 1.0,
            ]));
        }
        // (0 + 1) / (90 + 1) > 0.01: not yet a window more than 1% of them may exceed.
        assert_eq!(noise.allowance(1, 0.99), None);
        noise.add(&timing(&[1.0; 10]));
        // 100 windows: at most 0 may exceed, so the allowance is the largest, 3x.
        assert_eq!(noise.allowance(1, 0.99), Some(3.0));
        // At 90% confidence 9 of 100 may exceed (10 with the one under test): the 10th
        // largest single run, 1.2.
        assert_eq!(noise.allowance(1, 0.9), Some(1.2));
        // Two runs in a row were never both slowed down.
        assert_eq!(noise.allowance(2, 0.9), Some(1.0));
        assert_eq!(noise.allowance(10, 0.9), None, "no window of 10 in 10 runs");
    }

    #[test]
    fn a_timing_stops_once_its_fastest_run_is_above_the_limit_and_never_at_the_last_run() {
        let mut noise = Noise::default();
        for _ in 0..20 {
            noise.add(&timing(&[1.0, 1.5, 1.0, 1.0, 1.0, 1.0]));
        }
        let rule = Race::new(0.5, 0.95).unwrap();
        let limits = noise.limits(rule, 2.0, 6).unwrap();
        // 120 single-run windows, 20 of them at 1.5: at 95% the allowance is 1.5.
        assert_eq!(limits.above_ms[0], Some(2.0 * 1.5 * 1.5));
        assert_eq!(limits.above_ms.len(), 5);
        assert_eq!(limits.stop(&[4.4], 6), None, "below 4.5: could still win");
        let raced = limits.stop(&[9.0, 4.6], 6).unwrap();
        assert_eq!((raced.planned, raced.best_ms), (6, 2.0));
        assert_eq!(
            limits.stop(&[9.0; 6], 6),
            None,
            "the last run completes the protocol"
        );
        // A raced timing and a short one teach nothing about the noise.
        let mut raced_timing = timing(&[50.0, 60.0]);
        raced_timing.raced = Some(raced);
        let before = noise.clone();
        noise.add(&raced_timing);
        noise.add(&timing(&[7.0]));
        assert_eq!(noise.stretch, before.stretch);
        assert_eq!(
            Noise::default().limits(rule, 2.0, 6),
            None,
            "no noise seen yet"
        );
        assert_eq!(noise.limits(rule, f64::NAN, 6), None, "no best yet");
    }

    #[test]
    fn a_first_run_far_above_the_best_stops_a_timing_before_any_timed_run() {
        let first_runs = |n: u32| {
            let mut noise = Noise::default();
            // Configurations measured in full, their first runs 1.2x to 2x their fastest.
            for i in 0..n {
                let mut t = timing(&[1.0, 1.0, 1.0]);
                t.cold_ms = Some(1.2 + 0.8 * f64::from(i) / f64::from(n - 1));
                noise.add(&t);
            }
            noise
        };
        // 98 first runs: (0 + 1) / (98 + 1) > 0.01, too few to say.
        assert_eq!(first_runs(98).cold_allowance(0.99), None);
        let mut noise = first_runs(99);
        // 99: none may exceed the allowance, so it is the largest, 2x.
        assert_eq!(noise.cold_allowance(0.99), Some(2.0));
        let limits = noise.limits(Race::new(0.5, 0.99).unwrap(), 1.0, 7).unwrap();
        assert_eq!(limits.cold_above_ms, Some(1.0 * 1.5 * 2.0));
        assert_eq!(
            limits.stop_cold(2.9, 7),
            None,
            "below 3 ms: could still win"
        );
        let raced = limits.stop_cold(300.0, 7).unwrap();
        assert!(raced.cold);
        assert_eq!(
            (raced.planned, raced.limit_ms, raced.best_ms),
            (7, 3.0, 1.0)
        );
        assert_eq!(
            limits.stop_cold(300.0, 1),
            None,
            "one timed run is the protocol"
        );
        // A timing stopped on its first run teaches nothing about first runs.
        let mut stopped = timing(&[300.0]);
        stopped.cold_ms = Some(300.0);
        stopped.raced = Some(raced);
        let before = noise.cold.clone();
        noise.add(&stopped);
        assert_eq!(noise.cold, before);
    }

    #[test]
    fn limits_cross_the_worker_protocol_as_json() {
        let limits = Limits {
            best_ms: 1.0,
            above_ms: vec![Some(3.0), None],
            cold_above_ms: Some(4.0),
            margin: 0.5,
            confidence: 0.99,
        };
        let text = serde_json::to_string(&limits).unwrap();
        assert_eq!(serde_json::from_str::<Limits>(&text).unwrap(), limits);
    }
}
