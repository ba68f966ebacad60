//! What `ndtune collect --summary` and `ndtune learn eval` print for people (their `--json`
//! gives the structs): the collected scenarios with their legal, refused and illegal sizes, the
//! oracles, W_safe, the baseline and the expert's standing (Cummins et al. 2016, §6); and the
//! evaluation of each model and fallback.

use crate::collected::{per_device, Collected, DeviceTally, ScenarioInfo};
use crate::eval::Report;
use crate::oracle::{analyse, Analysis};
use ndtune_metrics::Objective;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

impl Collected {
    /// The summary as `ndtune collect --summary --json` prints it: the scenarios' labels, per
    /// device the scenarios and the sizes tried and refused, the analysis and the objective.
    pub fn summary_json(&self) -> serde_json::Value {
        let scenarios = self.infos();
        let devices: Vec<_> = per_device(&scenarios, &self.observations)
            .iter()
            .map(|(d, t)| {
                serde_json::json!({"device": d, "scenarios": t.scenarios, "tried": t.tried,
                    "refused": t.refused, "refused_ratio": t.refused_ratio()})
            })
            .collect();
        let labels: Vec<&str> = scenarios.iter().map(|i| i.label.as_str()).collect();
        serde_json::json!({
            "labels": labels, "devices": devices,
            "analysis": analyse(scenarios.len(), &self.observations), "objective": self.objective,
        })
    }

    /// The summary as `ndtune collect --summary` prints it; `store` is where the scenarios
    /// are kept.
    pub fn summary_text(&self, store: &Path) -> String {
        let scenarios = self.infos();
        let a = analyse(scenarios.len(), &self.observations);
        // Per device: scenarios, and the share of the sizes tried (not illegal) that were refused.
        let per_device = per_device(&scenarios, &self.observations);
        summary_text(store, &scenarios, &a, &per_device, &self.objective)
    }

    fn infos(&self) -> Vec<ScenarioInfo> {
        self.scenarios
            .iter()
            .map(|(_, info)| info.clone())
            .collect()
    }
}

