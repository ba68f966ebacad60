//! Every device backend in one list. The layers above (engine, workers, split, the front ends)
//! see devices only as [`AnyDevice`]s from here: OpenCL's devices first, in platform order, then
//! CUDA's, so a machine's OpenCL numbering never moves when a CUDA driver comes or goes. A
//! backend whose library is missing is left out with its reason ([`Discovery::unavailable`]);
//! only a machine with no device at all is an error.
//!
//! A new backend is a crate implementing [`ndtune_device::backend`] and one entry in
//! [`BACKENDS`]; nothing above this crate changes.

pub use ndtune_device::backend::{
    Address, AnyDevice, Api, Arg, Buffer, Device, DeviceError, Fault, Kernel, KernelLimits, Pinned,
    Pipeline, PipelineTimes, Running, Session, Step,
};
use ndtune_device::DeviceProfile;
use std::sync::Arc;

/// What one backend gives the list: its devices' names without opening them, its devices
/// (probed or only attached), one device by its number in the backend's own list, and, where
/// its builds need no driver, a device to build for made from a profile read elsewhere.
struct Backend {
    api: Api,
    names: fn() -> Result<Vec<String>, DeviceError>,
    discover: fn(first: usize, probe: bool) -> Result<Vec<AnyDevice>, DeviceError>,
    open: fn(first: usize, number: usize, probe: bool) -> Result<AnyDevice, DeviceError>,
    for_builds: Option<fn(first: usize, number: usize, profile: DeviceProfile) -> AnyDevice>,
}

/// The backends, in list order.
const BACKENDS: &[Backend] = &[OPENCL, CUDA];

const OPENCL: Backend = Backend {
    api: Api::OpenCl,
    names: ndtune_cl::names,
    discover: |first, probe| {
        debug_assert_eq!(first, 0, "OpenCL is first in the list");
        let found = if probe {
            ndtune_cl::discover()
        } else {
            ndtune_cl::discover_unprobed()
        };
        Ok(found?
            .into_iter()
            .map(|d| Arc::new(d) as AnyDevice)
            .collect())
    },
    open: |_, number, probe| {
        let device = if probe {
            ndtune_cl::open(number)
        } else {
            ndtune_cl::attach(number)
        };
        Ok(Arc::new(device?))
    },
    // An OpenCL build is the driver's, in a context on the device.
    for_builds: None,
};

const CUDA: Backend = Backend {
    api: Api::Cuda,
    names: ndtune_cuda::names,
    discover: |first, _| {
        Ok(ndtune_cuda::discover(first)?
            .into_iter()
            .map(|d| Arc::new(d) as AnyDevice)
            .collect())
    },
    open: |first, number, _| Ok(Arc::new(ndtune_cuda::open(first + number, number)?)),
    for_builds: Some(|first, number, profile| {
        Arc::new(ndtune_cuda::for_builds(first + number, number, profile))
    }),
};

/// Every device of every backend, and the backends that gave none, with why.
pub struct Discovery {
    pub devices: Vec<AnyDevice>,
    pub unavailable: Vec<DeviceError>,
}

/// Every backend's devices, each with its whole profile (`probe`) or as attached; an error only
/// where no backend has a device (the first backend's reason).
pub fn discover_all(probe: bool) -> Result<Discovery, DeviceError> {
    let mut found = Discovery {
        devices: Vec::new(),
        unavailable: Vec::new(),
    };
    for backend in BACKENDS {
        match (backend.discover)(found.devices.len(), probe) {
            Ok(devices) => found.devices.extend(devices),
            Err(e) => found.unavailable.push(e),
        }
    }
    if found.devices.is_empty() {
        return Err(found.unavailable.remove(0));
    }
    Ok(found)
}

/// Every device, each read whole (see [`discover_all`]).
pub fn discover() -> Result<Vec<AnyDevice>, DeviceError> {
    discover_all(true).map(|d| d.devices)
}

/// Every device, read without building or making any context: enough to list or compare them.
pub fn discover_unprobed() -> Result<Vec<AnyDevice>, DeviceError> {
    discover_all(false).map(|d| d.devices)
}

/// A device as the list names it, before it is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub api: Api,
    /// Where it is in its API's own list.
    pub at: Address,
}

