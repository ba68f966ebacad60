//! The only crate of ndtune that links OpenCL.
//!
//! It is the OpenCL implementation of the device backend boundary ([`ndtune_device::backend`]):
//! device discovery ([`discover`]: every platform, every device, in a stable order, each read
//! into an [`ndtune_device::DeviceProfile`] with `clGetDeviceInfo`), program builds on one device
//! with their full build log on failure, the per-kernel limits of a built kernel (from
//! `clGetKernelWorkGroupInfo`), sessions ([`Session`]) and the mapping of OpenCL error codes to
//! names ([`error_name`]).
//!
//! libOpenCL is loaded at run time (`opencl3`'s default `dynamic` feature), so a machine without
//! an OpenCL loader or without any registered platform gets [`DeviceError::Unavailable`], whose message
//! says how to install one, instead of a loader failure at start-up.

use ndtune_device::backend::{Address, AnyDevice, Api, DeviceError, Fault, KernelLimits};
use ndtune_device::{DeviceProfile, DeviceType, PciAddress};
use opencl3::context::Context;
use opencl3::device::{
    Device, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
};
use opencl3::error_codes::{
    ClError as RawError, CL_DEVICE_NOT_FOUND, CL_INVALID_KERNEL_NAME, CL_PLATFORM_NOT_FOUND_KHR,
    DLOPEN_FUNCTION_NOT_AVAILABLE, DLOPEN_RUNTIME_LOAD_FAILED,
};
use opencl3::kernel::Kernel;
use opencl3::platform::{get_platforms, Platform};
use opencl3::program::Program;
use opencl3::types::cl_device_id;
use std::sync::{Mutex, PoisonError};

mod programs;
mod session;
pub use session::Session;
use std::sync::Arc;

/// How to get an OpenCL platform; part of [`DeviceError::Unavailable`]'s message.
pub const INSTALL_HINT: &str = "install an OpenCL platform: on Debian/Ubuntu, \
`sudo apt-get install pocl-opencl-icd ocl-icd-opencl-dev` gives a CPU device (PoCL) and the \
libOpenCL.so loader; GPU drivers register their own ICD file in /etc/OpenCL/vendors \
(check with `clinfo -l`)";

/// The kernel built once per device during discovery to read
/// `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE`.
const PROBE_SOURCE: &str =
    "__kernel void ndtune_probe(__global float *x) { size_t i = get_global_id(0); x[i] = 2.0f * x[i]; }";
const PROBE_KERNEL: &str = "ndtune_probe";

/// Kernel-argument errors of a launch: the spec's arguments do not fit the kernel.
const ARGUMENT_ERRORS: [i32; 3] = [
    -52, /* CL_INVALID_KERNEL_ARGS */
    -49, /* CL_INVALID_ARG_INDEX */
    -51, /* CL_INVALID_ARG_SIZE */
];

/// Wraps a failed `opencl3` call as [`DeviceError::Failed`].
fn api(call: &'static str) -> impl FnOnce(RawError) -> DeviceError {
    move |e| DeviceError::Failed {
        call,
        code: e.0,
        name: error_name(e.0).to_string(),
        fault: if ARGUMENT_ERRORS.contains(&e.0) {
            Fault::Arguments
        } else {
            Fault::Call
        },
    }
}

/// No usable OpenCL platform: libOpenCL could not be loaded, no ICD is registered, or the
/// registered platforms have no devices.
fn no_platform(reason: String) -> DeviceError {
    DeviceError::Unavailable {
        api: Api::OpenCl,
        reason,
        hint: INSTALL_HINT,
    }
}

/// The symbolic name of an OpenCL error code (`-5` is `"CL_OUT_OF_RESOURCES"`), including the
/// `cl_khr_icd` and runtime-loader codes; `"UNKNOWN_OPENCL_ERROR"` for codes OpenCL does not define.
pub fn error_name(code: i32) -> &'static str {
    match opencl3::error_codes::error_text(code) {
        "UNKNOWN_ERROR" => "UNKNOWN_OPENCL_ERROR",
        name => name,
    }
}

