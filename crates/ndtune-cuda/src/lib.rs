//! The only crate of ndtune that loads CUDA: the CUDA implementation of the device backend
//! boundary ([`ndtune_device::backend`]).
//!
//! It owns device discovery through the driver API (every CUDA device in ordinal order, each
//! read into a [`DeviceProfile`] from `cuDeviceGetAttribute`: threads per block, block and grid
//! dimensions, shared memory per block and its opt-in maximum, registers, warp size), NVRTC
//! builds into cubins for the device's architecture ([`nvrtc`]: no GPU context needed, so build
//! workers make none; the toolkit's nvcc for a source NVRTC refuses, [`nvcc`]), and sessions
//! ([`session`]: a context made when first needed, a stream, modules, buffers, launches timed by
//! CUDA events).
//!
//! `libcuda` and `libnvrtc` are loaded at run time (cudarc's dynamic loading), so ndtune builds
//! and runs where CUDA is absent: discovery then reports [`DeviceError::Unavailable`] with the
//! reason, and the other backends' devices are listed as before.

pub mod nvcc;
pub mod nvrtc;
pub mod session;

use cudarc::driver::sys::{self, CUdevice_attribute as Attr, CUresult};
use ndtune_device::backend::{Address, AnyDevice, Api, DeviceError, Fault, KernelLimits};
use ndtune_device::{CudaLimits, DeviceProfile, DeviceType, PciAddress};
use std::ffi::CStr;
use std::sync::{Arc, OnceLock};

/// How to get CUDA; part of [`DeviceError::Unavailable`]'s message.
pub const INSTALL_HINT: &str = "CUDA devices need NVIDIA's driver (libcuda.so.1) and, to build \
kernels, NVRTC (libnvrtc.so from the CUDA toolkit, found through LD_LIBRARY_PATH, CUDA_HOME or \
/usr/local/cuda; from Python also NVIDIA's package nvidia-cuda-nvrtc or nvidia-cuda-nvrtc-cu12)";

fn unavailable(reason: String) -> DeviceError {
    DeviceError::Unavailable {
        api: Api::Cuda,
        reason,
        hint: INSTALL_HINT,
    }
}

