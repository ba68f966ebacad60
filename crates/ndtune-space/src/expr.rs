//! The constraint language: lexer, parser and syntax tree, in two dialects.
//!
//! - [`Dialect::C`], the spec's own (`[space] constraints`, sizes, values): C's operators and
//!   precedence, `/` and `%` of integers truncate toward zero as in C and OpenCL.
//! - [`Dialect::Python`], for Kernel Tuner restrictions as written in Python
//!   (`[space] restrictions`): Python's precedence (bitwise operators bind tighter than
//!   comparisons, every comparison chains), `/` is real division, `%` takes the sign of the
//!   divisor.
//!
//! Both have integers (`42`, `0x2A`, `1_000`), reals (`0.5`, `1e6`), strings (`'float'`,
//! `"half"`), `True`/`False`, parameters, constants and `device.*` properties; `+ - * / // % **`,
//! bitwise `& | ^ ~ << >>`, comparisons (chainable: `1 <= X <= 64`), `&& || !` and `and or
//! not`, `X in [1, 2, 4]` and `not in`, the conditionals `c ? a : b` and `a if c else b`, and
//! `min max abs int float floor ceil round sqrt log2` (also as `math.floor` ...). The keyword
//! `not` binds as in Python (below comparisons: `not X == 1` is `not (X == 1)`), `!` as in C.
//!
//! Every node keeps the byte span of its source so errors point at the column. Nesting is
//! limited to [`MAX_DEPTH`] levels and an expression to [`MAX_LEN`] bytes, so no input can
//! exhaust the stack of the parser or of anything that walks the tree.

use std::fmt;
use std::ops::Range;

/// A byte range of the expression source.
pub type Span = Range<usize>;

/// The deepest syntax tree accepted (a chain `a + b + c ...` is as deep as it is long).
pub const MAX_DEPTH: usize = 200;

/// How deep the parser itself may recurse (a parenthesis costs two levels): bounded so that
/// it parses within a small thread stack.
const MAX_NESTING: usize = 3 * 64;

/// The longest expression accepted, in bytes.
pub const MAX_LEN: usize = 64 * 1024;

/// Which language's rules an expression follows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    #[default]
    C,
    Python,
}

/// A parse, name or type error, rendered with the expression and a caret under the culprit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    pub message: String,
    pub source: String,
    pub span: Span,
    pub help: Option<String>,
}

impl ExprError {
    pub(crate) fn new(message: impl Into<String>, source: &str, span: Span) -> Self {
        ExprError {
            message: message.into(),
            source: source.to_string(),
            span,
            help: None,
        }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// 1-based column (in characters) where the error starts.
    pub fn column(&self) -> usize {
        let end = floor_boundary(&self.source, self.span.start);
        self.source[..end].chars().count() + 1
    }
}

/// The largest char boundary of `s` at or before `i`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = self.column() - 1;
        let (a, b) = (
            floor_boundary(&self.source, self.span.start),
            floor_boundary(&self.source, self.span.end),
        );
        let width = self.source[a..b.max(a)].chars().count().max(1);
        // A long source is shown around the culprit only.
        let shown: String = self.source.chars().take(200).collect();
        write!(f, "{} (column {})", self.message, start + 1)?;
        if start < 200 && !shown.contains('\n') {
            write!(
                f,
                "\n    {}\n    {}{}",
                shown,
                " ".repeat(start),
                "^".repeat(width.min(200 - start))
            )?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n    help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ExprError {}

/// Binary operators. Which one a symbol is depends on the dialect: `/` is [`BinOp::Div`] in C
/// and [`BinOp::TrueDiv`] in Python, `%` is [`BinOp::Rem`] in C and [`BinOp::Mod`] in Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// C's `/`: integers truncate toward zero; real where the value is real.
    Div,
    /// Python's `/`: always real.
    TrueDiv,
    /// `//`: rounds toward negative infinity (Python's floor division).
    FloorDiv,
    /// C's `%`: the remainder of truncating division (the sign of the dividend).
    Rem,
    /// Python's `%`: the remainder of floor division (the sign of the divisor).
    Mod,
    /// `**`.
    Pow,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div | BinOp::TrueDiv => "/",
            BinOp::FloorDiv => "//",
            BinOp::Rem | BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    /// Binding strength in C (higher binds tighter); the printer uses it for every tree.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::BitOr => 3,
            BinOp::BitXor => 4,
            BinOp::BitAnd => 5,
            BinOp::Eq | BinOp::Ne => 6,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 7,
            BinOp::Shl | BinOp::Shr => 8,
            BinOp::Add | BinOp::Sub => 9,
            BinOp::Mul
            | BinOp::Div
            | BinOp::TrueDiv
            | BinOp::FloorDiv
            | BinOp::Rem
            | BinOp::Mod => 10,
            BinOp::Pow => 12,
        }
    }

    /// Binding strength in Python: comparisons below the bitwise operators, all at one level.
    fn python_precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::BitOr => 5,
            BinOp::BitXor => 6,
            BinOp::BitAnd => 7,
            BinOp::Shl | BinOp::Shr => 8,
            BinOp::Add | BinOp::Sub => 9,
            BinOp::Mul
            | BinOp::Div
            | BinOp::TrueDiv
            | BinOp::FloorDiv
            | BinOp::Rem
            | BinOp::Mod => 10,
            BinOp::Pow => 12,
        }
    }

    fn binding(self, dialect: Dialect) -> u8 {
        match dialect {
            Dialect::C => self.precedence(),
            Dialect::Python => self.python_precedence(),
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_relational(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    pub fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinOp::Shl | BinOp::Shr | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor
        )
    }

    pub fn is_arithmetic(self) -> bool {
        !(self.is_comparison() || self.is_logical() || self.is_bitwise())
    }
}

