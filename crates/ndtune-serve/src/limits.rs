//! Which work-group sizes `(wc, wr)` can run a stencil scenario: the device's work-group and
//! work-item limits, and the local memory the skeleton's tile (work-group plus border) needs.
//! Everything is read from the scenario's features, so a request that only sends features gets
//! a legal size too; a request's `limits` may tighten or replace any of it, so a model trained on
//! other features (a user's own CSV) is served with the limits given in the request alone.

use ndtune_learn::oracle::Wg;
use ndtune_stencil::Border;
use serde::{Deserialize, Serialize, Serializer};

/// The limits a predicted size must respect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    pub max_work_group_size: u64,
    pub max_work_item_sizes: [u64; 2],
    pub local_mem_size: u64,
    /// The stencil's border, which the tile adds around the work-group: north, south, east, west.
    #[serde(serialize_with = "border_array")]
    pub border: Border,
    /// Bytes of one input element (the tile holds input elements).
    pub input_bytes: u64,
}

fn border_array<S: Serializer>(b: &Border, s: S) -> Result<S::Ok, S::Error> {
    [b.north, b.south, b.east, b.west].serialize(s)
}

/// Limits given in a request, each replacing the one read from the features.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitOverrides {
    pub max_work_group_size: Option<u64>,
    pub max_work_item_sizes: Option<[u64; 2]>,
    pub local_mem_size: Option<u64>,
    /// North, south, east, west (as a dataset's `border`).
    pub border: Option<[u32; 4]>,
    pub input_bytes: Option<u64>,
}

/// Each feature the legality check reads, and the key of `limits` that stands in for it.
const FEATURES: [(&str, &str); 9] = [
    ("f_dev_max_work_group_size", "max_work_group_size"),
    ("f_dev_max_work_item_size_x", "max_work_item_sizes"),
    ("f_dev_max_work_item_size_y", "max_work_item_sizes"),
    ("f_dev_local_mem_size", "local_mem_size"),
    ("f_data_border_north", "border"),
    ("f_data_border_south", "border"),
    ("f_data_border_east", "border"),
    ("f_data_border_west", "border"),
    ("f_data_input_bytes", "input_bytes"),
];

impl LimitOverrides {
    /// Whether the legality check reads feature `name` under these overrides.
    pub fn reads(&self, name: &str) -> bool {
        FEATURES
            .iter()
            .any(|&(f, key)| f == name && !self.gives(key))
    }

    fn gives(&self, key: &str) -> bool {
        match key {
            "max_work_group_size" => self.max_work_group_size.is_some(),
            "max_work_item_sizes" => self.max_work_item_sizes.is_some(),
            "local_mem_size" => self.local_mem_size.is_some(),
            "border" => self.border.is_some(),
            "input_bytes" => self.input_bytes.is_some(),
            _ => unreachable!("`{key}` is a key of FEATURES"),
        }
    }
}

