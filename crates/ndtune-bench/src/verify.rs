//! Comparing a configuration's outputs with the reference, within a relative and an absolute
//! tolerance (numpy's `isclose`: |a - e| <= atol + rtol * |e|): values against values
//! ([`compare`]), or the device's bytes straight from a read-back, in parallel chunks, read in
//! place ([`compare_bytes`]). Float outputs first get a quick pass in single precision against
//! the expected values rounded to f32 ([`Want`]), with tolerances narrowed so that it passes only
//! what the exact comparison passes; the exact comparison runs where it does not.

use crate::data::{elements, from_bytes, ElementsTo};
use ndtune_spec::ElemType;

/// Outputs shorter than twice this many elements are compared on one thread; longer ones in
/// chunks of at least this many, one per core: about 0.3 ms of work each, far more than starting a thread,
/// which on a CPU device whose cores the build workers keep busy can take milliseconds.
const PARALLEL_FROM: usize = 1 << 18;

/// An output's expected values, as the comparison takes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Want {
    pub values: Vec<f64>,
    /// For a float output, the values rounded to f32 (NaN where that is not finite), for the
    /// quick pass: it reads a third fewer bytes than the f64 values and compares in single
    /// precision, 0.11-0.24 ms instead of 0.38-0.54 ms for 2^18 floats on the 2-core machine
    /// (a third of a PoCL configuration's overhead there). Empty for other types.
    floats: Vec<f32>,
}

impl Want {
    pub fn new(values: Vec<f64>, ty: ElemType) -> Want {
        let floats = match ty {
            ElemType::Float => values
                .iter()
                .map(|&e| Some(e as f32).filter(|f| f.is_finite()).unwrap_or(f32::NAN))
                .collect(),
            _ => Vec::new(),
        };
        Want { values, floats }
    }
}

/// The quick pass's tolerances in single precision, narrowed so that |a - e32| <= qa + qr·|e32|
/// computed in f32 implies |a - e| <= atol + rtol·|e| exactly: e32 is within 2^-24·|e| of e
/// (2^-150 below the normal range), which 2^-22 taken off `rtol` covers; each of the five f32
/// roundings (the conversions, the difference, the product, the sum) is within 2^-24 relative
/// or 2^-150 absolute, which the factor 1 - 2^-20 and the 2^-147 taken off `atol` cover. So the
/// quick pass can only fail where the exact comparison passes, never the other way round.
fn narrowed(rtol: f64, atol: f64) -> (f32, f32) {
    let slack = 1.0 - (-20f64).exp2();
    (
        ((rtol - (-22f64).exp2()) * slack) as f32,
        (atol * slack - (-147f64).exp2()) as f32,
    )
}

/// The quick pass over a float output's bytes: `true` only where [`all_close`] is true too (and
/// nearly always where it is, but not for NaN, whose match the exact comparison decides).
fn close_in_f32(expected: &[f32], actual: &[u8], rtol: f64, atol: f64) -> bool {
    let (qr, qa) = narrowed(rtol, atol);
    expected
        .iter()
        .zip(actual.chunks_exact(4))
        .fold(true, |ok, (&e, a)| {
            let a = f32::from_ne_bytes(a.try_into().expect("chunks of 4 bytes"));
            ok & ((a - e).abs() <= qa + qr * e.abs())
        })
}

/// Why outputs do not match, for the store and the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub output: String,
    pub mismatched: usize,
    pub len: usize,
    pub first_index: usize,
    pub expected: f64,
    pub actual: f64,
    pub max_abs_error: f64,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} of {} elements differ; first at [{}]: expected {}, got {}; max abs error {:e}",
            self.output,
            self.mismatched,
            self.len,
            self.first_index,
            self.expected,
            self.actual,
            self.max_abs_error
        )
    }
}

/// Checks `actual` against `expected`; NaN never matches, except NaN expected where NaN is got.
pub fn compare(
    output: &str,
    expected: &[f64],
    actual: &[f64],
    rtol: f64,
    atol: f64,
) -> Result<(), Mismatch> {
    if expected.len() != actual.len() {
        return Err(Mismatch {
            output: format!(
                "{output} (length {} instead of {})",
                actual.len(),
                expected.len()
            ),
            mismatched: expected.len().max(actual.len()),
            len: expected.len(),
            first_index: 0,
            expected: f64::NAN,
            actual: f64::NAN,
            max_abs_error: f64::INFINITY,
        });
    }
    compare_values(output, expected, actual.iter().copied(), rtol, atol)
}

/// Whether every value is within the tolerances: the quick pass over outputs that nearly always
/// match, without the details (no branch in the loop, so the compiler vectorises it).
fn all_close(expected: &[f64], actual: impl Iterator<Item = f64>, rtol: f64, atol: f64) -> bool {
    expected.iter().zip(actual).fold(true, |ok, (&e, a)| {
        ok & (((a - e).abs() <= atol + rtol * e.abs()) | (e.is_nan() & a.is_nan()))
    })
}

