//! Device selectors: how a user names one device on the command line.

use std::fmt;
use std::str::FromStr;

/// `SEL` in `--device SEL`: an index from `ndtune devices`, or a case-insensitive substring of
/// the device name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    Index(usize),
    Name(String),
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
}

impl FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SelectorError::Empty);
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
        }
    }
}

impl Selector {
    /// Picks exactly one of `names` (devices in `ndtune devices` order) or says why not.
    pub fn pick(&self, names: &[&str]) -> Result<usize, SelectorError> {
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
}
