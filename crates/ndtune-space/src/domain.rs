//! Parameter domains: how a spec declares them, and their resolved, sorted values.
//!
//! Ranges stay arithmetic progressions (never materialised), so a parameter with a billion values
//! costs no memory and is still binary-searchable.

use crate::expr::Expr;
use crate::resolve::{resolve, Scope, Type};

/// A domain as declared in a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Domain {
    /// `[1, 2, 4]`
    List(Vec<i64>),
    /// `{ range = [a, b], step = s }`: a, a+s, ... up to b inclusive.
    Range { start: i64, end: i64, step: i64 },
    /// `{ pow2 = [a, b] }`: the powers of two in [a, b].
    Pow2 { start: i64, end: i64 },
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
    /// Resolves the domain; `scope` supplies constants for `divisors`. Errors are messages about
    /// this parameter's domain.
    pub fn values(&self, scope: &Scope) -> Result<Values, String> {
        let values = match self {
            Domain::List(v) => {
                let mut s = v.clone();
                s.sort_unstable();
                if let Some(w) = s.windows(2).find(|w| w[0] == w[1]) {
                    return Err(format!("the value {} is listed twice", w[0]));
                }
                Values::Explicit(s)
            }
            Domain::Range { start, end, step } => {
                if *step <= 0 {
                    return Err(format!("step must be positive, not {step}"));
                }
                let len = if end < start {
                    0
                } else {
                    ((*end as i128 - *start as i128) / *step as i128 + 1) as u64
                };
                Values::Arith {
                    start: *start,
                    step: *step,
                    len,
                }
            }
            Domain::Pow2 { start, end } => Values::Explicit(
                (0..63)
                    .map(|e| 1i64 << e)
                    .filter(|p| p >= start && p <= end)
                    .collect(),
            ),
            Domain::Divisors(src) => {
                let e = Expr::parse(src).map_err(|e| format!("in `divisors`: {e}"))?;
                let consts_only = Scope {
                    params: vec![],
                    ..scope.clone()
                };
                let node = resolve(&e, src, &consts_only, Type::Int)
                    .map_err(|e| format!("in `divisors`: {e}"))?;
                let n = node.eval(&[]).ok_or_else(|| {
                    format!("`divisors = \"{src}\"` divides by zero or overflows")
                })?;
                if n <= 0 {
                    return Err(format!(
                        "`divisors = \"{src}\"` is {n}; it must be positive"
                    ));
                }
                Values::Explicit(divisors(n))
            }
        };
        if values.is_empty() {
            return Err("the domain is empty".to_string());
        }
        Ok(values)
    }
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
        let scope = Scope {
            constants: [("N".to_string(), 12)].into_iter().collect(),
            ..Scope::default()
        };
        d.values(&scope).map(|v| v.iter().collect())
    }

    #[test]
    fn every_kind_resolves_sorted() {
        assert_eq!(vals(Domain::List(vec![4, 1, 2])), Ok(vec![1, 2, 4]));
        assert_eq!(
            vals(Domain::Range {
                start: 8,
                end: 33,
                step: 8
            }),
            Ok(vec![8, 16, 24, 32])
        );
        assert_eq!(
            vals(Domain::Pow2 { start: 3, end: 64 }),
            Ok(vec![4, 8, 16, 32, 64])
        );
        assert_eq!(
            vals(Domain::Divisors("N * 2".into())),
            Ok(vec![1, 2, 3, 4, 6, 8, 12, 24])
        );
        assert_eq!(divisors(1), vec![1]);
        assert_eq!(divisors(36), vec![1, 2, 3, 4, 6, 9, 12, 18, 36]);
    }

    #[test]
    fn bad_domains_say_why() {
        assert_eq!(
            vals(Domain::List(vec![])),
            Err("the domain is empty".into())
        );
        assert_eq!(
            vals(Domain::Range {
                start: 5,
                end: 1,
                step: 1
            }),
            Err("the domain is empty".into())
        );
        assert!(vals(Domain::Range {
            start: 1,
            end: 5,
            step: 0
        })
        .unwrap_err()
        .contains("positive"));
        assert!(vals(Domain::List(vec![1, 1]))
            .unwrap_err()
            .contains("listed twice"));
        assert!(vals(Domain::Pow2 { start: 5, end: 7 }).is_err());
        assert!(vals(Domain::Divisors("N - 12".into()))
            .unwrap_err()
            .contains("must be positive"));
        assert!(vals(Domain::Divisors("M".into()))
            .unwrap_err()
            .contains("unknown name `M`"));
    }

    #[test]
    fn huge_ranges_are_not_materialised() {
        let v = Domain::Range {
            start: 1,
            end: 4_000_000_000,
            step: 1,
        }
        .values(&Scope::default())
        .unwrap();
        assert_eq!(
            (v.len(), v.get(41), v.max()),
            (4_000_000_000, 42, 4_000_000_000)
        );
    }
}
