//! The constraint language: lexer, parser and syntax tree.
//!
//! Integer expressions over parameters, constants and `device.*` properties: `+ - * / %`,
//! comparisons (chainable: `1 <= X <= 64` means `1 <= X && X <= 64`), `&& || !`, parentheses and
//! `min(..)`/`max(..)`. Precedence is C's. Every node keeps the byte span of its source so errors
//! can point at the column.

use std::fmt;
use std::ops::Range;

/// A byte range of the expression source.
pub type Span = Range<usize>;

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
        self.source[..self.span.start.min(self.source.len())]
            .chars()
            .count()
            + 1
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = self.column() - 1;
        let width = self.source
            [self.span.start.min(self.source.len())..self.span.end.min(self.source.len())]
            .chars()
            .count()
            .max(1);
        write!(
            f,
            "{} (column {})\n    {}\n    {}{}",
            self.message,
            start + 1,
            self.source,
            " ".repeat(start),
            "^".repeat(width)
        )?;
        if let Some(help) = &self.help {
            write!(f, "\n    help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ExprError {}

/// Binary operators, C precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
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
            BinOp::Div => "/",
            BinOp::Rem => "%",
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

    /// Binding strength: higher binds tighter.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne => 3,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 6,
        }
    }

    pub fn is_comparison(self) -> bool {
        self.precedence() == 3 || self.precedence() == 4
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }
}

/// `min` or `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    Min,
    Max,
}

/// One node of a parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprKind {
    Int(i64),
    /// A parameter, a constant, or `device.NAME`.
    Name(String),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
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

    /// Parses one expression; the whole text must be consumed.
    pub fn parse(source: &str) -> Result<Expr, ExprError> {
        let tokens = lex(source)?;
        let mut p = Parser {
            source,
            tokens,
            pos: 0,
        };
        let e = p.expr(0)?;
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
            ExprKind::Int(_) | ExprKind::Name(_) => {}
            ExprKind::Neg(a) | ExprKind::Not(a) => a.visit(f),
            ExprKind::Bin(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| a.visit(f)),
        }
    }

    /// The top-level `&&` operands: a constraint `A && B` is checked as two parts, each as early
    /// as its own variables allow.
    pub fn conjuncts(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Bin(BinOp::And, a, b) => {
                let mut v = a.conjuncts();
                v.extend(b.conjuncts());
                v
            }
            _ => vec![self],
        }
    }
}