/// One OpenCL device as discovery found it.
#[derive(Debug, Clone)]
pub struct ClDevice {
    /// Global index across all platforms, in discovery order (platform order, then device order).
    index: usize,
    /// Everything `clGetDeviceInfo` reported that ndtune uses.
    profile: DeviceProfile,
    /// Index of the device's platform in `clGetPlatformIDs` order.
    platform_index: usize,
    /// For a sub-device, which part of how many of its parent (`D:K/N`).
    sub: Option<(usize, usize)>,
    device: Device,
    platform: Platform,
    /// Keeps a sub-device's OpenCL handle alive (released when the last clone goes).
    _sub_device: Option<std::sync::Arc<opencl3::device::SubDevice>>,
}

/// Finds every device of every OpenCL platform, in `clGetPlatformIDs` then `clGetDeviceIDs`
/// order, and reads each one's [`DeviceProfile`]. Its preferred work-group size multiple comes
/// from the device query of OpenCL 3.0 (`CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE`); where
/// the driver does not answer it, a trivial kernel is built on the device to read the kernel's.
///
/// Returns [`DeviceError::Unavailable`] when libOpenCL cannot be loaded, no platform is registered,
/// or no platform has a device.
pub fn discover() -> Result<Vec<ClDevice>, DeviceError> {
    discover_with(true)
}

/// Every device as [`discover`] finds them, each profile read without the probe build (its
/// preferred work-group size multiple is 0 where the driver does not answer the device query):
/// no device context is made, so listing or comparing
/// the devices of a host costs no more with many GPUs (NVIDIA's driver makes contexts one at a
/// time, host-wide). Open the one to tune with [`open`].
pub fn discover_unprobed() -> Result<Vec<ClDevice>, DeviceError> {
    discover_with(false)
}

fn discover_with(probe: bool) -> Result<Vec<ClDevice>, DeviceError> {
    let mut devices = Vec::new();
    for (platform_index, platform, platform_name, ids) in enumerate_devices()? {
        for id in ids {
            let device = Device::new(id);
            let profile = read_profile(&device, &platform_name, probe)?;
            devices.push(ClDevice {
                index: devices.len(),
                profile,
                platform_index,
                sub: None,
                device,
                platform,
                _sub_device: None,
            });
        }
    }
    if devices.is_empty() {
        return Err(no_platform("the OpenCL platforms report no device".into()));
    }
    Ok(devices)
}

/// The name of every device, in [`discover`]'s order, read without building anything: enough
/// to resolve a device selector before opening only the devices it picks ([`open`]).
pub fn names() -> Result<Vec<String>, DeviceError> {
    let mut names = Vec::new();
    for (_, _, _, ids) in enumerate_devices()? {
        for id in ids {
            names.push(clean(
                Device::new(id).name().map_err(api("clGetDeviceInfo"))?,
            ));
        }
    }
    if names.is_empty() {
        return Err(no_platform("the OpenCL platforms report no device".into()));
    }
    Ok(names)
}

/// Device `index` in [`discover`]'s order with its whole profile, reading only that device
/// (discovering every device would build a probe kernel on each).
pub fn open(index: usize) -> Result<ClDevice, DeviceError> {
    open_device(index, true)
}

/// Device `index` in [`discover`]'s order, for a process told which device to work on (the
/// measurement and build workers): its profile is read without the probe build, so the
/// preferred work-group size multiple is 0 where the driver does not answer the device query.
/// The device is discovered once, by the tuner.
pub fn attach(index: usize) -> Result<ClDevice, DeviceError> {
    open_device(index, false)
}

fn open_device(index: usize, probe: bool) -> Result<ClDevice, DeviceError> {
    let mut seen = 0;
    for (platform_index, platform, platform_name, ids) in enumerate_devices()? {
        if let Some(&id) = ids.get(index - seen) {
            let device = Device::new(id);
            let profile = read_profile(&device, &platform_name, probe)?;
            return Ok(ClDevice {
                index,
                profile,
                platform_index,
                sub: None,
                device,
                platform,
                _sub_device: None,
            });
        }
        seen += ids.len();
    }
    Err(no_platform(format!(
        "there is no device {index} (found {seen})"
    )))
}

