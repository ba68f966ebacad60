//! Comparing a configuration's outputs with the reference, within a relative and an absolute
//! tolerance (numpy's `isclose`: |a - e| <= atol + rtol * |e|): values against values
//! ([`compare`]), or the device's bytes straight from a read-back, in parallel chunks, read in
//! place ([`compare_bytes`]).

use crate::data::{elements, from_bytes, ElementsTo};
use ndtune_spec::ElemType;

/// Outputs shorter than twice this many elements are compared on one thread; longer ones in
/// chunks of at least this many, one per core: about 0.3 ms of work each, far more than starting a thread,
/// which on a CPU device whose cores the build workers keep busy can take milliseconds.
const PARALLEL_FROM: usize = 1 << 18;

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
    expected: &[f64],
    ty: ElemType,
    actual: &[u8],
    rtol: f64,
    atol: f64,
) -> Result<(), Mismatch> {
    let n = actual.len() / ty.size();
    if n != expected.len() {
        return compare(output, expected, &from_bytes(ty, actual), rtol, atol);
    }
    let compare_chunk = |e: &[f64], a: &[u8]| {
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
        return compare_chunk(expected, actual);
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
                scope.spawn(move || (k * chunk, compare_chunk(e, a)))
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
        assert_eq!(
            compare_bytes("C", &expected, ElemType::Float, &bytes(&actual), 1e-4, 1e-6),
            Ok(())
        );
        for &i in &[PARALLEL_FROM + 5, 2 * PARALLEL_FROM + 9, n - 1] {
            actual[i] += 3.0;
        }
        actual[n - 2] = f64::NAN;
        let serial = compare("C", &expected, &actual, 1e-4, 1e-6).unwrap_err();
        let chunked = compare_bytes("C", &expected, ElemType::Float, &bytes(&actual), 1e-4, 1e-6)
            .unwrap_err();
        assert_eq!(chunked, serial);
        assert_eq!(
            (chunked.mismatched, chunked.first_index),
            (4, PARALLEL_FROM + 5)
        );
    }
}
