//! Resolving `--device`, `--profile` and `--profile-file` to device profiles (and, for live
//! devices, the OpenCL device itself), for the commands that work on profiles as well as on
//! live devices (`space`, `learn`, `pick`); live devices are picked by `ndtune_engine::devices`,
//! as `tune` and `split` pick them.

use crate::cli::DeviceArgs;
use anyhow::{anyhow, Result};
use ndtune_cl::ClDevice;
use ndtune_device::{builtin, DeviceProfile};
use ndtune_engine::devices;

/// One device to work on.
pub struct Device {
    /// Short name for reports.
    pub label: String,
    pub profile: DeviceProfile,
    /// The OpenCL device, where this is a live one.
    pub live: Option<ClDevice>,
}

fn live(d: ClDevice) -> Device {
    Device {
        label: d.label(),
        profile: d.profile.clone(),
        live: Some(d),
    }
}

/// Resolves the device arguments. With none given, `default_live` picks device 0 (PoCL on a
/// fresh machine); otherwise no device is used.
pub fn resolve(args: &DeviceArgs, default_live: bool) -> Result<Vec<Device>> {
    if let Some(name) = &args.profile {
        let profile = builtin::find(name).ok_or_else(|| {
            let keys = builtin::keys();
            let hint = ndtune_space::resolve::closest(name, keys.iter().copied())
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            anyhow!(
                "no built-in profile `{name}`{hint}; the built-in profiles are: {}",
                keys.join(", ")
            )
        })?;
        return Ok(vec![Device {
            label: name.to_lowercase(),
            profile,
            live: None,
        }]);
    }
    if let Some(path) = &args.profile_file {
        let profile = DeviceProfile::load(path)?;
        return Ok(vec![Device {
            label: profile.name.clone(),
            profile,
            live: None,
        }]);
    }
    // Live devices are picked as every command picks them (`ndtune_engine::devices::pick`).
    let selectors = match args.device.as_deref() {
        None if !default_live => return Ok(vec![]),
        selectors => selectors,
    };
    let picked = devices::pick_live(selectors).map_err(|e| anyhow!("--device {e}"))?;
    let opened = devices::open_picked(&picked).map_err(|e| anyhow!("--device {e}"))?;
    Ok(opened.into_iter().map(live).collect())
}