/// The built-in functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    Min,
    Max,
    Abs,
    /// `int(x)`: toward zero, as Python's `int`.
    Int,
    Float,
    Floor,
    Ceil,
    /// Half away from zero (C's `round`).
    Round,
    Sqrt,
    Log2,
}

impl Func {
    const ALL: [(&'static str, Func); 10] = [
        ("min", Func::Min),
        ("max", Func::Max),
        ("abs", Func::Abs),
        ("int", Func::Int),
        ("float", Func::Float),
        ("floor", Func::Floor),
        ("ceil", Func::Ceil),
        ("round", Func::Round),
        ("sqrt", Func::Sqrt),
        ("log2", Func::Log2),
    ];

    pub fn name(self) -> &'static str {
        Func::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }

    fn by_name(name: &str) -> Option<Func> {
        let name = name.strip_prefix("math.").unwrap_or(name);
        Func::ALL.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    /// How many arguments it takes: (least, most).
    fn arity(self) -> (usize, usize) {
        match self {
            Func::Min | Func::Max => (2, usize::MAX),
            _ => (1, 1),
        }
    }
}

/// One node of a parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Real(f64),
    Str(String),
    Bool(bool),
    /// A parameter, a constant, or `device.NAME`.
    Name(String),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    BitNot(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
    /// `c ? a : b`, `a if c else b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `x in [a, b]` (`negated`: `not in`).
    In {
        item: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Expr { kind, span }
    }

    /// An expression built by ndtune itself (the platform model), with no source position.
    pub fn synthetic(kind: ExprKind) -> Self {
        Expr { kind, span: 0..0 }
    }

    pub fn int(v: i64) -> Self {
        Self::synthetic(ExprKind::Int(v))
    }

    pub fn name(n: &str) -> Self {
        Self::synthetic(ExprKind::Name(n.to_string()))
    }

    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Self {
        Self::synthetic(ExprKind::Bin(op, Box::new(a), Box::new(b)))
    }

    /// Parses one expression of the C dialect; the whole text must be consumed.
    pub fn parse(source: &str) -> Result<Expr, ExprError> {
        Expr::parse_in(source, Dialect::C)
    }

    /// Parses one expression of `dialect`; the whole text must be consumed.
    pub fn parse_in(source: &str, dialect: Dialect) -> Result<Expr, ExprError> {
        if source.len() > MAX_LEN {
            return Err(ExprError::new(
                format!(
                    "the expression is {} bytes long; at most {MAX_LEN} are accepted",
                    source.len()
                ),
                source,
                0..0,
            ));
        }
        let tokens = lex(source)?;
        let mut p = Parser {
            source,
            tokens,
            pos: 0,
            dialect,
            nesting: 0,
        };
        let (e, _) = p.full()?;
        match p.peek() {
            None => Ok(e),
            Some(t) => Err(ExprError::new(
                format!(
                    "unexpected `{}` after a complete expression",
                    &source[t.span.clone()]
                ),
                source,
                t.span.clone(),
            )),
        }
    }

    /// Every name the expression uses, in order of appearance (with repeats).
    pub fn names(&self) -> Vec<(&str, Span)> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let ExprKind::Name(n) = &e.kind {
                out.push((n.as_str(), e.span.clone()));
            }
        });
        out
    }

    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Int(_)
            | ExprKind::Real(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::Name(_) => {}
            ExprKind::Neg(a) | ExprKind::Not(a) | ExprKind::BitNot(a) => a.visit(f),
            ExprKind::Bin(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| a.visit(f)),
            ExprKind::Cond(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
            ExprKind::In { item, list, .. } => {
                item.visit(f);
                list.iter().for_each(|a| a.visit(f));
            }
        }
    }
}