/// Platforms with their names and device ids, in discovery order.
type Enumeration = Vec<(usize, Platform, String, Vec<cl_device_id>)>;

/// Lists platforms and their devices under a process-wide lock.
///
/// The lock works around a PoCL race: `pocl_init_devices` returns success at once, before any
/// device exists, to a thread that calls it while another thread's first initialisation is
/// still running (a guard against recursion through hwloc, read outside PoCL's own lock). That
/// thread's `clGetDeviceIDs` then fails with `CL_DEVICE_NOT_FOUND`, so concurrent first calls
/// would see no device.
fn enumerate_devices() -> Result<Enumeration, DeviceError> {
    static ENUMERATION: Mutex<()> = Mutex::new(());
    let _guard = ENUMERATION.lock().unwrap_or_else(PoisonError::into_inner);
    prefer_runtime_loader_names();
    let platforms = get_platforms().map_err(|e| no_platform_error(e.0))?;
    if platforms.is_empty() {
        return Err(no_platform("clGetPlatformIDs returned no platform".into()));
    }
    let mut out = Vec::with_capacity(platforms.len());
    for (platform_index, platform) in platforms.into_iter().enumerate() {
        let name = clean(platform.name().map_err(api("clGetPlatformInfo"))?);
        let ids = match platform.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            // A platform whose driver sees no hardware reports no device, not a failure.
            Err(e) if e.0 == CL_DEVICE_NOT_FOUND => Vec::new(),
            Err(e) => return Err(api("clGetDeviceIDs")(e)),
        };
        out.push((platform_index, platform, name, ids));
    }
    Ok(out)
}

/// cl3 loads `libOpenCL.so`, a name only the development package provides; machines with just
/// the runtime loader have `libOpenCL.so.1`. Unless the user chose a library, try both, through
/// the `OPENCL_DYLIB_PATH` list cl3 reads. Runs under the enumeration lock, before the first
/// OpenCL call of the process loads the library.
fn prefer_runtime_loader_names() {
    if std::env::var_os("OPENCL_DYLIB_PATH").is_none() {
        std::env::set_var("OPENCL_DYLIB_PATH", "libOpenCL.so;libOpenCL.so.1");
    }
}

fn no_platform_error(code: i32) -> DeviceError {
    let reason = match code {
        DLOPEN_RUNTIME_LOAD_FAILED => "the OpenCL loader (libOpenCL.so or libOpenCL.so.1) could \
             not be loaded; it comes with ocl-icd-libopencl1, or set OPENCL_DYLIB_PATH to its path"
            .to_string(),
        DLOPEN_FUNCTION_NOT_AVAILABLE => "the loaded libOpenCL has no clGetPlatformIDs".to_string(),
        CL_PLATFORM_NOT_FOUND_KHR => {
            "clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR, no ICD is registered".to_string()
        }
        code => format!("clGetPlatformIDs failed: {} ({code})", error_name(code)),
    };
    no_platform(reason)
}

/// OpenCL strings end in NUL; some drivers pad them with spaces as well.
fn clean(s: String) -> String {
    s.trim_end_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string()
}

fn device_type(bits: u64) -> DeviceType {
    if bits & CL_DEVICE_TYPE_GPU != 0 {
        DeviceType::Gpu
    } else if bits & CL_DEVICE_TYPE_ACCELERATOR != 0 {
        DeviceType::Accelerator
    } else if bits & CL_DEVICE_TYPE_CPU != 0 {
        DeviceType::Cpu
    } else {
        DeviceType::Custom
    }
}

/// The [`DeviceProfile`] of a device a program found itself (the C API receives a
/// `cl_device_id`): what [`discover`] reads, its platform's name through `CL_DEVICE_PLATFORM`.
/// `id` must be a valid device of the libOpenCL this process loaded.
pub fn profile_of(id: cl_device_id) -> Result<DeviceProfile, DeviceError> {
    prefer_runtime_loader_names();
    let device = Device::new(id);
    let platform = Platform::new(device.platform().map_err(api("clGetDeviceInfo"))?);
    let platform_name = clean(platform.name().map_err(api("clGetPlatformInfo"))?);
    read_profile(&device, &platform_name, true)
}

