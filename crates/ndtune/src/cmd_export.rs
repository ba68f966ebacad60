//! `ndtune export`: one recorded campaign (selected by kernel, device, constants and setup) as a
//! Kernel Tuner cache or as T4 results JSON.

use crate::cli::ExportArgs;
use crate::select::{select, Criteria};
use anyhow::Result;
use ndtune_store::kt::{self, KtHeader};
use std::collections::{BTreeMap, BTreeSet};

pub fn run(args: &ExportArgs) -> Result<()> {
    let store = args.store.open_read_only()?;
    let c = &args.campaign;
    let criteria = Criteria {
        kernel: c.kernel.as_deref(),
        device: c.device.as_deref(),
        constants: c.constants.single().map_err(anyhow::Error::msg)?,
        setup: c.setup.as_deref(),
    };
    let (group, device_name, records) = select(&store, store.path(), &criteria)?;
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