/// Prints in the C dialect with the fewest parentheses that keep the meaning (Python's own
/// operators print with their symbols).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn go(e: &Expr, parent: u8, right: bool, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            const UNARY: u8 = 11;
            match &e.kind {
                // A negative literal under `**` reads as a negation of the power: parenthesised.
                ExprKind::Int(v) if *v < 0 && parent >= BinOp::Pow.precedence() => {
                    write!(f, "({v})")
                }
                ExprKind::Real(v) if *v < 0.0 && parent >= BinOp::Pow.precedence() => {
                    write!(f, "({v:?})")
                }
                ExprKind::Int(v) => write!(f, "{v}"),
                ExprKind::Real(v) => write!(f, "{v:?}"),
                ExprKind::Str(s) => write!(f, "'{s}'"),
                ExprKind::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
                ExprKind::Name(n) => f.write_str(n),
                ExprKind::Neg(a) | ExprKind::Not(a) | ExprKind::BitNot(a) => {
                    f.write_str(match &e.kind {
                        ExprKind::Neg(_) => "-",
                        ExprKind::Not(_) => "!",
                        _ => "~",
                    })?;
                    go(a, UNARY, false, f)
                }
                ExprKind::Call(func, args) => {
                    write!(f, "{}(", func.name())?;
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        go(a, 0, false, f)?;
                    }
                    f.write_str(")")
                }
                ExprKind::Cond(c, a, b) => {
                    let paren = parent > 0;
                    if paren {
                        f.write_str("(")?;
                    }
                    go(c, 1, false, f)?;
                    f.write_str(" ? ")?;
                    go(a, 1, false, f)?;
                    f.write_str(" : ")?;
                    go(b, 0, false, f)?;
                    if paren {
                        f.write_str(")")?;
                    }
                    Ok(())
                }
                ExprKind::In {
                    item,
                    list,
                    negated,
                } => {
                    let paren = parent >= 6;
                    if paren {
                        f.write_str("(")?;
                    }
                    go(item, 7, false, f)?;
                    f.write_str(if *negated { " not in [" } else { " in [" })?;
                    for (i, a) in list.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        go(a, 0, false, f)?;
                    }
                    f.write_str("]")?;
                    if paren {
                        f.write_str(")")?;
                    }
                    Ok(())
                }
                ExprKind::Bin(op, a, b) => {
                    let p = op.precedence();
                    // Left-associative (but `**`): a right operand of equal precedence needs
                    // parentheses, and so does a left one of a comparison level (else it would
                    // read as a chain).
                    let paren = p < parent
                        || (p == parent
                            && if *op == BinOp::Pow {
                                !right
                            } else {
                                right || op.is_comparison()
                            });
                    if paren {
                        f.write_str("(")?;
                    }
                    go(a, p, false, f)?;
                    write!(f, " {} ", op.symbol())?;
                    go(b, p, true, f)?;
                    if paren {
                        f.write_str(")")?;
                    }
                    Ok(())
                }
            }
        }
        go(self, 0, false, f)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Real(f64),
    Str(String),
    Ident(String),
    Op(BinOp),
    /// `!`
    Bang,
    /// `~`
    Tilde,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Question,
    Colon,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    span: Span,
}

fn lex(src: &str) -> Result<Vec<Token>, ExprError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            out.push(Token {
                tok: number(src, &mut i)?,
                span: start..i,
            });
            continue;
        }
        if c == b'\'' || c == b'"' {
            let close = src[i + 1..].find(c as char).ok_or_else(|| {
                ExprError::new("this string is never closed", src, start..src.len())
            })?;
            let text = &src[i + 1..i + 1 + close];
            i += close + 2;
            out.push(Token {
                tok: Tok::Str(text.to_string()),
                span: start..i,
            });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(src[start..i].to_string()),
                span: start..i,
            });
            continue;
        }
        let two = src.get(i..i + 2).unwrap_or("");
        let (tok, len) = match two {
            "==" => (Tok::Op(BinOp::Eq), 2),
            "!=" => (Tok::Op(BinOp::Ne), 2),
            "<=" => (Tok::Op(BinOp::Le), 2),
            ">=" => (Tok::Op(BinOp::Ge), 2),
            "&&" => (Tok::Op(BinOp::And), 2),
            "||" => (Tok::Op(BinOp::Or), 2),
            "<<" => (Tok::Op(BinOp::Shl), 2),
            ">>" => (Tok::Op(BinOp::Shr), 2),
            "**" => (Tok::Op(BinOp::Pow), 2),
            "//" => (Tok::Op(BinOp::FloorDiv), 2),
            _ => match c {
                b'+' => (Tok::Op(BinOp::Add), 1),
                b'-' => (Tok::Op(BinOp::Sub), 1),
                b'*' => (Tok::Op(BinOp::Mul), 1),
                b'/' => (Tok::Op(BinOp::Div), 1),
                b'%' => (Tok::Op(BinOp::Rem), 1),
                b'<' => (Tok::Op(BinOp::Lt), 1),
                b'>' => (Tok::Op(BinOp::Gt), 1),
                b'&' => (Tok::Op(BinOp::BitAnd), 1),
                b'|' => (Tok::Op(BinOp::BitOr), 1),
                b'^' => (Tok::Op(BinOp::BitXor), 1),
                b'!' => (Tok::Bang, 1),
                b'~' => (Tok::Tilde, 1),
                b'(' => (Tok::LParen, 1),
                b')' => (Tok::RParen, 1),
                b'[' => (Tok::LBracket, 1),
                b']' => (Tok::RBracket, 1),
                b',' => (Tok::Comma, 1),
                b'?' => (Tok::Question, 1),
                b':' => (Tok::Colon, 1),
                _ => {
                    let ch = src[i..].chars().next().unwrap_or('?');
                    let e = ExprError::new(
                        format!("unexpected character `{}`", ch.escape_debug()),
                        src,
                        i..i + ch.len_utf8(),
                    );
                    return Err(if ch == '=' {
                        e.with_help("comparison is `==`")
                    } else {
                        e
                    });
                }
            },
        };
        i += len;
        out.push(Token {
            tok,
            span: start..i,
        });
    }
    Ok(out)
}

