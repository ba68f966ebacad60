//! `builtin:cnn`: the CNN layer of `examples/cnn.toml` (the UCLA CS133 lab's convnet layer).

use crate::{par_chunks, Args, Buffers};
use ndtune_core::Constants;

/// The convolution window is `K x K`.
const K: usize = 5;

/// One convolutional layer: a 5x5 convolution (stride 1, no padding of its own) + bias + ReLU +
/// 2x2 max-pool (stride 2).
///
/// Constants `C_IN`, `C_OUT`, `H`, `W` (`H x W` is the convolution's output, before pooling).
/// Buffers, row-major:
/// - `in[c][y][x]`: `C_IN` channels of `(H + 4) x (W + 4)` (the input comes pre-padded),
/// - `w[o][c][p][q]`: `C_OUT x C_IN x 5 x 5` weights,
/// - `b[o]`: `C_OUT` biases.
///
/// Returns `out[o][py][px]`, `C_OUT x (H / 2) x (W / 2)`:
/// `out[o][py][px] = max over dy, dx in {0, 1} of relu(b[o] + sum_{c,p,q} w[o][c][p][q] *
/// in[c][2 py + dy + p][2 px + dx + q])`. An odd `H` or `W` drops the last row or column of the
/// convolution, as integer division says.
pub fn cnn(inputs: &Buffers, constants: &Constants) -> Result<Buffers, String> {
    let args = Args {
        reference: "cnn",
        inputs,
        constants,
    };
    let c_in = args.constant("C_IN", 1)?;
    let c_out = args.constant("C_OUT", 1)?;
    let h = args.constant("H", 2)?;
    let w = args.constant("W", 2)?;
    let (ih, iw) = (h + K - 1, w + K - 1);
    let (ph, pw) = (h / 2, w / 2);
    let input = args.buffer(
        "in",
        args.product(&[c_in, ih, iw], "C_IN * (H + 4) * (W + 4)")?,
        "C_IN * (H + 4) * (W + 4)",
    )?;
    let weights = args.buffer(
        "w",
        args.product(&[c_out, c_in, K * K], "C_OUT * C_IN * 5 * 5")?,
        "C_OUT * C_IN * 5 * 5",
    )?;
    let bias = args.buffer("b", c_out, "C_OUT")?;
    let mut out = vec![0.0; args.product(&[c_out, ph, pw], "C_OUT * (H / 2) * (W / 2)")?];
    let work = 2 * c_in * K * K * h * w;
    par_chunks(&mut out, ph * pw, work, |o0, chunk| {
        let mut conv = vec![0.0; h * w];
        for (k, out_o) in chunk.chunks_mut(ph * pw).enumerate() {
            let o = o0 + k;
            conv.fill(0.0);
            // Loop order as the lab's permuted kernel: c, p, q outermost, rows of `conv` innermost.
            for c in 0..c_in {
                let in_c = &input[c * ih * iw..][..ih * iw];
                let w_oc = &weights[(o * c_in + c) * K * K..][..K * K];
                for p in 0..K {
                    for q in 0..K {
                        let wt = w_oc[p * K + q];
                        for y in 0..h {
                            let src = &in_c[(y + p) * iw + q..][..w];
                            for (acc, &x) in conv[y * w..][..w].iter_mut().zip(src) {
                                *acc += wt * x;
                            }
                        }
                    }
                }
            }
            let relu = |y: usize, x: usize| (conv[y * w + x] + bias[o]).max(0.0);
            for py in 0..ph {
                for px in 0..pw {
                    let (y, x) = (2 * py, 2 * px);
                    out_o[py * pw + px] = relu(y, x)
                        .max(relu(y, x + 1))
                        .max(relu(y + 1, x))
                        .max(relu(y + 1, x + 1));
                }
            }
        }
    });
    Ok(Buffers::from([("out".to_string(), out)]))
}
