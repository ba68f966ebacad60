use super::*;

fn consts(kv: &[(&str, i64)]) -> Constants {
    ndtune_core::int_config(kv.iter().copied())
}

fn bufs(kv: &[(&str, Vec<f64>)]) -> Buffers {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// Deterministic values in [-1, 1).
fn noise(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn iota(len: usize) -> Vec<f64> {
    (0..len).map(|i| i as f64).collect()
}

#[test]
fn names_and_lookup_agree() {
    assert_eq!(builtin_names(), &["matmul", "conv1d", "conv2d", "cnn"]);
    for name in builtin_names() {
        assert!(builtin(name).is_some(), "{name}");
    }
    assert!(builtin("nope").is_none());
    assert!(builtin("").is_none());
}

#[test]
fn matmul_2x2_by_hand() {
    let r = builtin("matmul").unwrap();
    let inputs = bufs(&[
        ("A", vec![1.0, 2.0, 3.0, 4.0]),
        ("B", vec![5.0, 6.0, 7.0, 8.0]),
        ("C", vec![0.0; 4]),
    ]);
    let out = r(&inputs, &consts(&[("N", 2)])).unwrap();
    assert_eq!(out.len(), 1);
    // [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50]
    assert_eq!(out["C"], vec![19.0, 22.0, 43.0, 50.0]);
}

#[test]
fn matmul_identity_and_1x1() {
    let a = iota(9);
    let id = vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    let out = matmul(
        &bufs(&[("A", a.clone()), ("B", id.clone())]),
        &consts(&[("N", 3)]),
    )
    .unwrap();
    assert_eq!(out["C"], a);
    let out = matmul(&bufs(&[("A", id), ("B", a.clone())]), &consts(&[("N", 3)])).unwrap();
    assert_eq!(out["C"], a);
    let out = matmul(
        &bufs(&[("A", vec![3.0]), ("B", vec![-2.5])]),
        &consts(&[("N", 1)]),
    )
    .unwrap();
    assert_eq!(out["C"], vec![-7.5]);
}

#[test]
fn matmul_threaded_matches_naive() {
    // 128 x 128 is large enough for the threaded path; 131 leaves a short block of rows.
    for n in [128, 131] {
        let (a, b) = (noise(n * n, 1), noise(n * n, 2));
        let out = matmul(
            &bufs(&[("A", a.clone()), ("B", b.clone())]),
            &consts(&[("N", n as i64)]),
        )
        .unwrap();
        for i in 0..n {
            for j in 0..n {
                // Summed over k in order, as the blocked loop does: equal, bit for bit.
                let want = (0..n).fold(0.0, |acc, k| acc + a[i * n + k] * b[k * n + j]);
                assert_eq!(out["C"][i * n + j], want, "C[{i}][{j}] at N = {n}");
            }
        }
    }
}

#[test]
fn matmul_errors() {
    let ok = bufs(&[("A", vec![1.0; 4]), ("B", vec![1.0; 4])]);
    let e = matmul(&ok, &consts(&[])).unwrap_err();
    assert!(
        e.contains("builtin:matmul") && e.contains("constant `N` is missing"),
        "{e}"
    );
    let e = matmul(&ok, &consts(&[("N", 0)])).unwrap_err();
    assert!(e.contains("`N` must be at least 1, not 0"), "{e}");
    let e = matmul(&bufs(&[("A", vec![1.0; 4])]), &consts(&[("N", 2)])).unwrap_err();
    assert!(e.contains("input buffer `B` is missing"), "{e}");
    let e = matmul(
        &bufs(&[("A", vec![1.0; 3]), ("B", vec![1.0; 4])]),
        &consts(&[("N", 2)]),
    )
    .unwrap_err();
    assert!(
        e.contains("buffer `A` has 3 elements, expected N * N = 4"),
        "{e}"
    );
    let e = matmul(&ok, &consts(&[("N", i64::MAX)])).unwrap_err();
    assert!(e.contains("overflows") || e.contains("too large"), "{e}");
}

#[test]
fn conv1d_by_hand() {
    let r = builtin("conv1d").unwrap();
    // out[i] = in[i] * 1 + in[i + 1] * 10
    let inputs = bufs(&[
        ("in", vec![1.0, 2.0, 3.0, 4.0]),
        ("mask", vec![1.0, 10.0]),
        ("out", vec![0.0; 3]),
    ]);
    let out = r(&inputs, &consts(&[("N", 3), ("MASK", 2)])).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out["out"], vec![21.0, 32.0, 43.0]);
    // A one-tap mask scales.
    let out = conv1d(
        &bufs(&[("in", vec![1.0, -2.0]), ("mask", vec![0.5])]),
        &consts(&[("N", 2), ("MASK", 1)]),
    )
    .unwrap();
    assert_eq!(out["out"], vec![0.5, -1.0]);
}

#[test]
fn conv1d_threaded_matches_naive() {
    let (n, m) = (65536, 97);
    let (input, mask) = (noise(n + m - 1, 3), noise(m, 4));
    let out = conv1d(
        &bufs(&[("in", input.clone()), ("mask", mask.clone())]),
        &consts(&[("N", n as i64), ("MASK", m as i64)]),
    )
    .unwrap();
    assert_eq!(out["out"].len(), n);
    for i in (0..n).step_by(101).chain([n - 1]) {
        let want: f64 = (0..m).map(|k| input[i + k] * mask[k]).sum();
        assert!((out["out"][i] - want).abs() < 1e-12, "out[{i}]");
    }
}

#[test]
fn conv1d_errors() {
    let e = conv1d(
        &bufs(&[("in", vec![0.0; 4]), ("mask", vec![0.0; 2])]),
        &consts(&[("N", 3)]),
    )
    .unwrap_err();
    assert!(
        e.contains("builtin:conv1d: constant `MASK` is missing"),
        "{e}"
    );
    let e = conv1d(
        &bufs(&[("in", vec![0.0; 3]), ("mask", vec![0.0; 2])]),
        &consts(&[("N", 3), ("MASK", 2)]),
    )
    .unwrap_err();
    assert!(
        e.contains("buffer `in` has 3 elements, expected N + MASK - 1 = 4"),
        "{e}"
    );
    let e = conv1d(
        &bufs(&[("in", vec![0.0; 4])]),
        &consts(&[("N", 3), ("MASK", 2)]),
    )
    .unwrap_err();
    assert!(e.contains("input buffer `mask` is missing"), "{e}");
    let e = conv1d(
        &bufs(&[("in", vec![0.0; 4]), ("mask", vec![0.0; 2])]),
        &consts(&[("N", 3), ("MASK", 0)]),
    )
    .unwrap_err();
    assert!(e.contains("`MASK` must be at least 1"), "{e}");
}

/// The CNN layer straight from its definition, one output at a time.
fn cnn_naive(
    c_in: usize,
    c_out: usize,
    h: usize,
    w: usize,
    input: &[f64],
    wt: &[f64],
    b: &[f64],
) -> Vec<f64> {
    let (iw, ih) = (w + 4, h + 4);
    let conv = |o: usize, y: usize, x: usize| {
        let mut s = b[o];
        for c in 0..c_in {
            for p in 0..5 {
                for q in 0..5 {
                    s +=
                        wt[((o * c_in + c) * 5 + p) * 5 + q] * input[(c * ih + y + p) * iw + x + q];
                }
            }
        }
        s.max(0.0)
    };
    let mut out = Vec::new();
    for o in 0..c_out {
        for py in 0..h / 2 {
            for px in 0..w / 2 {
                let (y, x) = (2 * py, 2 * px);
                out.push(
                    conv(o, y, x)
                        .max(conv(o, y, x + 1))
                        .max(conv(o, y + 1, x))
                        .max(conv(o, y + 1, x + 1)),
                );
            }
        }
    }
    out
}

fn cnn_consts(c_in: i64, c_out: i64, h: i64, w: i64) -> Constants {
    consts(&[("C_IN", c_in), ("C_OUT", c_out), ("H", h), ("W", w)])
}

#[test]
fn cnn_picks_the_pooled_maximum() {
    // One channel, H = W = 4: input 8 x 8 = iota, the weight is 1 at (p, q) = (2, 2) and 0
    // elsewhere, so conv[y][x] = in[y + 2][x + 2] = 8 (y + 2) + x + 2; it grows to the bottom right,
    // so each 2x2 pool keeps its (2 py + 1, 2 px + 1) corner: 8 (2 py + 3) + 2 px + 3.
    let mut wt = vec![0.0; 25];
    wt[12] = 1.0;
    let inputs = bufs(&[
        ("in", iota(64)),
        ("w", wt.clone()),
        ("b", vec![0.5]),
        ("out", vec![0.0; 4]),
    ]);
    let out = builtin("cnn").unwrap()(&inputs, &cnn_consts(1, 1, 4, 4)).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out["out"], vec![27.5, 29.5, 43.5, 45.5]);
    // Mirrored weight position (0, 0) and a negated input: the maximum is now the top-left corner.
    let mut wt0 = vec![0.0; 25];
    wt0[0] = -1.0;
    let inputs = bufs(&[("in", iota(64)), ("w", wt0), ("b", vec![100.0])]);
    let out = cnn(&inputs, &cnn_consts(1, 1, 4, 4)).unwrap();
    // conv[y][x] = 100 - (8 y + x); pool keeps (2 py, 2 px).
    assert_eq!(out["out"], vec![100.0, 98.0, 84.0, 82.0]);
}

