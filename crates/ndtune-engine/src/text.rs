//! What a campaign's report says to people in a terminal (`ndtune tune` prints it; `--json`
//! gives the [`DeviceReport`] itself): the objective, the best configuration, outcome counts and
//! the first failures of each class, hints, what was reused and where the time went, the energy,
//! and the fastest few or the Pareto front; the closing table of a sweep; a space's sizes
//! (`ndtune space`); what a pool's workers did (`tune --pool`); a replay (`tune --replay`).

use crate::front::FrontReport;
use crate::pool::PoolReport;
use crate::replay::{Found, ReplayReport};
use crate::{outcome_counts, space, DeviceReport, ObjectiveReport, Swept};
use ndtune_core::text::{show_config, show_constants};
use ndtune_metrics::Metrics;
use std::fmt::{self, Write};
use std::path::Path;

/// A [`DeviceReport`] as text, with the store its results are kept in ([`DeviceReport::text`]).
pub struct ReportText<'a> {
    report: &'a DeviceReport,
    store: &'a Path,
}

impl DeviceReport {
    /// The report as `ndtune tune` prints it; `store` is where its results are kept.
    pub fn text<'a>(&'a self, store: &'a Path) -> ReportText<'a> {
        ReportText {
            report: self,
            store,
        }
    }
}

