//! What the command line prints for people: a campaign's progress bar and report, outcome
//! counts, configurations, byte sizes, and why nothing could be measured.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use ndtune_core::Config;
use ndtune_engine::{outcome_counts, show_constants, DeviceReport};

/// Bytes with a binary unit: `48 KiB`, `7.1 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A campaign's progress bar under `progress`, named `label`.
pub(crate) fn progress_bar(progress: &MultiProgress, label: &str) -> ProgressBar {
    let bar = progress.add(ProgressBar::new(0));
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    bar
}

/// `A=1 B=2` in the spec's parameter order.
pub(crate) fn show_config(names: &[String], config: &Config) -> String {
    names
        .iter()
        .map(|n| {
            format!(
                "{n}={}",
                config.get(n).map_or("?".into(), ToString::to_string)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn print_report(r: &DeviceReport, db: &std::path::Path) {
    println!(
        "{} — `{}`{} ({} strategy, {} of {} valid configurations)",
        r.device,
        r.kernel,
        show_constants(&r.constants),
        r.strategy,
        r.evaluated + r.reused,
        r.pruned
    );
    if let Some(why) = &r.interrupted {
        println!("  stopped    {why}");
    }
    let by_time =
        r.objective.metric == "time" && !r.objective.higher_is_better && r.front.is_none();
    if let Some(front) = &r.front {
        let said: Vec<String> = front.objectives.iter().map(objective_label).collect();
        println!("  objectives {}: a Pareto front", said.join("; "));
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
        println!(
            "  objective  {}{unit}, {direction} is better",
            r.objective.metric
        );
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
            println!(
                "  best       {}: {:.4} ms (median {:.4}, min {:.4}, spread {:.1}%){}",
                show_config(&r.names, &b.config),
                b.time_ms,
                b.median_ms,
                b.min_ms,
                b.rel_spread * 100.0,
                shown.concat()
            );
        }
        None => println!("  best       none: no configuration was measured and verified"),
    }
    println!("  outcomes   {}", outcome_counts(&r.outcomes));
    for (kind, failed) in &r.failures {
        let more = r.outcomes.get(kind).copied().unwrap_or(0) as usize - failed.len();
        for (i, f) in failed.iter().enumerate() {
            let head = if i == 0 { *kind } else { "" };
            println!(
                "  {head:<13}{}: {}",
                show_config(&r.names, &f.config),
                f.reason
            );
        }
        if more > 0 {
            println!("  {:<13}... and {more} more (ndtune show --config NAME=VALUE,... prints one whole)", "");
        }
    }
    if !r.verified {
        println!("  verified   nothing: the spec has no [verify], so outputs were not checked");
    }
    for h in &r.hints {
        println!("  hint       {h}");
    }
    println!(
        "  evaluated  {} now, {} reused from {} (setup {})",
        r.evaluated,
        r.reused,
        db.display(),
        r.setup
    );
    for other in &r.not_reused {
        let mut what = other.differences.clone();
        if what.len() > 3 {
            let more = what.len() - 2;
            what.truncate(2);
            what.push(format!("{more} more differences"));
        }
        println!(
            "  not reused {} results of this kernel source, constants and device under setup {}: {}",
            other.results,
            other.setup,
            what.join("; ")
        );
    }
    let t = &r.time;
    println!(
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
    );
    if t.raced > 0 {
        println!(
            "             racing stopped {} configurations that could not be the best, sparing {} timed runs",
            t.raced, t.runs_spared
        );
    }
    if t.build_jobs > 1 && r.evaluated > 0 {
        println!(
            "             builds ahead in {} build workers: {:.2} s of their time, {:.2} s of it waited for",
            t.build_jobs, t.build_workers_s, t.build_s
        );
        if t.build_workers_stopped_s > 0.0 {
            println!(
                "             build workers stopped for {:.2} s while the CPU device was measured",
                t.build_workers_stopped_s
            );
        }
    }
    if t.lost_s > 0.0 {
        println!(
            "             {:.2} s waiting for evaluations that crashed or timed out",
            t.lost_s
        );
    }
    if r.above_queried_work_group > 0 {
        println!(
            "  advice     {} measured configurations have a work-group above their build's CL_KERNEL_WORK_GROUP_SIZE: the driver launched them",
            r.above_queried_work_group
        );
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
    println!("  energy     {energy}");
    if let Some(front) = &r.front {
        print_front(front, &r.names);
    } else if r.top.len() > 1 && by_time {
        println!("  fastest    {:>10}  configuration", "ms");
        for f in &r.top {
            println!(
                "             {:>10.4}  {}",
                f.time_ms,
                show_config(&r.names, &f.config)
            );
        }
    } else if r.top.len() > 1 {
        let label = match &r.objective.unit {
            Some(unit) => format!("{} ({unit})", r.objective.metric),
            None => r.objective.metric.clone(),
        };
        println!("  top        {label:>16}  {:>10}  configuration", "ms");
        for f in &r.top {
            println!(
                "             {:>16}  {:>10.4}  {}",
                DeviceReport::format_objective(f.objective),
                f.time_ms,
                show_config(&r.names, &f.config)
            );
        }
    }
}

/// `energy_j (J), lower is better`.
fn objective_label(o: &ndtune_engine::ObjectiveReport) -> String {
    let unit = o.unit.as_ref().map_or(String::new(), |u| format!(" ({u})"));
    let direction = if o.higher_is_better {
        "higher"
    } else {
        "lower"
    };
    format!("{}{unit}, {direction} is better", o.metric)
}

/// The front: a row per configuration on it, a column per objective, and its hypervolume.
fn print_front(front: &ndtune_engine::front::FrontReport, names: &[String]) {
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
    println!(
        "  front      {} of {} measured configurations are on it (none better in every objective)",
        front.members.len(),
        front.measured
    );
    println!("             {}  configuration", row(heads.clone()));
    for m in &front.members {
        let values = m
            .values
            .iter()
            .map(|v| DeviceReport::format_objective(*v))
            .collect();
        println!(
            "             {}  {}",
            row(values),
            show_config(names, &m.config)
        );
    }
    let reference: Vec<String> = front
        .reference
        .iter()
        .map(|v| DeviceReport::format_objective(*v))
        .collect();
    println!(
        "  hypervolume {:.4} of the ln costs, against the reference ({})",
        front.hypervolume,
        reference.join(", ")
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_pick_a_unit() {
        assert_eq!(super::bytes(49152), "48 KiB");
        assert_eq!(super::bytes(7610781696), "7.1 GiB");
        assert_eq!(super::bytes(64), "64 B");
    }
}