/// A device's profile. Its preferred work-group size multiple is the device query's (OpenCL
/// 3.0); a driver that does not answer it leaves it 0, and with `probe` a trivial kernel is
/// built to read the kernel's instead.
fn read_profile(
    device: &Device,
    platform_name: &str,
    probe: bool,
) -> Result<DeviceProfile, DeviceError> {
    let info = api("clGetDeviceInfo");
    let dims = device.max_work_item_dimensions().map_err(info)? as usize;
    let mut max_work_item_sizes: Vec<u64> = device
        .max_work_item_sizes()
        .map_err(api("clGetDeviceInfo"))?
        .into_iter()
        .map(|s| s as u64)
        .collect();
    max_work_item_sizes.truncate(dims);
    let mut profile = DeviceProfile {
        name: clean(device.name().map_err(api("clGetDeviceInfo"))?),
        vendor: clean(device.vendor().map_err(api("clGetDeviceInfo"))?),
        device_type: device_type(device.dev_type().map_err(api("clGetDeviceInfo"))?),
        version: clean(device.version().map_err(api("clGetDeviceInfo"))?),
        driver_version: clean(device.driver_version().map_err(api("clGetDeviceInfo"))?),
        platform_name: platform_name.to_string(),
        compute_units: device
            .max_compute_units()
            .map_err(api("clGetDeviceInfo"))?
            .into(),
        max_clock_frequency: device
            .max_clock_frequency()
            .map_err(api("clGetDeviceInfo"))?
            .into(),
        max_work_group_size: device
            .max_work_group_size()
            .map_err(api("clGetDeviceInfo"))? as u64,
        max_work_item_sizes,
        local_mem_size: device.local_mem_size().map_err(api("clGetDeviceInfo"))?,
        global_mem_size: device.global_mem_size().map_err(api("clGetDeviceInfo"))?,
        global_mem_cache_size: device
            .global_mem_cache_size()
            .map_err(api("clGetDeviceInfo"))?,
        global_mem_cacheline_size: device
            .global_mem_cacheline_size()
            .map_err(api("clGetDeviceInfo"))?
            .into(),
        max_mem_alloc_size: device
            .max_mem_alloc_size()
            .map_err(api("clGetDeviceInfo"))?,
        max_constant_buffer_size: device
            .max_constant_buffer_size()
            .map_err(api("clGetDeviceInfo"))?,
        // An older driver refuses the query (CL_INVALID_VALUE): 0, probed below where asked.
        preferred_work_group_size_multiple: device
            .preferred_work_group_size_multiple()
            .map_or(0, |m| m as u64),
        extensions: device
            .extensions()
            .map_err(api("clGetDeviceInfo"))?
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        cuda: None,
    };
    if probe && !is_whole(&profile) {
        let probe = kernel_limits_on(device, &profile.name, PROBE_SOURCE, PROBE_KERNEL, "")?;
        profile.preferred_work_group_size_multiple = probe.preferred_work_group_size_multiple;
    }
    Ok(profile)
}

/// Whether a profile is whole, needing no probe build: its preferred work-group size multiple
/// is known (read from OpenCL 3.0's device query, probed, or handed over by the process that
/// read it).
fn is_whole(profile: &DeviceProfile) -> bool {
    profile.preferred_work_group_size_multiple > 0
}

impl ClDevice {
    /// The `opencl3` device handle.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The raw `cl_device_id`.
    pub fn id(&self) -> cl_device_id {
        self.device.id()
    }

    /// The `opencl3` handle of the device's platform.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }
}

impl ndtune_device::backend::Device for ClDevice {
    fn api(&self) -> Api {
        Api::OpenCl
    }

    fn index(&self) -> usize {
        self.index
    }

    fn platform_index(&self) -> usize {
        self.platform_index
    }

    /// OpenCL's devices come first in the one list: its number is the index.
    fn address(&self) -> Address {
        Address {
            api: Api::OpenCl,
            number: self.index,
        }
    }

    fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    fn sub(&self) -> Option<(usize, usize)> {
        self.sub
    }

