//! Parameter domains: how a spec declares them, and their resolved, sorted values.
//!
//! Ranges stay arithmetic progressions (never materialised), so a parameter with a billion values
//! costs no memory and is still binary-searchable. A list may hold integers, real numbers or
//! identifiers: a parameter of integers keeps its integers in points, any other an index into
//! its table of values ([`Coding`]). Bounds of ranges and `divisors` are expressions over the
//! constants.

use crate::expr::Expr;
use crate::resolve::{resolve, Scope, Type};
use ndtune_core::{Coding, Value};

/// The most values a listed domain may have.
pub const MAX_LIST: usize = 1_000_000;

/// The largest number whose divisors a domain may list (its square root bounds the search).
pub const MAX_DIVISORS_OF: i64 = 1_000_000_000_000_000;

/// A domain as declared in a spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// `[1, 2, 4]`, `[0.5, 1.0]`, `["float", "half"]`
    List(Vec<Value>),
    /// `{ range = [a, b], step = s }`: a, a+s, ... up to b inclusive; each an expression over
    /// the constants.
    Range {
        start: String,
        end: String,
        step: String,
    },
    /// `{ pow2 = [a, b] }`: the powers of two in [a, b].
    Pow2 { start: String, end: String },
    /// `{ divisors = "EXPR" }`: the positive divisors of a constant expression.
    Divisors(String),
}

/// The resolved values of a domain, ascending and distinct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Values {
    Explicit(Vec<i64>),
    Arith { start: i64, step: i64, len: u64 },
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Explicit(v) => v.len(),
            Values::Arith { len, .. } => *len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    pub fn get(&self, i: usize) -> i64 {
        match self {
            Values::Explicit(v) => v[i],
            Values::Arith { start, step, .. } => start + step * i as i64,
        }
    }

    pub fn min(&self) -> i64 {
        self.get(0)
    }

    pub fn max(&self) -> i64 {
        self.get(self.len() - 1)
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The index of `v`, if it is one of the values.
    pub fn position(&self, v: i64) -> Option<usize> {
        match self {
            Values::Explicit(vals) => vals.binary_search(&v).ok(),
            Values::Arith { start, step, len } => {
                let off = (v as i128) - (*start as i128);
                let i = off / *step as i128;
                (off >= 0 && off % *step as i128 == 0 && i < *len as i128).then_some(i as usize)
            }
        }
    }

    /// Keeps only the values `keep` accepts.
    pub fn filter(&self, keep: impl Fn(i64) -> bool) -> Values {
        Values::Explicit(self.iter().filter(|&v| keep(v)).collect())
    }
}

impl Domain {
    /// `{ range = [start, end], step = step }` of integers.
    pub fn range(start: i64, end: i64, step: i64) -> Domain {
        Domain::Range {
            start: start.to_string(),
            end: end.to_string(),
            step: step.to_string(),
        }
    }

    /// `{ pow2 = [start, end] }` of integers.
    pub fn pow2(start: i64, end: i64) -> Domain {
        Domain::Pow2 {
            start: start.to_string(),
            end: end.to_string(),
        }
    }

    /// A list of integers.
    pub fn ints(values: &[i64]) -> Domain {
        Domain::List(values.iter().map(|&v| Value::Int(v)).collect())
    }

