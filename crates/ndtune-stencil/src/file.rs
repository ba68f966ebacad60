//! The `.stencil.toml` file: reading it (serde, unknown keys refused, then the stencil's own
//! validation, every error at its line and column) and writing it back.

use crate::{Border, Elem, Field, Kind, Padding, Stencil, StencilError};
use ndtune_core::text::line_col;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStencil {
    name: Spanned<String>,
    #[serde(default)]
    kind: Option<Kind>,
    border: Spanned<RawBorder>,
    input: Elem,
    output: Elem,
    #[serde(default)]
    padding: Option<Spanned<Padding>>,
    function: Spanned<String>,
}

/// `border = { north = .., south = .., east = .., west = .. }`: all four required.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBorder {
    north: u32,
    south: u32,
    east: u32,
    west: u32,
}

/// A number, or the string `"nearest"`.
impl<'de> Deserialize<'de> for Padding {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Padding, D::Error> {
        struct PaddingVisitor;

        impl Visitor<'_> for PaddingVisitor {
            type Value = Padding;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or \"nearest\"")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Padding, E> {
                Ok(Padding::Constant(v as f64))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Padding, E> {
                Ok(Padding::Constant(v as f64))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Padding, E> {
                Ok(Padding::Constant(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Padding, E> {
                if v == "nearest" {
                    Ok(Padding::Nearest)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }

        deserializer.deserialize_any(PaddingVisitor)
    }
}

impl Stencil {
    /// Reads and validates a `.stencil.toml` file.
    pub fn load(path: &Path) -> Result<Stencil, StencilError> {
        let text =
            ndtune_core::input::read_text(path, ndtune_core::input::STENCIL).map_err(|e| {
                StencilError::File {
                    path: path.display().to_string(),
                    line: 0,
                    column: 0,
                    message: e.message,
                }
            })?;
        Stencil::parse(&text, path)
    }

    /// Parses and validates the text of a `.stencil.toml` file; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Stencil, StencilError> {
        let error_at = |span: Option<Range<usize>>, message: String| {
            let (line, column) = span.map_or((0, 0), |s| line_col(text, s.start));
            StencilError::File {
                path: path.display().to_string(),
                line,
                column,
                message,
            }
        };
        let raw: RawStencil = toml::from_str(text)
            .map_err(|e| error_at(e.span(), e.message().trim_end().replace('\n', "; ")))?;
        let b = raw.border.get_ref();
        let stencil = Stencil {
            name: raw.name.get_ref().clone(),
            kind: raw.kind.unwrap_or(Kind::User),
            border: Border {
                north: b.north,
                south: b.south,
                east: b.east,
                west: b.west,
            },
            input: raw.input,
            output: raw.output,
            padding: raw
                .padding
                .as_ref()
                .map_or(Padding::Constant(0.0), |p| *p.get_ref()),
            function: raw.function.get_ref().clone(),
        };
        if let Some((field, message)) = stencil.problem() {
            let span = match field {
                Field::Name => raw.name.span(),
                Field::Border => raw.border.span(),
                // Without a `padding` key the default is valid, so the key is there.
                Field::Padding => raw.padding.as_ref().map_or(0..0, Spanned::span),
                Field::Function => raw.function.span(),
            };
            return Err(error_at(Some(span), message));
        }
        Ok(stencil)
    }

    /// The stencil as a `.stencil.toml` file; [`Stencil::parse`] reads it back unchanged.
    pub fn to_toml(&self) -> String {
        let b = &self.border;
        let padding = match self.padding {
            Padding::Constant(v) => format!("{v:?}"),
            Padding::Nearest => "\"nearest\"".into(),
        };
        format!(
            "name = {}\nkind = \"{}\"\nborder = {{ north = {}, south = {}, east = {}, west = {} }}\n\
             input = \"{}\"\noutput = \"{}\"\npadding = {padding}\nfunction = {}\n",
            toml_string(&self.name),
            self.kind.as_str(),
            b.north,
            b.south,
            b.east,
            b.west,
            self.input.c_name(),
            self.output.c_name(),
            function_string(&self.function),
        )
    }
}

/// A TOML basic string (quoted and escaped by the toml crate).
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The function as a multi-line literal string, which keeps C code as written (no escapes),
/// where that can hold it exactly; otherwise an escaped basic string.
fn function_string(f: &str) -> String {
    let literal_ok = !f.contains("'''")
        && !f.ends_with('\'')
        && f.chars().all(|c| c == '\n' || c == '\t' || !c.is_control());
    if literal_ok {
        // The newline after the opening quotes is not part of the string.
        format!("'''\n{f}'''")
    } else {
        toml_string(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Stencil, String> {
        Stencil::parse(text, Path::new("k.stencil.toml")).map_err(|e| e.to_string())
    }

    const GOOD: &str = r#"name = "box-1"
border = { north = 1, south = 1, east = 1, west = 1 }
input = "float"
output = "float"
padding = "nearest"
function = """
float s = 0.0f;
for (int dr = -1; dr <= 1; ++dr) for (int dc = -1; dc <= 1; ++dc) s += get(dr, dc);
return s / 9.0f;
"""
"#;

    #[test]
    fn a_file_parses_with_defaults() {
        let s = parse(GOOD).unwrap();
        assert_eq!(s.name, "box-1");
        assert_eq!(s.kind, Kind::User);
        assert_eq!(s.padding, Padding::Nearest);
        assert!(s.function.starts_with("float s"));
        let s = parse(&GOOD.replace("padding = \"nearest\"\n", "")).unwrap();
        assert_eq!(s.padding, Padding::Constant(0.0));
        let s = parse(&GOOD.replace("\"nearest\"", "-2")).unwrap();
        assert_eq!(s.padding, Padding::Constant(-2.0));
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = parse(&GOOD.replace("input = \"float\"", "input = \"half\"")).unwrap_err();
        assert!(
            e.starts_with("k.stencil.toml:3:9: unknown variant `half`"),
            "{e}"
        );
        let e = parse(&GOOD.replace("output", "colour = 1\noutput")).unwrap_err();
        assert!(
            e.starts_with("k.stencil.toml:4:1: unknown field `colour`"),
            "{e}"
        );
        let e = parse(&GOOD.replace(", west = 1", "")).unwrap_err();
        assert!(
            e.starts_with("k.stencil.toml:2:10: missing field `west`"),
            "{e}"
        );
        let e = parse(&GOOD.replace("\"nearest\"", "\"wrap\"")).unwrap_err();
        assert!(
            e.starts_with("k.stencil.toml:5:11: invalid value: string \"wrap\", expected a number or \"nearest\""),
            "{e}"
        );
        let e = parse(&GOOD.replace("north = 1", "north = -1")).unwrap_err();
        assert!(e.starts_with("k.stencil.toml:2:"), "{e}");
        let e = parse(&GOOD.replace("= 1;", "= 1; WG_R;")).unwrap_err();
        assert!(
            e.starts_with("k.stencil.toml:6:12: the function uses `WG_R`"),
            "{e}"
        );
        let e = parse(&GOOD.replace("east = 1", "east = 5000")).unwrap_err();
        assert!(
            e.starts_with("k.stencil.toml:2:10: the border's east = 5000 is larger than 1024"),
            "{e}"
        );
        let e = parse(&GOOD.replace("\"box-1\"", "\"box 1\"")).unwrap_err();
        assert!(e.starts_with("k.stencil.toml:1:8: the name `box 1`"), "{e}");
        let e = parse(
            &GOOD
                .replace("input = \"float\"", "input = \"int\"")
                .replace("\"nearest\"", "0.5"),
        )
        .unwrap_err();
        assert!(
            e.starts_with(
                "k.stencil.toml:5:11: the padding 0.5 is not a value of the input type int"
            ),
            "{e}"
        );
        let e = parse("name = \"x\"\nborder = [").unwrap_err();
        assert!(e.starts_with("k.stencil.toml:2:"), "{e}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = Stencil::load(Path::new("/nonexistent/x.stencil.toml")).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("/nonexistent/x.stencil.toml: cannot read the stencil file"));
    }

    #[test]
    fn to_toml_round_trips_awkward_functions() {
        let mut s = parse(GOOD).unwrap();
        for function in [
            "return get(0, 0);",
            "\n\nreturn get(0, 0); // no newline at the end",
            "char q = '\\''; return get(0, 0) + q - '''; /* ''' */",
            "return 'a' + get(0, 0) * \"\\n\"[0] + '\\\\'",
            "\treturn get(0, 0);\r\n",
        ] {
            s.function = function.into();
            let text = s.to_toml();
            assert_eq!(parse(&text).unwrap(), s, "{text}");
        }
        s.padding = Padding::Constant(1e-7);
        assert_eq!(parse(&s.to_toml()).unwrap(), s);
    }
}
