//! `ndtune tune --pool`: what a pool (`ndtune_engine::pool`, one campaign shared by identical
//! devices of this machine, a worker process each) did, as the summary's lines and `--json`'s
//! `pool` object: each worker's share, and how each ended.

use ndtune_engine::pool::PoolReport;

/// The summary's lines after the pool's report: each worker's share, and each that ended early.
pub fn print(pool: &PoolReport, workers: usize) {
    println!(
        "  pool       {} workers in {:.2} s; measured {}",
        workers,
        pool.wall_s,
        pool.workers
            .iter()
            .map(|w| format!("{} by {}", w.done, w.worker))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for end in pool.ends.iter().filter(|e| !e.success) {
        let said = match end.said.last() {
            Some(_) => format!(": it said: {}", end.said.join(" | ")),
            None => ", saying nothing".into(),
        };
        println!(
            "  worker     {} ({}) ended early, {}{said}; what it measured is kept, what it held was measured by the pool",
            end.worker, end.device, end.status
        );
    }
}

/// `--json`'s `pool` object.
pub fn json(pool: &PoolReport) -> serde_json::Value {
    serde_json::json!({
        "wall_s": pool.wall_s,
        "workers": workers_json(pool),
        "measured_twice": pool.measured_twice,
    })
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
