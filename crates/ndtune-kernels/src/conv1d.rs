//! `builtin:conv1d`: the 1D convolution of `examples/conv1d.toml`.

use crate::{par_chunks, Args, Buffers};
use ndtune_core::Constants;

/// `out[i] = sum_m in[i + m] * mask[m]` for `i < N`, `m < MASK`: buffers `in` (`N + MASK - 1`
/// elements) and `mask` (`MASK`), constants `N` and `MASK`; returns `out` (`N`).
pub fn conv1d(inputs: &Buffers, constants: &Constants) -> Result<Buffers, String> {
    let args = Args {
        reference: "conv1d",
        inputs,
        constants,
    };
    let n = args.constant("N", 1)?;
    let m = args.constant("MASK", 1)?;
    let in_len = n
        .checked_add(m - 1)
        .ok_or("builtin:conv1d: N + MASK - 1 overflows")?;
    let input = args.buffer("in", in_len, "N + MASK - 1")?;
    let mask = args.buffer("mask", m, "MASK")?;
    let mut out = vec![0.0; n];
    par_chunks(&mut out, 1, 2 * m, |i0, chunk| {
        for (k, o) in chunk.iter_mut().enumerate() {
            let window = &input[i0 + k..][..m];
            *o = window.iter().zip(mask).map(|(x, w)| x * w).sum();
        }
    });
    Ok(Buffers::from([("out".to_string(), out)]))
}
