//! Picking the live devices a front end works on, by selector (`0`, a name, `D:K/N` for
//! sub-device K of N equal parts of device D, `all`, or a comma list of them): from the devices'
//! names alone, so that their measurement workers start before the devices are opened
//! ([`crate::Worker::start`]), then [`open_picked`]. One rule for every command (`tune`, its
//! pools and `--captured`, `split`): each device at most once, and never a device together with
//! a part of it, nor parts of two partitions of one device, which share compute units and would
//! disturb each other's timings ([`pick`]); and only devices whose API runs the kernel's
//! language (an OpenCL kernel on OpenCL devices, a CUDA one on CUDA devices). The Python package
//! numbers devices as Kernel Tuner does.

use ndtune_backend::{Address, AnyDevice, Api, Listed};
use ndtune_device::{builtin, DeviceProfile, Selector};
use std::path::Path;

/// A live device a selector picked, not opened yet: its index, where it is in its API's list,
/// and, for a sub-device, which part of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    pub index: usize,
    pub at: Address,
    pub sub: Option<(usize, usize)>,
}

/// Why devices could not be picked or opened. The front end says which option it was
/// (`--device`, `--devices`, `device=`).
#[derive(Debug, thiserror::Error)]
pub enum PickError {
    #[error("this machine has no {0} device (`ndtune devices` lists them)")]
    NoDevice(Api),
    /// The selectors `list` cannot be met, and why.
    #[error("{list}: {why}")]
    Selector { list: String, why: String },
    /// Kernel Tuner's numbering names a platform or a device that is not there.
    #[error("{0}")]
    Numbered(String),
    /// The driver could not list or open a device.
    #[error(transparent)]
    Driver(#[from] ndtune_backend::DeviceError),
    /// A sub-device could not be made.
    #[error("sub-device {index}:{k}/{n}: {source}")]
    SubDevice {
        index: usize,
        k: usize,
        n: usize,
        source: Box<ndtune_backend::DeviceError>,
    },
}

/// The live devices `selectors` picks for a kernel in `language` (see [`pick`]).
pub fn pick_live(language: Option<Api>, selectors: Option<&str>) -> Result<Vec<Picked>, PickError> {
    pick(&ndtune_backend::listing()?, language, selectors)
}

/// The live devices `selectors` picks for a kernel written in each of `languages` (a kernel
/// and its twin: split runs each device's own; see [`pick_for`]).
pub fn pick_live_for(languages: &[Api], selectors: &str) -> Result<Vec<Picked>, PickError> {
    pick_for(&ndtune_backend::listing()?, languages, Some(selectors))
}

/// The devices `selectors` picks among the `listed` devices (in list order) for a kernel in
/// `language` (`None`: any device): `all`, one selector, or a comma list of selectors; the
/// first device of the language when none. An error names the list and what is wrong with it:
/// a selector that matches no device or several, a device of another API, a device named
/// twice, a device together with a sub-device of it, sub-devices of two partitions of one
/// device.
pub fn pick(
    listed: &[Listed],
    language: Option<Api>,
    selectors: Option<&str>,
) -> Result<Vec<Picked>, PickError> {
    pick_for(listed, language.as_slice(), selectors)
}

/// [`pick`] for a kernel written in each of `languages` (none: any device).
pub fn pick_for(
    listed: &[Listed],
    languages: &[Api],
    selectors: Option<&str>,
) -> Result<Vec<Picked>, PickError> {
    let runs = |d: &Listed| languages.is_empty() || languages.contains(&d.api);
    let eligible: Vec<usize> = (0..listed.len()).filter(|&i| runs(&listed[i])).collect();
    let none = || PickError::NoDevice(languages.first().copied().unwrap_or(Api::OpenCl));
    let list = match selectors.map(str::trim) {
        None => {
            let first = *eligible.first().ok_or_else(none)?;
            return Ok(vec![Picked {
                index: first,
                at: listed[first].at,
                sub: None,
            }]);
        }
        Some("all") if eligible.is_empty() => return Err(none()),
        Some("all") => {
            return Ok(eligible
                .into_iter()
                .map(|index| Picked {
                    index,
                    at: listed[index].at,
                    sub: None,
                })
                .collect())
        }
        // A device named by number says which API it has; by name, there is none to name.
        Some(list) if eligible.is_empty() && list.parse::<usize>().is_err() => return Err(none()),
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
        let index = resolve(&selector, listed, &eligible, languages).map_err(refused)?;
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
        picked.push(Picked {
            index,
            at: listed[index].at,
            sub,
        });
    }
    Ok(picked)
}

/// The device `selector` names: by number in the whole list (refused where its API does not run
/// the kernel's language), by name part among the devices that do.
fn resolve(
    selector: &Selector,
    listed: &[Listed],
    eligible: &[usize],
    languages: &[Api],
) -> Result<usize, String> {
    let parent = match selector {
        Selector::Sub { parent, .. } => parent,
        other => other,
    };
    if let Selector::Name(_) = parent {
        let names: Vec<&str> = eligible.iter().map(|&i| listed[i].name.as_str()).collect();
        return Ok(eligible[parent.pick(&names).map_err(|e| e.to_string())?]);
    }
    let names: Vec<&str> = listed.iter().map(|d| d.name.as_str()).collect();
    let index = parent.pick(&names).map_err(|e| e.to_string())?;
    if languages.is_empty() || languages.contains(&listed[index].api) {
        return Ok(index);
    }
    let wanted: Vec<String> = languages.iter().map(Api::to_string).collect();
    Err(format!(
        "device {index} ({}) runs {} kernels, not {} ones",
        listed[index].name,
        listed[index].api,
        wanted.join(" or ")
    ))
}

/// Kernel Tuner's numbering for a kernel in `language`: devices `numbers` of OpenCL platform
/// `platform` (numbered from 0 on each platform), or CUDA devices by ordinal (CUDA has no
/// platforms: `platform` is not read), read without making any device context.
pub fn pick_numbered(
    language: Api,
    platform: usize,
    numbers: &[usize],
) -> Result<Vec<Picked>, PickError> {
    let found = ndtune_backend::discover_unprobed()?;
    let on_platform: Vec<(usize, Address)> = found
        .iter()
        .filter(|d| {
            d.api() == language && (language == Api::Cuda || d.platform_index() == platform)
        })
        .map(|d| (d.index(), d.address()))
        .collect();
    if on_platform.is_empty() {
        return Err(PickError::Numbered(match language {
            Api::Cuda => "there is no CUDA device (ndtune.devices() lists them)".to_string(),
            Api::OpenCl => format!(
                "platform={platform}: there is no OpenCL platform {platform} with a device (ndtune.devices() lists them)"
            ),
        }));
    }
    numbers
        .iter()
        .map(|&n| {
            let (index, at) = on_platform.get(n).copied().ok_or_else(|| {
                PickError::Numbered(format!(
                    "device={n}: platform {platform} has {} devices, numbered from 0",
                    on_platform.len()
                ))
            })?;
            Ok(Picked {
                index,
                at,
                sub: None,
            })
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

/// [`parallel`] among this machine's devices of `language`, read without making any context
/// (CUDA's devices are all on platform 0).
pub fn parallel_here(
    language: Api,
    platform: usize,
    device: usize,
    count: Option<usize>,
) -> Result<Vec<usize>, ParallelError> {
    let found: Vec<(usize, DeviceProfile)> = ndtune_backend::discover_unprobed()
        .map_err(|e| ParallelError::Device(e.to_string()))?
        .into_iter()
        .filter(|d| d.api() == language)
        .map(|d| (d.platform_index(), d.profile().clone()))
        .collect();
    parallel(&found, platform, device, count)
}

/// Opens picked devices with their whole profiles. Devices alike in all that is read without
/// building (a node's GPUs) probe alike, so only the first of each kind is probed: each probe
/// makes a context, which NVIDIA's driver makes one at a time for the whole host.
pub fn open_picked(picked: &[Picked]) -> Result<Vec<AnyDevice>, PickError> {
    let mut opened: Vec<AnyDevice> = Vec::new();
    for p in picked {
        let attached = attach_one(p)?;
        let twin = opened.iter().find(|d| {
            let mut unprobed = d.profile().clone();
            unprobed.preferred_work_group_size_multiple = 0;
            unprobed == *attached.profile()
        });
        let device = match twin {
            Some(twin) => attached.with_profile(twin.profile().clone()),
            None => attached.probed()?,
        };
        opened.push(device);
    }
    Ok(opened)
}

/// A picked device for a process handed its whole `profile` by the one that opened it (a pool's
/// worker): it reads no profile of its own, so it makes no context for it.
pub fn attach_picked(picked: &Picked, profile: DeviceProfile) -> Result<AnyDevice, PickError> {
    attach_one(picked).map(|d| d.with_profile(profile))
}

/// A picked device, its profile read without the probe build.
fn attach_one(p: &Picked) -> Result<AnyDevice, PickError> {
    let device = ndtune_backend::attach_at(p.index, p.at)?;
    match p.sub {
        Some((k, n)) => device
            .sub_device(k, n)
            .map_err(|source| PickError::SubDevice {
                index: p.index,
                k,
                n,
                source: Box::new(source),
            }),
        None => Ok(device),
    }
}

/// One device to work on, live or a profile alone (`space`, `learn`, `pick`).
pub struct Target {
    /// Short name for reports.
    pub label: String,
    pub profile: DeviceProfile,
    /// The device, where this is a live one.
    pub live: Option<AnyDevice>,
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
    let picked = pick_live(None, selectors).map_err(|e| format!("--device {e}"))?;
    let opened = open_picked(&picked).map_err(|e| format!("--device {e}"))?;
    Ok(opened
        .into_iter()
        .map(|d| Target {
            label: d.label(),
            profile: d.profile().clone(),
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
    /// one name, as OpenCL lists them, and the first GPU again as CUDA lists it. The same table
    /// holds for every command: they all pick through [`pick`].
    #[test]
    fn selectors_pick_the_same_devices_and_refuse_alike() {
        let listed: Vec<Listed> = [
            ("pthread-AMD EPYC", Api::OpenCl, 0),
            ("NVIDIA H100", Api::OpenCl, 1),
            ("NVIDIA H100", Api::OpenCl, 2),
            ("NVIDIA H100 80GB HBM3", Api::Cuda, 0),
        ]
        .map(|(name, api, number)| Listed {
            name: name.into(),
            api,
            at: Address { api, number },
        })
        .to_vec();
        let opencl = Some(Api::OpenCl);
        let whole = |index: usize| Picked {
            index,
            at: listed[index].at,
            sub: None,
        };
        let part = |index: usize, k, n| Picked {
            index,
            at: listed[index].at,
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
            assert_eq!(
                pick(&listed, opencl, selectors).unwrap(),
                devices,
                "{selectors:?}"
            );
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
            ("4", "4: no device matches `4`"),
            (
                "3",
                "device 3 (NVIDIA H100 80GB HBM3) runs CUDA kernels, not OpenCL ones",
            ),
            ("gpu", "no device matches `gpu`"),
            ("0:2/2", "a sub-device is D:K/N with 0 <= K < N"),
            ("0,", "empty device selector"),
        ] {
            let e = pick(&listed, opencl, Some(selectors))
                .unwrap_err()
                .to_string();
            assert!(e.contains(refusal), "{selectors}: {e}");
        }
        // A CUDA kernel: its devices only, by name part or number; any device where no
        // language is asked (`space`, `learn` and `pick` on a profile).
        let cuda = Some(Api::Cuda);
        for (selectors, devices) in [
            (None, vec![whole(3)]),
            (Some("all"), vec![whole(3)]),
            (Some("h100"), vec![whole(3)]),
            (Some("3"), vec![whole(3)]),
        ] {
            assert_eq!(
                pick(&listed, cuda, selectors).unwrap(),
                devices,
                "{selectors:?}"
            );
        }
        let e = pick(&listed, cuda, Some("1")).unwrap_err().to_string();
        assert!(
            e.contains("device 1 (NVIDIA H100) runs OpenCL kernels, not CUDA ones"),
            "{e}"
        );
        assert_eq!(pick(&listed, None, Some("all")).unwrap().len(), 4);
        assert_eq!(pick(&listed, None, Some("80gb")).unwrap(), vec![whole(3)]);
        assert!(pick(&listed[..3], cuda, None)
            .unwrap_err()
            .to_string()
            .contains("no CUDA device"));
        assert!(pick(&[], opencl, None)
            .unwrap_err()
            .to_string()
            .contains("no OpenCL device"));
        // A kernel and its twin (`split --twin`): the devices of both languages, one refusal.
        let both = [Api::OpenCl, Api::Cuda];
        assert_eq!(
            pick_for(&listed, &both, Some("3,0")).unwrap(),
            vec![whole(3), whole(0)]
        );
        assert_eq!(pick_for(&listed, &both, Some("all")).unwrap().len(), 4);
        let e = pick_for(&listed, &[Api::Cuda], Some("0,3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs OpenCL kernels, not CUDA ones"), "{e}");
        let e = pick_for(&listed, &both, Some("3,h100 80"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("device 3 is named twice"), "{e}");
    }

    #[test]
    fn devices_alike_are_probed_once_and_opened_whole() {
        // PoCL's two halves are one kind of device: the second takes the first's probe.
        let picked = pick_live(Some(Api::OpenCl), Some("0:0/2,0:1/2")).unwrap();
        let opened = open_picked(&picked).unwrap();
        assert_eq!(opened.len(), 2);
        let probed = ndtune_backend::open(0).unwrap().sub_device(1, 2).unwrap();
        assert!(probed.profile().preferred_work_group_size_multiple > 0);
        assert_eq!(opened[1].profile(), probed.profile());
        assert_eq!(opened[0].profile(), opened[1].profile());
        assert_eq!(opened[1].selector(), "0:1/2");
        // Handed a profile, a worker's device is whole without probing.
        let handed = attach_picked(&picked[1], probed.profile().clone()).unwrap();
        assert_eq!(handed.profile(), probed.profile());
    }
}
