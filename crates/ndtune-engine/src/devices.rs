//! Picking the live devices a front end works on, by selector (`0`, a name, `D:K/N` for
//! sub-device K of N equal parts of device D, `all`, or a comma list of them): from the devices'
//! names alone, so that their measurement workers start before the devices are opened
//! ([`crate::Worker::start`]), then [`open_picked`]. One rule for every command (`tune`, its
//! pools and `--captured`, `split`): each device at most once, and never a device together with
//! a part of it, nor parts of two partitions of one device, which share compute units and would
//! disturb each other's timings ([`pick`]). The Python package numbers devices as Kernel Tuner
//! does.

use ndtune_cl::ClDevice;
use ndtune_device::{builtin, DeviceProfile, Selector};
use std::path::Path;

/// A live device a selector picked, not opened yet: its index and, for a sub-device, which
/// part of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    pub index: usize,
    pub sub: Option<(usize, usize)>,
}

/// Why devices could not be picked or opened. The front end says which option it was
/// (`--device`, `--devices`, `device=`).
#[derive(Debug, thiserror::Error)]
pub enum PickError {
    #[error("this machine has no OpenCL device (`ndtune devices` lists them)")]
    NoDevice,
    /// The selectors `list` cannot be met, and why.
    #[error("{list}: {why}")]
    Selector { list: String, why: String },
    /// Kernel Tuner's numbering names a platform or a device that is not there.
    #[error("{0}")]
    Numbered(String),
    /// The driver could not list or open a device.
    #[error(transparent)]
    Driver(#[from] ndtune_cl::ClError),
    /// A sub-device could not be made.
    #[error("sub-device {index}:{k}/{n}: {source}")]
    SubDevice {
        index: usize,
        k: usize,
        n: usize,
        source: ndtune_cl::ClError,
    },
}

/// The live devices `selectors` picks (see [`pick`]).
pub fn pick_live(selectors: Option<&str>) -> Result<Vec<Picked>, PickError> {
    let names = ndtune_cl::names()?;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    pick(&names, selectors)
}

/// The devices `selectors` picks among devices named `names` (in discovery order): `all`, one
/// selector, or a comma list of selectors; device 0 when none. An error names the list and
/// what is wrong with it: a selector that matches no device or several, a device named twice,
/// a device together with a sub-device of it, sub-devices of two partitions of one device.
pub fn pick(names: &[&str], selectors: Option<&str>) -> Result<Vec<Picked>, PickError> {
    if names.is_empty() {
        return Err(PickError::NoDevice);
    }
    let list = match selectors.map(str::trim) {
        None => {
            return Ok(vec![Picked {
                index: 0,
                sub: None,
            }])
        }
        Some("all") => {
            return Ok((0..names.len())
                .map(|index| Picked { index, sub: None })
                .collect())
        }
        Some(list) => list,
    };
    let refused = |why: String| PickError::Selector {
        list: list.to_string(),
        why,
    };
    let mut picked: Vec<Picked> = Vec::new();
    for one in list.split(',').map(str::trim) {
        let selector = one
            .parse::<Selector>()
            .map_err(|e| refused(e.to_string()))?;
        let index = selector.pick(names).map_err(|e| refused(e.to_string()))?;
        let sub = match selector {
            Selector::Sub { k, n, .. } => Some((k, n)),
            _ => None,
        };
        for earlier in picked.iter().filter(|p| p.index == index) {
            let why = match (earlier.sub, sub) {
                (Some((_, a)), Some((_, b))) if a != b => {
                    format!("partitions into {a} and into {b} of device {index} overlap")
                }
                (Some(x), Some(y)) if x != y => continue, // two parts of one partition
                (Some(_), Some(_)) => format!("{one} is named twice"),
                (None, None) => format!("device {index} is named twice"),
                _ => format!("device {index} and a sub-device of it share compute units"),
            };
            return Err(refused(why));
        }
        picked.push(Picked { index, sub });
    }
    Ok(picked)
}

/// Kernel Tuner's numbering: devices `numbers` of OpenCL platform `platform` (numbered from 0
/// on each platform), read without making any device context.
pub fn pick_numbered(platform: usize, numbers: &[usize]) -> Result<Vec<Picked>, PickError> {
    let found = ndtune_cl::discover_unprobed()?;
    let on_platform: Vec<usize> = found
        .iter()
        .filter(|d| d.platform_index == platform)
        .map(|d| d.index)
        .collect();
    if on_platform.is_empty() {
        return Err(PickError::Numbered(format!(
            "platform={platform}: there is no OpenCL platform {platform} with a device (ndtune.devices() lists them)"
        )));
    }
    numbers
        .iter()
        .map(|&n| {
            let index = on_platform.get(n).copied().ok_or_else(|| {
                PickError::Numbered(format!(
                    "device={n}: platform {platform} has {} devices, numbered from 0",
                    on_platform.len()
                ))
            })?;
            Ok(Picked { index, sub: None })
        })
        .collect()
}

/// Why Kernel Tuner's `parallel=` picks no devices.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParallelError {
    /// The device asked for is not there.
    #[error("{0}")]
    Device(String),
    /// Fewer identical devices than asked for.
    #[error("{0}")]
    Count(String),
}

