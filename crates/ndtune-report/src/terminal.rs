//! What `ndtune status` and `ndtune show` print for people (their `--json` gives the rows
//! themselves): a campaign's progress per worker, and one stored result whole.

use crate::stored::{when, Metric, StatusRow};
use ndtune_core::text::{show_config, show_constants};
use ndtune_core::Outcome;
use ndtune_store::{CampaignStatus, Group, Record, UnixMs};
use std::fmt::Write;

impl StatusRow {
    /// The campaign as `ndtune status` prints it, `now` being the time its heartbeats are
    /// counted back from.
    pub fn text(&self, now: UnixMs) -> String {
        let mut out = table(
            self.device_name.as_deref(),
            &self.status,
            self.earlier.as_ref(),
            now,
        );
        if let Some(f) = &self.front {
            writeln!(
                out,
                "  front      {} configurations on the Pareto front of {} (ndtune show --front)",
                f.size,
                f.objectives.join(", ")
            )
            .unwrap();
        }
        out
    }
}

/// `text` indented under a heading, every line of it.
fn block(out: &mut String, heading: &str, text: &str) {
    writeln!(out, "  {heading}").unwrap();
    for line in text.lines() {
        writeln!(out, "    {line}").unwrap();
    }
}

/// One stored result whole, as `ndtune show` prints it: its configuration in the order of
/// `names`, its campaign, the full outcome (every run, the whole log or message), the energy and
/// `metrics` where there are any, when and by which ndtune.
pub fn record(device_name: &str, r: &Record, names: &[String], metrics: &[Metric]) -> String {
    let mut out = String::new();
    let k = &r.key;
    writeln!(
        out,
        "`{}` {} on {device_name}",
        k.kernel,
        show_config(names, &k.config)
    )
    .unwrap();
    writeln!(
        out,
        "  campaign    source {}, setup {}, constants{}, device {}",
        k.source_hash,
        k.setup,
        match show_constants(&k.constants) {
            c if c.is_empty() => " none".to_string(),
            c => c,
        },
        k.device
    )
    .unwrap();
    writeln!(out, "  outcome     {}", r.outcome.kind()).unwrap();
    match &r.outcome {
        Outcome::Measured(t) => {
            writeln!(out,
                "  score       {:.6} ms: the mean of the best {} of {} runs (median {:.6}, min {:.6}, spread {:.1}%)",
                t.score_ms(),
                t.best_of.min(t.times_ms.len()),
                t.times_ms.len(),
                t.median_ms(),
                t.min_ms(),
                t.rel_spread() * 100.0
            ).unwrap();
            let runs: Vec<String> = t.times_ms.iter().map(|ms| format!("{ms:.6}")).collect();
            writeln!(out, "  runs (ms)   {}", runs.join(" ")).unwrap();
            if let Some(a) = t.advice {
                writeln!(out,
                    "  advice      CL_KERNEL_WORK_GROUP_SIZE {}, CL_KERNEL_LOCAL_MEM_SIZE {} bytes; a work-group of {} work-items was launched",
                    a.work_group_size, a.local_mem_bytes, a.launched_work_group
                ).unwrap();
            }
            if let Some(e) = &t.energy {
                writeln!(out,
                    "  energy      {:.6} J per run, {:.1} W: {} runs over {:.1} ms, {} power samples, from the {}",
                    e.joules, e.watts, e.runs, e.window_ms, e.samples, e.source
                ).unwrap();
                let sensors: Vec<String> = [
                    ("temperature", e.temperature_c, "°C"),
                    ("core clock", e.core_clock_mhz, "MHz"),
                    ("memory clock", e.mem_clock_mhz, "MHz"),
                ]
                .into_iter()
                .filter_map(|(name, v, unit)| Some(format!("{name} {:.0} {unit}", v?)))
                .collect();
                if !sensors.is_empty() {
                    writeln!(
                        out,
                        "  sensors     {} (means over the window)",
                        sensors.join(", ")
                    )
                    .unwrap();
                }
            }
            if !metrics.is_empty() {
                let shown: Vec<String> = metrics
                    .iter()
                    .map(|m| match &m.unit {
                        Some(unit) => format!("{} {:.6} {unit}", m.name, m.value),
                        None => format!("{} {:.6}", m.name, m.value),
                    })
                    .collect();
                writeln!(out, "  metrics     {}", shown.join(", ")).unwrap();
            }
        }
        Outcome::Pruned { constraint } => writeln!(out, "  constraint  {constraint}").unwrap(),
        Outcome::BuildFailed { log } => block(&mut out, "build log", log),
        Outcome::Refused { error } => block(&mut out, "error", error),
        Outcome::WrongResult { detail } => block(&mut out, "detail", detail),
        Outcome::Crashed { detail } => block(&mut out, "detail", detail),
        Outcome::TimedOut { seconds } => writeln!(out, "  deadline    {seconds} s").unwrap(),
    }
    writeln!(
        out,
        "  when        {} to {} ({} ms)",
        when(r.started_at),
        when(r.finished_at),
        r.finished_at - r.started_at
    )
    .unwrap();
    writeln!(out, "  by          ndtune {}", r.ndtune_version).unwrap();
    out
}