/// What the values of a chunk of an output are compared with.
struct Tolerances<'a> {
    expected: &'a [f64],
    rtol: f64,
    atol: f64,
}

/// [`all_close`] of a chunk's elements.
struct AllClose<'a>(&'a Tolerances<'a>);

impl ElementsTo for AllClose<'_> {
    type Out = bool;
    fn of(self, values: impl Iterator<Item = f64>) -> bool {
        all_close(self.0.expected, values, self.0.rtol, self.0.atol)
    }
}

/// [`compare_values`] of a chunk's elements, for the details of a mismatch.
struct Details<'a>(&'a Tolerances<'a>, &'a str);

impl ElementsTo for Details<'_> {
    type Out = Result<(), Mismatch>;
    fn of(self, values: impl Iterator<Item = f64>) -> Result<(), Mismatch> {
        compare_values(self.1, self.0.expected, values, self.0.rtol, self.0.atol)
    }
}

/// [`compare`] of as many values as `expected` has, read as they come (no copy of the output).
fn compare_values(
    output: &str,
    expected: &[f64],
    actual: impl Iterator<Item = f64>,
    rtol: f64,
    atol: f64,
) -> Result<(), Mismatch> {
    let mut bad: Option<Mismatch> = None;
    let mut max_abs_error = 0f64;
    let mut mismatched = 0;
    for (i, (&e, a)) in expected.iter().zip(actual).enumerate() {
        let err = (a - e).abs();
        let ok = err <= atol + rtol * e.abs() || (e.is_nan() && a.is_nan());
        if err.is_finite() {
            max_abs_error = max_abs_error.max(err);
        } else if !ok {
            max_abs_error = f64::INFINITY;
        }
        if !ok {
            mismatched += 1;
            bad.get_or_insert(Mismatch {
                output: output.to_string(),
                mismatched: 0,
                len: expected.len(),
                first_index: i,
                expected: e,
                actual: a,
                max_abs_error: 0.0,
            });
        }
    }
    match bad {
        None => Ok(()),
        Some(m) => Err(Mismatch {
            mismatched,
            max_abs_error,
            ..m
        }),
    }
}

