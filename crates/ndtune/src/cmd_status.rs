//! `ndtune status`: the progress of the campaigns of a store, per worker: configurations
//! claimed, done and expired, its rate (configurations per minute) and its last heartbeat
//! (workers sharing a campaign through one store), as a table or JSON. A kernel tuned again with the same constants on the
//! same device under another setup shows its earlier campaigns after the newest, with what
//! differs. A campaign of several objectives says how many configurations its Pareto front has.

use crate::cli::StatusArgs;
use anyhow::Result;

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
        print!("{}", r.text(now));
    }
    Ok(())
}
