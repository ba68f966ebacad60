//! `[kernel] build_options` entries that depend on the configuration: `{NAME}` placeholders
//! for the value of a parameter or constant, and a condition (`when`) under which the option
//! is given at all.

use ndtune_space::resolve::Node;

/// One entry of `[kernel] build_options`: an option with `{NAME}` placeholders (`{{` and `}}`
/// are literal braces), given to the compiler in the configurations where its condition
/// holds (always, without one).
#[derive(Debug, Clone, PartialEq)]
pub struct BuildOption {
    pieces: Vec<Piece>,
    when: Option<Node>,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// The value of this parameter or constant.
    Value(String),
}

impl BuildOption {
    /// Parses `text`'s placeholders; `known` tells the names of parameters and constants.
    pub(crate) fn parse(
        text: &str,
        when: Option<Node>,
        known: impl Fn(&str) -> bool,
    ) -> Result<BuildOption, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) => name.push(c),
                            None => return Err(format!("`{{{name}` lacks its `}}`")),
                        }
                    }
                    let name = name.trim();
                    if !known(name) {
                        return Err(format!(
                            "`{{{name}}}` names no parameter or constant (write `{{{{` for a literal brace)"
                        ));
                    }
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    pieces.push(Piece::Value(name.to_string()));
                }
                '}' => return Err("a `}` without its `{` (write `}}` for a literal brace)".into()),
                c => literal.push(c),
            }
        }
        pieces.push(Piece::Text(literal));
        pieces.retain(|p| *p != Piece::Text(String::new()));
        Ok(BuildOption { pieces, when })
    }

    /// The words of this option's literal text, where it has no placeholder (a placeholder's
    /// value is known only in a configuration).
    pub fn literal_words(&self) -> Option<Vec<String>> {
        let mut words = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => words.extend(text.split_whitespace().map(str::to_string)),
                Piece::Value(_) => return None,
            }
        }
        Some(words)
    }

    /// The option in a configuration (`point`: parameter values in declaration order), or
    /// `None` where its condition does not hold; `value` gives a name's value as text.
    pub(crate) fn for_config(
        &self,
        point: &[i64],
        value: impl Fn(&str) -> String,
    ) -> Option<String> {
        if self.when.as_ref().is_some_and(|w| !w.holds(point)) {
            return None;
        }
        Some(
            self.pieces
                .iter()
                .map(|p| match p {
                    Piece::Text(t) => t.clone(),
                    Piece::Value(name) => value(name),
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(name: &str) -> bool {
        ["TS", "N"].contains(&name)
    }

    fn value(name: &str) -> String {
        match name {
            "TS" => "16".into(),
            _ => "1024".into(),
        }
    }

    #[test]
    fn literal_words_are_those_of_options_without_placeholders() {
        let o = BuildOption::parse("-I inc -Iother/dir", None, known).unwrap();
        assert_eq!(o.literal_words().unwrap(), ["-I", "inc", "-Iother/dir"]);
        let o = BuildOption::parse("-DX={TS}", None, known).unwrap();
        assert_eq!(o.literal_words(), None);
    }

    #[test]
    fn placeholders_take_the_values_of_the_configuration() {
        let o = BuildOption::parse("-DTILE={TS} -DSIZE={ N }x{{1}}", None, known).unwrap();
        assert_eq!(
            o.for_config(&[], value).as_deref(),
            Some("-DTILE=16 -DSIZE=1024x{1}")
        );
        let plain = BuildOption::parse("-cl-mad-enable", None, known).unwrap();
        assert_eq!(
            plain.for_config(&[], value).as_deref(),
            Some("-cl-mad-enable")
        );
    }

    #[test]
    fn a_condition_decides_whether_the_option_is_given() {
        let when = Node::Bin(
            ndtune_space::expr::BinOp::Eq,
            Box::new(Node::Var(0)),
            Box::new(Node::Const(1)),
        );
        let o = BuildOption::parse("-cl-mad-enable", Some(when), known).unwrap();
        assert_eq!(o.for_config(&[1], value).as_deref(), Some("-cl-mad-enable"));
        assert_eq!(o.for_config(&[0], value), None);
    }

    #[test]
    fn unknown_names_and_stray_braces_are_errors() {
        let err = BuildOption::parse("-DX={TX}", None, known).unwrap_err();
        assert!(
            err.contains("`{TX}` names no parameter or constant"),
            "{err}"
        );
        let err = BuildOption::parse("-DX=}", None, known).unwrap_err();
        assert!(err.contains("without its `{`"), "{err}");
        let err = BuildOption::parse("-DX={TS", None, known).unwrap_err();
        assert!(err.contains("`{TS` lacks its `}`"), "{err}");
    }
}