#[test]
fn cnn_sums_channels_adds_bias_and_applies_relu() {
    // C_IN = 2, C_OUT = 2, H = W = 2: input channel c is all (c + 1), every weight of (o, c) is
    // (o + 1) (c + 1): conv = 25 (o + 1) (1 + 4) = 125 (o + 1), then bias.
    let input: Vec<f64> = (0..2).flat_map(|c| vec![(c + 1) as f64; 36]).collect();
    let wt: Vec<f64> = (0..2)
        .flat_map(|o| (0..2).flat_map(move |c| vec![((o + 1) * (c + 1)) as f64; 25]))
        .collect();
    let inputs = bufs(&[
        ("in", input.clone()),
        ("w", wt.clone()),
        ("b", vec![1.0, -300.0]),
    ]);
    let out = cnn(&inputs, &cnn_consts(2, 2, 2, 2)).unwrap();
    assert_eq!(out["out"], vec![126.0, 0.0]); // 125 + 1; relu(250 - 300) = 0
}

#[test]
fn cnn_odd_sizes_floor_the_pool() {
    // H = 3, W = 5: a 1 x 2 pooled output; the last convolution row and column are not pooled.
    let (h, w) = (3, 5);
    let input = noise((h + 4) * (w + 4), 5);
    let (wt, b) = (noise(25, 6), vec![0.25]);
    let out = cnn(
        &bufs(&[("in", input.clone()), ("w", wt.clone()), ("b", b.clone())]),
        &cnn_consts(1, 1, h as i64, w as i64),
    )
    .unwrap();
    let want = cnn_naive(1, 1, h, w, &input, &wt, &b);
    assert_eq!(out["out"].len(), 2);
    assert_eq!(want.len(), 2);
    for (got, want) in out["out"].iter().zip(&want) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
}

