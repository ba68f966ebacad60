//! `ndtune devices`: what OpenCL and CUDA see, as a listing, JSON profiles or MiniZinc data.

use crate::cli::DevicesArgs;
use anyhow::{anyhow, Result};
use ndtune_device::{builtin, DeviceProfile};
use ndtune_engine::devices;
use ndtune_space::mzn;

pub fn run(args: &DevicesArgs) -> Result<()> {
    // (prefix for file names, platform heading, profile)
    let mut devices: Vec<(String, String, DeviceProfile)> = if args.builtin {
        builtin::ALL
            .iter()
            .map(|b| {
                (
                    b.key.to_string(),
                    format!("built-in ({})", b.source),
                    (b.profile)(),
                )
            })
            .collect()
    } else {
        let found = ndtune_backend::discover_all(true)?;
        // A backend without a driver is one line, and its peers are listed as ever.
        for missing in &found.unavailable {
            eprintln!("note: {missing}");
        }
        found
            .devices
            .into_iter()
            .map(|d| {
                (
                    d.index().to_string(),
                    d.profile().platform_name.clone(),
                    d.profile().clone(),
                )
            })
            .collect()
    };
    if let Some(sel) = &args.device {
        devices = if args.builtin {
            let selector = sel.parse::<ndtune_device::Selector>()?;
            let names: Vec<&str> = devices.iter().map(|d| d.2.name.as_str()).collect();
            let i = selector.pick(&names)?;
            vec![devices.swap_remove(i)]
        } else {
            // Live devices are picked as every command picks them.
            let picked =
                devices::pick_live(None, Some(sel)).map_err(|e| anyhow!("--device {e}"))?;
            devices::open_picked(&picked)
                .map_err(|e| anyhow!("--device {e}"))?
                .into_iter()
                .map(|d| {
                    let profile = d.profile().clone();
                    (d.selector(), profile.platform_name.clone(), profile)
                })
                .collect()
        };
    }
    if let Some(dir) = &args.mzn {
        let files = mzn::platform_files(devices.iter().map(|(key, _, p)| (key.as_str(), p)));
        mzn::write_files(dir, &files)?;
    }
    if args.json {
        let profiles: Vec<&DeviceProfile> = devices.iter().map(|d| &d.2).collect();
        println!("{}", serde_json::to_string_pretty(&profiles)?);
        return Ok(());
    }
    let mut platform = String::new();
    for (key, heading, p) in &devices {
        if *heading != platform {
            println!("platform: {heading}");
            platform = heading.clone();
        }
        print!("{}", p.card(key));
    }
    if let Some(dir) = &args.mzn {
        eprintln!(
            "wrote platform.mzn and {} device data file(s) to {}",
            devices.len(),
            dir.display()
        );
    }
    Ok(())
}