/// One campaign: a heading (and for an earlier campaign, what differs from the newest), then a
/// line per worker.
fn table(
    device: Option<&str>,
    status: &CampaignStatus,
    earlier: Option<&(Group, Vec<String>)>,
    now: UnixMs,
) -> String {
    let g = &status.group;
    let twice = match status.measured_twice {
        0 => String::new(),
        n => format!(" ({n} measured twice: a worker outlived its lease)"),
    };
    let mut out = format!(
        "{} on {} ({}), {}, source {}, setup {}: {} results{twice}\n",
        g.kernel,
        device.unwrap_or("unknown device"),
        g.device,
        show_constants(&g.constants).trim_start(),
        g.source_hash,
        g.setup,
        status.results
    );
    if let Some((newest, what)) = earlier {
        out.push_str(&format!(
            "  an earlier campaign: setup {} is newer and does not reuse these results; from this setup to it:\n",
            newest.setup
        ));
        for line in what {
            out.push_str(&format!("    {line}\n"));
        }
    }
    if status.workers.is_empty() {
        out.push_str("  no workers (results stored without claims, by an older ndtune)\n");
        return out;
    }
    let width = status
        .workers
        .iter()
        .map(|w| w.worker.len())
        .max()
        .unwrap_or(0)
        .max("worker".len());
    out.push_str(&format!(
        "  {:width$}  {:>7}  {:>6}  {:>7}  {:>7}  last heartbeat\n",
        "worker", "claimed", "done", "expired", "per min"
    ));
    for w in &status.workers {
        let heartbeat = w
            .heartbeat
            .map_or("never".to_string(), |t| ago(now.saturating_sub(t)));
        let rate = w
            .per_minute()
            .map_or("-".to_string(), |r| format!("{r:.1}"));
        out.push_str(&format!(
            "  {:width$}  {:>7}  {:>6}  {:>7}  {rate:>7}  {heartbeat}\n",
            w.worker, w.claimed, w.done, w.expired
        ));
    }
    out
}

/// A duration in milliseconds as people read it: `3 s ago`, `12 min ago`, `2 h ago`.
fn ago(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..120 => format!("{s} s ago"),
        120..7200 => format!("{} min ago", s / 60),
        _ => format!("{} h ago", s / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_store::{Group, WorkerStatus};

    #[test]
    fn a_campaign_is_a_heading_and_a_line_per_worker() {
        let status = CampaignStatus {
            group: Group {
                device: "0123456789abcdef".into(),
                kernel: "gemm".into(),
                source_hash: "aaaabbbbccccdddd".into(),
                setup: "5e7a5e7a5e7a5e7a".into(),
                constants: ndtune_core::int_config([("N", 1024)]),
            },
            results: 12,
            last_result: Some(90_000),
            measured_twice: 0,
            workers: vec![
                WorkerStatus {
                    worker: "node1:gpu0".into(),
                    claimed: 1,
                    done: 10,
                    expired: 0,
                    heartbeat: Some(95_000),
                    first_claim: Some(35_000),
                    last_done: Some(95_000),
                },
                WorkerStatus {
                    worker: "w2".into(),
                    claimed: 0,
                    done: 2,
                    expired: 1,
                    heartbeat: None,
                    first_claim: Some(35_000),
                    last_done: None,
                },
            ],
        };
        assert_eq!(
            table(Some("H100"), &status, None, 100_000),
            "gemm on H100 (0123456789abcdef), N=1024, source aaaabbbbccccdddd, setup 5e7a5e7a5e7a5e7a: 12 results\n\
             \x20 worker      claimed    done  expired  per min  last heartbeat\n\
             \x20 node1:gpu0        1      10        0     10.0  5 s ago\n\
             \x20 w2                0       2        1        -  never\n"
        );
        let newer = Group {
            setup: "0123012301230123".into(),
            ..status.group.clone()
        };
        let what = vec!["measure.runs: 10 -> 20".to_string()];
        let earlier = table(Some("H100"), &status, Some(&(newer, what)), 100_000);
        assert!(
            earlier.contains(
                ": 12 results\n  an earlier campaign: setup 0123012301230123 is newer and does not reuse these results; from this setup to it:\n    measure.runs: 10 -> 20\n  worker"
            ),
            "{earlier}"
        );
    }

    #[test]
    fn durations_read_as_seconds_minutes_or_hours() {
        assert_eq!(ago(-5), "0 s ago");
        assert_eq!(ago(119_999), "119 s ago");
        assert_eq!(ago(600_000), "10 min ago");
        assert_eq!(ago(3 * 3_600_000), "3 h ago");
    }
}