#[test]
fn cnn_threaded_matches_naive() {
    // Large enough for the threaded path: 16 x 16 x 16 outputs of 8 x 25 taps.
    let (c_in, c_out, h, w) = (8, 16, 32, 32);
    let input = noise(c_in * (h + 4) * (w + 4), 7);
    let wt = noise(c_out * c_in * 25, 8);
    let b = noise(c_out, 9);
    let out = cnn(
        &bufs(&[("in", input.clone()), ("w", wt.clone()), ("b", b.clone())]),
        &cnn_consts(8, 16, 32, 32),
    )
    .unwrap();
    let want = cnn_naive(c_in, c_out, h, w, &input, &wt, &b);
    assert_eq!(out["out"].len(), want.len());
    for (i, (got, want)) in out["out"].iter().zip(&want).enumerate() {
        assert!((got - want).abs() < 1e-12, "out[{i}]: {got} vs {want}");
    }
    assert!(
        want.contains(&0.0) && want.iter().any(|&v| v > 0.0),
        "ReLU both ways"
    );
}

#[test]
fn cnn_errors() {
    let ok = || {
        bufs(&[
            ("in", vec![0.0; 36]),
            ("w", vec![0.0; 25]),
            ("b", vec![0.0]),
        ])
    };
    let e = cnn(&ok(), &consts(&[("C_IN", 1), ("C_OUT", 1), ("H", 2)])).unwrap_err();
    assert!(e.contains("builtin:cnn: constant `W` is missing"), "{e}");
    let e = cnn(&ok(), &cnn_consts(1, 1, 1, 2)).unwrap_err();
    assert!(e.contains("`H` must be at least 2, not 1"), "{e}");
    let e = cnn(&ok(), &cnn_consts(1, 1, 2, 3)).unwrap_err();
    assert!(
        e.contains("buffer `in` has 36 elements, expected C_IN * (H + 4) * (W + 4) = 42"),
        "{e}"
    );
    let e = cnn(&ok(), &cnn_consts(1, 2, 2, 2)).unwrap_err();
    assert!(
        e.contains("buffer `w` has 25 elements, expected C_OUT * C_IN * 5 * 5 = 50"),
        "{e}"
    );
    let mut no_b = ok();
    no_b.remove("b");
    let e = cnn(&no_b, &cnn_consts(1, 1, 2, 2)).unwrap_err();
    assert!(e.contains("input buffer `b` is missing"), "{e}");
    let e = cnn(&ok(), &cnn_consts(-1, 1, 2, 2)).unwrap_err();
    assert!(e.contains("`C_IN` must be at least 1, not -1"), "{e}");
}

