//! Verification where the output lies: each expected output is uploaded once (as doubles) and a
//! small kernel of ndtune's own compares a configuration's output with it on the device, with
//! the host's rule (|a - e| <= atol + rtol * |e|, NaN matching only NaN, in double precision,
//! no contraction into fused multiply-adds), and hands back 4 bytes: how many elements differ.
//! A GPU thus never sends its 16 MiB output over PCIe to be compared on
//! the host; the host comparison ([`crate::verify`]) runs only where the device found a
//! difference, to describe it with the same details.
//!
//! Used on OpenCL devices that are not the host's CPU and have `cl_khr_fp64` (on a CPU device the
//! host comparison already runs on every core, where the output lies).

use ndtune_backend::{AnyDevice, Api, Arg, Buffer as DeviceBuffer, DeviceError, Kernel, Session};
use ndtune_device::DeviceType;
use ndtune_spec::{ElemType, Verify};
use std::collections::HashMap;

/// Work-items of one comparison; each strides over the output.
const MAX_ITEMS: usize = 1 << 20;

/// Whether `device` checks outputs itself by default.
pub fn suits(device: &AnyDevice) -> bool {
    let profile = device.profile();
    device.api() == Api::OpenCl
        && profile.device_type != DeviceType::Cpu
        && profile.extensions.iter().any(|e| e == "cl_khr_fp64")
}

/// The comparison kernels and expected outputs of one session.
pub(crate) struct DeviceCheck {
    /// By element type, built when first needed.
    kernels: HashMap<&'static str, Kernel>,
    /// Expected values as doubles, by argument, with the id of the reference they came from:
    /// one per argument, replaced when a configuration's reference differs (a reference that
    /// depends on parameters), so that device memory stays bounded.
    expected: HashMap<usize, (u64, DeviceBuffer)>,
    /// One `uint`: how many elements differ.
    result: Option<DeviceBuffer>,
}

impl DeviceCheck {
    pub fn new() -> DeviceCheck {
        DeviceCheck {
            kernels: HashMap::new(),
            expected: HashMap::new(),
            result: None,
        }
    }

    /// What [`DeviceCheck::matches`] does once per element type and reference, where it
    /// compares `got` with `want` at all: builds the comparison kernel, uploads the expected
    /// output. The caller times it apart from the comparisons.
    pub fn load(
        &mut self,
        session: &dyn Session,
        (arg, reference): (usize, u64),
        ty: ElemType,
        got: &DeviceBuffer,
        want: &[f64],
    ) -> Result<(), DeviceError> {
        if !compares(ty, got, want) || want.is_empty() {
            return Ok(());
        }
        let type_name = ty.name();
        if !self.kernels.contains_key(type_name) {
            let kernel = session.own_kernel(&source(type_name), "ndtune_check", "")?;
            self.kernels.insert(type_name, kernel);
        }
        if self
            .expected
            .get(&arg)
            .is_none_or(|(id, _)| *id != reference)
        {
            self.expected.remove(&arg);
            let bytes: Vec<u8> = want.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let buffer = session.buffer(&bytes)?;
            self.expected.insert(arg, (reference, buffer));
        }
        if self.result.is_none() {
            self.result = Some(session.buffer(&[0; 4])?);
        }
        Ok(())
    }

    /// Whether `got` (elements of `ty`) matches `want` within `verify`'s tolerances; `key`
    /// names the expected output for the upload cache: (argument, reference id). What the
    /// device does not compare ([`compares`]) is `Ok(None)`: compare on the host.
    pub fn matches(
        &mut self,
        session: &dyn Session,
        (arg, reference): (usize, u64),
        ty: ElemType,
        got: &DeviceBuffer,
        want: &[f64],
        verify: &Verify,
    ) -> Result<Option<bool>, DeviceError> {
        let n = want.len();
        if !compares(ty, got, want) {
            return Ok(None);
        }
        if n == 0 {
            return Ok(Some(true));
        }
        self.load(session, (arg, reference), ty, got, want)?;
        let type_name = ty.name();
        let result = self.result.as_mut().expect("loaded");
        session.write(result, &0u32.to_ne_bytes())?;
        let kernel = &self.kernels[type_name];
        let (count, rtol, atol) = (
            (n as u32).to_ne_bytes(),
            verify.rtol.to_ne_bytes(),
            verify.atol.to_ne_bytes(),
        );
        session.set_args(
            kernel,
            &[
                Arg::Buffer(got),
                Arg::Buffer(&self.expected[&arg].1),
                Arg::Scalar(&count),
                Arg::Scalar(&rtol),
                Arg::Scalar(&atol),
                Arg::Buffer(result),
            ],
        )?;
        session.launch(kernel, &[n.min(MAX_ITEMS)], None, None)?;
        let back = session.read(result)?;
        let mismatched = u32::from_ne_bytes(back[..4].try_into().expect("4 bytes"));
        Ok(Some(mismatched == 0))
    }
}

/// Whether the device compares `got` with `want`: not outputs of 2^32 elements or more, and not
/// halves (reading them on the device needs cl_khr_fp16): the host compares those.
fn compares(ty: ElemType, got: &DeviceBuffer, want: &[f64]) -> bool {
    got.len() == want.len() * ty.size() && u32::try_from(want.len()).is_ok() && ty != ElemType::Half
}

/// The comparison kernel for outputs of OpenCL C type `ty`.
fn source(ty: &str) -> String {
    format!(
        r#"#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
__kernel void ndtune_check(__global const {ty} *got, __global const double *want, const uint n,
                           const double rtol, const double atol, __global uint *result)
{{
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {{
        const double e = want[i];
        const double a = (double)got[i];
        const double err = fabs(a - e);
        if (!(err <= atol + rtol * fabs(e)) && !(isnan(e) && isnan(a))) {{
            atomic_inc(result);
        }}
    }}
}}
"#
    )
}
