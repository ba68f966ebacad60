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
    ClDevice::pick(devices, sel).map_err(|e| anyhow!(e))
}

/// How `ndtune devices` and reports name a device: its index (with `:K/N` for a sub-device).
pub fn label(d: &ClDevice) -> String {
    d.label()
}

/// The selector that picks `d` again: its index, with `:K/N` for a sub-device.
pub fn selector(d: &ClDevice) -> String {
    d.selector()
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

/// A live device a selector picked, not opened yet: its index and, for a sub-device, which
/// part of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    pub index: usize,
    pub sub: Option<(usize, usize)>,
}

/// The live devices `SEL` picks (`all`, one selector, or a comma list of selectors; device 0
/// when none), from the devices' names alone: nothing is built, so their workers can start
/// before the devices are opened ([`open_picked`]).
pub fn pick_live(sel: Option<&str>) -> Result<Vec<Picked>> {
    let names = ndtune_cl::names()?;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    match sel.map(str::trim) {
        None => Ok(vec![Picked {
            index: 0,
            sub: None,
        }]),
        Some("all") => Ok((0..names.len())
            .map(|index| Picked { index, sub: None })
            .collect()),
        Some(list) => {
            let mut picked: Vec<Picked> = Vec::new();
            for one in list.split(',') {
                let selector = one
                    .parse::<Selector>()
                    .with_context(|| format!("--device {list}"))?;
                let index = selector
                    .pick(&names)
                    .with_context(|| format!("--device {list}"))?;
                let sub = match selector {
                    Selector::Sub { k, n, .. } => Some((k, n)),
                    _ => None,
                };
                let p = Picked { index, sub };
                if picked.contains(&p) {
                    anyhow::bail!("--device {list}: device {index} is named twice");
                }
                picked.push(p);
            }
            Ok(picked)
        }
    }
}

/// Opens picked devices with their whole profiles.
pub fn open_picked(picked: &[Picked]) -> Result<Vec<ClDevice>> {
    picked
        .iter()
        .map(|p| {
            let device = ndtune_cl::open(p.index)?;
            Ok(match p.sub {
                Some((k, n)) => device
                    .sub_device(k, n)
                    .with_context(|| format!("sub-device {}:{k}/{n}", p.index))?,
                None => device,
            })
        })
        .collect()
}
