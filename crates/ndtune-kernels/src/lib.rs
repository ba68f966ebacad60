//! `ndtune-kernels` owns the shipped case studies' host references: the functions that compute, on
//! the host and in `f64`, what a tuned kernel must write, so that the tuner can verify every
//! configuration's outputs (`[verify] reference = "builtin:NAME"` in a spec file).
//!
//! | name | spec | computes |
//! |---|---|---|
//! | `matmul` | `examples/matmul.toml` | `C = A * B`, `N x N`, row-major |
//! | `conv1d` | `examples/conv1d.toml` | `out[i] = sum_m in[i + m] * mask[m]`, `N` outputs, `MASK` taps |
//! | `conv2d` | `examples/conv2d.toml` | `out[y][x] = sum in[y + fy][x + fx] * filter[fy][fx]`, `H x W` outputs, an `FH x FW` filter |
//! | `cnn` | `examples/cnn.toml`, `examples/cnn-full.toml` | 5x5 convolution + bias + ReLU + 2x2 max-pool |
//!
//! A reference gets every buffer argument by name, filled as the spec says (the outputs too; it
//! ignores what it does not read), and the spec's constants; it returns the expected output
//! buffers by name. Every element is an `f64`, exact for `float` and for integers up to 2^53.
//! Missing buffers, wrong lengths and missing or invalid constants are errors that name the
//! reference, the buffer or constant, and what was expected. This crate has no OpenCL dependency.
//!
//! ```
//! use ndtune_kernels::{builtin, Buffers};
//! let matmul = builtin("matmul").unwrap();
//! let mut inputs = Buffers::new();
//! inputs.insert("A".into(), vec![1.0, 2.0, 3.0, 4.0]);
//! inputs.insert("B".into(), vec![5.0, 6.0, 7.0, 8.0]);
//! let constants = ndtune_core::int_config([("N", 2)]);
//! let out = matmul(&inputs, &constants).unwrap();
//! assert_eq!(out["C"], vec![19.0, 22.0, 43.0, 50.0]);
//! ```

use ndtune_core::Constants;
use std::collections::BTreeMap;

mod cnn;
mod conv1d;
mod conv2d;
mod matmul;

pub use cnn::cnn;
pub use conv1d::conv1d;
pub use conv2d::conv2d;
pub use matmul::matmul;

/// Host buffers by kernel-argument name, every element as f64 (exact for float and for integers
/// up to 2^53).
pub type Buffers = BTreeMap<String, Vec<f64>>;

/// A host reference: given the input buffers (every buffer argument, filled as the spec says) and
/// the spec's constants, returns the expected output buffers by name.
pub type Reference = fn(inputs: &Buffers, constants: &Constants) -> Result<Buffers, String>;

const BUILTINS: &[(&str, Reference)] = &[
    ("matmul", matmul),
    ("conv1d", conv1d),
    ("conv2d", conv2d),
    ("cnn", cnn),
];
const NAMES: &[&str] = &["matmul", "conv1d", "conv2d", "cnn"];

/// The built-in reference called `name` (`builtin:NAME` in a spec), if there is one.
pub fn builtin(name: &str) -> Option<Reference> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The names of every built-in reference, in the order of the table above.
pub fn builtin_names() -> &'static [&'static str] {
    NAMES
}

/// What a reference reads, with its errors worded once.
pub(crate) struct Args<'a> {
    pub(crate) reference: &'static str,
    pub(crate) inputs: &'a Buffers,
    pub(crate) constants: &'a Constants,
}

impl<'a> Args<'a> {
    /// A constant that must be at least `min`.
    pub(crate) fn constant(&self, name: &str, min: i64) -> Result<usize, String> {
        let r = self.reference;
        let v = self.constants.get(name).ok_or_else(|| {
            format!(
                "builtin:{r}: constant `{name}` is missing (define it in the spec's [constants])"
            )
        })?;
        let v = v
            .as_int()
            .ok_or_else(|| format!("builtin:{r}: constant `{name}` must be an integer, not {v}"))?;
        if v < min {
            return Err(format!(
                "builtin:{r}: constant `{name}` must be at least {min}, not {v}"
            ));
        }
        usize::try_from(v)
            .map_err(|_| format!("builtin:{r}: constant `{name}` = {v} is too large for this host"))
    }

    /// A buffer that must have `len` elements; `formula` says how `len` follows from the constants.
    pub(crate) fn buffer(
        &self,
        name: &str,
        len: usize,
        formula: &str,
    ) -> Result<&'a [f64], String> {
        let r = self.reference;
        let b = self.inputs.get(name).ok_or_else(|| {
            format!(
                "builtin:{r}: input buffer `{name}` is missing (an [[args]] buffer named `{name}`)"
            )
        })?;
        if b.len() != len {
            return Err(format!(
                "builtin:{r}: buffer `{name}` has {} elements, expected {formula} = {len}",
                b.len()
            ));
        }
        Ok(b)
    }

    /// The product of sizes, or an error when it does not fit in memory's address space.
    pub(crate) fn product(&self, factors: &[usize], formula: &str) -> Result<usize, String> {
        factors
            .iter()
            .try_fold(1usize, |acc, &f| acc.checked_mul(f))
            .ok_or_else(|| format!("builtin:{}: {formula} overflows", self.reference))
    }
}

/// Runs `f(first_index, chunk)` over `out` split into contiguous chunks of whole `unit`s, on up to
/// the host's available parallelism in threads (references of full-size problems are long).
pub(crate) fn par_chunks(
    out: &mut [f64],
    unit: usize,
    work_per_unit: usize,
    f: impl Fn(usize, &mut [f64]) + Sync,
) {
    let units = out.len().checked_div(unit).unwrap_or(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Threads only pay for themselves on real work: keep small cases (and unit tests) serial.
    let threads = if units.saturating_mul(work_per_unit) < (1 << 22) {
        1
    } else {
        threads.min(units).max(1)
    };
    if threads <= 1 {
        f(0, out);
        return;
    }
    let per = units.div_ceil(threads) * unit;
    std::thread::scope(|s| {
        for (i, chunk) in out.chunks_mut(per).enumerate() {
            let f = &f;
            s.spawn(move || f(i * per / unit, chunk));
        }
    });
}

#[cfg(test)]
mod tests;