/// Every device's name and API, in the list's order, read without opening anything: enough to
/// resolve a selector before opening only the devices it picks.
pub fn listing() -> Result<Vec<Listed>, DeviceError> {
    let mut listed = Vec::new();
    let mut first_error = None;
    for backend in BACKENDS {
        match (backend.names)() {
            Ok(names) => {
                listed.extend(names.into_iter().enumerate().map(|(number, name)| Listed {
                    name,
                    api: backend.api,
                    at: Address {
                        api: backend.api,
                        number,
                    },
                }))
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if listed.is_empty() => Err(e),
        _ => Ok(listed),
    }
}

/// Loads and initialises `api`'s driver, as the first use of any of its devices does (the list
/// of names is its cheapest use): a measurement worker started before its job is known does
/// this while the tuner finds the device (`ndtune_bench::supervisor::Warming`). A driver that fails
/// says why when the job opens its device.
pub fn warm(api: Api) {
    let _ = (backend(api).names)();
}

/// Device `index` of the list with its whole profile, reading only that device.
pub fn open(index: usize) -> Result<AnyDevice, DeviceError> {
    open_with(index, true)
}

/// Device `index` of the list for a process told which device to work on (the measurement and
/// build workers): its profile read without the probe build, as the tuner discovered it once.
pub fn attach(index: usize) -> Result<AnyDevice, DeviceError> {
    open_with(index, false)
}

/// Device `index` of the list, at `at` in its API's own list: [`attach`] for a process told both,
/// which loads that API alone (a CUDA worker never loads OpenCL's drivers to count their devices).
pub fn attach_at(index: usize, at: Address) -> Result<AnyDevice, DeviceError> {
    (backend(at.api).open)(index - at.number, at.number, false)
}

fn backend(api: Api) -> &'static Backend {
    BACKENDS
        .iter()
        .find(|b| b.api == api)
        .expect("every API has its backend")
}

/// Device `index` at `at` for a build worker, given the profile the campaign read: where the
/// backend builds without its driver (CUDA's NVRTC compiles for the profile's architecture),
/// made from the profile, so that the driver is not initialised at all (a build worker that
/// does so costs the host's cores while the measurement worker starts); else [`attach_at`].
pub fn attach_for_builds(
    index: usize,
    at: Address,
    profile: &DeviceProfile,
) -> Result<AnyDevice, DeviceError> {
    match backend(at.api).for_builds {
        Some(made) => Ok(made(index - at.number, at.number, profile.clone())),
        None => attach_at(index, at),
    }
}

fn open_with(index: usize, probe: bool) -> Result<AnyDevice, DeviceError> {
    let mut first = 0;
    let mut first_error = None;
    for backend in BACKENDS {
        let count = match (backend.names)() {
            Ok(names) => names.len(),
            Err(e) => {
                first_error.get_or_insert(e);
                0
            }
        };
        if index < first + count {
            return (backend.open)(first, index - first, probe);
        }
        first += count;
    }
    match first_error {
        Some(e) if first == 0 => Err(e),
        _ => Err(DeviceError::NoDevice {
            index,
            found: first,
        }),
    }
}

/// Picks one of `devices` (in list order) by selector: an index or part of a name, `D:K/N` for
/// sub-device K of N equal parts of device D.
pub fn pick(devices: &[AnyDevice], selector: &str) -> Result<AnyDevice, String> {
    let names: Vec<&str> = devices.iter().map(|d| d.profile().name.as_str()).collect();
    let parsed = selector
        .parse::<ndtune_device::Selector>()
        .map_err(|e| e.to_string())?;
    let device = &devices[parsed.pick(&names).map_err(|e| e.to_string())?];
    match parsed {
        ndtune_device::Selector::Sub { k, n, .. } => device
            .sub_device(k, n)
            .map_err(|e| format!("sub-device {selector}: {e}")),
        _ => Ok(device.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceProfile {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/profiles/nvidia-h100-cuda.json");
        DeviceProfile::load(&path).expect("the saved H100 profile loads")
    }

    /// A CUDA build worker's device is the campaign's profile as given, made without the
    /// driver (this machine may have none: CI has no GPU).
    #[test]
    fn a_cuda_device_to_build_for_is_the_profile_given_without_the_driver() {
        let at = Address {
            api: Api::Cuda,
            number: 1,
        };
        let device = attach_for_builds(3, at, &h100()).expect("made without the driver");
        assert_eq!(device.profile(), &h100());
        assert_eq!(
            (device.api(), device.index(), device.address()),
            (Api::Cuda, 3, at)
        );
    }

    /// An OpenCL build needs the driver's context: its build workers open the device itself,
    /// whatever profile they are given.
    #[test]
    fn an_opencl_device_to_build_for_is_the_device_itself() {
        let at = Address {
            api: Api::OpenCl,
            number: 0,
        };
        let device = attach_for_builds(0, at, &h100()).expect("PoCL's device 0");
        assert_eq!(device.api(), Api::OpenCl);
        assert_ne!(device.profile(), &h100());
        assert_eq!(device.profile(), attach_at(0, at).unwrap().profile());
    }
}