/// Errors after which a context can do nothing more: the process that holds it is replaced.
fn loses_context(result: CUresult) -> bool {
    use CUresult::*;
    matches!(
        result,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ECC_UNCORRECTABLE
            | CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

/// The driver's name of an error (`CUDA_ERROR_OUT_OF_MEMORY`).
pub fn error_name(result: CUresult) -> String {
    cudarc::driver::result::DriverError(result)
        .error_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{result:?}"))
}

/// A failed driver call as [`DeviceError::Failed`], with what it means for the context.
pub(crate) fn failed(call: &'static str, result: CUresult) -> DeviceError {
    DeviceError::Failed {
        call,
        code: result as i32,
        name: error_name(result),
        fault: if loses_context(result) {
            Fault::Lost
        } else {
            Fault::Call
        },
    }
}

/// `result` of driver call `call` as a `Result`.
pub(crate) fn check(call: &'static str, result: CUresult) -> Result<(), DeviceError> {
    match result {
        CUresult::CUDA_SUCCESS => Ok(()),
        other => Err(failed(call, other)),
    }
}

/// Loads one of `library`'s names as cudarc will ask for them, from the loader's path or from
/// the CUDA toolkit's folders, and keeps it loaded: cudarc's own load then finds it by its
/// soname instead of failing (which it does with a panic).
/// `Ok` names the file loaded; where the loader resolved a bare name, the file it chose (found
/// through `symbol`, one of the library's functions), else the name.
fn preload(library: &str, symbol: &CStr, folders: &[std::path::PathBuf]) -> Result<String, String> {
    let names = cudarc::get_lib_name_candidates(library);
    let mut tried = Vec::new();
    for name in &names {
        let mut paths = vec![std::path::PathBuf::from(name)];
        paths.extend(folders.iter().map(|f| f.join(name)));
        for path in paths {
            // SAFETY: loading NVIDIA's library runs its initialisers, which have no
            // preconditions; it stays loaded for the life of the process.
            match unsafe { libloading::Library::new(&path) } {
                Ok(lib) => {
                    let file = file_of(&lib, symbol).unwrap_or_else(|| path.display().to_string());
                    std::mem::forget(lib);
                    return Ok(file);
                }
                Err(e) => tried.push(e.to_string()),
            }
        }
    }
    Err(format!(
        "lib{library} could not be loaded ({})",
        tried.first().map_or("no name to try", String::as_str)
    ))
}

/// The file `lib` was loaded from, as the dynamic loader names the object that defines
/// `symbol`.
fn file_of(lib: &libloading::Library, symbol: &CStr) -> Option<String> {
    // SAFETY: the symbol's address is only read, never called, while `lib` is loaded; dladdr
    // fills `info`, whose file name points into the loader's own memory.
    unsafe {
        let address = *lib
            .get::<*const std::ffi::c_void>(symbol.to_bytes_with_nul())
            .ok()?;
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(address, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(
            CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// Toolkits installed as Python packages, which the Python extension names before anything of
/// CUDA is loaded ([`look_in_python_packages`]).
static PACKAGED_ROOTS: OnceLock<Vec<std::path::PathBuf>> = OnceLock::new();

/// Where NVIDIA's Python packages put a toolkit under a `sys.path` folder, newest first. CUDA
/// 13's packages (`pip install nvidia-cuda-nvrtc nvidia-cuda-nvcc ...`) share one root; CUDA
/// 12's (`nvidia-cuda-nvrtc-cu12`, which PyTorch's CUDA 12 builds bring) each have their own:
/// NVRTC in `cuda_nvrtc`, the runtime's headers in `cuda_runtime`.
const PACKAGED_LAYOUTS: [&str; 2] = ["nvidia/cu13", "nvidia/cuda_nvrtc"];

/// Makes the CUDA toolkits that Python packages installed under `folders` (each a `sys.path`
/// entry) roots of the toolkit, as Kernel Tuner's cuda-python finds NVRTC: every folder's CUDA
/// 13 root (`nvidia/cu13`) before any CUDA 12 one (`nvidia/cuda_nvrtc`). The first call counts;
/// it must come before the first build.
pub fn look_in_python_packages(folders: impl IntoIterator<Item = std::path::PathBuf>) {
    let folders: Vec<std::path::PathBuf> = folders.into_iter().collect();
    let roots = PACKAGED_LAYOUTS
        .iter()
        .flat_map(|layout| folders.iter().map(move |f| f.join(layout)))
        .filter(|root| root.is_dir())
        .collect();
    let _ = PACKAGED_ROOTS.set(roots);
}

/// Where the CUDA toolkit may be installed, in the order looked in: `CUDA_HOME`, `CUDA_PATH`,
/// `CUDA_ROOT`, the Python packages' ([`look_in_python_packages`]), then `/usr/local/cuda`.
pub fn toolkit_roots() -> Vec<std::path::PathBuf> {
    let mut roots: Vec<std::path::PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(std::env::var_os)
        .map(Into::into)
        .collect();
    roots.extend(PACKAGED_ROOTS.get().into_iter().flatten().cloned());
    roots.push("/usr/local/cuda".into());
    roots
}

/// Where the CUDA toolkit's libraries may be, beside the loader's own path: `lib64` under each
/// root, as NVIDIA's installers lay it out, then `lib`, as its PyPI packages do.
fn toolkit_folders() -> Vec<std::path::PathBuf> {
    toolkit_roots()
        .into_iter()
        .flat_map(|r| [r.join("lib64"), r.join("lib")])
        .collect()
}

/// The oldest driver whose calls this crate makes (`cuEventElapsedTime_v2`, 12.8).
const OLDEST: i32 = 12080;

/// The driver, loaded and initialised once per process; why not where it cannot be.
fn driver() -> Result<(), DeviceError> {
    static DRIVER: OnceLock<Result<(), String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            preload("cuda", c"cuInit", &[])?;
            // SAFETY: cuInit has no preconditions; cuDriverGetVersion writes one int.
            let mut version = 0;
            match unsafe { (sys::cuInit(0), sys::cuDriverGetVersion(&mut version)) } {
                (CUresult::CUDA_SUCCESS, CUresult::CUDA_SUCCESS) if version >= OLDEST => Ok(()),
                (CUresult::CUDA_SUCCESS, CUresult::CUDA_SUCCESS) => Err(format!(
                    "the driver is CUDA {}.{}; ndtune needs CUDA 12.8 or newer (event timing, parameter checks)",
                    version / 1000,
                    version % 1000 / 10
                )),
                (CUresult::CUDA_SUCCESS, e) | (e, _) => Err(format!("cuInit failed: {}", error_name(e))),
            }
        })
        .clone()
        .map_err(unavailable)
}

/// The driver's CUDA version, e.g. 13000 for 13.0.
pub fn driver_version() -> Result<i32, DeviceError> {
    driver()?;
    let mut version = 0;
    // SAFETY: one int written.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut version)
    })?;
    Ok(version)
}

fn count() -> Result<usize, DeviceError> {
    driver()?;
    let mut n = 0;
    // SAFETY: one int written.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    if n == 0 {
        return Err(unavailable("the driver reports no CUDA device".into()));
    }
    Ok(n as usize)
}

fn handle(ordinal: usize) -> Result<sys::CUdevice, DeviceError> {
    // A device made for builds ([`for_builds`]) initialises the driver only here, if ever.
    driver()?;
    let mut device = 0;
    // SAFETY: one handle written.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut device, ordinal as i32)
    })?;
    Ok(device)
}