    /// Resolves the domain; `scope` supplies constants for bounds. Errors are messages about
    /// this parameter's domain.
    pub fn values(&self, scope: &Scope) -> Result<(Values, Coding), String> {
        let constant = |what: &str, src: &str| -> Result<i64, String> {
            let e = Expr::parse(src).map_err(|e| format!("in `{what}`: {e}"))?;
            let consts_only = Scope {
                params: vec![],
                codings: vec![],
                ..scope.clone()
            };
            resolve(&e, src, &consts_only, Type::Int)
                .map_err(|e| format!("in `{what}`: {e}"))?
                .eval(&[])
                .ok_or_else(|| format!("`{what} = \"{src}\"` divides by zero or overflows"))
        };
        let (values, coding) = match self {
            Domain::List(v) => list(v)?,
            Domain::Range { start, end, step } => {
                let (start, end, step) = (
                    constant("range", start)?,
                    constant("range", end)?,
                    constant("step", step)?,
                );
                if step <= 0 {
                    return Err(format!("step must be positive, not {step}"));
                }
                let len = if end < start {
                    0
                } else {
                    ((end as i128 - start as i128) / step as i128 + 1) as u64
                };
                (Values::Arith { start, step, len }, Coding::Int)
            }
            Domain::Pow2 { start, end } => {
                let (start, end) = (constant("pow2", start)?, constant("pow2", end)?);
                let v = (0..63)
                    .map(|e| 1i64 << e)
                    .filter(|p| *p >= start && *p <= end)
                    .collect();
                (Values::Explicit(v), Coding::Int)
            }
            Domain::Divisors(src) => {
                let n = constant("divisors", src)?;
                if n <= 0 {
                    return Err(format!(
                        "`divisors = \"{src}\"` is {n}; it must be positive"
                    ));
                }
                if n > MAX_DIVISORS_OF {
                    return Err(format!(
                        "`divisors = \"{src}\"` is {n}; ndtune lists the divisors of numbers up to {MAX_DIVISORS_OF}"
                    ));
                }
                (Values::Explicit(divisors(n)), Coding::Int)
            }
        };
        if values.is_empty() {
            return Err("the domain is empty".to_string());
        }
        Ok((values, coding))
    }
}

/// A listed domain: integers sorted, reals sorted (by value) in a table, identifiers in a table
/// in the order written.
fn list(v: &[Value]) -> Result<(Values, Coding), String> {
    if v.len() > MAX_LIST {
        return Err(format!(
            "the list has {} values; at most {MAX_LIST} are accepted (a range is never listed)",
            v.len()
        ));
    }
    if let Some(ints) = v.iter().map(Value::as_int).collect::<Option<Vec<_>>>() {
        let mut s = ints;
        s.sort_unstable();
        if let Some(w) = s.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("the value {} is listed twice", w[0]));
        }
        return Ok((Values::Explicit(s), Coding::Int));
    }
    let texts = v.iter().filter(|x| matches!(x, Value::Text(_))).count();
    let table: Vec<Value> = if texts == v.len() {
        for (i, x) in v.iter().enumerate() {
            let Value::Text(t) = x else { unreachable!() };
            if t.is_empty()
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
            {
                return Err(format!(
                    "`{}` cannot be a define's value: use letters, digits and _ . + -",
                    t.escape_debug()
                ));
            }
            if v[..i].contains(x) {
                return Err(format!("the value {x} is listed twice"));
            }
        }
        v.to_vec()
    } else if texts == 0 {
        let mut s = v.to_vec();
        s.sort_by(|a, b| {
            a.as_f64()
                .unwrap_or(0.0)
                .total_cmp(&b.as_f64().unwrap_or(0.0))
        });
        if let Some(w) = s.windows(2).find(|w| w[0].as_f64() == w[1].as_f64()) {
            return Err(format!(
                "the value {} is listed twice ({} and {})",
                w[0].as_f64().unwrap_or(0.0),
                w[0],
                w[1]
            ));
        }
        if let Some(bad) = s.iter().find(|x| !x.as_f64().is_some_and(f64::is_finite)) {
            return Err(format!("{bad} is not a finite number"));
        }
        s
    } else {
        return Err("the list mixes identifiers and numbers".to_string());
    };
    let len = table.len() as u64;
    Ok((
        Values::Arith {
            start: 0,
            step: 1,
            len,
        },
        Coding::Table(table.into()),
    ))
}

