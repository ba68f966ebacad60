//! The tuned configuration of any kernel, from a wisdom file (`ndtune export --format wisdom`,
//! docs/deploy.md): [`ndtune_wisdom_open`] once, [`ndtune_pick`] (an OpenCL device) or
//! [`ndtune_pick_cuda`] (a CUDA device) before each launch.
//!
//! A file that cannot be used never fails the program: the handle is made anyway, and each pick
//! returns `NDTUNE_ERR_WISDOM` with the reason in `ndtune_last_error()`, so the program keeps
//! its own configuration. While `NDTUNE_CAPTURE=DIR` is set each distinct question (kernel,
//! device, constants) is recorded for `ndtune tune SPEC --captured DIR`. Each answer is kept:
//! the same question again is one hash lookup, without OpenCL queries.

use crate::{guard, non_null, status, text, Failure, Status};
use ::ndtune_wisdom::{How, Runtime, RuntimeError};
use ndtune_device::backend::Device;
use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::path::Path;
use std::sync::Mutex;

/// How a configuration was chosen.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ndtune_how {
    /// Tuned on this device model at these constants.
    NDTUNE_EXACT = 0,
    /// Tuned on this device model at the nearest constants, and valid at these.
    NDTUNE_NEAREST = 1,
    /// Predicted for a device or size never tuned, valid on this device.
    NDTUNE_PREDICTED = 2,
}

/// A configuration to build and launch with. Its strings belong to the wisdom handle and stay
/// valid until it is freed.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ndtune_config {
    pub how: ndtune_how,
    /// For `clBuildProgram`: the spec's options and `-D NAME=VALUE` of each define (add your
    /// own `-I`).
    pub build_options: *const c_char,
    /// The parameters, `NAME=VALUE` separated by spaces.
    pub params: *const c_char,
    /// Why this configuration, in words.
    pub reason: *const c_char,
    /// Dimensions of the launch (0 where the spec has no `[launch]`).
    pub work_dim: u32,
    /// `work_dim` sizes each, the others 1.
    pub global: [usize; 3],
    pub local: [usize; 3],
}

/// An opened wisdom file. Safe to share between threads; free it with `ndtune_wisdom_free`.
pub struct ndtune_wisdom {
    runtime: Runtime,
    /// Answers by (kernel, device, constants as given, preference as given).
    answers: Mutex<HashMap<(String, DeviceKey, String, String), Answer>>,
}

/// A device as the caller names it: an OpenCL `cl_device_id`, or a CUDA ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum DeviceKey {
    OpenCl(usize),
    Cuda(i32),
}

/// One answer, kept with the strings the caller is given.
struct Answer {
    result: Result<Chosen, (Status, String)>,
}

struct Chosen {
    config: ndtune_config,
    _strings: [CString; 3],
}

// The raw pointers of a kept answer point into its own CStrings, which it owns.
unsafe impl Send for Answer {}

/// Opens the wisdom file at `path`. Returns NULL only for a NULL or non-UTF-8 path: a file
/// that cannot be used gives a handle whose picks say why (`NDTUNE_ERR_WISDOM`).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ndtune_wisdom_open(path: *const c_char) -> *mut ndtune_wisdom {
    let made = guard(|| {
        let path = unsafe { text(path, "path") }?;
        Ok(ndtune_wisdom {
            runtime: Runtime::open(Path::new(path)),
            answers: Mutex::new(HashMap::new()),
        })
    });
    made.map_or(std::ptr::null_mut(), |w| Box::into_raw(Box::new(w)))
}

/// Frees a wisdom handle and the strings of its answers; NULL is ignored.
///
/// # Safety
/// `wisdom` is NULL or a handle this API returned, not freed yet and not in use.
#[no_mangle]
pub unsafe extern "C" fn ndtune_wisdom_free(wisdom: *mut ndtune_wisdom) {
    if !wisdom.is_null() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(wisdom) })
        }));
    }
}

/// The configuration of `kernel` on `device` for the problem's `constants` (`"N=768 T=float"`;
/// NULL or empty: the spec's own): the tuned one, the nearest tuned size's or a prediction,
/// always valid on the device. Writes `*out` and returns `NDTUNE_OK`; otherwise
/// `NDTUNE_ERR_WISDOM` or `NDTUNE_ERR_NO_CONFIG` (keep your own configuration),
/// `NDTUNE_ERR_OPENCL` or `NDTUNE_ERR_ARGUMENT`, `*out` untouched.
///
/// # Safety
/// `wisdom` a live handle; strings NULL or NUL-terminated; `out` NULL or writable; `device` a
/// device id of the OpenCL loader this process uses.
#[no_mangle]
pub unsafe extern "C" fn ndtune_pick(
    wisdom: *mut ndtune_wisdom,
    kernel: *const c_char,
    device: crate::cl_device_id,
    constants: *const c_char,
    out: *mut ndtune_config,
) -> crate::ndtune_status {
    unsafe { ndtune_pick_preferring(wisdom, kernel, device, constants, std::ptr::null(), out) }
}

/// `ndtune_pick`, for a kernel tuned for several objectives from its tuned Pareto front by
/// `prefer` (NULL or empty: as `ndtune_pick`): `"time,power_w<=200"` (the fastest under 200 W),
/// `"energy_j,time<=1.05x"` (the least energy within 5% of the fastest), as `ndtune pick
/// --prefer`. A malformed preference is `NDTUNE_ERR_ARGUMENT`; one no configuration on the front
/// meets, `NDTUNE_ERR_NO_CONFIG` with the reason in `ndtune_last_error`.
///
/// # Safety
/// As `ndtune_pick`; `prefer` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ndtune_pick_preferring(
    wisdom: *mut ndtune_wisdom,
    kernel: *const c_char,
    device: crate::cl_device_id,
    constants: *const c_char,
    prefer: *const c_char,
    out: *mut ndtune_config,
) -> crate::ndtune_status {
    status(guard(|| {
        non_null(device, "device")?;
        unsafe {
            pick_on(
                wisdom,
                kernel,
                DeviceKey::OpenCl(device as usize),
                constants,
                prefer,
                out,
            )
        }
    }))
}

