//! What a co-execution says to people in a terminal (`ndtune split` prints it; `--json` gives
//! the structs): each device alone, the plan as Table 3 with each part's measured finish, the
//! theoretical and measured times, speedup and efficiency, fixed costs, the schedulers side by
//! side with their timelines and failures, the decision, the sweep (Fig. 6-7); and a plan of
//! given sizes and times alone (`--plan-only`).

use crate::study::{Mode, Report, Study};
use crate::{Device, Plan, Residue};
use ndtune_core::text::show_config;
use std::fmt;

/// A [`Report`] as text, its configurations in the spec's parameter order ([`Report::text`]).
pub struct ReportText<'a> {
    report: &'a Report,
    names: &'a [String],
}

impl Report {
    /// The report as `ndtune split` prints it; `names` are the spec's parameters, in order.
    pub fn text<'a>(&'a self, names: &'a [String]) -> ReportText<'a> {
        ReportText {
            report: self,
            names,
        }
    }
}

/// A [`Plan`] as Table 3 ([`Plan::table`]).
pub struct PlanTable<'a> {
    plan: &'a Plan,
    devices: &'a [Device],
}

impl Plan {
    /// Per device its part, groups, adjusted and optimal factors and predicted finish; the
    /// devices are those the plan was made for.
    pub fn table<'a>(&'a self, devices: &'a [Device]) -> PlanTable<'a> {
        PlanTable {
            plan: self,
            devices,
        }
    }
}

impl fmt::Display for ReportText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, names) = (self.report, self.names);
        let s = &r.study;
        writeln!(
            f,
            "co-execution of `{}`: {} items along dimension {} on {} devices",
            r.kernel,
            s.plan.global,
            r.dim,
            r.devices.len()
        )?;
        writeln!(f, "  each device alone (its best configuration from the store; host clock, transfers included):")?;
        for (i, d) in r.devices.iter().enumerate() {
            writeln!(
                f,
                "    [{i}] {}: {}  alone {:.4} ms (kernel {:.4} ms, tuned {:.4} ms)",
                d.device,
                show_config(names, &d.config),
                d.single_ms,
                d.single_kernel_ms,
                d.tuned_ms
            )?;
        }
        match &s.plan_ms {
            Some(t) => writeln!(
                f,
                "  plan (Table 3) from the given times {t:?} ms, residue rule `{}`:",
                s.plan.residue
            )?,
            None => writeln!(f, "  plan (Table 3), residue rule `{}`:", s.plan.residue)?,
        }
        writeln!(
            f,
            "    {:>6} {:>10} {:>10} {:>8} {:>6} {:>9} {:>9} {:>10} {:>10}",
            "device",
            "offset",
            "size",
            "groups",
            "wg",
            "adjusted",
            "optimal",
            "finish ms",
            "kernel ms"
        )?;
        for p in &s.plan.parts {
            let t = s.parts.iter().find(|t| t.device == p.device);
            writeln!(
                f,
                "    {:>6} {:>10} {:>10} {:>8} {:>6} {:>9.3} {:>9.3} {:>10} {:>10}",
                p.device,
                p.offset,
                p.size,
                p.work_groups,
                r.devices[p.device].wg,
                p.factor,
                p.optimal_factor,
                t.map_or("-".into(), |t| format!("{:.4}", t.finish_ms)),
                t.map_or("-".into(), |t| format!("{:.4}", t.kernel_ms)),
            )?;
        }
        if s.plan.overlap > 0 {
            writeln!(f,
            "    {} items are computed by two devices (work-group sizes are not multiples of each other)",
            s.plan.overlap
        )?;
        }
        writeln!(f,
        "  theoretical {:.4} ms (Algorithm 1), co-execution {:.4} ms measured, overhead {:+.1}%",
        s.plan.theoretical_ms,
        s.coexec_ms,
        s.overhead * 100.0
    )?;
        if let Some(other) = &s.other_rule {
            writeln!(
                f,
                "  {} rule (not run): sizes {}, theoretical {:.4} ms",
                other.residue,
                sizes(other),
                other.theoretical_ms
            )?;
        }
        writeln!(f,
        "  ideal speedup {:.3}, speedup {:.3} over device {} alone, efficiency {:.3}, balance {:.3}",
        s.ideal_speedup, s.speedup, s.best_single, s.efficiency, s.balance
    )?;
        match &s.mismatch {
            None => writeln!(
                f,
                "  verified: the gathered output matches device {} alone",
                s.best_single
            )?,
            Some(m) => writeln!(f, "  NOT verified: {m}")?,
        }
        schedules(f, s)?;
        let mode = match s.decision.mode {
            Mode::Coexec if s.schedules.len() > 1 => format!(
                "co-execute with `{}`{}",
                s.decision
                    .scheduler
                    .unwrap_or(crate::schedule::Scheduler::Static),
                s.decision
                    .without
                    .map_or(String::new(), |d| format!(" without device {d}"))
            ),
            Mode::Coexec => "co-execute".to_string(),
            Mode::Single => format!("run on device {} alone", s.decision.device.unwrap_or(0)),
        };
        writeln!(
            f,
            "  decision: {mode} ({:.4} ms): {}",
            s.decision.ms, s.decision.reason
        )?;
        if let Some(points) = &s.sweep {
            writeln!(
                f,
                "  sweep (Fig. 6-7): device 0's factor, adjusted factors, time"
            )?;
            for p in points {
                let factors: Vec<String> = p.factors.iter().map(|f| format!("{f:.3}")).collect();
                writeln!(
                    f,
                    "    {:>6.3}  [{}]  {:>10.4} ms{}{}",
                    p.factor,
                    factors.join(", "),
                    p.coexec_ms,
                    if p.verified { "" } else { "  NOT verified" },
                    if p.planner { "  <- planner" } else { "" }
                )?;
            }
        }
        Ok(())
    }
}