/// Prints with the fewest parentheses that keep the meaning.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn go(e: &Expr, parent: u8, right: bool, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match &e.kind {
                ExprKind::Int(v) => write!(f, "{v}"),
                ExprKind::Name(n) => f.write_str(n),
                ExprKind::Neg(a) => {
                    f.write_str("-")?;
                    go(a, 7, false, f)
                }
                ExprKind::Not(a) => {
                    f.write_str("!")?;
                    go(a, 7, false, f)
                }
                ExprKind::Call(func, args) => {
                    f.write_str(if *func == Func::Min { "min(" } else { "max(" })?;
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        go(a, 0, false, f)?;
                    }
                    f.write_str(")")
                }
                ExprKind::Bin(op, a, b) => {
                    let p = op.precedence();
                    // Left-associative: a right operand of equal precedence needs parentheses, and
                    // so does a left one of relational level (else it would read as a chain).
                    let paren = p < parent || (p == parent && (right || p == 4));
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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Int(i64),
    Ident(String),
    Op(BinOp),
    Not,
    LParen,
    RParen,
    Comma,
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
        if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let text: String = src[start..i].chars().filter(|&c| c != '_').collect();
            let v = text.parse::<i64>().map_err(|_| {
                ExprError::new(
                    format!("`{}` is not a 64-bit integer", &src[start..i]),
                    src,
                    start..i,
                )
            })?;
            out.push(Token {
                tok: Tok::Int(v),
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
        // `get`: the next two bytes may cut a multi-byte character (found by fuzzing).
        let two = src.get(i..i + 2).unwrap_or("");
        let (tok, len) = match two {
            "==" => (Tok::Op(BinOp::Eq), 2),
            "!=" => (Tok::Op(BinOp::Ne), 2),
            "<=" => (Tok::Op(BinOp::Le), 2),
            ">=" => (Tok::Op(BinOp::Ge), 2),
            "&&" => (Tok::Op(BinOp::And), 2),
            "||" => (Tok::Op(BinOp::Or), 2),
            _ => match c {
                b'+' => (Tok::Op(BinOp::Add), 1),
                b'-' => (Tok::Op(BinOp::Sub), 1),
                b'*' => (Tok::Op(BinOp::Mul), 1),
                b'/' => (Tok::Op(BinOp::Div), 1),
                b'%' => (Tok::Op(BinOp::Rem), 1),
                b'<' => (Tok::Op(BinOp::Lt), 1),
                b'>' => (Tok::Op(BinOp::Gt), 1),
                b'!' => (Tok::Not, 1),
                b'(' => (Tok::LParen, 1),
                b')' => (Tok::RParen, 1),
                b',' => (Tok::Comma, 1),
                _ => {
                    let ch = src[i..].chars().next().unwrap_or('?');
                    let help = match ch {
                        '=' => Some("comparison is `==`"),
                        '&' => Some("logical and is `&&`"),
                        '|' => Some("logical or is `||`"),
                        _ => None,
                    };
                    let e = ExprError::new(
                        format!("unexpected character `{ch}`"),
                        src,
                        i..i + ch.len_utf8(),
                    );
                    return Err(match help {
                        Some(h) => e.with_help(h),
                        None => e,
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

struct Parser<'s> {
    source: &'s str,
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
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

    /// Precedence climbing; comparisons of equal level chain (`a < b <= c`).
    fn expr(&mut self, min_prec: u8) -> Result<Expr, ExprError> {
        let mut lhs = self.unary()?;
        // Whether `lhs` is a relational comparison built in this loop (not a parenthesised one).
        let mut relational = false;
        loop {
            let op = match self.peek() {
                Some(Token {
                    tok: Tok::Op(op), ..
                }) if op.precedence() > min_prec => *op,
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.expr(op.precedence())?;
            let span = lhs.span.start..rhs.span.end;
            let chained = op.precedence() == 4 && relational;
            relational = op.precedence() == 4;
            lhs = if chained {
                // `a < b <= c`: and the new comparison with the previous right operand.
                let prev_rhs = rightmost_operand(&lhs).clone();
                let cmp = Expr::new(
                    ExprKind::Bin(op, Box::new(prev_rhs.clone()), Box::new(rhs)),
                    prev_rhs.span.start..span.end,
                );
                Expr::new(
                    ExprKind::Bin(BinOp::And, Box::new(lhs), Box::new(cmp)),
                    span,
                )
            } else {
                Expr::new(ExprKind::Bin(op, Box::new(lhs), Box::new(rhs)), span)
            };
        }
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.error_here("a value"));
        };
        match t.tok {
            Tok::Not | Tok::Op(BinOp::Sub) => {
                self.pos += 1;
                let operand = self.unary()?;
                let span = t.span.start..operand.span.end;
                let kind = match (t.tok, operand.kind) {
                    (Tok::Not, k) => ExprKind::Not(Box::new(Expr::new(k, operand.span))),
                    (_, ExprKind::Int(v)) => ExprKind::Int(-v),
                    (_, k) => ExprKind::Neg(Box::new(Expr::new(k, operand.span))),
                };
                Ok(Expr::new(kind, span))
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.error_here("a value"));
        };
        self.pos += 1;
        match t.tok {
            Tok::Int(v) => Ok(Expr::new(ExprKind::Int(v), t.span)),
            Tok::LParen => {
                let inner = self.expr(0)?;
                self.expect_rparen(t.span.start)?;
                let span = t.span.start..self.tokens[self.pos - 1].span.end;
                Ok(Expr::new(inner.kind, span))
            }
            Tok::Ident(name)
                if matches!(
                    self.peek(),
                    Some(Token {
                        tok: Tok::LParen,
                        ..
                    })
                ) =>
            {
                let func = match name.as_str() {
                    "min" => Func::Min,
                    "max" => Func::Max,
                    _ => {
                        return Err(ExprError::new(
                            format!("unknown function `{name}`"),
                            self.source,
                            t.span,
                        )
                        .with_help("the functions are `min(a, b, ...)` and `max(a, b, ...)`"))
                    }
                };
                self.pos += 1;
                let mut args = vec![self.expr(0)?];
                while matches!(
                    self.peek(),
                    Some(Token {
                        tok: Tok::Comma,
                        ..
                    })
                ) {
                    self.pos += 1;
                    args.push(self.expr(0)?);
                }
                self.expect_rparen(t.span.start)?;
                let span = t.span.start..self.tokens[self.pos - 1].span.end;
                if args.len() < 2 {
                    return Err(ExprError::new(
                        format!("`{name}` needs at least two arguments"),
                        self.source,
                        span,
                    ));
                }
                Ok(Expr::new(ExprKind::Call(func, args), span))
            }
            Tok::Ident(name) => Ok(Expr::new(ExprKind::Name(name), t.span)),
            _ => {
                self.pos -= 1;
                Err(self.error_here("a value"))
            }
        }
    }

    fn expect_rparen(&mut self, open: usize) -> Result<(), ExprError> {
        match self.peek() {
            Some(Token {
                tok: Tok::RParen, ..
            }) => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(self
                .error_here("`)`")
                .with_help(format!("to close the `(` at column {}", open + 1))),
        }
    }
}

fn rightmost_operand(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Bin(BinOp::And, _, b) => rightmost_operand(b),
        ExprKind::Bin(_, _, b) => b,
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        Expr::parse(s).unwrap().to_string()
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
    }

    #[test]
    fn comparisons_chain() {
        assert_eq!(show("1 <= X <= 64"), "1 <= X && X <= 64");
        assert_eq!(show("1 < X < Y <= 8"), "1 < X && X < Y && Y <= 8");
        assert_eq!(show("(1 < X) < Y"), "(1 < X) < Y");
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
        let e = Expr::parse("sqrt(4)").unwrap_err();
        assert!(e.message.contains("unknown function `sqrt`"));
        let e = Expr::parse("min(3)").unwrap_err();
        assert!(e.message.contains("at least two"));
        let e = Expr::parse("99999999999999999999").unwrap_err();
        assert!(e.message.contains("not a 64-bit integer"));
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
