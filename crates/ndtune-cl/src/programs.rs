//! A session's programs by build options: built from source when first asked for, or loaded from
//! a program binary ([`Programs::add_binary`]). A binary the driver rejects leaves the program to
//! be built from source.
//!
//! Binaries are loaded on the caller's thread, when it asks, not ahead on threads of their own:
//! on NVIDIA's driver a load is 0.1 ms while the device is idle and 10-30 ms while the session's
//! queue runs kernels (`bench/program_load.py`), so loading ahead while measuring cost more than
//! it hid.

use crate::{api, build_error, is_build_code};
use ndtune_device::backend::DeviceError;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::program::Program;
use std::collections::HashMap;
use std::sync::Arc;

/// A built program, or the error of its build (remembered so that it is not tried again).
pub(crate) type Built = Arc<Result<Program, DeviceError>>;

/// The programs of one session (one context, one device).
pub(crate) struct Programs {
    built: HashMap<String, Built>,
    context: Context,
    device: Device,
    device_name: String,
}

impl Programs {
    pub fn new(context: Context, device: Device, device_name: String) -> Programs {
        Programs {
            built: HashMap::new(),
            context,
            device,
            device_name,
        }
    }

    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The program built with `options`, built from `source` where there is none yet.
    pub fn get(&mut self, source: &str, options: &str) -> Built {
        if let Some(p) = self.built.get(options) {
            return Arc::clone(p);
        }
        let built = Arc::new(self.build(source, options));
        self.built.insert(options.to_string(), Arc::clone(&built));
        built
    }

    /// Builds `source` with `options` now, keeping nothing.
    pub fn build(&self, source: &str, options: &str) -> Result<Program, DeviceError> {
        let id = self.device.id();
        let mut program = Program::create_from_source(&self.context, source)
            .map_err(api("clCreateProgramWithSource"))?;
        match program.build(&[id], options) {
            Ok(()) => Ok(program),
            Err(e) if is_build_code(e.0) => {
                let log = program.get_build_log(id).unwrap_or_default();
                Err(build_error(&self.device_name, options, e.0, log))
            }
            Err(e) => Err(api("clBuildProgram")(e)),
        }
    }

    /// Loads `binary` for `options` now, unless the program is there; whether the driver took it.
    pub fn add_binary(&mut self, options: &str, binary: &[u8]) -> bool {
        if self.built.contains_key(options) {
            return false;
        }
        match self.load(options, binary) {
            Some(p) => {
                self.built.insert(options.to_string(), Arc::new(Ok(p)));
                true
            }
            None => false,
        }
    }

    /// The program of `binary` (made by this device's driver), linked with `options`; `None`
    /// where the driver does not take it.
    pub fn load(&self, options: &str, binary: &[u8]) -> Option<Program> {
        // SAFETY: one binary for the context's one device, as clCreateProgramWithBinary needs.
        unsafe { Program::create_from_binary(&self.context, &[self.device.id()], &[binary]) }
            .ok()
            .and_then(|mut p| p.build(&[self.device.id()], options).ok().map(|()| p))
    }

    /// Lets go of the program built with `options`.
    pub fn forget(&mut self, options: &str) {
        self.built.remove(options);
    }

    pub fn forget_all(&mut self) {
        self.built.clear();
    }

    pub fn len(&self) -> usize {
        self.built.len()
    }
}