impl fmt::Display for ReportText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, db) = (self.report, self.store);
        writeln!(
            f,
            "{} — `{}`{} ({} strategy, {} of {} valid configurations)",
            r.device,
            r.kernel,
            show_constants(&r.constants),
            r.strategy,
            r.evaluated + r.reused,
            r.pruned
        )?;
        if let Some(why) = &r.interrupted {
            writeln!(f, "  stopped    {why}")?;
        }
        let by_time =
            r.objective.metric == "time" && !r.objective.higher_is_better && r.front.is_none();
        if let Some(front) = &r.front {
            let said: Vec<String> = front.objectives.iter().map(objective_label).collect();
            writeln!(f, "  objectives {}: a Pareto front", said.join("; "))?;
        } else if !by_time {
            let unit = r
                .objective
                .unit
                .as_ref()
                .map_or(String::new(), |u| format!(" ({u})"));
            let direction = if r.objective.higher_is_better {
                "higher"
            } else {
                "lower"
            };
            writeln!(
                f,
                "  objective  {}{unit}, {direction} is better",
                r.objective.metric
            )?;
        }
        match &r.best {
            Some(b) => {
                let shown: Vec<String> = b
                    .metrics
                    .iter()
                    .map(|(name, v)| {
                        let unit = r.units.get(name).map_or(String::new(), |u| format!(" {u}"));
                        format!(", {name} {v:.4}{unit}")
                    })
                    .collect();
                writeln!(
                    f,
                    "  best       {}: {:.4} ms (median {:.4}, min {:.4}, spread {:.1}%){}",
                    show_config(&r.names, &b.config),
                    b.time_ms,
                    b.median_ms,
                    b.min_ms,
                    b.rel_spread * 100.0,
                    shown.concat()
                )?;
            }
            None => writeln!(
                f,
                "  best       none: no configuration was measured and verified"
            )?,
        }
        writeln!(f, "  outcomes   {}", outcome_counts(&r.outcomes))?;
        for (kind, failed) in &r.failures {
            let more = r.outcomes.get(kind).copied().unwrap_or(0) as usize - failed.len();
            for (i, failure) in failed.iter().enumerate() {
                let head = if i == 0 { *kind } else { "" };
                writeln!(
                    f,
                    "  {head:<13}{}: {}",
                    show_config(&r.names, &failure.config),
                    failure.reason
                )?;
            }
            if more > 0 {
                writeln!(f, "  {:<13}... and {more} more (ndtune show --config NAME=VALUE,... prints one whole)", "")?;
            }
        }
        if !r.verified {
            writeln!(
                f,
                "  verified   nothing: the spec has no [verify], so outputs were not checked"
            )?;
        }
        for h in &r.hints {
            writeln!(f, "  hint       {h}")?;
        }
        writeln!(
            f,
            "  evaluated  {} now, {} reused from {} (setup {})",
            r.evaluated,
            r.reused,
            db.display(),
            r.setup
        )?;
        for other in &r.not_reused {
            let mut what = other.differences.clone();
            if what.len() > 3 {
                let more = what.len() - 2;
                what.truncate(2);
                what.push(format!("{more} more differences"));
            }
            writeln!(f,
            "  not reused {} results of this kernel source, constants and device under setup {}: {}",
            other.results,
            other.setup,
            what.join("; ")
        )?;
        }
        let t = &r.time;
        writeln!(
            f,
            "  time       {:.2} s: setup {:.2} s, worker start {:.2} s ({:.2} s waited for), \
         reference {:.2} s, data {:.2} s, builds {:.2} s, launches {:.2} s, overhead {:.2} ms per \
         configuration, store {:.2} s, strategy {:.2} s, shutdown {:.2} s",
            t.campaign_s,
            t.setup_s,
            t.startup_s,
            t.startup_waited_s,
            t.reference_s,
            t.data_s,
            t.build_s,
            t.launch_s,
            t.overhead_ms_per_config,
            t.store_s,
            t.search_s,
            t.shutdown_s
        )?;
        if t.raced > 0 {
            writeln!(f,
            "             racing stopped {} configurations that could not be the best, sparing {} timed runs",
            t.raced, t.runs_spared
        )?;
        }
        if t.build_jobs > 1 && r.evaluated > 0 {
            writeln!(f,
            "             builds ahead in {} build workers: {:.2} s of their time, {:.2} s of it waited for",
            t.build_jobs, t.build_workers_s, t.build_s
        )?;
            if t.build_workers_stopped_s > 0.0 {
                writeln!(f,
                "             build workers stopped for {:.2} s while the CPU device was measured",
                t.build_workers_stopped_s
            )?;
            }
        }
        if t.lost_s > 0.0 {
            writeln!(
                f,
                "             {:.2} s waiting for evaluations that crashed or timed out",
                t.lost_s
            )?;
        }
        if r.above_queried_work_group > 0 {
            writeln!(f,
            "  advice     {} measured configurations have a work-group above their build's CL_KERNEL_WORK_GROUP_SIZE: the driver launched them",
            r.above_queried_work_group
        )?;
        }
        let energy = if r.energy.measured {
            format!("measured through {}", r.energy.detail)
        } else if r.energy.available {
            format!(
                "not measured (no metric needs it); available through {}",
                r.energy.detail
            )
        } else {
            r.energy.detail.clone()
        };
        writeln!(f, "  energy     {energy}")?;
        if let Some(front) = &r.front {
            write_front(f, front, &r.names)?;
        } else if r.top.len() > 1 && by_time {
            writeln!(f, "  fastest    {:>10}  configuration", "ms")?;
            for ranked in &r.top {
                writeln!(
                    f,
                    "             {:>10.4}  {}",
                    ranked.time_ms,
                    show_config(&r.names, &ranked.config)
                )?;
            }
        } else if r.top.len() > 1 {
            let label = match &r.objective.unit {
                Some(unit) => format!("{} ({unit})", r.objective.metric),
                None => r.objective.metric.clone(),
            };
            writeln!(f, "  top        {label:>16}  {:>10}  configuration", "ms")?;
            for ranked in &r.top {
                writeln!(
                    f,
                    "             {:>16}  {:>10.4}  {}",
                    DeviceReport::format_objective(ranked.objective),
                    ranked.time_ms,
                    show_config(&r.names, &ranked.config)
                )?;
            }
        }
        Ok(())
    }
}

/// `energy_j (J), lower is better`.
fn objective_label(o: &ObjectiveReport) -> String {
    let unit = o.unit.as_ref().map_or(String::new(), |u| format!(" ({u})"));
    let direction = if o.higher_is_better {
        "higher"
    } else {
        "lower"
    };
    format!("{}{unit}, {direction} is better", o.metric)
}

