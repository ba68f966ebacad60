//! Device selectors: how a user names one device on the command line.

use std::fmt;
use std::str::FromStr;

/// `SEL` in `--device SEL`: an index from `ndtune devices`, a case-insensitive substring of the
/// device name, or `D:K/N`: sub-device K of N equal compute-unit partitions of device D.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    Index(usize),
    Name(String),
    Sub {
        parent: Box<Selector>,
        k: usize,
        n: usize,
    },
}

/// Why a selector picked no single device.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("no device matches `{selector}`; the devices are:\n{listing}")]
    NoMatch { selector: String, listing: String },
    #[error("`{selector}` matches {count} devices; use the index or a longer part of the name:\n{listing}")]
    Ambiguous {
        selector: String,
        count: usize,
        listing: String,
    },
    #[error("empty device selector")]
    Empty,
    #[error("`{0}`: a sub-device is D:K/N with 0 <= K < N")]
    BadSub(String),
}

impl FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SelectorError::Empty);
        }
        if let Some((parent, part)) = s.rsplit_once(':') {
            if let Some((k, n)) = part.split_once('/') {
                let bad = || SelectorError::BadSub(s.to_string());
                let (k, n) = (
                    k.trim().parse::<usize>().map_err(|_| bad())?,
                    n.trim().parse::<usize>().map_err(|_| bad())?,
                );
                if k >= n {
                    return Err(bad());
                }
                return Ok(Selector::Sub {
                    parent: Box::new(parent.parse()?),
                    k,
                    n,
                });
            }
        }
        Ok(match s.parse::<usize>() {
            Ok(i) => Selector::Index(i),
            Err(_) => Selector::Name(s.to_string()),
        })
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Index(i) => write!(f, "{i}"),
            Selector::Name(n) => f.write_str(n),
            Selector::Sub { parent, k, n } => write!(f, "{parent}:{k}/{n}"),
        }
    }
}

impl Selector {
    /// Picks exactly one of `names` (devices in `ndtune devices` order) or says why not; for a
    /// sub-device selector, its parent device.
    pub fn pick(&self, names: &[&str]) -> Result<usize, SelectorError> {
        if let Selector::Sub { parent, .. } = self {
            return parent.pick(names);
        }
        let listing = || {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("  {i}: {n}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let matches: Vec<usize> = match self {
            Selector::Index(i) if *i < names.len() => vec![*i],
            Selector::Index(_) => vec![],
            Selector::Sub { .. } => unreachable!("handled above"),
            Selector::Name(n) => {
                let n = n.to_lowercase();
                (0..names.len())
                    .filter(|&i| names[i].to_lowercase().contains(&n))
                    .collect()
            }
        };
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(SelectorError::NoMatch {
                selector: self.to_string(),
                listing: listing(),
            }),
            many => Err(SelectorError::Ambiguous {
                selector: self.to_string(),
                count: many.len(),
                listing: listing(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &[
        "NVIDIA H100 80GB HBM3",
        "pthread-haswell-AMD EPYC",
        "NVIDIA H100 PCIe",
    ];

    #[test]
    fn index_and_unique_substring_pick_one() {
        assert_eq!("1".parse::<Selector>().unwrap().pick(NAMES), Ok(1));
        assert_eq!("epyc".parse::<Selector>().unwrap().pick(NAMES), Ok(1));
        assert_eq!("HBM3".parse::<Selector>().unwrap().pick(NAMES), Ok(0));
    }

    #[test]
    fn no_match_and_ambiguous_are_errors_that_list_devices() {
        let e = "radeon"
            .parse::<Selector>()
            .unwrap()
            .pick(NAMES)
            .unwrap_err();
        assert!(matches!(e, SelectorError::NoMatch { .. }));
        assert!(e.to_string().contains("2: NVIDIA H100 PCIe"));
        let e = "nvidia"
            .parse::<Selector>()
            .unwrap()
            .pick(NAMES)
            .unwrap_err();
        assert!(
            matches!(e, SelectorError::Ambiguous { count: 2, .. }),
            "{e}"
        );
        assert!(matches!(
            "7".parse::<Selector>().unwrap().pick(NAMES),
            Err(SelectorError::NoMatch { .. })
        ));
        assert_eq!("  ".parse::<Selector>(), Err(SelectorError::Empty));
    }

    #[test]
    fn sub_devices_name_their_parent() {
        let s: Selector = "epyc:1/2".parse().unwrap();
        assert_eq!(
            s,
            Selector::Sub {
                parent: Box::new(Selector::Name("epyc".into())),
                k: 1,
                n: 2
            }
        );
        assert_eq!(s.pick(NAMES), Ok(1));
        assert_eq!(s.to_string(), "epyc:1/2");
        assert_eq!("0:0/4".parse::<Selector>().unwrap().pick(NAMES), Ok(0));
        assert!(matches!(
            "0:2/2".parse::<Selector>(),
            Err(SelectorError::BadSub(_))
        ));
        assert!(matches!(
            "0:x/2".parse::<Selector>(),
            Err(SelectorError::BadSub(_))
        ));
    }
}
