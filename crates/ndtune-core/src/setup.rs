//! A result's setup: everything besides the device, the constants and the configuration that
//! can change what a configuration measures — the kernel's source files and the headers they
//! include, build options, launch, arguments and their data, verification, the measurement
//! protocol. A stored result is reused only by a campaign of the same setup.
//!
//! A [`Setup`] is a readable description (canonical JSON: files by their hashes, the spec's
//! sections as written) and its [`Setup::digest`], which keys results in the store. The spec
//! crate builds the description; [`differences`] tells people what differs between two.
//!
//! ```
//! use ndtune_core::setup::{differences, Setup};
//! let a = Setup::new(serde_json::json!({"kernel": {"build_options": []}, "measure": {"runs": 10}}));
//! let b = Setup::new(serde_json::json!({"measure": {"runs": 20}, "kernel": {"build_options": []}}));
//! assert_ne!(a.digest, b.digest);
//! assert_eq!(differences(&a.description, &b.description), ["measure.runs: 10 -> 20"]);
//! ```

use crate::text::short_sha256;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The setup of results stored before setups were recorded (store schema 5 and earlier): no
/// campaign of today has it, so they are never reused.
pub const LEGACY: &str = "legacy";

/// What [`LEGACY`] results were measured under, as far as anyone can tell.
pub fn legacy_description() -> Value {
    serde_json::json!({
        "legacy": "recorded before ndtune kept setups (store schema 5 or earlier): its build \
                   options, arguments, verification and measurement are unknown"
    })
}

/// A result's setup: its description and the digest of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// 16 hex digits: the start of the SHA-256 of the description's canonical JSON.
    pub digest: String,
    /// What the digest was computed from, objects with their keys sorted.
    pub description: Value,
}

impl Setup {
    /// The setup with this description (made canonical: the order of keys does not count).
    pub fn new(description: Value) -> Setup {
        let description = canonical(description);
        Setup {
            digest: short_sha256(description.to_string().as_bytes()),
            description,
        }
    }
}

/// `v` with the keys of every object sorted.
fn canonical(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let sorted: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().collect::<Map<String, Value>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// What differs from `older` to `newer`, one `path: old -> new` line per difference (objects
/// walked key by key, lists of equal length item by item), in key order. A side that lacks a
/// key shows as `none`.
pub fn differences(older: &Value, newer: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", Some(older), Some(newer), &mut out);
    out
}

fn walk(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Some(x), Some(y)) if x == y => {}
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                walk(&at(k), x.get(k), y.get(k), out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                walk(&format!("{path}[{i}]"), Some(p), Some(q), out);
            }
        }
        _ => out.push(format!(
            "{}: {} -> {}",
            if path.is_empty() { "setup" } else { path },
            shown(a),
            shown(b)
        )),
    }
}

/// A value as a difference shows it: compact JSON, long values shortened.
fn shown(v: Option<&Value>) -> String {
    const LONGEST: usize = 60;
    let Some(v) = v else {
        return "none".into();
    };
    let text = v.to_string();
    match text.char_indices().nth(LONGEST) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_digest_ignores_the_order_of_keys_and_nothing_else() {
        let a = Setup::new(json!({"b": 1, "a": {"y": [1, 2], "x": "s"}}));
        let b = Setup::new(json!({"a": {"x": "s", "y": [1, 2]}, "b": 1}));
        assert_eq!(a, b);
        assert_eq!(a.digest.len(), 16);
        assert_eq!(
            a.description.to_string(),
            r#"{"a":{"x":"s","y":[1,2]},"b":1}"#
        );
        for other in [
            json!({"b": 1, "a": {"y": [2, 1], "x": "s"}}),
            json!({"b": 1.0, "a": {"y": [1, 2], "x": "s"}}),
            json!({"b": 1, "a": {"y": [1, 2], "x": "s", "z": null}}),
        ] {
            assert_ne!(Setup::new(other).digest, a.digest);
        }
    }

    #[test]
    fn a_digest_never_changes() {
        // Stored results are keyed by digests: this value must never change.
        let s = Setup::new(json!({"measure": {"runs": 10}, "files": {"k.cl": "ab"}}));
        // = sha256(r#"{"files":{"k.cl":"ab"},"measure":{"runs":10}}"#)[..16]
        assert_eq!(
            s.digest,
            short_sha256(br#"{"files":{"k.cl":"ab"},"measure":{"runs":10}}"#)
        );
        assert_eq!(s.digest, "1451a2699e9c7b05");
    }

    #[test]
    fn differences_name_each_changed_path() {
        let old = json!({
            "files": {"k.cl": "aaaa", "inc/a.h": "bbbb"},
            "kernel": {"build_options": [], "source": "k.cl"},
            "args": [{"name": "x", "init": "random"}, {"name": "y"}],
            "seed": 1
        });
        let new = json!({
            "files": {"k.cl": "aaaa", "inc/a.h": "cccc", "inc/b.h": "dddd"},
            "kernel": {"build_options": ["-cl-fast-relaxed-math"], "source": "k.cl"},
            "args": [{"name": "x", "init": "ones"}, {"name": "y"}],
        });
        assert_eq!(
            differences(&old, &new),
            [
                r#"args[0].init: "random" -> "ones""#,
                r#"files.inc/a.h: "bbbb" -> "cccc""#,
                r#"files.inc/b.h: none -> "dddd""#,
                r#"kernel.build_options: [] -> ["-cl-fast-relaxed-math"]"#,
                "seed: 1 -> none",
            ]
        );
        assert!(differences(&old, &old).is_empty());
        let long = json!({"x": "y".repeat(100)});
        let d = differences(&json!({}), &long);
        assert!(d[0].ends_with("...") && d[0].len() < 90, "{d:?}");
        assert_eq!(
            differences(&legacy_description(), &json!({"seed": 1}))[1],
            "seed: none -> 1"
        );
    }
}