/// The front: a row per configuration on it, a column per objective, and its hypervolume.
fn write_front(f: &mut fmt::Formatter<'_>, front: &FrontReport, names: &[String]) -> fmt::Result {
    let heads: Vec<String> = front
        .objectives
        .iter()
        .map(|o| match &o.unit {
            Some(u) => format!("{} ({u})", o.metric),
            None => o.metric.clone(),
        })
        .collect();
    let widths: Vec<usize> = heads.iter().map(|h| h.len().max(10)).collect();
    let row = |cells: Vec<String>| -> String {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    writeln!(
        f,
        "  front      {} of {} measured configurations are on it (none better in every objective)",
        front.members.len(),
        front.measured
    )?;
    writeln!(f, "             {}  configuration", row(heads.clone()))?;
    for m in &front.members {
        let values = m
            .values
            .iter()
            .map(|v| DeviceReport::format_objective(*v))
            .collect();
        writeln!(
            f,
            "             {}  {}",
            row(values),
            show_config(names, &m.config)
        )?;
    }
    let reference: Vec<String> = front
        .reference
        .iter()
        .map(|v| DeviceReport::format_objective(*v))
        .collect();
    writeln!(
        f,
        "  hypervolume {:.4} of the ln costs, against the reference ({})",
        front.hypervolume,
        reference.join(", ")
    )
}

/// The closing table of a sweep: each campaign's constants, device and best configuration.
pub fn sweep_table(swept: &[Swept], names: &[String]) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "sweep: the best of each of its {} campaigns",
        swept.len()
    )
    .unwrap();
    let rows: Vec<[String; 4]> = swept
        .iter()
        .map(|s| {
            let (config, ms) = match &s.best {
                Some(b) => (show_config(names, &b.config), format!("{:.4}", b.time_ms)),
                None => ("none measured".into(), "-".into()),
            };
            [
                show_constants(&s.constants).trim_start().to_string(),
                s.device.clone(),
                ms,
                config,
            ]
        })
        .collect();
    let header = ["constants", "device", "ms", "best configuration"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for r in std::iter::once(header.map(String::from)).chain(rows) {
        writeln!(out, "  {:w0$}  {:w1$}  {:>w2$}  {}", r[0], r[1], r[2], r[3]).unwrap();
    }
    out
}

impl space::Report {
    /// The space as `ndtune space` prints it: declared, bounded and pruned sizes, what each
    /// constraint removed, the kernel work-group check, the evaluation order and hints.
    pub fn text(&self) -> String {
        let report = self;
        let mut out = String::new();
        let r = &report.space;
        let on = r
            .device
            .as_deref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default();
        writeln!(out, "space of `{}`{on}", r.kernel).unwrap();
        writeln!(
            out,
            "  declared {:>14}  Cartesian product of the domains",
            r.declared
        )
        .unwrap();
        writeln!(
            out,
            "  bounded  {:>14}  local sizes within the max work-item sizes (Erdem Table 1)",
            r.bounded
        )
        .unwrap();
        writeln!(
            out,
            "  pruned   {:>14}  every constraint holds (Erdem Table 2)",
            r.pruned
        )
        .unwrap();
        if !r.constraints.is_empty() {
            writeln!(
                out,
                "  {:>14}  constraint (first to reject a configuration, in evaluation order)",
                "removed"
            )
            .unwrap();
            for c in &r.constraints {
                writeln!(out, "  {:>14}  {}", c.removed, c.constraint).unwrap();
            }
        }
        if let Some(k) = &report.kernel_check {
            let range = k
                .work_group_size_range
                .map(|(lo, hi)| format!(", CL_KERNEL_WORK_GROUP_SIZE {lo}..{hi}"))
                .unwrap_or_default();
            if k.pruned_by_query {
                writeln!(out,
                "  {:>14}  kernel work-group size of each configuration's own build ({} built{range}; --prune-by-query)",
                k.removed, k.checked
            ).unwrap();
            } else {
                writeln!(out,
                "  advice {:>7}  exceed their own build's CL_KERNEL_WORK_GROUP_SIZE ({} built{range}): kept, since only a launch refuses (--prune-by-query removes them)",
                k.removed, k.checked
            ).unwrap();
            }
            if k.build_failed > 0 {
                writeln!(
                    out,
                    "  {:>14}  builds failed (kept: tuning records them as build_failed)",
                    k.build_failed
                )
                .unwrap();
            }
        }
        writeln!(out, "  evaluation order: {}", r.order.join(", ")).unwrap();
        for h in &r.hints {
            writeln!(out, "  hint: {h}").unwrap();
        }
        out
    }
}

