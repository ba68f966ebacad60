//! The valid points of a space, as a strategy sees them.

use crate::Point;
use ndtune_core::{Codec, CodecError, Config, Value};
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// What a strategy may know about a space: parameter names, each parameter's sorted domain and
/// the valid points (already pruned: a strategy never proposes a point outside them), indexed
/// for O(1) lookup.
///
/// A domain holds the distinct values the valid points take, so a step to the next value of a
/// domain stays among values that some valid point uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidates {
    codec: Codec,
    domains: Vec<Vec<i64>>,
    points: Vec<Point>,
    index: HashMap<Point, usize>,
}

/// Why points or configurations do not make a space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidSpace {
    DuplicateName(String),
    /// A point with another number of values than there are names.
    WrongArity {
        point: Point,
        names: usize,
    },
    DuplicatePoint(Point),
    /// A configuration that lacks one of the names.
    MissingParameter(String),
    /// A configuration with a parameter that is not one of the names.
    UnknownParameter(String),
    /// A configuration with a value its parameter cannot take.
    BadValue {
        param: String,
        value: Value,
    },
}

impl From<CodecError> for InvalidSpace {
    fn from(e: CodecError) -> Self {
        match e {
            CodecError::Missing(n) => InvalidSpace::MissingParameter(n),
            CodecError::Unknown(n) => InvalidSpace::UnknownParameter(n),
            CodecError::Value { param, value } => InvalidSpace::BadValue { param, value },
        }
    }
}

impl fmt::Display for InvalidSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidSpace::DuplicateName(n) => write!(f, "parameter `{n}` is named twice"),
            InvalidSpace::WrongArity { point, names } => {
                write!(
                    f,
                    "point {point:?} has {} values for {names} parameters",
                    point.len()
                )
            }
            InvalidSpace::DuplicatePoint(p) => write!(f, "point {p:?} is listed twice"),
            InvalidSpace::MissingParameter(n) => write!(f, "a configuration lacks `{n}`"),
            InvalidSpace::UnknownParameter(n) => {
                write!(
                    f,
                    "a configuration sets `{n}`, which is not a parameter of the space"
                )
            }
            InvalidSpace::BadValue { param, value } => {
                write!(
                    f,
                    "a configuration sets `{param}` to {value}, which it cannot take"
                )
            }
        }
    }
}

impl std::error::Error for InvalidSpace {}

impl Candidates {
    /// The space of `points` of integer parameters, each with one value per name in the same
    /// order; the domains are derived from the points.
    pub fn new(names: Vec<String>, points: Vec<Point>) -> Result<Candidates, InvalidSpace> {
        Candidates::with_codec(Codec::ints(names), points)
    }

    /// The space of `points` held as `codec` says.
    pub fn with_codec(codec: Codec, points: Vec<Point>) -> Result<Candidates, InvalidSpace> {
        let names = codec.names();
        let mut seen = BTreeSet::new();
        if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(InvalidSpace::DuplicateName(dup.clone()));
        }
        let mut index = HashMap::with_capacity(points.len());
        let mut domains = vec![BTreeSet::new(); names.len()];
        for (i, point) in points.iter().enumerate() {
            if point.len() != names.len() {
                return Err(InvalidSpace::WrongArity {
                    point: point.clone(),
                    names: names.len(),
                });
            }
            if index.insert(point.clone(), i).is_some() {
                return Err(InvalidSpace::DuplicatePoint(point.clone()));
            }
            for (domain, &v) in domains.iter_mut().zip(point) {
                domain.insert(v);
            }
        }
        let domains = domains
            .into_iter()
            .map(|d| d.into_iter().collect())
            .collect();
        Ok(Candidates {
            codec,
            domains,
            points,
            index,
        })
    }

    pub fn names(&self) -> &[String] {
        self.codec.names()
    }

    /// How the points hold configurations.
    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// Each parameter's distinct values, ascending.
    pub fn domains(&self) -> &[Vec<i64>] {
        &self.domains
    }

    pub fn points(&self) -> &[Point] {
        &self.points
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The position of `point` in [`Candidates::points`], if it is a candidate.
    pub fn index_of(&self, point: &[i64]) -> Option<usize> {
        self.index.get(point).copied()
    }

    pub fn contains(&self, point: &[i64]) -> bool {
        self.index.contains_key(point)
    }

    /// `point` as a configuration, parameter name to value.
    pub fn config(&self, point: &[i64]) -> Config {
        self.codec.config(point)
    }

    /// `config` as a point in this space's parameter order (whether or not it is a candidate).
    pub fn point(&self, config: &Config) -> Result<Point, InvalidSpace> {
        Ok(self.codec.point(config)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ns: &[&str]) -> Vec<String> {
        ns.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn derives_sorted_domains_and_indexes_points() {
        let space =
            Candidates::new(names(&["B", "A"]), vec![vec![8, 1], vec![2, 3], vec![8, 3]]).unwrap();
        assert_eq!(space.domains(), &[vec![2, 8], vec![1, 3]]);
        assert_eq!(space.index_of(&[2, 3]), Some(1));
        assert!(!space.contains(&[2, 1]));
        let config = space.config(&[8, 3]);
        assert_eq!(config, ndtune_core::int_config([("A", 3), ("B", 8)]));
        assert_eq!(space.point(&config), Ok(vec![8, 3]));
    }

    #[test]
    fn rejects_malformed_spaces() {
        let err = |n: &[&str], p: Vec<Point>| Candidates::new(names(n), p).unwrap_err();
        assert_eq!(
            err(&["A", "A"], vec![]),
            InvalidSpace::DuplicateName("A".into())
        );
        assert_eq!(
            err(&["A"], vec![vec![1, 2]]),
            InvalidSpace::WrongArity {
                point: vec![1, 2],
                names: 1
            }
        );
        assert_eq!(
            err(&["A"], vec![vec![1], vec![1]]),
            InvalidSpace::DuplicatePoint(vec![1])
        );
        let space = Candidates::new(names(&["A", "B"]), vec![]).unwrap();
        let config = |kv: &[(&str, i64)]| ndtune_core::int_config(kv.iter().copied());
        assert_eq!(
            space.point(&config(&[("A", 1)])),
            Err(InvalidSpace::MissingParameter("B".into()))
        );
        assert_eq!(
            space.point(&config(&[("A", 1), ("B", 2), ("C", 3)])),
            Err(InvalidSpace::UnknownParameter("C".into()))
        );
    }
}