/// `ndtune_pick_preferring` for CUDA device `cuda_device` (its ordinal, as `cuDeviceGet` takes
/// it): the configuration tuned for the kernel's CUDA source, read through the CUDA driver
/// (`NDTUNE_ERR_CUDA` where there is none, or no such device). `global` and `local` are as for
/// OpenCL: launch `ceil(global / local)` blocks of `local` threads in each dimension.
///
/// # Safety
/// As `ndtune_pick_preferring`.
#[no_mangle]
pub unsafe extern "C" fn ndtune_pick_cuda(
    wisdom: *mut ndtune_wisdom,
    kernel: *const c_char,
    cuda_device: i32,
    constants: *const c_char,
    prefer: *const c_char,
    out: *mut ndtune_config,
) -> crate::ndtune_status {
    status(guard(|| unsafe {
        pick_on(
            wisdom,
            kernel,
            DeviceKey::Cuda(cuda_device),
            constants,
            prefer,
            out,
        )
    }))
}

/// The pick of both APIs: the kept answer to the question, or a new one.
///
/// # Safety
/// As `ndtune_pick_preferring`.
unsafe fn pick_on(
    wisdom: *mut ndtune_wisdom,
    kernel: *const c_char,
    device: DeviceKey,
    constants: *const c_char,
    prefer: *const c_char,
    out: *mut ndtune_config,
) -> Result<(), Failure> {
    {
        non_null(wisdom, "wisdom")?;
        non_null(out, "out")?;
        let w = unsafe { &*wisdom };
        let kernel = unsafe { text(kernel, "kernel") }?;
        let given = if constants.is_null() {
            ""
        } else {
            unsafe { text(constants, "constants") }?
        };
        let prefer = if prefer.is_null() {
            ""
        } else {
            unsafe { text(prefer, "prefer") }?
        };
        let mut answers = w.answers.lock().unwrap_or_else(|p| p.into_inner());
        let key = (
            kernel.to_string(),
            device,
            given.to_string(),
            prefer.to_string(),
        );
        if !answers.contains_key(&key) {
            let answer = answer(&w.runtime, kernel, device, given, prefer)?;
            answers.insert(key.clone(), answer);
        }
        match &answers[&key].result {
            Ok(chosen) => {
                unsafe { *out = chosen.config };
                Ok(())
            }
            Err((status, message)) => Err(Failure::new(*status, message.clone())),
        }
    }
}

/// A new answer; a failure that another call could not change (the wisdom, the constants, no
/// configuration) is kept as the answer, one of the call's arguments or OpenCL is returned.
fn answer(
    runtime: &Runtime,
    kernel: &str,
    device: DeviceKey,
    given: &str,
    prefer: &str,
) -> Result<Answer, Failure> {
    let constants = ndtune_core::parse_constants(given)
        .map_err(|e| Failure::argument(format!("constants \"{given}\": {e}")))?;
    let prefer = match prefer.trim() {
        "" => None,
        text => Some(::ndtune_wisdom::Preference::parse(text).map_err(Failure::argument)?),
    };
    let profile = match device {
        DeviceKey::OpenCl(id) => ndtune_cl::profile_of(id as crate::cl_device_id).map_err(|e| {
            Failure::new(
                Status::NDTUNE_ERR_OPENCL,
                format!("cannot read the device: {e}"),
            )
        })?,
        DeviceKey::Cuda(ordinal) => usize::try_from(ordinal)
            .map_err(|_| {
                Failure::argument(format!("cuda_device {ordinal}: an ordinal is 0 or more"))
            })
            .and_then(|o| {
                ndtune_cuda::open(0, o).map_err(|e| {
                    Failure::new(
                        Status::NDTUNE_ERR_CUDA,
                        format!("cannot read CUDA device {ordinal}: {e}"),
                    )
                })
            })?
            .profile()
            .clone(),
    };
    let result = match runtime.pick_preferring(kernel, &profile, &constants, prefer.as_ref()) {
        Ok(p) => {
            let c = |s: &str| CString::new(s.replace('\0', " ")).expect("no NUL left");
            let strings = [
                c(&p.build_options),
                c(&::ndtune_wisdom::pick::constants_text(&p.config)),
                c(&p.reason),
            ];
            let three = |v: &[usize]| {
                let mut a = [1; 3];
                a[..v.len().min(3)].copy_from_slice(&v[..v.len().min(3)]);
                a
            };
            Ok(Chosen {
                config: ndtune_config {
                    how: match p.how {
                        How::Exact => ndtune_how::NDTUNE_EXACT,
                        How::Nearest => ndtune_how::NDTUNE_NEAREST,
                        How::Predicted => ndtune_how::NDTUNE_PREDICTED,
                    },
                    build_options: strings[0].as_ptr(),
                    params: strings[1].as_ptr(),
                    reason: strings[2].as_ptr(),
                    work_dim: p.global.len() as u32,
                    global: three(&p.global),
                    local: three(&p.local),
                },
                _strings: strings,
            })
        }
        Err(RuntimeError::Wisdom(e)) => Err((Status::NDTUNE_ERR_WISDOM, e.to_string())),
        Err(RuntimeError::Pick(e)) => Err((Status::NDTUNE_ERR_NO_CONFIG, e.to_string())),
    };
    Ok(Answer { result })
}