/// Fixed costs, the prediction, each scheduler side by side, its timeline and its failures.
fn schedules(f: &mut fmt::Formatter<'_>, s: &Study) -> fmt::Result {
    if !s.fixed.is_empty() {
        writeln!(f, "  fixed costs per device (paid whatever its share):")?;
        for cost in &s.fixed {
            writeln!(f,
                "    [{}] a run {:.4} ms (launch, inputs every item reads, synchronisation), one more chunk {:.4} ms",
                cost.device, cost.run_ms, cost.chunk_ms
            )?;
        }
        writeln!(f, "    running together: {:.4} ms more", s.together_ms)?;
    }
    if let Some(p) = &s.prediction {
        writeln!(
            f,
            "  predicted before running: {:.4} ms, {}; measured: {:.4} ms ({})",
            p.ms,
            if p.pays {
                "co-execution pays"
            } else {
                "co-execution does not pay"
            },
            s.decision.ms,
            p.reason
        )?;
    }
    if s.schedules.len() > 1 {
        let width = s
            .schedules
            .iter()
            .map(|r| r.label().len())
            .fold("schedule".len(), usize::max);
        writeln!(
            f,
            "  {:>width$} {:>11} {:>8} {:>10} {:>8} {:>7}  verified",
            "schedule", "ms", "speedup", "efficiency", "balance", "chunks"
        )?;
        for r in &s.schedules {
            writeln!(
                f,
                "  {:>width$} {:>11.4} {:>8.3} {:>10.3} {:>8.3} {:>7}  {}",
                r.label(),
                r.ms,
                r.speedup,
                r.efficiency,
                r.balance,
                r.timeline.len(),
                if r.verified { "yes" } else { "NO" }
            )?;
        }
    }
    for r in s
        .schedules
        .iter()
        .filter(|r| r.timeline.len() > r.parts.len())
    {
        writeln!(
            f,
            "  timeline of `{}`, the timed run of median time (ms from its start):",
            r.label()
        )?;
        for p in &r.parts {
            let mine: Vec<&crate::runtime::ChunkRun> =
                r.timeline.iter().filter(|c| c.device == p.device).collect();
            let mut shown: Vec<String> = mine
                .iter()
                .map(|c| format!("{}+{} {:.3}-{:.3}", c.offset, c.size, c.start_ms, c.end_ms))
                .collect();
            let count = shown.len();
            if count > 8 {
                // The first and last chunks tell the story; the JSON and the report have all.
                shown.splice(4..count - 2, [format!("... {} more ...", count - 6)]);
            }
            writeln!(
                f,
                "    [{}] {count} chunks, {} items, done at {:.4}: {}",
                p.device,
                mine.iter().map(|c| c.size).sum::<u64>(),
                mine.iter().map(|c| c.end_ms).fold(0.0, f64::max),
                shown.join(", ")
            )?;
        }
    }
    for r in &s.schedules {
        for failure in &r.failures {
            writeln!(
                f,
                "  `{}`: device {} ({}) FAILED: {}; the others ran its items {}",
                r.label(),
                failure.device,
                failure.label,
                failure.message,
                failure
                    .given_back
                    .iter()
                    .map(|c| format!("{}..{}", c.offset, c.offset + c.size))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    Ok(())
}

/// Each part's size, `/`-separated in device order (0 for a device without a part).
fn sizes(p: &Plan) -> String {
    let n = p.parts.iter().map(|q| q.device + 1).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            p.parts
                .iter()
                .find(|q| q.device == i)
                .map_or(0, |q| q.size)
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// One plan as Table 3: per device its part, groups, adjusted and optimal factors.
impl fmt::Display for PlanTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (p, devices) = (self.plan, self.devices);
        writeln!(
            f,
            "  residue rule `{}`: {}",
            p.residue,
            match p.residue {
                Residue::Finish => "the rounding with the least predicted time",
                Residue::Paper => "eq. 9, the residue to the device with the least extra work",
            }
        )?;
        writeln!(
            f,
            "  {:>6} {:>10} {:>10} {:>8} {:>11} {:>9} {:>9} {:>10}",
            "device", "offset", "size", "groups", "work-group", "adjusted", "optimal", "finish ms"
        )?;
        for part in &p.parts {
            writeln!(
                f,
                "  {:>6} {:>10} {:>10} {:>8} {:>11} {:>9.3} {:>9.3} {:>10.4}",
                part.device,
                part.offset,
                part.size,
                part.work_groups,
                devices[part.device].wg,
                part.factor,
                part.optimal_factor,
                part.factor * devices[part.device].time_ms
            )?;
        }
        for (i, _) in devices
            .iter()
            .enumerate()
            .filter(|(i, _)| !p.parts.iter().any(|q| q.device == *i))
        {
            writeln!(
                f,
                "  device {i} gets nothing: its share is less than one of its work-groups"
            )?;
        }
        if p.overlap > 0 {
            writeln!(f, "  {} items are computed by two devices (work-group sizes are not multiples of each other)", p.overlap)?;
        }
        writeln!(
            f,
            "  theoretical {:.4} ms (Algorithm 1 on the adjusted factors), ideal {:.4} ms",
            p.theoretical_ms, p.ideal_ms
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{plan_with, Device, Residue};

    #[test]
    fn a_plan_is_table_3_with_its_overlap_and_times() {
        let devices = [
            Device {
                wg: 24,
                time_ms: 2.0,
            },
            Device {
                wg: 40,
                time_ms: 2.5,
            },
        ];
        let plan = plan_with(1200, &devices, Residue::Finish).unwrap();
        assert_eq!(
            plan.table(&devices).to_string(),
            "  residue rule `finish`: the rounding with the least predicted time\n\
             \x20 device     offset       size   groups  work-group  adjusted   optimal  finish ms\n\
             \x20      0          0        696       29          24     0.580     0.556     1.1600\n\
             \x20      1        680        520       13          40     0.433     0.444     1.0833\n\
             \x20 16 items are computed by two devices (work-group sizes are not multiples of each other)\n\
             \x20 theoretical 1.1600 ms (Algorithm 1 on the adjusted factors), ideal 1.1111 ms\n"
        );
    }
}