impl PoolReport {
    /// The lines `ndtune tune --pool` prints after the campaign's report: each of the
    /// `workers`' share, and each that ended early.
    pub fn text(&self, workers: usize) -> String {
        let pool = self;
        let mut out = String::new();
        writeln!(
            out,
            "  pool       {} workers in {:.2} s; measured {}",
            workers,
            pool.wall_s,
            pool.workers
                .iter()
                .map(|w| format!("{} by {}", w.done, w.worker))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .unwrap();
        for end in pool.ends.iter().filter(|e| !e.success) {
            let said = match end.said.last() {
                Some(_) => format!(": it said: {}", end.said.join(" | ")),
                None => ", saying nothing".into(),
            };
            writeln!(out,
            "  worker     {} ({}) ended early, {}{said}; what it measured is kept, what it held was measured by the pool",
            end.worker, end.device, end.status
        ).unwrap();
        }
        out
    }

    /// The `pool` object of `ndtune tune --json`: its wall time, each worker, and what was
    /// measured twice.
    pub fn to_json(&self) -> serde_json::Value {
        let pool = self;
        serde_json::json!({
            "wall_s": pool.wall_s,
            "workers": workers_json(pool),
            "measured_twice": pool.measured_twice,
        })
    }
}

/// Each worker: how it ended (its exit status and last lines of error output), its share from
/// the store where it claimed anything, and its own account where it ended normally (its
/// device, what it evaluated and where its time went).
fn workers_json(pool: &PoolReport) -> Vec<serde_json::Value> {
    pool.ends
        .iter()
        .map(|end| {
            let mut entry = match pool.workers.iter().find(|w| w.worker == end.worker) {
                Some(w) => serde_json::to_value(w).expect("a worker's status serialises"),
                None => serde_json::json!({"worker": end.worker, "done": 0}),
            };
            let object = entry.as_object_mut().expect("an object");
            object.insert("device".into(), end.device.clone().into());
            object.insert(
                "end".into(),
                serde_json::to_value(end).expect("an end serialises"),
            );
            if let Some(account) = pool.accounts.get(&end.worker) {
                object.insert("evaluated".into(), account.evaluated.into());
                object.insert(
                    "time".into(),
                    serde_json::to_value(account.time).expect("times serialise"),
                );
            }
            entry
        })
        .collect()
}

impl ReplayReport {
    /// The replay as `ndtune tune --replay` prints it: the strategy, how many configurations it
    /// evaluated, the best it found and the recording's optimum by `metrics`' objective, with
    /// configurations in the order of `names`; up to the objective where it measured none.
    pub fn text(&self, names: &[String], metrics: &Metrics) -> String {
        let report = self;
        let objective = metrics.objective();
        let mut out = String::new();
        if let Some(why) = &report.auto {
            writeln!(out, "strategy auto: {why}").unwrap();
        }
        writeln!(
            out,
            "replay of {}: {} strategy, {} of {} configurations evaluated",
            report.replay, report.strategy, report.evaluations, report.configurations
        )
        .unwrap();
        if !metrics.is_time() {
            writeln!(out, "  objective   {}", metrics.describe_objective()).unwrap();
        }
        let unit = metrics
            .unit(&objective.metric)
            .map_or(String::new(), |u| format!(" {u}"));
        let show = |f: &Found| {
            let time = match f.time_ms {
                Some(ms) if objective.metric != ndtune_metrics::TIME => format!(" ({ms:.4} ms)"),
                _ => String::new(),
            };
            format!(
                "{}: {:.4}{unit}{time}",
                show_config(names, &f.config),
                f.objective
            )
        };
        let Some(best) = &report.best else {
            return out;
        };
        writeln!(out, "  best found  {}", show(best)).unwrap();
        if let (Some(o), Some(r)) = (&report.optimum, report.relative_performance) {
            writeln!(
                out,
                "  optimum     {} (found {:.1}% of the optimum's performance)",
                show(o),
                r * 100.0
            )
            .unwrap();
        }
        writeln!(out, "  outcomes    {}", outcome_counts(&report.outcomes)).unwrap();
        out
    }
}
