//! `builtin:matmul`: the tiled matrix multiplication of `examples/matmul.toml`.

use crate::{par_chunks, Args, Buffers};
use ndtune_core::Constants;

/// `C = A * B` for `N x N` row-major matrices: buffers `A`, `B`, constant `N`; returns `C`.
pub fn matmul(inputs: &Buffers, constants: &Constants) -> Result<Buffers, String> {
    let args = Args {
        reference: "matmul",
        inputs,
        constants,
    };
    let n = args.constant("N", 1)?;
    let nn = args.product(&[n, n], "N * N")?;
    let a = args.buffer("A", nn, "N * N")?;
    let b = args.buffer("B", nn, "N * N")?;
    let mut c = vec![0.0; nn];
    // i-k-j order: the inner loop runs along rows of B and C.
    par_chunks(&mut c, n, 2 * n * n, |row0, rows| {
        for (r, c_row) in rows.chunks_mut(n).enumerate() {
            let a_row = &a[(row0 + r) * n..][..n];
            for (k, &a_ik) in a_row.iter().enumerate() {
                let b_row = &b[k * n..][..n];
                for (c_ij, &b_kj) in c_row.iter_mut().zip(b_row) {
                    *c_ij += a_ik * b_kj;
                }
            }
        }
    });
    Ok(Buffers::from([("C".to_string(), c)]))
}
