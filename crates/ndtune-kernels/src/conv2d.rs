//! `builtin:conv2d`: the 2D convolution of `examples/conv2d.toml`.

use crate::{par_chunks, Args, Buffers};
use ndtune_core::Constants;

/// `out[y][x] = sum_{fy, fx} in[y + fy][x + fx] * filter[fy][fx]` for `x < W`, `y < H`,
/// `fx < FW`, `fy < FH`, row-major: buffers `in` (`(H + FH - 1) * (W + FW - 1)` elements) and
/// `filter` (`FH * FW`), constants `W`, `H`, `FW` and `FH`; returns `out` (`H * W`).
pub fn conv2d(inputs: &Buffers, constants: &Constants) -> Result<Buffers, String> {
    let args = Args {
        reference: "conv2d",
        inputs,
        constants,
    };
    let (w, h) = (args.constant("W", 1)?, args.constant("H", 1)?);
    let (fw, fh) = (args.constant("FW", 1)?, args.constant("FH", 1)?);
    let iw = w
        .checked_add(fw - 1)
        .ok_or("builtin:conv2d: W + FW - 1 overflows")?;
    let ih = h
        .checked_add(fh - 1)
        .ok_or("builtin:conv2d: H + FH - 1 overflows")?;
    let input = args.buffer(
        "in",
        args.product(&[ih, iw], "(H + FH - 1) * (W + FW - 1)")?,
        "(H + FH - 1) * (W + FW - 1)",
    )?;
    let filter = args.buffer("filter", args.product(&[fh, fw], "FH * FW")?, "FH * FW")?;
    let mut out = vec![0.0; args.product(&[h, w], "H * W")?];
    par_chunks(&mut out, w, 2 * w * fw * fh, |first_row, rows| {
        for (k, o) in rows.iter_mut().enumerate() {
            let (y, x) = (first_row + k / w, k % w);
            let mut acc = 0.0;
            for fy in 0..fh {
                let row = &input[(y + fy) * iw + x..][..fw];
                acc += row
                    .iter()
                    .zip(&filter[fy * fw..][..fw])
                    .map(|(a, b)| a * b)
                    .sum::<f64>();
            }
            *o = acc;
        }
    });
    Ok(Buffers::from([("out".to_string(), out)]))
}
