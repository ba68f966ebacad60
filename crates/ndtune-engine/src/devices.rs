//! Picking the live devices a front end tunes on, by selector (`0`, a name, `D:K/N` for sub-device
//! K of N equal parts of device D, `all`, or a comma list of them): from the devices' names
//! alone, so that their measurement workers start before the devices are opened
//! ([`crate::Worker::start`]), then [`open_picked`]. `ndtune tune` (one device, several, or a
//! pool of them) picks this way; the Python package numbers devices as Kernel Tuner does.

use ndtune_cl::ClDevice;
use ndtune_device::{DeviceProfile, Selector};

/// A live device a selector picked, not opened yet: its index and, for a sub-device, which
/// part of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    pub index: usize,
    pub sub: Option<(usize, usize)>,
}

/// The live devices `selectors` picks (`all`, one selector, or a comma list of selectors;
/// device 0 when none); an error names the list and what is wrong with it.
pub fn pick_live(selectors: Option<&str>) -> Result<Vec<Picked>, String> {
    let names = ndtune_cl::names().map_err(|e| e.to_string())?;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    match selectors.map(str::trim) {
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
                    .map_err(|e| format!("{list}: {e}"))?;
                let index = selector.pick(&names).map_err(|e| format!("{list}: {e}"))?;
                let sub = match selector {
                    Selector::Sub { k, n, .. } => Some((k, n)),
                    _ => None,
                };
                let p = Picked { index, sub };
                if picked.contains(&p) {
                    return Err(format!("{list}: device {index} is named twice"));
                }
                picked.push(p);
            }
            Ok(picked)
        }
    }
}

/// Opens picked devices with their whole profiles. Devices alike in all that is read without
/// building (a node's GPUs) probe alike, so only the first of each kind is probed: each probe
/// makes a context, which NVIDIA's driver makes one at a time for the whole host.
pub fn open_picked(picked: &[Picked]) -> Result<Vec<ClDevice>, String> {
    let mut opened: Vec<ClDevice> = Vec::new();
    for p in picked {
        let attached = attach_one(p)?;
        let twin = opened.iter().find(|d| {
            let mut unprobed = d.profile.clone();
            unprobed.preferred_work_group_size_multiple = 0;
            unprobed == attached.profile
        });
        let device = match twin {
            Some(twin) => attached.with_profile(twin.profile.clone()),
            None => attached.probed().map_err(|e| e.to_string())?,
        };
        opened.push(device);
    }
    Ok(opened)
}

/// A picked device for a process handed its whole `profile` by the one that opened it (a pool's
/// worker): it reads no profile of its own, so it makes no context for it.
pub fn attach_picked(picked: &Picked, profile: DeviceProfile) -> Result<ClDevice, String> {
    attach_one(picked).map(|d| d.with_profile(profile))
}

/// A picked device, its profile read without the probe build.
fn attach_one(p: &Picked) -> Result<ClDevice, String> {
    let device = ndtune_cl::attach(p.index).map_err(|e| e.to_string())?;
    match p.sub {
        Some((k, n)) => device
            .sub_device(k, n)
            .map_err(|e| format!("sub-device {}:{k}/{n}: {e}", p.index)),
        None => Ok(device),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_alike_are_probed_once_and_opened_whole() {
        // PoCL's two halves are one kind of device: the second takes the first's probe.
        let picked = pick_live(Some("0:0/2,0:1/2")).unwrap();
        let opened = open_picked(&picked).unwrap();
        assert_eq!(opened.len(), 2);
        let probed = ndtune_cl::open(0).unwrap().sub_device(1, 2).unwrap();
        assert!(probed.profile.preferred_work_group_size_multiple > 0);
        assert_eq!(opened[1].profile, probed.profile);
        assert_eq!(opened[0].profile, opened[1].profile);
        assert_eq!(opened[1].selector(), "0:1/2");
        // Handed a profile, a worker's device is whole without probing.
        let handed = attach_picked(&picked[1], probed.profile.clone()).unwrap();
        assert_eq!(handed.profile, probed.profile);
    }
}