/// An integer (decimal or `0x` hex, `_` separators) or a real (`1.5`, `.5`, `2.`, `1e-3`) at
/// `*i`, which moves past it.
fn number(src: &str, i: &mut usize) -> Result<Tok, ExprError> {
    let bytes = src.as_bytes();
    let start = *i;
    let digits = |i: &mut usize, hex: bool| {
        while *i < bytes.len()
            && (bytes[*i].is_ascii_digit()
                || bytes[*i] == b'_'
                || (hex && bytes[*i].is_ascii_hexdigit()))
        {
            *i += 1;
        }
    };
    if src[start..].starts_with("0x") || src[start..].starts_with("0X") {
        *i += 2;
        digits(i, true);
        let text: String = src[start + 2..*i].chars().filter(|&c| c != '_').collect();
        return i64::from_str_radix(&text, 16).map(Tok::Int).map_err(|_| {
            ExprError::new(
                format!("`{}` is not a 64-bit integer", &src[start..*i]),
                src,
                start..*i,
            )
        });
    }
    digits(i, false);
    let mut real = false;
    if *i < bytes.len() && bytes[*i] == b'.' {
        real = true;
        *i += 1;
        digits(i, false);
    }
    if *i < bytes.len() && (bytes[*i] == b'e' || bytes[*i] == b'E') {
        let mut j = *i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            real = true;
            *i = j;
            digits(i, false);
        }
    }
    // A suffix glued to a number (`4k`, `1.0f`) is not part of the language.
    if *i < bytes.len() && (bytes[*i].is_ascii_alphabetic() || bytes[*i] == b'_') {
        while *i < bytes.len() && bytes[*i].is_ascii_alphanumeric() {
            *i += 1;
        }
        return Err(ExprError::new(
            format!("`{}` is not a number", &src[start..*i]),
            src,
            start..*i,
        ));
    }
    let text: String = src[start..*i].chars().filter(|&c| c != '_').collect();
    if real {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Tok::Real(v)),
            _ => Err(ExprError::new(
                format!("`{}` is not a finite real number", &src[start..*i]),
                src,
                start..*i,
            )),
        }
    } else {
        text.parse::<i64>().map(Tok::Int).map_err(|_| {
            ExprError::new(
                format!("`{}` is not a 64-bit integer", &src[start..*i]),
                src,
                start..*i,
            )
        })
    }
}

/// Keywords that are operators (they cannot name a parameter).
fn keyword(name: &str) -> bool {
    matches!(
        name,
        "and" | "or" | "not" | "in" | "if" | "else" | "True" | "False" | "true" | "false"
    )
}

struct Parser<'s> {
    source: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    dialect: Dialect,
    /// How deep the parser has recursed: bounded so no input exhausts its stack.
    nesting: usize,
}

/// A parsed expression and the depth of its tree.
type Parsed = (Expr, usize);