/// The summary's text: `a` is the scenarios' analysis, `per_device` their sizes tried and
/// refused per device.
fn summary_text(
    store: &Path,
    scenarios: &[ScenarioInfo],
    a: &Analysis,
    per_device: &BTreeMap<&str, DeviceTally>,
    objective: &Objective,
) -> String {
    let mut out = String::new();
    writeln!(out, "{} scenarios in {}", scenarios.len(), store.display()).unwrap();
    let value = if *objective == Objective::time() {
        "oracle ms"
    } else {
        writeln!(
            out,
            "  ranked by {} ({}); a cost is its value{}",
            objective.metric,
            objective.direction(),
            if objective.higher_is_better {
                "'s reciprocal"
            } else {
                ""
            }
        )
        .unwrap();
        "oracle cost"
    };
    writeln!(
        out,
        "  {:<56} {:>6} {:>8} {:>8} {:>10} {:>11} {:>8}",
        "scenario", "legal", "refused", "illegal", "oracle", value, "spread"
    )
    .unwrap();
    for (s, info) in a.scenarios.iter().zip(scenarios) {
        let (oracle, ms) = s
            .oracle
            .map_or(("-".to_string(), "-".to_string()), |((c, r), ms)| {
                (format!("{c}x{r}"), format!("{ms:.4}"))
            });
        writeln!(
            out,
            "  {:<56} {:>6} {:>8} {:>8} {:>10} {:>11} {:>8}",
            info.label,
            s.legal,
            s.refused,
            s.illegal,
            oracle,
            ms,
            s.spread.map_or("-".into(), |x| format!("{x:.2}x"))
        )
        .unwrap();
    }
    for (d, t) in per_device {
        writeln!(
            out,
            "  {d}: {} scenarios, {} of {} sizes tried refused ({:.1}%)",
            t.scenarios,
            t.refused,
            t.tried,
            100.0 * t.refused_ratio()
        )
        .unwrap();
    }
    let show = |v: &[(u64, u64)]| {
        v.iter()
            .map(|(c, r)| format!("{c}x{r}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    writeln!(
        out,
        "  W_safe: {} sizes legal in every scenario{}",
        a.safe.len(),
        if a.safe.len() <= 12 && !a.safe.is_empty() {
            format!(": {}", show(&a.safe))
        } else {
            String::new()
        }
    )
    .unwrap();
    match &a.baseline {
        Some(b) if b.safe => writeln!(out,
            "  baseline {}x{}: {:.1}% of the oracle's performance (geometric mean over {} scenarios)",
            b.wg.0, b.wg.1, 100.0 * b.performance, b.scenarios
        ).unwrap(),
        Some(b) => writeln!(out,
            "  baseline {}x{}: W_safe is empty, so this is the best of the sizes legal in the most scenarios ({} of {}): {:.1}% of the oracle's performance there",
            b.wg.0, b.wg.1, b.scenarios, scenarios.len(), 100.0 * b.performance
        ).unwrap(),
        None => writeln!(out, "  baseline: none (nothing measured)").unwrap(),
    }
    match a.expert.performance {
        Some(p) => writeln!(out,
            "  human expert {}x{}: legal in {} of {} scenarios, {:.1}% of the oracle's performance there",
            a.expert.wg.0, a.expert.wg.1, a.expert.legal_in, scenarios.len(), 100.0 * p
        ).unwrap(),
        None => writeln!(out, "  human expert {}x{}: legal in no scenario", a.expert.wg.0, a.expert.wg.1).unwrap(),
    }
    writeln!(
        out,
        "  {} distinct oracle sizes; oracle over worst size {} on average",
        a.distinct_oracles,
        a.mean_spread.map_or("-".into(), |x| format!("{x:.2}x"))
    )
    .unwrap();
    out
}

/// An evaluation's models side by side (accuracy, validity, refusals, performance against the
/// oracle, speedups, prediction time); `features` is how many features the data has.
pub fn evaluation(report: &Report, features: usize) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "{} scenarios, {} folds ({}), {} features; mean spread (slowest / fastest legal size) {}",
        report.scenarios,
        report.folds,
        report.protocol,
        features,
        report
            .mean_spread
            .map_or("-".into(), |x| format!("{x:.2}x"))
    )
    .unwrap();
    if let Some(b) = &report.baseline {
        writeln!(
            out,
            "best fixed size over all data {}x{}: {:.1}% of the oracle",
            b.size[0],
            b.size[1],
            100.0 * b.performance_geomean
        )
        .unwrap();
    }
    let mut sampled: Vec<&str> = report
        .results
        .iter()
        .filter(|r| r.trained_on < report.training_scenarios)
        .map(|r| r.model.as_str())
        .collect();
    sampled.dedup();
    if let Some(r) = report
        .results
        .iter()
        .find(|r| r.trained_on < report.training_scenarios)
    {
        writeln!(out,
            "{} trained on a sample of {} of the up to {} training scenarios of a fold (--max-training all: on all)",
            sampled.join(", "),
            r.trained_on,
            report.training_scenarios
        ).unwrap();
    }
    writeln!(
        out,
        "  {:<16} {:<13} {:>8} {:>8} {:>8} {:>11} {:>8} {:>10} {:>10} {:>10}",
        "model",
        "fallback",
        "accuracy",
        "valid",
        "refused",
        "perf (geo)",
        "min",
        "vs base",
        "vs 32x4",
        "predict"
    )
    .unwrap();
    for r in &report.results {
        writeln!(
            out,
            "  {:<16} {:<13} {:>8.3} {:>8.3} {:>8.3} {:>11.3} {:>8.3} {:>9.3}x {:>10} {:>8.1}µs",
            r.model,
            r.fallback,
            r.accuracy,
            r.validity,
            r.refused,
            r.performance_geomean,
            r.performance_quantiles[0],
            r.speedup_over_baseline_median,
            r.speedup_over_expert_median
                .map_or("-".into(), |x| format!("{x:.3}x")),
            r.predict_us
        )
        .unwrap();
    }
    out
}