    /// The OpenCL C version the device compiles (`CL_DEVICE_OPENCL_C_VERSION`) and its
    /// platform's version (`CL_PLATFORM_VERSION`), as the driver words them: what Kernel Tuner's
    /// `env` names `opencl_c_version` and `platform_version`.
    fn versions(&self) -> Result<(String, String), DeviceError> {
        let c = self
            .device
            .opencl_c_version()
            .map_err(api("clGetDeviceInfo"))?;
        let platform = self.platform.version().map_err(api("clGetPlatformInfo"))?;
        Ok((clean(c), clean(platform)))
    }

    /// Whether the driver keeps what it builds in a cache of its own on disk, where another
    /// process's build of the same source and options for this device finds it (and PoCL, the
    /// work-group functions its launches compiled): PoCL's kernel cache, unless
    /// `POCL_KERNEL_CACHE=0` turns it off.
    fn driver_caches_builds(&self) -> bool {
        self.profile.platform_name == "Portable Computing Language"
            && std::env::var("POCL_KERNEL_CACHE").map_or(true, |v| v.trim() != "0")
    }

    /// This device with its whole profile: an attached device ([`attach`],
    /// [`discover_unprobed`]) gets its preferred work-group size multiple from the probe build
    /// (a context); a probed one is returned as it is.
    fn probed(&self) -> Result<AnyDevice, DeviceError> {
        if is_whole(&self.profile) {
            return Ok(Arc::new(self.clone()));
        }
        let limits = kernel_limits_on(
            &self.device,
            &self.profile.name,
            PROBE_SOURCE,
            PROBE_KERNEL,
            "",
        )?;
        let mut profile = self.profile.clone();
        profile.preferred_work_group_size_multiple = limits.preferred_work_group_size_multiple;
        Ok(self.with_profile(profile))
    }

    /// This device with `profile`, read whole by another process that opened it (a pool hands
    /// its workers their devices' profiles, so that they make no context of their own for it).
    fn with_profile(&self, profile: DeviceProfile) -> AnyDevice {
        Arc::new(ClDevice {
            profile,
            ..self.clone()
        })
    }

    /// Sub-device `k` of `n` partitions of this device with equal compute units
    /// (`clCreateSubDevices` with `CL_DEVICE_PARTITION_EQUALLY`), so that co-execution can be
    /// tried on one CPU. Its profile is the sub-device's own (fewer compute units).
    fn sub_device(&self, k: usize, n: usize) -> Result<AnyDevice, DeviceError> {
        use opencl3::device::CL_DEVICE_PARTITION_EQUALLY;
        let units = self.profile.compute_units as usize;
        if n == 0 || k >= n || units < n {
            return Err(DeviceError::InvalidInput {
                what: "sub-device: D:K/N needs K < N <= compute units",
            });
        }
        let props = [CL_DEVICE_PARTITION_EQUALLY, (units / n) as isize, 0];
        let mut subs = self
            .device
            .create_sub_devices(&props)
            .map_err(api("clCreateSubDevices"))?;
        if k >= subs.len() {
            return Err(DeviceError::InvalidInput {
                what: "sub-device: the device made fewer partitions",
            });
        }
        let sub = std::sync::Arc::new(subs.swap_remove(k));
        let device = Device::new(sub.id());
        let mut profile = read_profile(
            &device,
            &self.profile.platform_name,
            is_whole(&self.profile),
        )?;
        // Not which part: equal parts are one kind of device (one fingerprint), so they share
        // results and campaigns (`ndtune tune --pool`).
        profile.name = format!("{} [part of {n}]", profile.name);
        Ok(Arc::new(ClDevice {
            index: self.index,
            profile,
            platform_index: self.platform_index,
            sub: Some((k, n)),
            device,
            platform: self.platform,
            _sub_device: Some(sub),
        }))
    }

