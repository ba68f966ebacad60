//! Resolving `--device`, `--profile` and `--profile-file` to device profiles (and, for live
//! devices, the OpenCL device itself).

use crate::cli::DeviceArgs;
use anyhow::{anyhow, Context, Result};
use ndtune_cl::ClDevice;
use ndtune_device::{builtin, DeviceProfile, Selector};

/// One device to work on.
pub struct Device {
    /// Short name for reports.
    pub label: String,
    pub profile: DeviceProfile,
    /// The OpenCL device, where this is a live one.
    pub live: Option<ClDevice>,
}

/// Every live device, as `ndtune devices` numbers them.
pub fn discover() -> Result<Vec<ClDevice>> {
    Ok(ndtune_cl::discover()?)
}

/// Picks one live device by selector; `D:K/N` makes sub-device K of N of device D.
pub fn pick(devices: &[ClDevice], sel: &str) -> Result<ClDevice> {
    let names: Vec<&str> = devices.iter().map(|d| d.profile.name.as_str()).collect();
    let selector = sel.parse::<Selector>()?;
    let device = &devices[selector.pick(&names)?];
    match selector {
        Selector::Sub { k, n, .. } => Ok(device
            .sub_device(k, n)
            .with_context(|| format!("sub-device {sel}"))?),
        _ => Ok(device.clone()),
    }
}

/// How `ndtune devices` and reports name a device: its index (with `:K/N` for a sub-device).
pub fn label(d: &ClDevice) -> String {
    format!("{}: {}", selector(d), d.profile.name)
}

/// The selector that picks `d` again: its index, with `:K/N` for a sub-device.
pub fn selector(d: &ClDevice) -> String {
    match d.sub {
        Some((k, n)) => format!("{}:{k}/{n}", d.index),
        None => d.index.to_string(),
    }
}

fn live(d: ClDevice) -> Device {
    Device {
        label: label(&d),
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
    match args.device.as_deref() {
        Some("all") => Ok(discover()?.into_iter().map(live).collect()),
        Some(sel) => {
            let devices = discover()?;
            Ok(vec![live(pick(&devices, sel).context("--device")?)])
        }
        None if default_live => {
            let first = discover()?
                .into_iter()
                .next()
                .expect("discover returns at least one device");
            Ok(vec![live(first)])
        }
        None => Ok(vec![]),
    }
}

/// Live devices for `SEL`: `all`, one selector, or a comma list of selectors; device 0 when none.
pub fn live_devices(sel: Option<&str>) -> Result<Vec<ClDevice>> {
    let devices = discover()?;
    match sel.map(str::trim) {
        None => Ok(vec![devices[0].clone()]),
        Some("all") => Ok(devices),
        Some(list) => {
            let mut picked: Vec<ClDevice> = Vec::new();
            for one in list.split(',') {
                let d = pick(&devices, one).with_context(|| format!("--device {list}"))?;
                if picked.iter().any(|p| p.index == d.index && p.sub == d.sub) {
                    anyhow::bail!("--device {list}: device {} is named twice", d.index);
                }
                picked.push(d);
            }
            Ok(picked)
        }
    }
}
