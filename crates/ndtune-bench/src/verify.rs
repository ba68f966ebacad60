//! Comparing a configuration's outputs with the reference, within a relative and an absolute
//! tolerance (numpy's `isclose`: |a - e| <= atol + rtol * |e|).

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
    let mut bad: Option<Mismatch> = None;
    let mut max_abs_error = 0f64;
    let mut mismatched = 0;
    for (i, (&e, &a)) in expected.iter().zip(actual).enumerate() {
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
}