fn name_of(device: sys::CUdevice) -> Result<String, DeviceError> {
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: at most 256 bytes written, NUL-terminated.
    check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device)
    })?;
    // SAFETY: the driver wrote a NUL-terminated string into the array.
    Ok(unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .trim()
        .to_string())
}

/// Every CUDA device's name, in ordinal order, without making any context.
pub fn names() -> Result<Vec<String>, DeviceError> {
    (0..count()?).map(|o| name_of(handle(o)?)).collect()
}

/// Every CUDA device, numbered from `first` in the list of every backend's devices.
pub fn discover(first: usize) -> Result<Vec<CuDevice>, DeviceError> {
    (0..count()?).map(|o| open(first + o, o)).collect()
}

/// CUDA device `ordinal`, number `index` in the list of every backend's devices; reading its
/// profile makes no context.
pub fn open(index: usize, ordinal: usize) -> Result<CuDevice, DeviceError> {
    if ordinal >= count()? {
        return Err(DeviceError::InvalidInput {
            what: "CUDA device ordinal: there is no such device",
        });
    }
    let device = handle(ordinal)?;
    Ok(CuDevice {
        index,
        ordinal,
        profile: read_profile(device)?,
    })
}

/// CUDA device `ordinal`, number `index`, from `profile` as a campaign read it ([`open`]), for a
/// build worker: NVRTC compiles for the profile's architecture without the driver, which is
/// initialised only where the device is used for more (a context).
pub fn for_builds(index: usize, ordinal: usize, profile: DeviceProfile) -> CuDevice {
    CuDevice {
        index,
        ordinal,
        profile,
    }
}

fn attribute(device: sys::CUdevice, attr: Attr) -> Result<u64, DeviceError> {
    let mut v = 0;
    // SAFETY: one int written.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, attr, device)
    })?;
    Ok(v.max(0) as u64)
}

