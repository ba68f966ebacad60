//! `ndtune status`: the progress of the campaigns of a store, per worker: configurations
//! claimed, done and expired, its rate (configurations per minute) and its last heartbeat
//! (workers sharing a campaign through one store), as a table or JSON. A kernel tuned again with the same constants on the
//! same device under another setup shows its earlier campaigns after the newest, with what
//! differs. A campaign of several objectives says how many configurations its Pareto front has.

use crate::cli::StatusArgs;
use anyhow::Result;
use ndtune_store::{CampaignStatus, Group, UnixMs};

pub fn run(args: &StatusArgs) -> Result<()> {
    // Status only reads: a missing file is a mistake, not an empty store to create, and a store
    // that cannot be written is read all the same.
    let wanted = args.constants.single()?;
    let store = args.store.open_read_only()?;
    let rows = ndtune_report::stored::status_rows(&store, args.kernel.as_deref(), &wanted)?;
    let now = ndtune_store::now_ms();
    if args.json {
        let campaigns: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(&r.status).expect("a status serialises");
                v["front"] = serde_json::json!(r.front);
                v["device_name"] = serde_json::json!(r.device_name);
                v["earlier_than"] = serde_json::json!(r.earlier.as_ref().map(|(g, _)| &g.setup));
                v["differences"] = serde_json::json!(r.earlier.as_ref().map(|(_, d)| d));
                v
            })
            .collect();
        let out = serde_json::json!({
            "store": store.path(),
            "now": now,
            "campaigns": campaigns,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if rows.is_empty() {
        println!("{}: no campaigns", store.path().display());
    }
    for r in &rows {
        print!(
            "{}",
            table(r.device_name.as_deref(), &r.status, r.earlier.as_ref(), now)
        );
        if let Some(f) = &r.front {
            println!(
                "  front      {} configurations on the Pareto front of {} (ndtune show --front)",
                f.size,
                f.objectives.join(", ")
            );
        }
    }
    Ok(())
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
    let constants: Vec<String> = g
        .constants
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let twice = match status.measured_twice {
        0 => String::new(),
        n => format!(" ({n} measured twice: a worker outlived its lease)"),
    };
    let mut out = format!(
        "{} on {} ({}), {}, source {}, setup {}: {} results{twice}\n",
        g.kernel,
        device.unwrap_or("unknown device"),
        g.device,
        constants.join(" "),
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