/// The positive divisors of `n > 0`, ascending.
pub fn divisors(n: i64) -> Vec<i64> {
    let (mut low, mut high) = (Vec::new(), Vec::new());
    let mut d = 1i64;
    while d.saturating_mul(d) <= n {
        if n % d == 0 {
            low.push(d);
            if d != n / d {
                high.push(n / d);
            }
        }
        d += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(d: Domain) -> Result<Vec<i64>, String> {
        let scope = Scope::ints(&[], &[("N", 12)]);
        d.values(&scope).map(|(v, _)| v.iter().collect())
    }

    fn ints(v: &[i64]) -> Domain {
        Domain::List(v.iter().map(|&x| Value::Int(x)).collect())
    }

    fn range(a: &str, b: &str, s: &str) -> Domain {
        Domain::Range {
            start: a.into(),
            end: b.into(),
            step: s.into(),
        }
    }

    #[test]
    fn every_kind_resolves_sorted() {
        assert_eq!(vals(ints(&[4, 1, 2])), Ok(vec![1, 2, 4]));
        assert_eq!(vals(range("8", "33", "8")), Ok(vec![8, 16, 24, 32]));
        assert_eq!(vals(range("N / 4", "N", "N / 6")), Ok(vec![3, 5, 7, 9, 11]));
        assert_eq!(
            vals(Domain::Pow2 {
                start: "3".into(),
                end: "N * 5".into()
            }),
            Ok(vec![4, 8, 16, 32])
        );
        assert_eq!(
            vals(Domain::Divisors("N * 2".into())),
            Ok(vec![1, 2, 3, 4, 6, 8, 12, 24])
        );
        assert_eq!(divisors(1), vec![1]);
        assert_eq!(divisors(36), vec![1, 2, 3, 4, 6, 9, 12, 18, 36]);
    }

    #[test]
    fn reals_and_identifiers_are_tables() {
        let scope = Scope::default();
        let (v, c) = Domain::List(vec![Value::Real(2.5), Value::Int(1), Value::Real(0.5)])
            .values(&scope)
            .unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(
            (c.value(0), c.value(1), c.value(2)),
            (Value::Real(0.5), Value::Int(1), Value::Real(2.5))
        );
        let (_, c) = Domain::List(vec!["half".into(), "float".into()])
            .values(&scope)
            .unwrap();
        assert_eq!(
            c.value(0),
            Value::from("half"),
            "identifiers keep their order"
        );
        let bad = |d: Domain| d.values(&scope).unwrap_err();
        assert!(bad(Domain::List(vec!["float".into(), Value::Int(1)])).contains("mixes"));
        assert!(bad(Domain::List(vec!["a b".into()])).contains("define's value"));
        assert!(bad(Domain::List(vec![Value::Int(1), Value::Real(1.0)])).contains("twice"));
    }

    #[test]
    fn bad_domains_say_why() {
        assert_eq!(vals(ints(&[])), Err("the domain is empty".into()));
        assert_eq!(
            vals(range("5", "1", "1")),
            Err("the domain is empty".into())
        );
        assert!(vals(range("1", "5", "0")).unwrap_err().contains("positive"));
        assert!(vals(ints(&[1, 1])).unwrap_err().contains("listed twice"));
        assert!(vals(Domain::Pow2 {
            start: "5".into(),
            end: "7".into()
        })
        .is_err());
        assert!(vals(Domain::Divisors("N - 12".into()))
            .unwrap_err()
            .contains("must be positive"));
        assert!(vals(Domain::Divisors("M".into()))
            .unwrap_err()
            .contains("unknown name `M`"));
        assert!(vals(range("1", "2.5", "1"))
            .unwrap_err()
            .contains("real number"));
        // Far too many divisors to search for: refused at once, not a loop for ever.
        let started = std::time::Instant::now();
        assert!(vals(Domain::Divisors("9223372036854775807".into()))
            .unwrap_err()
            .contains("up to"));
        assert!(started.elapsed().as_secs() < 1);
    }

    #[test]
    fn huge_ranges_are_not_materialised() {
        let (v, _) = range("1", "4_000_000_000", "1")
            .values(&Scope::default())
            .unwrap();
        assert_eq!(
            (v.len(), v.get(41), v.max()),
            (4_000_000_000, 42, 4_000_000_000)
        );
    }
}