/// The binding of the keyword `not` (below comparisons, as in Python) and of the unary operators
/// `- + ! ~` (tighter than every binary operator but `**`).
const NOT_KEYWORD: u8 = 3;
const UNARY: u8 = 11;

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn peek_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Ident(w), .. }) if w == word)
    }

    fn peek_is(&self, tok: &Tok) -> bool {
        matches!(self.peek(), Some(t) if &t.tok == tok)
    }

    fn end_span(&self) -> Span {
        self.source.len()..self.source.len()
    }

    fn error_here(&self, what: &str) -> ExprError {
        match self.peek() {
            Some(t) => ExprError::new(
                format!("expected {what}, found `{}`", &self.source[t.span.clone()]),
                self.source,
                t.span.clone(),
            ),
            None => ExprError::new(
                format!("expected {what}, found the end of the expression"),
                self.source,
                self.end_span(),
            ),
        }
    }

    /// A node of `depth`, refused past [`MAX_DEPTH`].
    fn node(&self, kind: ExprKind, span: Span, depth: usize) -> Result<Parsed, ExprError> {
        if depth > MAX_DEPTH {
            return Err(ExprError::new(
                format!("the expression nests deeper than {MAX_DEPTH} levels"),
                self.source,
                span,
            )
            .with_help("split it into constants or several constraints"));
        }
        Ok((Expr::new(kind, span), depth))
    }

    /// Counts a recursive call of the parser, refusing input that nests too deep for it.
    fn enter(&mut self) -> Result<(), ExprError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            let span = self.peek().map_or(self.end_span(), |t| t.span.clone());
            return Err(ExprError::new(
                format!("the expression nests deeper than {MAX_DEPTH} levels"),
                self.source,
                span,
            ));
        }
        Ok(())
    }

    /// The binary operator at the current token, with its binding, if it binds tighter than
    /// `min`: symbols, `and`/`or`, `in`/`not in` (at the comparison level).
    fn operator(&self, min: u8) -> Option<(Op, u8)> {
        let t = self.peek()?;
        let comparison = BinOp::Lt.binding(self.dialect);
        let (op, prec) = match &t.tok {
            Tok::Op(op) => {
                let op = match (self.dialect, op) {
                    (Dialect::Python, BinOp::Div) => BinOp::TrueDiv,
                    (Dialect::Python, BinOp::Rem) => BinOp::Mod,
                    (_, op) => *op,
                };
                (Op::Bin(op), op.binding(self.dialect))
            }
            Tok::Ident(w) if w == "and" => (Op::Bin(BinOp::And), BinOp::And.precedence()),
            Tok::Ident(w) if w == "or" => (Op::Bin(BinOp::Or), BinOp::Or.precedence()),
            Tok::Ident(w) if w == "in" => (Op::In(false), comparison),
            Tok::Ident(w)
                if w == "not"
                    && matches!(self.tokens.get(self.pos + 1), Some(Token { tok: Tok::Ident(n), .. }) if n == "in") =>
            {
                (Op::In(true), comparison)
            }
            _ => return None,
        };
        (prec > min).then_some((op, prec))
    }

    /// A whole expression: an operator expression, or a conditional `c ? a : b` / `a if c
    /// else b` (they bind loosest and associate to the right).
    fn full(&mut self) -> Result<Parsed, ExprError> {
        self.enter()?;
        let result = self.full_inner();
        self.nesting -= 1;
        result
    }

    fn full_inner(&mut self) -> Result<Parsed, ExprError> {
        let (first, d1) = self.expr(0)?;
        if self.peek_ident("if") {
            self.pos += 1;
            let (cond, dc) = self.expr(0)?;
            if !self.peek_ident("else") {
                return Err(self.error_here("`else`"));
            }
            self.pos += 1;
            let (other, d2) = self.full()?;
            let span = first.span.start..other.span.end;
            let kind = ExprKind::Cond(Box::new(cond), Box::new(first), Box::new(other));
            return self.node(kind, span, d1.max(dc).max(d2) + 1);
        }
        if self.peek_is(&Tok::Question) {
            self.pos += 1;
            let (yes, d2) = self.full()?;
            if !self.peek_is(&Tok::Colon) {
                return Err(self.error_here("`:`"));
            }
            self.pos += 1;
            let (no, d3) = self.full()?;
            let span = first.span.start..no.span.end;
            let kind = ExprKind::Cond(Box::new(first), Box::new(yes), Box::new(no));
            return self.node(kind, span, d1.max(d2).max(d3) + 1);
        }
        Ok((first, d1))
    }

    /// Precedence climbing. Comparisons chain (`a < b <= c` is `a < b && b <= c`): in C the
    /// relational ones among themselves, in Python all of them. `**` is right-associative.
    fn expr(&mut self, min: u8) -> Result<Parsed, ExprError> {
        self.enter()?;
        let result = self.expr_inner(min);
        self.nesting -= 1;
        result
    }

    fn expr_inner(&mut self, min: u8) -> Result<Parsed, ExprError> {
        let (mut lhs, mut depth) = self.unary(min)?;
        // After a comparison that chains: its right operand, where the next comparison starts.
        let mut chain: Option<Parsed> = None;
        loop {
            let Some((op, prec)) = self.operator(min) else {
                return Ok((lhs, depth));
            };
            self.pos += if op == Op::In(true) { 2 } else { 1 };
            let (rhs, dr) = match op {
                Op::In(_) => self.list()?,
                Op::Bin(BinOp::Pow) => self.expr(prec - 1)?,
                Op::Bin(_) => self.expr(prec)?,
            };
            let chains = match (self.dialect, op) {
                (Dialect::C, Op::Bin(b)) => b.is_relational(),
                (Dialect::Python, Op::Bin(b)) => b.is_comparison(),
                (Dialect::Python, Op::In(_)) => true,
                (Dialect::C, Op::In(_)) => false,
            };
            let next = if chains && matches!(op, Op::Bin(_)) {
                Some((rhs.clone(), dr))
            } else {
                None
            };
            let apply = |p: &Self, left: Expr, dl: usize, rhs: Expr| {
                let span = left.span.start..rhs.span.end;
                let kind = match op {
                    Op::In(negated) => {
                        let ExprKind::Call(_, list) = rhs.kind else {
                            unreachable!("list() returns the items as a call")
                        };
                        ExprKind::In {
                            item: Box::new(left),
                            list,
                            negated,
                        }
                    }
                    Op::Bin(b) => ExprKind::Bin(b, Box::new(left), Box::new(rhs)),
                };
                p.node(kind, span, dl.max(dr) + 1)
            };
            (lhs, depth) = match chain.take().filter(|_| chains) {
                // `a < b <= c` is `a < b && b <= c`: the new comparison starts from the previous
                // one's right operand and is and-ed to the whole so far.
                Some((prev, dp)) => {
                    let (cmp, dc) = apply(self, prev, dp, rhs)?;
                    let span = lhs.span.start..cmp.span.end;
                    let d = depth.max(dc) + 1;
                    self.node(
                        ExprKind::Bin(BinOp::And, Box::new(lhs), Box::new(cmp)),
                        span,
                        d,
                    )?
                }
                None => apply(self, lhs, depth, rhs)?,
            };
            chain = next;
        }
    }

    /// `[a, b, ...]` or `(a, b, ...)` after `in`: returned as a call node holding the items.
    fn list(&mut self) -> Result<Parsed, ExprError> {
        let Some(open) = self.peek().cloned() else {
            return Err(self.error_here("a list `[...]`"));
        };
        let close = match open.tok {
            Tok::LBracket => Tok::RBracket,
            Tok::LParen => Tok::RParen,
            _ => return Err(self.error_here("a list `[...]`")),
        };
        self.pos += 1;
        let mut items = Vec::new();
        let mut depth = 0;
        while !self.peek_is(&close) {
            let (item, d) = self.full()?;
            depth = depth.max(d);
            items.push(item);
            if self.peek_is(&Tok::Comma) {
                self.pos += 1;
            } else if !self.peek_is(&close) {
                return Err(self.error_here("`,` or the end of the list"));
            }
        }
        self.pos += 1;
        let span = open.span.start..self.tokens[self.pos - 1].span.end;
        if items.is_empty() {
            return Err(ExprError::new(
                "`in` needs a list of values",
                self.source,
                span,
            ));
        }
        self.node(ExprKind::Call(Func::Min, items), span, depth + 1)
    }

    fn unary(&mut self, min: u8) -> Result<Parsed, ExprError> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.error_here("a value"));
        };
        match &t.tok {
            // Python's `not` binds below comparisons: `not X == 1` is `not (X == 1)`.
            Tok::Ident(w) if w == "not" => {
                self.pos += 1;
                let (operand, d) = self.expr(NOT_KEYWORD.max(min))?;
                let span = t.span.start..operand.span.end;
                self.node(ExprKind::Not(Box::new(operand)), span, d + 1)
            }
            Tok::Bang | Tok::Tilde | Tok::Op(BinOp::Sub) | Tok::Op(BinOp::Add) => {
                self.pos += 1;
                self.enter()?;
                // `-2 ** 2` is `-(2 ** 2)`: the operand may hold a power.
                let operand = self.unary(UNARY);
                self.nesting -= 1;
                let (operand, d) = operand?;
                let (operand, d) = self.powers(operand, d)?;
                let span = t.span.start..operand.span.end;
                let kind = match (&t.tok, operand.kind) {
                    (Tok::Op(BinOp::Add), k) => return self.node(k, span, d),
                    (Tok::Bang, k) => ExprKind::Not(Box::new(Expr::new(k, operand.span))),
                    (Tok::Tilde, k) => ExprKind::BitNot(Box::new(Expr::new(k, operand.span))),
                    (_, ExprKind::Int(v)) if v != i64::MIN => ExprKind::Int(-v),
                    (_, ExprKind::Real(v)) => ExprKind::Real(-v),
                    (_, k) => ExprKind::Neg(Box::new(Expr::new(k, operand.span))),
                };
                self.node(kind, span, d + 1)
            }
            _ => self.primary(),
        }
    }

    /// `**` directly after an operand of a unary operator (it binds tighter than the operator).
    fn powers(&mut self, base: Expr, depth: usize) -> Result<Parsed, ExprError> {
        if !self.peek_is(&Tok::Op(BinOp::Pow)) {
            return Ok((base, depth));
        }
        self.pos += 1;
        let (exp, de) = self.expr(BinOp::Pow.precedence() - 1)?;
        let span = base.span.start..exp.span.end;
        let d = depth.max(de) + 1;
        self.node(
            ExprKind::Bin(BinOp::Pow, Box::new(base), Box::new(exp)),
            span,
            d,
        )
    }

    fn primary(&mut self) -> Result<Parsed, ExprError> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.error_here("a value"));
        };
        self.pos += 1;
        match t.tok {
            Tok::Int(v) => Ok((Expr::new(ExprKind::Int(v), t.span), 1)),
            Tok::Real(v) => Ok((Expr::new(ExprKind::Real(v), t.span), 1)),
            Tok::Str(s) => Ok((Expr::new(ExprKind::Str(s), t.span), 1)),
            Tok::LParen => {
                let (inner, d) = self.full()?;
                self.expect(Tok::RParen, t.span.start)?;
                let span = t.span.start..self.tokens[self.pos - 1].span.end;
                Ok((Expr::new(inner.kind, span), d))
            }
            Tok::Ident(name) if self.peek_is(&Tok::LParen) => {
                let func = Func::by_name(&name).ok_or_else(|| {
                    let names: Vec<&str> = Func::ALL.iter().map(|(n, _)| *n).collect();
                    ExprError::new(
                        format!("unknown function `{name}`"),
                        self.source,
                        t.span.clone(),
                    )
                    .with_help(format!("the functions are {}", names.join(", ")))
                })?;
                self.pos += 1;
                let mut args = Vec::new();
                let mut depth = 0;
                loop {
                    let (a, d) = self.full()?;
                    depth = depth.max(d);
                    args.push(a);
                    if !self.peek_is(&Tok::Comma) {
                        break;
                    }
                    self.pos += 1;
                }
                self.expect(Tok::RParen, t.span.start)?;
                let span = t.span.start..self.tokens[self.pos - 1].span.end;
                let (least, most) = func.arity();
                if args.len() < least || args.len() > most {
                    let want = if most == usize::MAX {
                        format!("at least {least} arguments")
                    } else {
                        format!("{least} argument")
                    };
                    return Err(ExprError::new(
                        format!("`{name}` takes {want}, not {}", args.len()),
                        self.source,
                        span,
                    ));
                }
                self.node(ExprKind::Call(func, args), span, depth + 1)
            }
            Tok::Ident(name) => match name.as_str() {
                "True" | "true" => Ok((Expr::new(ExprKind::Bool(true), t.span), 1)),
                "False" | "false" => Ok((Expr::new(ExprKind::Bool(false), t.span), 1)),
                w if keyword(w) => {
                    self.pos -= 1;
                    Err(self.error_here("a value"))
                }
                _ => Ok((Expr::new(ExprKind::Name(name), t.span), 1)),
            },
            _ => {
                self.pos -= 1;
                Err(self.error_here("a value"))
            }
        }
    }

    fn expect(&mut self, tok: Tok, open: usize) -> Result<(), ExprError> {
        if self.peek_is(&tok) {
            self.pos += 1;
            return Ok(());
        }
        let what = if tok == Tok::RParen { "`)`" } else { "`]`" };
        let opener = if tok == Tok::RParen { "(" } else { "[" };
        let open_col = self.source[..open].chars().count() + 1;
        Err(self
            .error_here(what)
            .with_help(format!("to close the `{opener}` at column {open_col}")))
    }
}