fn read_profile(device: sys::CUdevice) -> Result<DeviceProfile, DeviceError> {
    let a = |attr| attribute(device, attr);
    let version = driver_version()?;
    let cuda = format!("{}.{}", version / 1000, version % 1000 / 10);
    let mut total = 0usize;
    // SAFETY: one size written.
    check("cuDeviceTotalMem", unsafe {
        sys::cuDeviceTotalMem_v2(&mut total, device)
    })?;
    let major = a(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = a(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    Ok(DeviceProfile {
        name: name_of(device)?,
        vendor: "NVIDIA Corporation".into(),
        device_type: DeviceType::Gpu,
        // What builds for it is part of its identity: results of another NVRTC or nvcc (which
        // builds what NVRTC refuses) are not reused.
        version: format!(
            "CUDA {cuda} sm_{major}{minor} {}{}",
            nvrtc::version().map_or_else(|_| "without NVRTC".into(), |v| format!("NVRTC {v}")),
            nvcc::find().map_or_else(String::new, |n| format!(" nvcc {}", n.version))
        ),
        driver_version: cuda,
        platform_name: "CUDA".into(),
        compute_units: a(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_clock_frequency: a(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000,
        max_work_group_size: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_work_item_sizes: vec![
            a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        local_mem_size: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        global_mem_size: total as u64,
        global_mem_cache_size: a(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        global_mem_cacheline_size: 128,
        max_mem_alloc_size: total as u64,
        max_constant_buffer_size: a(Attr::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)?,
        preferred_work_group_size_multiple: a(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        extensions: Vec::new(),
        cuda: Some(CudaLimits {
            compute_capability: format!("{major}.{minor}"),
            max_grid_size: vec![
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            shared_mem_per_block_optin: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            registers_per_block: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            registers_per_multiprocessor: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            )?,
            max_threads_per_multiprocessor: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?,
        }),
    })
}

/// One CUDA device as discovery found it.
#[derive(Debug, Clone)]
pub struct CuDevice {
    index: usize,
    ordinal: usize,
    profile: DeviceProfile,
}

impl CuDevice {
    /// Its CUDA ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The architecture NVRTC compiles for, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        let cc = self
            .profile
            .cuda
            .as_ref()
            .map_or("0.0", |c| c.compute_capability.as_str());
        format!("sm_{}", cc.replace('.', ""))
    }
}

impl ndtune_device::backend::Device for CuDevice {
    fn api(&self) -> Api {
        Api::Cuda
    }

    fn index(&self) -> usize {
        self.index
    }

    fn address(&self) -> Address {
        Address {
            api: Api::Cuda,
            number: self.ordinal,
        }
    }

    fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    fn with_profile(&self, profile: DeviceProfile) -> AnyDevice {
        Arc::new(CuDevice {
            profile,
            ..self.clone()
        })
    }

    /// NVRTC compiles on the host; a build worker makes no context.
    fn builds_hold_context(&self) -> bool {
        false
    }

    /// A CUDA profile is whole once read: nothing is probed.
    fn probed(&self) -> Result<AnyDevice, DeviceError> {
        Ok(Arc::new(self.clone()))
    }

    fn sub_device(&self, _k: usize, _n: usize) -> Result<AnyDevice, DeviceError> {
        Err(DeviceError::InvalidInput {
            what: "sub-device: CUDA devices are not partitioned (D:K/N is for OpenCL devices)",
        })
    }

    /// The NVRTC version that builds for the device and the driver's CUDA version.
    fn versions(&self) -> Result<(String, String), DeviceError> {
        Ok((
            format!("NVRTC {}", nvrtc::version()?),
            format!("CUDA {}", self.profile.driver_version),
        ))
    }

    fn pci_address(&self) -> Option<PciAddress> {
        let device = handle(self.ordinal).ok()?;
        Some(PciAddress {
            domain: attribute(device, Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
                .ok()
                .map(|d| d as u32),
            bus: attribute(device, Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID).ok()? as u32,
            device: attribute(device, Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID).ok()? as u32,
        })
    }

    fn same_name_before(&self) -> usize {
        (0..self.ordinal)
            .filter(|&o| {
                handle(o)
                    .and_then(name_of)
                    .is_ok_and(|n| n == self.profile.name)
            })
            .count()
    }

    fn kernel_limits(
        &self,
        source: &str,
        kernel: &str,
        options: &str,
    ) -> Result<KernelLimits, DeviceError> {
        let mut session = session::Session::new(self.clone());
        let k = ndtune_device::backend::Session::kernel(&mut session, source, kernel, options)?;
        ndtune_device::backend::Session::limits(&session, &k)
    }

    fn session(&self) -> Result<Box<dyn ndtune_device::backend::Session>, DeviceError> {
        Ok(Box::new(session::Session::new(self.clone())))
    }
}