/// Kernel Tuner's `parallel=`: the numbers, on platform `platform`, of device `device` and the
/// devices there identical to it, the rule a pool holds them to ([`ndtune_store::fingerprint`]),
/// those after it first, then those before it; all of them, or the first `count`. `found` is
/// each device's platform and profile, in discovery order.
pub fn parallel(
    found: &[(usize, DeviceProfile)],
    platform: usize,
    device: usize,
    count: Option<usize>,
) -> Result<Vec<usize>, ParallelError> {
    let on_platform: Vec<&DeviceProfile> = found
        .iter()
        .filter(|(p, _)| *p == platform)
        .map(|(_, profile)| profile)
        .collect();
    let first = on_platform.get(device).ok_or_else(|| {
        ParallelError::Device(format!(
            "device={device}: platform {platform} has {} devices, numbered from 0",
            on_platform.len()
        ))
    })?;
    let kind = ndtune_store::fingerprint(first);
    let mut alike: Vec<usize> = (0..on_platform.len())
        .filter(|&n| ndtune_store::fingerprint(on_platform[n]) == kind)
        .collect();
    alike.sort_by_key(|&n| (n < device, n));
    match count {
        Some(n) if n > alike.len() => Err(ParallelError::Count(format!(
            "parallel={n}: platform {platform} has {} device(s) like device {device} ({}); a parallel campaign needs identical devices",
            alike.len(),
            first.name
        ))),
        Some(n) => Ok(alike[..n].to_vec()),
        None => Ok(alike),
    }
}

/// [`parallel`] among this machine's OpenCL devices, read without making any context.
pub fn parallel_here(
    platform: usize,
    device: usize,
    count: Option<usize>,
) -> Result<Vec<usize>, ParallelError> {
    let found: Vec<(usize, DeviceProfile)> = ndtune_cl::discover_unprobed()
        .map_err(|e| ParallelError::Device(e.to_string()))?
        .into_iter()
        .map(|d| (d.platform_index, d.profile))
        .collect();
    parallel(&found, platform, device, count)
}

/// Opens picked devices with their whole profiles. Devices alike in all that is read without
/// building (a node's GPUs) probe alike, so only the first of each kind is probed: each probe
/// makes a context, which NVIDIA's driver makes one at a time for the whole host.
pub fn open_picked(picked: &[Picked]) -> Result<Vec<ClDevice>, PickError> {
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
            None => attached.probed()?,
        };
        opened.push(device);
    }
    Ok(opened)
}

/// A picked device for a process handed its whole `profile` by the one that opened it (a pool's
/// worker): it reads no profile of its own, so it makes no context for it.
pub fn attach_picked(picked: &Picked, profile: DeviceProfile) -> Result<ClDevice, PickError> {
    attach_one(picked).map(|d| d.with_profile(profile))
}

/// A picked device, its profile read without the probe build.
fn attach_one(p: &Picked) -> Result<ClDevice, PickError> {
    let device = ndtune_cl::attach(p.index)?;
    match p.sub {
        Some((k, n)) => device
            .sub_device(k, n)
            .map_err(|source| PickError::SubDevice {
                index: p.index,
                k,
                n,
                source,
            }),
        None => Ok(device),
    }
}

/// One device to work on, live or a profile alone (`space`, `learn`, `pick`).
pub struct Target {
    /// Short name for reports.
    pub label: String,
    pub profile: DeviceProfile,
    /// The OpenCL device, where this is a live one.
    pub live: Option<ClDevice>,
}