/// An operator the loop of [`Parser::expr`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Bin(BinOp),
    /// `in` (true: `not in`).
    In(bool),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        Expr::parse(s).unwrap().to_string()
    }

    fn py(s: &str) -> String {
        Expr::parse_in(s, Dialect::Python).unwrap().to_string()
    }

    #[test]
    fn precedence_is_c_like() {
        assert_eq!(show("1 + 2 * 3"), "1 + 2 * 3");
        assert_eq!(show("(1 + 2) * 3"), "(1 + 2) * 3");
        assert_eq!(show("a - (b - c)"), "a - (b - c)");
        assert_eq!(show("a - b - c"), "a - b - c");
        assert_eq!(show("a || b && c == d"), "a || b && c == d");
        assert_eq!(
            show("!(a < b) || min(x, y * 2, 3) >= -4"),
            "!(a < b) || min(x, y * 2, 3) >= -4"
        );
        assert_eq!(
            show("device.max_work_group_size % X"),
            "device.max_work_group_size % X"
        );
        // C: `&` below `==`, shifts above `<`.
        assert_eq!(show("a & b == 0"), "a & b == 0");
        assert_eq!(show("(a & b) == 0"), "(a & b) == 0");
        assert_eq!(show("1 << X < 64"), "1 << X < 64");
        assert_eq!(show("2 ** 3 ** 2"), "2 ** 3 ** 2");
        assert_eq!(show("(2 ** 3) ** 2"), "(2 ** 3) ** 2");
        assert_eq!(show("-2 ** 2"), "-2 ** 2");
        assert_eq!(show("(-2) ** 2"), "(-2) ** 2");
    }

    #[test]
    fn python_keywords_and_precedence() {
        assert_eq!(show("a and b or not c"), "a && b || !c");
        assert_eq!(show("not X == 1"), "!(X == 1)");
        assert_eq!(show("!X == 1"), "!X == 1");
        // Python: `&` binds tighter than `==`.
        assert_eq!(py("a & b == 0"), "(a & b) == 0");
        assert_eq!(py("a == b == c"), "a == b && b == c");
        assert_eq!(py("N / 2 % 3"), "N / 2 % 3");
        assert_eq!(show("X in [1, 2, 4]"), "X in [1, 2, 4]");
        assert_eq!(show("X not in (1, 2)"), "X not in [1, 2]");
        assert_eq!(show("X < 4 ? 1 : 2"), "X < 4 ? 1 : 2");
        assert_eq!(show("1 if X < 4 else 2"), "X < 4 ? 1 : 2");
        assert_eq!(
            show("T == 'float' and F >= 0.5"),
            "T == 'float' && F >= 0.5"
        );
        assert_eq!(show("math.ceil(N / 3.0)"), "ceil(N / 3.0)");
        assert_eq!(show("0x10 + 1_000"), "16 + 1000");
        assert_eq!(show("True or false"), "true || false");
        assert!(matches!(
            Expr::parse_in("a / b", Dialect::Python).unwrap().kind,
            ExprKind::Bin(BinOp::TrueDiv, ..)
        ));
        assert!(matches!(
            Expr::parse_in("a % b", Dialect::Python).unwrap().kind,
            ExprKind::Bin(BinOp::Mod, ..)
        ));
    }

    #[test]
    fn comparisons_chain() {
        assert_eq!(show("1 <= X <= 64"), "1 <= X && X <= 64");
        assert_eq!(show("1 < X < Y <= 8"), "1 < X && X < Y && Y <= 8");
        assert_eq!(show("(1 < X) < Y"), "(1 < X) < Y");
    }

    #[test]
    fn numbers() {
        let real = |s: &str| match Expr::parse(s).unwrap().kind {
            ExprKind::Real(v) => v,
            k => panic!("{k:?}"),
        };
        assert_eq!(real("0.5"), 0.5);
        assert_eq!(real(".5"), 0.5);
        assert_eq!(real("2."), 2.0);
        assert_eq!(real("1e6"), 1e6);
        assert_eq!(real("1.5E-3"), 1.5e-3);
        assert_eq!(real("-0.25"), -0.25);
        assert!(Expr::parse("1.0f")
            .unwrap_err()
            .message
            .contains("not a number"));
        assert!(Expr::parse("1e999").unwrap_err().message.contains("finite"));
    }

    #[test]
    fn errors_point_at_the_column() {
        let e = Expr::parse("KWG % (KWI == 0").unwrap_err();
        assert_eq!(e.column(), 16);
        assert!(
            e.to_string().contains("to close the `(` at column 7"),
            "{e}"
        );
        let e = Expr::parse("A = B").unwrap_err();
        assert_eq!(
            (e.column(), e.help.as_deref()),
            (3, Some("comparison is `==`"))
        );
        let e = Expr::parse("A B").unwrap_err();
        assert_eq!(e.column(), 3);
        let e = Expr::parse("sqrtt(4)").unwrap_err();
        assert!(e.message.contains("unknown function `sqrtt`"));
        let e = Expr::parse("min(3)").unwrap_err();
        assert!(e.message.contains("at least 2"), "{}", e.message);
        let e = Expr::parse("99999999999999999999").unwrap_err();
        assert!(e.message.contains("not a 64-bit integer"));
        let e = Expr::parse("X == 'float").unwrap_err();
        assert!(e.message.contains("never closed"));
        let e = Expr::parse("X in 4").unwrap_err();
        assert!(e.message.contains("a list"), "{}", e.message);
        let e = Expr::parse("X < 4 ? 1").unwrap_err();
        assert!(e.message.contains("`:`"), "{}", e.message);
    }

    #[test]
    fn deep_input_is_refused_not_overflowed() {
        for source in [
            format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000)),
            format!("1{}", " + 1".repeat(20_000)),
            format!("{}1, 2{}", "min(".repeat(10_000), ")".repeat(10_000)),
            format!("{}1", "-".repeat(10_000)),
            format!("{}1", "!".repeat(10_000)),
            format!("{}X", "not ".repeat(10_000)),
            format!("2{}", " ** 2".repeat(10_000)),
            format!("1{}", " if X else 1".repeat(10_000)),
        ] {
            let e = Expr::parse(&source).unwrap_err();
            assert!(
                e.message.contains("nests deeper") || e.message.contains("bytes long"),
                "{}",
                e.message
            );
        }
        let chain = format!("1{}", " + 1".repeat(150));
        assert!(Expr::parse(&chain).is_ok());
    }

    #[test]
    fn caret_is_rendered_under_the_span() {
        let e = Expr::parse("X + * 2").unwrap_err();
        let text = e.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "    X + * 2");
        assert_eq!(lines[2], "        ^");
    }
}