#[test]
fn conv2d_by_hand_and_threaded_matches_naive() {
    // A 2 x 3 output of a 3 x 4 image with a 2 x 2 filter.
    let r = builtin("conv2d").unwrap();
    let image: Vec<f64> = (0..12).map(f64::from).collect();
    let inputs = Buffers::from([
        ("in".to_string(), image),
        ("filter".to_string(), vec![1.0, 0.0, 0.0, 2.0]),
    ]);
    let c = |w, h, fw, fh| consts(&[("W", w), ("H", h), ("FW", fw), ("FH", fh)]);
    let out = r(&inputs, &c(3, 2, 2, 2)).unwrap();
    // out[y][x] = in[y][x] + 2 in[y + 1][x + 1], rows of 4.
    assert_eq!(out["out"], vec![10.0, 13.0, 16.0, 22.0, 25.0, 28.0]);
    // Large enough for threads: each output against a naive sum.
    let (w, h, f) = (300usize, 200usize, 9usize);
    let (iw, ih) = (w + f - 1, h + f - 1);
    let image: Vec<f64> = (0..iw * ih)
        .map(|i| ((i * 7919) % 97) as f64 - 48.0)
        .collect();
    let filter: Vec<f64> = (0..f * f).map(|i| (i % 5) as f64 - 2.0).collect();
    let inputs = Buffers::from([
        ("in".to_string(), image.clone()),
        ("filter".to_string(), filter.clone()),
    ]);
    let out = conv2d(&inputs, &c(w as i64, h as i64, f as i64, f as i64)).unwrap();
    for (y, x) in [(0, 0), (h - 1, w - 1), (123, 45)] {
        let mut want = 0.0;
        for fy in 0..f {
            for fx in 0..f {
                want += image[(y + fy) * iw + x + fx] * filter[fy * f + fx];
            }
        }
        assert_eq!(out["out"][y * w + x], want);
    }
    let e = r(&inputs, &c(301, 200, 9, 9)).unwrap_err();
    assert!(
        e.contains("buffer `in` has") && e.contains("(H + FH - 1) * (W + FW - 1)"),
        "{e}"
    );
}