/// [`compare`] of `actual`, the bytes of elements of type `ty` as read back from the device,
/// converted and compared chunk by chunk on every core; the same verdict and the same details.
pub fn compare_bytes(
    output: &str,
    want: &Want,
    ty: ElemType,
    actual: &[u8],
    rtol: f64,
    atol: f64,
) -> Result<(), Mismatch> {
    let expected = &want.values[..];
    let n = actual.len() / ty.size();
    if n != expected.len() {
        return compare(output, expected, &from_bytes(ty, actual), rtol, atol);
    }
    let floats = (ty == ElemType::Float && want.floats.len() == n).then_some(&want.floats[..]);
    let compare_chunk = |at: usize, e: &[f64], a: &[u8]| {
        if let Some(f) = floats {
            if close_in_f32(&f[at..at + e.len()], a, rtol, atol) {
                return Ok(());
            }
        }
        let tolerances = Tolerances {
            expected: e,
            rtol,
            atol,
        };
        if elements(ty, a, AllClose(&tolerances)) {
            Ok(())
        } else {
            elements(ty, a, Details(&tolerances, output))
        }
    };
    if n < 2 * PARALLEL_FROM {
        return compare_chunk(0, expected, actual);
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(n / PARALLEL_FROM);
    let chunk = n.div_ceil(threads);
    let verdicts: Vec<(usize, Result<(), Mismatch>)> = std::thread::scope(|scope| {
        let parts: Vec<_> = expected
            .chunks(chunk)
            .zip(actual.chunks(chunk * ty.size()))
            .enumerate()
            .map(|(k, (e, a))| {
                let compare_chunk = &compare_chunk;
                scope.spawn(move || (k * chunk, compare_chunk(k * chunk, e, a)))
            })
            .collect();
        parts
            .into_iter()
            .map(|h| h.join().expect("a comparison thread does not panic"))
            .collect()
    });
    // The first mismatch in element order, with the counts and the largest error of all chunks.
    let mut merged: Option<Mismatch> = None;
    for (offset, verdict) in verdicts {
        let Err(m) = verdict else { continue };
        merged = Some(match merged {
            None => Mismatch {
                first_index: offset + m.first_index,
                len: n,
                ..m
            },
            Some(first) => Mismatch {
                mismatched: first.mismatched + m.mismatched,
                max_abs_error: first.max_abs_error.max(m.max_abs_error),
                ..first
            },
        });
    }
    match merged {
        None => Ok(()),
        Some(m) => Err(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_and_mismatch_details() {
        assert!(compare("C", &[1.0, 100.0], &[1.0 + 1e-7, 100.001], 1e-4, 1e-6).is_ok());
        let m = compare("C", &[1.0, 2.0, 3.0], &[1.0, 2.5, 0.0], 1e-4, 1e-6).unwrap_err();
        assert_eq!(
            (
                m.mismatched,
                m.first_index,
                m.expected,
                m.actual,
                m.max_abs_error
            ),
            (2, 1, 2.0, 2.5, 3.0)
        );
        assert!(m
            .to_string()
            .starts_with("C: 2 of 3 elements differ; first at [1]"));
        assert!(compare("C", &[1.0], &[f64::NAN], 1e-4, 1e-6).is_err());
        assert!(compare("C", &[1.0, 2.0], &[1.0], 1e-4, 1e-6).is_err());
    }

    #[test]
    fn byte_comparison_in_chunks_agrees_with_the_serial_one() {
        let n = 3 * PARALLEL_FROM + 17;
        let expected: Vec<f64> = (0..n).map(|i| (i % 97) as f64 * 0.5).collect();
        let mut actual = expected.clone();
        let bytes = |v: &[f64]| crate::data::to_bytes(ElemType::Float, v);
        let want = Want::new(expected.clone(), ElemType::Float);
        assert_eq!(
            compare_bytes("C", &want, ElemType::Float, &bytes(&actual), 1e-4, 1e-6),
            Ok(())
        );
        for &i in &[PARALLEL_FROM + 5, 2 * PARALLEL_FROM + 9, n - 1] {
            actual[i] += 3.0;
        }
        actual[n - 2] = f64::NAN;
        let serial = compare("C", &expected, &actual, 1e-4, 1e-6).unwrap_err();
        let chunked =
            compare_bytes("C", &want, ElemType::Float, &bytes(&actual), 1e-4, 1e-6).unwrap_err();
        assert_eq!(chunked, serial);
        assert_eq!(
            (chunked.mismatched, chunked.first_index),
            (4, PARALLEL_FROM + 5)
        );
    }

    /// The quick pass in f32 never passes what the exact comparison fails, at the edges of the
    /// tolerances, of f32's range and of its precision; and it does pass outputs that match.
    #[test]
    fn the_quick_pass_in_f32_passes_only_what_the_exact_comparison_passes() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let tolerances = [0.0, 1e-9, 2.4e-7, 1e-6, 1e-4, 1e-2, 1.0];
        let specials = [
            0.0,
            1e-45,
            1e-40,
            1.2e-38,
            1.0,
            3.4e38,
            3.5e38,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        let (mut quick, mut cases) = (0, 0);
        for _ in 0..200_000 {
            let e = if rng.random_bool(0.2) {
                specials[rng.random_range(0..specials.len())]
            } else {
                rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-44..39))
            };
            let e = if rng.random_bool(0.5) { -e } else { e };
            let rtol = tolerances[rng.random_range(0..tolerances.len())];
            let atol = tolerances[rng.random_range(0..tolerances.len())] * 1e-3;
            // Near the edge of the tolerance, then a few f32 steps either way.
            let edge = (atol + rtol * e.abs()) * rng.random_range(-1.1..1.1);
            let mut a = (e + edge) as f32;
            for _ in 0..rng.random_range(0..3) {
                a = if rng.random_bool(0.5) {
                    a.next_up()
                } else {
                    a.next_down()
                };
            }
            let want = Want::new(vec![e], ElemType::Float);
            let passes = close_in_f32(&want.floats, &a.to_ne_bytes(), rtol, atol);
            let exact = all_close(&[e], std::iter::once(a as f64), rtol, atol);
            assert!(
                !passes || exact,
                "e {e:e}, a {a:e}, rtol {rtol:e}, atol {atol:e}"
            );
            cases += usize::from(exact);
            quick += usize::from(passes);
        }
        assert!(quick > cases / 2, "{quick} of {cases}");
        // Matching outputs pass quickly; a NaN expected where NaN is got is for the exact pass.
        let want = Want::new(vec![1.0, -2.5, 0.0, 1e6], ElemType::Float);
        let got: Vec<u8> = [1.00001f32, -2.5, 0.0, 1e6 + 50.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert!(close_in_f32(&want.floats, &got, 1e-4, 1e-6));
        let nan = Want::new(vec![f64::NAN], ElemType::Float);
        assert!(!close_in_f32(
            &nan.floats,
            &f32::NAN.to_ne_bytes(),
            1e-4,
            1e-6
        ));
        assert_eq!(
            compare_bytes(
                "C",
                &nan,
                ElemType::Float,
                &f32::NAN.to_ne_bytes(),
                1e-4,
                1e-6
            ),
            Ok(())
        );
    }
}