/// Where the devices of `space`, `learn` and `pick` come from: a built-in offline profile by
/// name, a saved profile file, or live devices picked by `selectors` as every command picks
/// them ([`pick`]); with none of these, device 0 where `default_live`, else no device.
pub fn targets(
    profile: Option<&str>,
    profile_file: Option<&Path>,
    selectors: Option<&str>,
    default_live: bool,
) -> Result<Vec<Target>, String> {
    if let Some(name) = profile {
        let profile = builtin::find(name).ok_or_else(|| {
            let keys = builtin::keys();
            let hint = ndtune_space::resolve::closest(name, keys.iter().copied())
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            format!(
                "no built-in profile `{name}`{hint}; the built-in profiles are: {}",
                keys.join(", ")
            )
        })?;
        return Ok(vec![Target {
            label: name.to_lowercase(),
            profile,
            live: None,
        }]);
    }
    if let Some(path) = profile_file {
        let profile = DeviceProfile::load(path).map_err(|e| e.to_string())?;
        return Ok(vec![Target {
            label: profile.name.clone(),
            profile,
            live: None,
        }]);
    }
    if selectors.is_none() && !default_live {
        return Ok(vec![]);
    }
    let picked = pick_live(selectors).map_err(|e| format!("--device {e}"))?;
    let opened = open_picked(&picked).map_err(|e| format!("--device {e}"))?;
    Ok(opened
        .into_iter()
        .map(|d| Target {
            label: d.label(),
            profile: d.profile.clone(),
            live: Some(d),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernel Tuner's `parallel=`: the devices identical to the one asked for, those after it
    /// first; a count beyond them, or a device not there, refused.
    #[test]
    fn parallel_takes_the_devices_identical_to_the_one_asked_for() {
        let profile = |name: &str| DeviceProfile {
            name: name.into(),
            ..builtin::find("hd4600").unwrap()
        };
        let mut found: Vec<(usize, DeviceProfile)> =
            (0..4).map(|_| (0, profile("NVIDIA H100"))).collect();
        found.push((0, profile("NVIDIA L4")));
        found.push((1, profile("cpu")));
        assert_eq!(parallel(&found, 0, 0, None), Ok(vec![0, 1, 2, 3]));
        assert_eq!(parallel(&found, 0, 2, None), Ok(vec![2, 3, 0, 1]));
        assert_eq!(parallel(&found, 0, 1, Some(2)), Ok(vec![1, 2]));
        assert_eq!(parallel(&found, 0, 4, None), Ok(vec![4]));
        assert_eq!(parallel(&found, 1, 0, None), Ok(vec![0]));
        let too_many = parallel(&found, 0, 0, Some(5)).unwrap_err();
        assert!(
            matches!(&too_many, ParallelError::Count(m) if m.starts_with("parallel=5: platform 0 has 4 device(s) like device 0 (NVIDIA H100)")),
            "{too_many}"
        );
        let missing = parallel(&found, 0, 7, None).unwrap_err();
        assert!(
            matches!(&missing, ParallelError::Device(m) if m.starts_with("device=7: platform 0 has 5 devices")),
            "{missing}"
        );
    }

    /// Every kind of selector and the devices or refusal it gives, among a CPU and two GPUs of
    /// one name. The same table holds for every command: they all pick through [`pick`].
    #[test]
    fn selectors_pick_the_same_devices_and_refuse_alike() {
        let names = ["pthread-AMD EPYC", "NVIDIA H100", "NVIDIA H100"];
        let whole = |index| Picked { index, sub: None };
        let part = |index, k, n| Picked {
            index,
            sub: Some((k, n)),
        };
        let ok: [(Option<&str>, Vec<Picked>); 9] = [
            (None, vec![whole(0)]),
            (Some("1"), vec![whole(1)]),
            (Some("epyc"), vec![whole(0)]),
            (Some("0:1/2"), vec![part(0, 1, 2)]),
            (Some("all"), vec![whole(0), whole(1), whole(2)]),
            (Some("2, 0"), vec![whole(2), whole(0)]),
            (Some("0:0/2,0:1/2"), vec![part(0, 0, 2), part(0, 1, 2)]),
            (Some("epyc:0/2,1"), vec![part(0, 0, 2), whole(1)]),
            (Some("1:0/4,2:3/4"), vec![part(1, 0, 4), part(2, 3, 4)]),
        ];
        for (selectors, devices) in ok {
            assert_eq!(pick(&names, selectors).unwrap(), devices, "{selectors:?}");
        }
        for (selectors, refusal) in [
            ("0,0", "0,0: device 0 is named twice"),
            ("1,nvidia", "matches 2 devices"),
            ("0,epyc", "device 0 is named twice"),
            ("0:1/2,0:1/2", "0:1/2 is named twice"),
            (
                "0,0:0/2",
                "device 0 and a sub-device of it share compute units",
            ),
            (
                "0:0/2,0",
                "device 0 and a sub-device of it share compute units",
            ),
            (
                "0:0/2,0:1/3",
                "partitions into 2 and into 3 of device 0 overlap",
            ),
            ("3", "3: no device matches `3`"),
            ("gpu", "no device matches `gpu`"),
            ("0:2/2", "a sub-device is D:K/N with 0 <= K < N"),
            ("0,", "empty device selector"),
        ] {
            let e = pick(&names, Some(selectors)).unwrap_err().to_string();
            assert!(e.contains(refusal), "{selectors}: {e}");
        }
        assert!(pick(&[], None)
            .unwrap_err()
            .to_string()
            .contains("no OpenCL device"));
    }

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
