//! `ndtune export`: one recorded campaign as a Kernel Tuner cache or as T4 results JSON.

use crate::cli::ExportArgs;
use crate::cmd_replay::select_group;
use anyhow::Result;
use ndtune_store::kt::{self, KtHeader};
use ndtune_store::Store;
use std::collections::{BTreeMap, BTreeSet};

pub fn run(args: &ExportArgs) -> Result<()> {
    let store = Store::open(&args.store.db)?;
    let (group, device_name, records) = select_group(
        &store,
        store.path(),
        args.kernel.as_deref(),
        args.device.as_deref(),
    )?;
    match args.format.as_str() {
        "kt" => {
            let mut values: BTreeMap<String, BTreeSet<ndtune_core::Value>> = BTreeMap::new();
            for r in &records {
                for (k, v) in &r.key.config {
                    values.entry(k.clone()).or_default().insert(v.clone());
                }
            }
            let header = KtHeader {
                device_name: device_name.clone(),
                kernel_name: group.kernel.clone(),
                problem_size: serde_json::json!(group.constants),
                tune_params_keys: values.keys().cloned().collect(),
                tune_params: values
                    .into_iter()
                    .map(|(k, v)| (k, v.into_iter().collect()))
                    .collect(),
            };
            kt::write_kt_cache(&args.out, &header, &records)?;
        }
        _ => kt::write_t4(&args.out, &records)?,
    }
    eprintln!(
        "wrote {} records of `{}` on {device_name} to {}",
        records.len(),
        group.kernel,
        args.out.display()
    );
    Ok(())
}