impl Limits {
    /// The limits of a scenario whose features `get` returns by name; `overrides` replace them.
    /// Fails naming the first feature that is missing and not overridden, and its `limits` key.
    pub fn from_features(
        get: impl Fn(&str) -> Option<f64>,
        overrides: &LimitOverrides,
    ) -> Result<Limits, String> {
        let feature = |name: &str| -> Result<u64, String> {
            get(name)
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v as u64)
                .ok_or_else(|| {
                    let key = FEATURES
                        .iter()
                        .find(|(f, _)| *f == name)
                        .map_or("", |(_, k)| k);
                    format!(
                        "the legality check needs feature `{name}`, or `{key}` in the request's \
                         `limits` (a model trained on other features is served with \
                         `limits` giving max_work_group_size, max_work_item_sizes, \
                         local_mem_size, border and input_bytes)"
                    )
                })
        };
        let item = |name: &str, i: usize| match overrides.max_work_item_sizes {
            Some(sizes) => Ok(sizes[i]),
            None => feature(name),
        };
        let side = |name: &str, i: usize| match overrides.border {
            Some(b) => Ok(b[i]),
            None => feature(name).map(|v| v as u32),
        };
        Ok(Limits {
            max_work_group_size: match overrides.max_work_group_size {
                Some(v) => v,
                None => feature("f_dev_max_work_group_size")?,
            },
            max_work_item_sizes: [
                item("f_dev_max_work_item_size_x", 0)?,
                item("f_dev_max_work_item_size_y", 1)?,
            ],
            local_mem_size: match overrides.local_mem_size {
                Some(v) => v,
                None => feature("f_dev_local_mem_size")?,
            },
            border: Border {
                north: side("f_data_border_north", 0)?,
                south: side("f_data_border_south", 1)?,
                east: side("f_data_border_east", 2)?,
                west: side("f_data_border_west", 3)?,
            },
            input_bytes: match overrides.input_bytes {
                Some(v) => v,
                None => feature("f_data_input_bytes")?,
            },
        })
    }

    /// Whether a `wc x wr` work-group can run.
    pub fn allows(&self, (wc, wr): Wg) -> bool {
        wc >= 1
            && wr >= 1
            && wc.saturating_mul(wr) <= self.max_work_group_size
            && wc <= self.max_work_item_sizes[0]
            && wr <= self.max_work_item_sizes[1]
            && self.border.tile_bytes(self.input_bytes, wc, wr) <= self.local_mem_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn features() -> HashMap<&'static str, f64> {
        [
            ("f_dev_max_work_group_size", 256.0),
            ("f_dev_max_work_item_size_x", 128.0),
            ("f_dev_max_work_item_size_y", 64.0),
            ("f_dev_local_mem_size", 4096.0),
            ("f_data_border_north", 1.0),
            ("f_data_border_south", 1.0),
            ("f_data_border_east", 2.0),
            ("f_data_border_west", 2.0),
            ("f_data_input_bytes", 4.0),
        ]
        .into()
    }

    #[test]
    fn limits_come_from_features_and_bound_every_dimension() {
        let f = features();
        let l = Limits::from_features(|n| f.get(n).copied(), &LimitOverrides::default()).unwrap();
        assert!(l.allows((16, 16)));
        assert!(!l.allows((32, 16)), "512 items > 256");
        assert!(!l.allows((256, 1)), "wc > 128");
        assert!(!l.allows((1, 128)), "wr > 64");
        assert!(!l.allows((0, 4)));
        // Tile of 128 x 2: (2 + 2) * (128 + 4) * 4 = 2112 bytes fits; 64 x 4 too; with 1 KiB not.
        assert!(l.allows((128, 2)));
        let small = LimitOverrides {
            local_mem_size: Some(1024),
            ..Default::default()
        };
        let l = Limits::from_features(|n| f.get(n).copied(), &small).unwrap();
        assert!(!l.allows((128, 2)));
        assert!(l.allows((8, 8)), "(8 + 2) * (8 + 4) * 4 = 480 bytes");
    }

    #[test]
    fn overrides_replace_features_and_a_missing_one_is_named() {
        let mut f = features();
        f.remove("f_dev_max_work_item_size_y");
        let err =
            Limits::from_features(|n| f.get(n).copied(), &LimitOverrides::default()).unwrap_err();
        assert!(err.contains("f_dev_max_work_item_size_y"), "{err}");
        let o = LimitOverrides {
            max_work_item_sizes: Some([4, 4]),
            ..Default::default()
        };
        let l = Limits::from_features(|n| f.get(n).copied(), &o).unwrap();
        assert!(l.allows((4, 4)) && !l.allows((8, 1)));
        assert!(!o.reads("f_dev_max_work_item_size_y") && o.reads("f_data_border_east"));
        assert!(!o.reads("f_rows"), "not a feature of the legality check");
    }

    #[test]
    fn limits_alone_make_the_legality_check_without_any_feature() {
        let none = |_: &str| None;
        let err = Limits::from_features(none, &LimitOverrides::default()).unwrap_err();
        assert!(
            err.contains(
                "`f_dev_max_work_group_size`, or `max_work_group_size` in the request's `limits`"
            ),
            "{err}"
        );
        let all = LimitOverrides {
            max_work_group_size: Some(256),
            max_work_item_sizes: Some([256, 256]),
            local_mem_size: Some(1024),
            border: Some([1, 1, 2, 2]),
            input_bytes: Some(4),
        };
        let l = Limits::from_features(none, &all).unwrap();
        // (8 + 2) * (8 + 4) * 4 = 480 bytes fit; (16 + 2) * (16 + 4) * 4 = 1440 do not.
        assert!(l.allows((8, 8)) && !l.allows((16, 16)));
        assert_eq!(
            serde_json::to_value(l).unwrap()["border"],
            serde_json::json!([1, 1, 2, 2])
        );
        assert!(FEATURES.iter().all(|(f, _)| !all.reads(f)));
    }
}