    /// Where the device sits on the PCI bus, where its driver tells it: `cl_khr_pci_bus_info`,
    /// else NVIDIA's `cl_nv_device_attribute_query` (`CL_DEVICE_PCI_BUS_ID_NV`,
    /// `CL_DEVICE_PCI_SLOT_ID_NV` and, on newer drivers, `CL_DEVICE_PCI_DOMAIN_ID_NV`).
    fn pci_address(&self) -> Option<PciAddress> {
        const PCI_BUS_INFO_KHR: u32 = 0x410F;
        const PCI_BUS_ID_NV: u32 = 0x4008;
        const PCI_SLOT_ID_NV: u32 = 0x4009;
        const PCI_DOMAIN_ID_NV: u32 = 0x400A;
        let has = |ext: &str| self.profile.extensions.iter().any(|e| e == ext);
        let words = |param: u32| -> Option<Vec<u32>> {
            let bytes = opencl3::device::get_device_data(self.id(), param).ok()?;
            Some(
                bytes
                    .chunks_exact(4)
                    .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
                    .collect(),
            )
        };
        if has("cl_khr_pci_bus_info") {
            if let Some(&[domain, bus, device, _function]) = words(PCI_BUS_INFO_KHR).as_deref() {
                return Some(PciAddress {
                    domain: Some(domain),
                    bus,
                    device,
                });
            }
        }
        if !has("cl_nv_device_attribute_query") {
            return None;
        }
        let one = |param| words(param).and_then(|w| w.first().copied());
        Some(PciAddress {
            domain: one(PCI_DOMAIN_ID_NV),
            bus: one(PCI_BUS_ID_NV)?,
            device: one(PCI_SLOT_ID_NV)?,
        })
    }

    /// How many devices of the same name come before this one on its platform: with the name,
    /// what tells this device apart in another library's list where no PCI address is known.
    fn same_name_before(&self) -> usize {
        let Ok(platforms) = enumerate_devices() else {
            return 0;
        };
        let Some((_, _, _, ids)) = platforms
            .into_iter()
            .find(|(i, ..)| *i == self.platform_index)
        else {
            return 0;
        };
        ids.iter()
            .take_while(|&&id| id != self.device.id())
            .filter(|&&id| {
                Device::new(id)
                    .name()
                    .is_ok_and(|n| clean(n) == self.profile.name)
            })
            .count()
    }

    /// Builds `source` with `build_options` for this device alone (in a context of its own) and
    /// returns `kernel_name`'s limits from `clGetKernelWorkGroupInfo`.
    ///
    /// A failed build is [`DeviceError::Build`] with the full build log; a kernel the program does not
    /// define is [`DeviceError::NoKernel`].
    fn kernel_limits(
        &self,
        source: &str,
        kernel_name: &str,
        build_options: &str,
    ) -> Result<KernelLimits, DeviceError> {
        kernel_limits_on(
            &self.device,
            &self.profile.name,
            source,
            kernel_name,
            build_options,
        )
    }

    fn session(&self) -> Result<Box<dyn ndtune_device::backend::Session>, DeviceError> {
        Ok(Box::new(Session::new(self)?))
    }
}

fn kernel_limits_on(
    device: &Device,
    device_name: &str,
    source: &str,
    kernel_name: &str,
    build_options: &str,
) -> Result<KernelLimits, DeviceError> {
    // opencl3 panics on interior NULs in these strings; refuse them first.
    for (what, s) in [
        ("kernel source: it contains a NUL byte", source),
        ("build options: they contain a NUL byte", build_options),
        ("kernel name: it contains a NUL byte", kernel_name),
    ] {
        if s.contains('\0') {
            return Err(DeviceError::InvalidInput { what });
        }
    }
    let id = device.id();
    let context = Context::from_device(device).map_err(api("clCreateContext"))?;
    let mut program =
        Program::create_from_source(&context, source).map_err(api("clCreateProgramWithSource"))?;
    if let Err(e) = program.build(&[id], build_options) {
        if is_build_code(e.0) {
            let log = program.get_build_log(id).unwrap_or_default();
            return Err(build_error(device_name, build_options, e.0, log));
        }
        return Err(api("clBuildProgram")(e));
    }
    let kernel = match Kernel::create(&program, kernel_name) {
        Ok(k) => k,
        Err(e) if e.0 == CL_INVALID_KERNEL_NAME => {
            return Err(DeviceError::NoKernel {
                name: kernel_name.to_string(),
                available: program.kernel_names().to_string(),
            })
        }
        Err(e) => return Err(api("clCreateKernel")(e)),
    };
    limits_of(&kernel, id)
}

/// `clGetKernelWorkGroupInfo` of a built kernel on device `id`.
fn limits_of(kernel: &Kernel, id: cl_device_id) -> Result<KernelLimits, DeviceError> {
    let info = || api("clGetKernelWorkGroupInfo");
    Ok(KernelLimits {
        work_group_size: kernel.get_work_group_size(id).map_err(info())? as u64,
        local_mem_size: kernel.get_local_mem_size(id).map_err(info())?,
        private_mem_size: kernel.get_private_mem_size(id).map_err(info())?,
        preferred_work_group_size_multiple: kernel
            .get_work_group_size_multiple(id)
            .map_err(info())? as u64,
    })
}

/// Codes with which `clBuildProgram` reports a problem of the program or its options.
fn is_build_code(code: i32) -> bool {
    use opencl3::error_codes::{CL_BUILD_PROGRAM_FAILURE, CL_INVALID_BUILD_OPTIONS};
    code == CL_BUILD_PROGRAM_FAILURE || code == CL_INVALID_BUILD_OPTIONS
}

fn build_error(device: &str, options: &str, code: i32, log: String) -> DeviceError {
    DeviceError::Build {
        device: device.to_string(),
        options: options.to_string(),
        code,
        name: error_name(code).to_string(),
        log: clean(log),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_device::backend::Device as _;

    fn first_device() -> ClDevice {
        discover()
            .expect("these tests need an OpenCL device (PoCL)")
            .remove(0)
    }

    #[test]
    fn names_and_attach_read_what_discover_reads_without_building() {
        let devices = discover().unwrap();
        let found: Vec<String> = devices.iter().map(|d| d.profile().name.clone()).collect();
        assert_eq!(names().unwrap(), found);
        let (attached, found) = (attach(0).unwrap().profile, &devices[0].profile);
        // PoCL 3 answers the device query of the preferred work-group size multiple, so the
        // profile is whole with nothing built.
        assert!(attached.preferred_work_group_size_multiple > 0);
        assert_eq!(attached, *found);
        assert_eq!(open(0).unwrap().profile, *found);
    }

    #[test]
    fn discover_finds_valid_profiles() {
        let devices = discover().unwrap();
        assert!(!devices.is_empty());
        for (i, d) in devices.iter().enumerate() {
            let p = &d.profile();
            assert_eq!(d.index, i);
            p.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert!(!p.name.is_empty() && !p.version.is_empty() && !p.platform_name.is_empty());
            assert!(!p.name.ends_with(['\0', ' ']), "{:?}", p.name);
            assert!(p.max_work_group_size > 0);
            assert!((1..=3).contains(&p.max_work_item_sizes.len()));
            assert!(p.preferred_work_group_size_multiple > 0);
            assert!(p.global_mem_size >= p.max_mem_alloc_size && p.max_mem_alloc_size > 0);
            assert!(p
                .extensions
                .iter()
                .all(|e| !e.is_empty() && !e.contains(' ')));
            assert!(p.version.starts_with("OpenCL "), "{:?}", p.version);
        }
        // Discovery order is stable.
        let again: Vec<_> = discover()
            .unwrap()
            .into_iter()
            .map(|d| d.profile().clone())
            .collect();
        let first: Vec<_> = devices.into_iter().map(|d| d.profile().clone()).collect();
        assert_eq!(first, again);
    }

    #[test]
    fn profile_of_an_id_is_what_discovery_reads() {
        for d in discover().unwrap() {
            assert_eq!(profile_of(d.id()).unwrap(), *d.profile());
        }
    }

    #[test]
    fn trivial_kernel_limits_fit_the_device() {
        let d = first_device();
        let src = "__kernel void add(__global float *a, __global const float *b) \
                   { size_t i = get_global_id(0); a[i] += b[i]; }";
        let k = d.kernel_limits(src, "add", "-cl-mad-enable").unwrap();
        assert!(k.work_group_size > 0);
        assert!(
            k.work_group_size <= d.profile().max_work_group_size,
            "{k:?}"
        );
        assert!(k.preferred_work_group_size_multiple > 0);
    }

    #[test]
    fn static_local_memory_and_defines_are_seen() {
        let d = first_device();
        let src = "__kernel void k(__global float *a) { __local float t[TILE]; \
                   t[get_local_id(0)] = a[get_global_id(0)]; barrier(CLK_LOCAL_MEM_FENCE); \
                   a[get_global_id(0)] = t[0]; }";
        let k = d.kernel_limits(src, "k", "-D TILE=256").unwrap();
        assert!(k.local_mem_size >= 256 * 4, "{k:?}");
    }

    #[test]
    fn syntax_error_returns_the_build_log() {
        let d = first_device();
        let err = d
            .kernel_limits(
                "__kernel void broken(__global float *a) { a[0] = ; }",
                "broken",
                "",
            )
            .unwrap_err();
        match &err {
            DeviceError::Build { log, code, .. } => {
                assert!(!log.trim().is_empty());
                assert!(log.contains("error"), "{log}");
                assert_eq!(*code, opencl3::error_codes::CL_BUILD_PROGRAM_FAILURE);
            }
            other => panic!("expected a build error, got {other:?}"),
        }
        assert!(
            err.to_string().contains("CL_BUILD_PROGRAM_FAILURE"),
            "{err}"
        );
    }

    #[test]
    fn missing_define_is_a_build_error() {
        let d = first_device();
        let src = "__kernel void k(__global float *a) { a[0] = N; }";
        assert!(d.kernel_limits(src, "k", "-D N=1").is_ok());
        assert!(matches!(
            d.kernel_limits(src, "k", ""),
            Err(DeviceError::Build { .. })
        ));
    }

    #[test]
    fn unknown_kernel_name_is_no_kernel() {
        let d = first_device();
        let err = d
            .kernel_limits(
                "__kernel void real(__global int *a) { a[0] = 1; }",
                "nope",
                "",
            )
            .unwrap_err();
        match &err {
            DeviceError::NoKernel { name, available } => {
                assert_eq!(name, "nope");
                assert!(available.contains("real"), "{available}");
            }
            other => panic!("expected NoKernel, got {other:?}"),
        }
    }

    #[test]
    fn nul_in_options_is_refused_not_a_panic() {
        let d = first_device();
        let err = d
            .kernel_limits("__kernel void k() {}", "k", "-D A\0")
            .unwrap_err();
        assert!(matches!(err, DeviceError::InvalidInput { .. }), "{err:?}");
    }

    #[test]
    fn error_names() {
        assert_eq!(error_name(-5), "CL_OUT_OF_RESOURCES");
        assert_eq!(error_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
        assert_eq!(error_name(-11), "CL_BUILD_PROGRAM_FAILURE");
        assert_eq!(error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
        assert_eq!(error_name(12345), "UNKNOWN_OPENCL_ERROR");
        let e = no_platform_error(CL_PLATFORM_NOT_FOUND_KHR).to_string();
        assert!(
            e.contains("sudo apt-get install pocl-opencl-icd ocl-icd-opencl-dev"),
            "{e}"
        );
        assert!(e.contains("/etc/OpenCL/vendors"), "{e}");
    }

    #[test]
    fn device_type_bits() {
        assert_eq!(device_type(CL_DEVICE_TYPE_CPU), DeviceType::Cpu);
        assert_eq!(device_type(CL_DEVICE_TYPE_GPU | 1), DeviceType::Gpu);
        assert_eq!(
            device_type(CL_DEVICE_TYPE_ACCELERATOR),
            DeviceType::Accelerator
        );
        assert_eq!(device_type(1 << 4), DeviceType::Custom);
    }

    #[test]
    fn concurrent_discovery_agrees() {
        // Regression test for PoCL's first-initialisation race (see `enumerate_devices`).
        let barrier = std::sync::Barrier::new(6);
        let counts: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        discover().map(|d| d.len()).unwrap_or(0)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            counts[0] > 0 && counts.iter().all(|&c| c == counts[0]),
            "{counts:?}"
        );
    }

    #[test]
    fn devices_can_move_to_host_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ClDevice>();
    }
}
