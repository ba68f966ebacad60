//! Name resolution, type checking and constant folding: a parsed [`Expr`] becomes a typed
//! [`Node`] whose names are folded to values (constants, `device.*`) or read parameter slots.
//!
//! The types are integers, reals, conditions and identifiers. Arithmetic is done in 64-bit
//! integers, where C's `/` and `%` truncate toward zero, unless the value is real: a value is
//! real where the context asks for one ([`Type::Real`]: a `float` or `double` argument, a
//! metric) or where it involves a real number (a literal such as `0.5`, a parameter or constant
//! with real values, Python's `/`, `float()`, `sqrt()`, `log2()`). A real value is computed in
//! double precision throughout, `/` included, so in a real context `1 / 2` is `0.5`; a
//! comparison with a real side compares in double precision. A real where an integer is
//! needed is an error (`int()`, `floor()`, `ceil()` or `round()` convert); an identifier is
//! only compared (`TYPE == 'float'`, `TYPE in ['float', 'half']`).

use crate::expr::{BinOp, Expr, ExprError, ExprKind, Func};
use ndtune_core::{Coding, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What names mean while resolving: parameters (by slot), constants and device properties.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub params: Vec<String>,
    /// How each parameter's values are held (missing entries: integers).
    pub codings: Vec<Coding>,
    pub constants: BTreeMap<String, Value>,
    /// `device.*` properties, or `None` where no device is given (then naming one is an error).
    pub device: Option<BTreeMap<String, i64>>,
}

impl Scope {
    /// A scope of integer parameters and integer constants (tests, examples).
    pub fn ints(params: &[&str], constants: &[(&str, i64)]) -> Scope {
        Scope {
            params: params.iter().map(|p| p.to_string()).collect(),
            codings: vec![],
            constants: constants
                .iter()
                .map(|(k, v)| (k.to_string(), Value::Int(*v)))
                .collect(),
            device: None,
        }
    }

    fn coding(&self, slot: usize) -> &Coding {
        self.codings.get(slot).unwrap_or(&Coding::Int)
    }
}

/// The types of the language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Int,
    Real,
    Bool,
}

impl Type {
    fn name(self) -> &'static str {
        match self {
            Type::Int => "an integer",
            Type::Real => "a real number",
            Type::Bool => "a condition",
        }
    }
}

/// A resolved, typed expression. `Undef` is a folded division by zero or an overflow: the
/// constraint holding it is false wherever it is evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// An integer.
    Const(i64),
    /// A real number.
    Real(f64),
    Bool(bool),
    /// An integer parameter's value (or, compared with an index, an identifier parameter's).
    Var(usize),
    /// A real parameter's value: its table at the point's index.
    Lookup(usize, Arc<[f64]>),
    Undef,
    /// Integer negation.
    Neg(Box<Node>),
    Not(Box<Node>),
    BitNot(Box<Node>),
    /// Integer arithmetic and bitwise operators; comparisons of integers; `&&`/`||`; `==`/`!=`
    /// of conditions.
    Bin(BinOp, Box<Node>, Box<Node>),
    /// `min`, `max`, `abs` of integers.
    Call(Func, Vec<Node>),
    /// An integer as a real.
    ToReal(Box<Node>),
    /// A real to an integer by `int` (toward zero), `floor`, `ceil` or `round`.
    ToInt(Func, Box<Node>),
    /// Real negation.
    RNeg(Box<Node>),
    /// Real arithmetic (`/` divides exactly); comparisons of reals.
    RBin(BinOp, Box<Node>, Box<Node>),
    /// `min`, `max`, `abs`, `sqrt`, `log2` of reals.
    RCall(Func, Vec<Node>),
    /// `c ? a : b`.
    Cond(Box<Node>, Box<Node>, Box<Node>),
}

/// Applies an integer operator with the language's semantics: `/` and `%` truncate toward zero,
/// `//` and Python's `%` round toward negative infinity; division by zero, overflow, a negative
/// exponent and a shift by 64 or more are undefined (`None`).
#[inline(always)]
pub fn arith(op: BinOp, a: i64, b: i64) -> Option<i64> {
    match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        BinOp::Div => a.checked_div(b),
        BinOp::Rem => a.checked_rem(b),
        BinOp::FloorDiv => {
            let q = a.checked_div(b)?;
            Some(if a % b != 0 && (a < 0) != (b < 0) {
                q - 1
            } else {
                q
            })
        }
        BinOp::Mod => {
            let r = a.checked_rem(b)?;
            Some(if r != 0 && (r < 0) != (b < 0) {
                r + b
            } else {
                r
            })
        }
        BinOp::Pow => a.checked_pow(u32::try_from(b).ok()?),
        BinOp::Shl => {
            let s = u32::try_from(b).ok().filter(|&s| s < 64)?;
            let v = a << s;
            (v >> s == a).then_some(v)
        }
        BinOp::Shr => u32::try_from(b).ok().filter(|&s| s < 64).map(|s| a >> s),
        BinOp::BitAnd => Some(a & b),
        BinOp::BitOr => Some(a | b),
        BinOp::BitXor => Some(a ^ b),
        _ => unreachable!("{op:?} is not integer arithmetic"),
    }
}

/// Applies a real operator; a result that is not finite is undefined.
#[inline(always)]
pub fn real_arith(op: BinOp, a: f64, b: f64) -> Option<f64> {
    let v = match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div | BinOp::TrueDiv => a / b,
        BinOp::FloorDiv => (a / b).floor(),
        BinOp::Rem => a % b,
        BinOp::Mod => {
            let r = a % b;
            if r != 0.0 && (r < 0.0) != (b < 0.0) {
                r + b
            } else {
                r
            }
        }
        BinOp::Pow => a.powf(b),
        _ => unreachable!("{op:?} is not real arithmetic"),
    };
    v.is_finite().then_some(v)
}

/// Applies a comparison operator.
#[inline(always)]
pub fn compare<T: PartialOrd>(op: BinOp, a: T, b: T) -> bool {
    match op {
        BinOp::Eq => a == b,
        BinOp::Ne => a != b,
        BinOp::Lt => a < b,
        BinOp::Le => a <= b,
        BinOp::Gt => a > b,
        BinOp::Ge => a >= b,
        _ => unreachable!("{op:?} is not a comparison"),
    }
}

/// `min`, `max` or `abs` of integers.
pub fn int_call(f: Func, args: impl Iterator<Item = Option<i64>>) -> Option<i64> {
    let mut args = args;
    let first = args.next()??;
    match f {
        Func::Abs => first.checked_abs(),
        Func::Min => args.try_fold(first, |acc, v| Some(acc.min(v?))),
        _ => args.try_fold(first, |acc, v| Some(acc.max(v?))),
    }
}

/// `min`, `max`, `abs`, `sqrt` or `log2` of reals; undefined where not finite.
pub fn real_call(f: Func, args: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut args = args;
    let first = args.next()??;
    let v = match f {
        Func::Abs => first.abs(),
        Func::Sqrt => first.sqrt(),
        Func::Log2 => first.log2(),
        Func::Min => args.try_fold(first, |acc, v| Some(acc.min(v?)))?,
        _ => args.try_fold(first, |acc, v| Some(acc.max(v?)))?,
    };
    v.is_finite().then_some(v)
}

/// A real to an integer by `int`, `floor`, `ceil` or `round`; undefined outside i64.
pub fn to_int(f: Func, v: f64) -> Option<i64> {
    let r = match f {
        Func::Floor => v.floor(),
        Func::Ceil => v.ceil(),
        Func::Round => v.round(),
        _ => v.trunc(),
    };
    (-9.223_372_036_854_775e18..9.223_372_036_854_775e18)
        .contains(&r)
        .then_some(r as i64)
}

impl Node {
    /// The node's type.
    pub fn ty(&self) -> Type {
        match self {
            Node::Const(_) | Node::Var(_) | Node::Undef | Node::Neg(_) | Node::BitNot(_) => {
                Type::Int
            }
            Node::Call(..) | Node::ToInt(..) => Type::Int,
            Node::Real(_)
            | Node::Lookup(..)
            | Node::ToReal(_)
            | Node::RNeg(_)
            | Node::RCall(..) => Type::Real,
            Node::Bool(_) | Node::Not(_) => Type::Bool,
            Node::Bin(op, ..) | Node::RBin(op, ..) if op.is_comparison() || op.is_logical() => {
                Type::Bool
            }
            Node::Bin(..) => Type::Int,
            Node::RBin(..) => Type::Real,
            Node::Cond(_, a, _) => a.ty(),
        }
    }

    /// Evaluates an integer or a condition (as 0 or 1) directly (slow path: tests, folding,
    /// sizes). `None` = undefined, or a real node.
    pub fn eval(&self, vars: &[i64]) -> Option<i64> {
        Some(match self {
            Node::Const(v) => *v,
            Node::Bool(b) => i64::from(*b),
            Node::Var(i) => vars[*i],
            Node::Undef => return None,
            Node::Neg(a) => a.eval(vars)?.checked_neg()?,
            Node::Not(a) => i64::from(a.eval(vars)? == 0),
            Node::BitNot(a) => !a.eval(vars)?,
            Node::Bin(BinOp::And, a, b) => i64::from(a.eval(vars)? != 0 && b.eval(vars)? != 0),
            Node::Bin(BinOp::Or, a, b) => i64::from(a.eval(vars)? != 0 || b.eval(vars)? != 0),
            Node::Bin(op, a, b) if op.is_comparison() => {
                i64::from(compare(*op, a.eval(vars)?, b.eval(vars)?))
            }
            Node::Bin(op, a, b) => arith(*op, a.eval(vars)?, b.eval(vars)?)?,
            Node::RBin(op, a, b) if op.is_comparison() => {
                i64::from(compare(*op, a.eval_real(vars)?, b.eval_real(vars)?))
            }
            Node::Call(f, args) => int_call(*f, args.iter().map(|a| a.eval(vars)))?,
            Node::ToInt(f, a) => to_int(*f, a.eval_real(vars)?)?,
            Node::Cond(c, a, b) => {
                if c.eval(vars)? != 0 {
                    a.eval(vars)?
                } else {
                    b.eval(vars)?
                }
            }
            Node::Real(_)
            | Node::Lookup(..)
            | Node::ToReal(_)
            | Node::RNeg(_)
            | Node::RBin(..)
            | Node::RCall(..) => return None,
        })
    }

    /// Evaluates any number as a real. `None` = undefined.
    pub fn eval_real(&self, vars: &[i64]) -> Option<f64> {
        match self {
            Node::Real(v) => Some(*v),
            Node::Lookup(i, table) => usize::try_from(vars[*i])
                .ok()
                .and_then(|k| table.get(k).copied()),
            Node::ToReal(a) => Some(a.eval(vars)? as f64),
            Node::RNeg(a) => Some(-a.eval_real(vars)?),
            Node::RBin(op, a, b) if !op.is_comparison() => {
                real_arith(*op, a.eval_real(vars)?, b.eval_real(vars)?)
            }
            Node::RCall(f, args) => real_call(*f, args.iter().map(|a| a.eval_real(vars))),
            Node::Cond(c, a, b) if a.ty() == Type::Real => {
                if c.eval(vars)? != 0 {
                    a.eval_real(vars)
                } else {
                    b.eval_real(vars)
                }
            }
            other => other.eval(vars).map(|v| v as f64),
        }
    }

    /// The value of the node, typed (conditions as integers 0 and 1).
    pub fn value(&self, vars: &[i64]) -> Option<Value> {
        match self.ty() {
            Type::Real => self.eval_real(vars).map(Value::Real),
            _ => self.eval(vars).map(Value::Int),
        }
    }

    /// Whether a constraint holds: defined and true.
    pub fn holds(&self, vars: &[i64]) -> bool {
        self.eval(vars) == Some(1)
    }

    fn children(&self) -> Vec<&Node> {
        match self {
            Node::Const(_)
            | Node::Real(_)
            | Node::Bool(_)
            | Node::Var(_)
            | Node::Lookup(..)
            | Node::Undef => vec![],
            Node::Neg(a)
            | Node::Not(a)
            | Node::BitNot(a)
            | Node::ToReal(a)
            | Node::ToInt(_, a)
            | Node::RNeg(a) => vec![a],
            Node::Bin(_, a, b) | Node::RBin(_, a, b) => vec![a, b],
            Node::Call(_, args) | Node::RCall(_, args) => args.iter().collect(),
            Node::Cond(c, a, b) => vec![c, a, b],
        }
    }

    /// The parameter slots the node reads.
    pub fn vars(&self, out: &mut Vec<usize>) {
        match self {
            Node::Var(i) | Node::Lookup(i, _) => {
                if !out.contains(i) {
                    out.push(*i)
                }
            }
            other => other.children().into_iter().for_each(|c| c.vars(out)),
        }
    }

    /// Replaces parameter slots through `map` (slot -> new slot).
    pub fn remap(&self, map: &dyn Fn(usize) -> usize) -> Node {
        let r = |n: &Node| Box::new(n.remap(map));
        let all = |v: &[Node]| v.iter().map(|n| n.remap(map)).collect();
        match self {
            Node::Var(i) => Node::Var(map(*i)),
            Node::Lookup(i, t) => Node::Lookup(map(*i), Arc::clone(t)),
            Node::Const(_) | Node::Real(_) | Node::Bool(_) | Node::Undef => self.clone(),
            Node::Neg(a) => Node::Neg(r(a)),
            Node::Not(a) => Node::Not(r(a)),
            Node::BitNot(a) => Node::BitNot(r(a)),
            Node::ToReal(a) => Node::ToReal(r(a)),
            Node::RNeg(a) => Node::RNeg(r(a)),
            Node::ToInt(f, a) => Node::ToInt(*f, r(a)),
            Node::Bin(op, a, b) => Node::Bin(*op, r(a), r(b)),
            Node::RBin(op, a, b) => Node::RBin(*op, r(a), r(b)),
            Node::Call(f, args) => Node::Call(*f, all(args)),
            Node::RCall(f, args) => Node::RCall(*f, all(args)),
            Node::Cond(c, a, b) => Node::Cond(r(c), r(a), r(b)),
        }
    }
}

/// Resolves `expr` in `scope` and checks that it has type `want`; a [`Type::Real`] context
/// computes every number in it as a real.
pub fn resolve(expr: &Expr, source: &str, scope: &Scope, want: Type) -> Result<Node, ExprError> {
    let r = Resolver { src: source, scope };
    match want {
        Type::Bool => r.condition(expr),
        Type::Int => r.number(expr, false),
        Type::Real => r.number(expr, true),
    }
}

/// Resolves the definition of a constant: an integer, a real or an identifier (a string
/// literal). An integer division that is not exact is an error: a constant goes to the kernel,
/// and `1 / 2` silently becoming 0 is never what was meant.
pub fn resolve_constant(expr: &Expr, source: &str, scope: &Scope) -> Result<Value, ExprError> {
    if let ExprKind::Str(s) = &expr.kind {
        return Ok(Value::Text(s.clone()));
    }
    let r = Resolver { src: source, scope };
    let real = r.is_real(expr);
    let node = r.number(expr, real)?;
    check_exact_divisions(expr, source, scope)?;
    node.value(&[])
        .ok_or_else(|| ExprError::new("divides by zero or overflows", source, expr.span.clone()))
}

/// Errors on an integer `/` or `%` of constants that is not exact (see [`resolve_constant`]);
/// used for the values of constants and of scalar arguments.
pub fn check_exact_divisions(expr: &Expr, source: &str, scope: &Scope) -> Result<(), ExprError> {
    let r = Resolver { src: source, scope };
    let mut err = None;
    walk(expr, &mut |e| {
        if err.is_some() {
            return;
        }
        if let ExprKind::Bin(BinOp::Div, a, b) = &e.kind {
            if r.is_real(a) || r.is_real(b) {
                return;
            }
            let (Ok(Node::Const(x)), Ok(Node::Const(y))) = (r.number(a, false), r.number(b, false))
            else {
                return;
            };
            if y != 0 && x % y != 0 {
                err = Some(
                    ExprError::new(
                        format!(
                            "`{e}` is not exact: 64-bit integer division truncates it to {}",
                            x / y
                        ),
                        source,
                        e.span.clone(),
                    )
                    .with_help(format!(
                        "write `{a}.0 / {b}`-style reals for {}, or `{a} // {b}` for {}",
                        x as f64 / y as f64,
                        arith(BinOp::FloorDiv, x, y).unwrap_or(0)
                    )),
                );
            }
        }
    });
    err.map_or(Ok(()), Err)
}

fn walk<'a>(e: &'a Expr, f: &mut impl FnMut(&'a Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Neg(a) | ExprKind::Not(a) | ExprKind::BitNot(a) => walk(a, f),
        ExprKind::Bin(_, a, b) => {
            walk(a, f);
            walk(b, f);
        }
        ExprKind::Call(_, args) => args.iter().for_each(|a| walk(a, f)),
        ExprKind::Cond(c, a, b) => {
            walk(c, f);
            walk(a, f);
            walk(b, f);
        }
        ExprKind::In { item, list, .. } => {
            walk(item, f);
            list.iter().for_each(|a| walk(a, f));
        }
        _ => {}
    }
}

struct Resolver<'a> {
    src: &'a str,
    scope: &'a Scope,
}

/// What a name is.
enum Named<'a> {
    Param(usize, &'a Coding),
    Constant(&'a Value),
    Device(i64),
}

impl<'a> Resolver<'a> {
    fn err(&self, e: &Expr, message: impl Into<String>) -> ExprError {
        ExprError::new(message, self.src, e.span.clone())
    }

    fn mismatch(&self, e: &Expr, found: &str, want: Type) -> ExprError {
        let err = self.err(
            e,
            format!("this is {found}, but {} is needed here", want.name()),
        );
        match want {
            Type::Bool => err.with_help("a constraint must be a condition, e.g. `X % 4 == 0`"),
            Type::Int => err.with_help(
                "a size or an integer value must be an integer: `int()`, `floor()`, `ceil()` or `round()` convert a real, `//` divides integers",
            ),
            Type::Real => err,
        }
    }

    /// Whether a number is real by itself (see the module docs).
    fn is_real(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Real(_) => true,
            ExprKind::Name(n) => match self.name(n) {
                Some(Named::Param(_, Coding::Table(t))) => t.iter().any(|v| v.as_f64().is_some()),
                Some(Named::Constant(Value::Real(_))) => true,
                _ => false,
            },
            ExprKind::Neg(a) => self.is_real(a),
            ExprKind::Bin(BinOp::TrueDiv, ..) => true,
            ExprKind::Bin(op, a, b) if op.is_arithmetic() => self.is_real(a) || self.is_real(b),
            ExprKind::Call(Func::Float | Func::Sqrt | Func::Log2, _) => true,
            ExprKind::Call(Func::Min | Func::Max | Func::Abs, args) => {
                args.iter().any(|a| self.is_real(a))
            }
            ExprKind::Cond(_, a, b) => self.is_real(a) || self.is_real(b),
            _ => false,
        }
    }

    /// Whether an expression is a condition by its form.
    fn is_condition(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Bool(_) | ExprKind::Not(_) | ExprKind::In { .. } => true,
            ExprKind::Bin(op, ..) => op.is_comparison() || op.is_logical(),
            ExprKind::Cond(_, a, b) => self.is_condition(a) && self.is_condition(b),
            _ => false,
        }
    }

    /// Whether an expression is an identifier: a string, or a name whose values are strings.
    fn is_text(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Str(_) => true,
            ExprKind::Name(n) => match self.name(n) {
                Some(Named::Param(_, Coding::Table(t))) => {
                    t.iter().all(|v| matches!(v, Value::Text(_)))
                }
                Some(Named::Constant(Value::Text(_))) => true,
                _ => false,
            },
            _ => false,
        }
    }

    fn name(&self, n: &str) -> Option<Named<'a>> {
        if let Some(i) = self.scope.params.iter().position(|p| p == n) {
            return Some(Named::Param(i, self.scope.coding(i)));
        }
        if let Some(v) = self.scope.constants.get(n) {
            return Some(Named::Constant(v));
        }
        let prop = n.strip_prefix("device.")?;
        self.scope
            .device
            .as_ref()?
            .get(prop)
            .map(|v| Named::Device(*v))
    }

    /// The error for a name that resolves to nothing.
    fn unknown(&self, n: &str, e: &Expr) -> ExprError {
        if let Some(prop) = n.strip_prefix("device.") {
            return match &self.scope.device {
                None => self
                    .err(e, format!("`{n}` needs a device, and none is given"))
                    .with_help("pass --device SEL, --profile NAME or --profile-file F"),
                Some(props) => {
                    let err = self.err(e, format!("unknown device property `{n}`"));
                    match closest(prop, props.keys().map(String::as_str)) {
                        Some(s) => err.with_help(format!("did you mean `device.{s}`?")),
                        None => err,
                    }
                }
            };
        }
        let known = self
            .scope
            .params
            .iter()
            .map(String::as_str)
            .chain(self.scope.constants.keys().map(String::as_str));
        let err = self.err(e, format!("unknown name `{n}`"));
        match closest(n, known) {
            Some(s) => err.with_help(format!("did you mean `{s}`?")),
            None => err.with_help(format!(
                "names are the parameters ({}), constants and device.*; an identifier value is quoted: '{n}'",
                self.scope.params.join(", ")
            )),
        }
    }

    /// A number; `real`: computed as a real throughout.
    fn number(&self, e: &Expr, real: bool) -> Result<Node, ExprError> {
        let want = if real { Type::Real } else { Type::Int };
        let as_real = |n: Node| {
            if real {
                fold(Node::ToReal(Box::new(n)))
            } else {
                n
            }
        };
        Ok(match &e.kind {
            ExprKind::Int(v) => {
                if real {
                    Node::Real(*v as f64)
                } else {
                    Node::Const(*v)
                }
            }
            ExprKind::Real(v) => {
                if !real {
                    return Err(self.mismatch(e, &format!("the real number {v:?}"), want));
                }
                Node::Real(*v)
            }
            ExprKind::Str(s) => {
                return Err(self
                    .mismatch(e, &format!("the identifier '{s}'"), want)
                    .with_help("an identifier can only be compared: `TYPE == 'float'`"))
            }
            ExprKind::Bool(_) | ExprKind::Not(_) | ExprKind::In { .. } => {
                return Err(self.mismatch(e, "a condition", want))
            }
            ExprKind::Bin(op, ..) if op.is_comparison() || op.is_logical() => {
                return Err(self.mismatch(e, "a condition", want))
            }
            ExprKind::Name(n) => match self.name(n) {
                None => return Err(self.unknown(n, e)),
                Some(Named::Device(v)) => as_real(Node::Const(v)),
                Some(Named::Param(i, Coding::Int)) => as_real(Node::Var(i)),
                Some(Named::Param(i, Coding::Table(t))) => {
                    let numbers: Option<Vec<f64>> = t.iter().map(Value::as_f64).collect();
                    let shown: Vec<String> = t.iter().take(6).map(Value::to_string).collect();
                    match numbers {
                        Some(numbers) if real => Node::Lookup(i, numbers.into()),
                        Some(_) => {
                            return Err(self.mismatch(
                                e,
                                &format!("`{n}`, whose values are real ({})", shown.join(", ")),
                                want,
                            ))
                        }
                        None => {
                            return Err(self
                                .err(
                                    e,
                                    format!(
                                        "`{n}` takes identifiers ({}), not numbers",
                                        shown.join(", ")
                                    ),
                                )
                                .with_help(format!(
                                    "compare it with one of them: `{n} == '{}'`",
                                    shown[0]
                                )))
                        }
                    }
                }
                Some(Named::Constant(v)) => match v {
                    Value::Int(v) => as_real(Node::Const(*v)),
                    Value::Real(x) if real => Node::Real(*x),
                    Value::Real(x) => {
                        return Err(self.mismatch(
                            e,
                            &format!("the constant `{n}` = {x:?}, a real number"),
                            want,
                        ))
                    }
                    Value::Text(s) => {
                        return Err(self
                            .err(
                                e,
                                format!("the constant `{n}` is the identifier '{s}', not a number"),
                            )
                            .with_help(format!("compare it: `{n} == '{s}'`")))
                    }
                },
            },
            ExprKind::Neg(a) => {
                let a = Box::new(self.number(a, real)?);
                fold(if real { Node::RNeg(a) } else { Node::Neg(a) })
            }
            ExprKind::BitNot(a) => {
                if self.is_real(a) {
                    return Err(self
                        .mismatch(a, "a real number", Type::Int)
                        .with_help("`~` takes integers"));
                }
                as_real(fold(Node::BitNot(Box::new(self.number(a, false)?))))
            }
            ExprKind::Bin(op, a, b) if op.is_bitwise() => {
                for x in [a, b] {
                    if self.is_real(x) {
                        return Err(self
                            .mismatch(x, "a real number", Type::Int)
                            .with_help(format!("`{}` takes integers", op.symbol())));
                    }
                }
                let n = Node::Bin(
                    *op,
                    Box::new(self.number(a, false)?),
                    Box::new(self.number(b, false)?),
                );
                as_real(fold(n))
            }
            ExprKind::Bin(op, a, b) => {
                if !real && *op == BinOp::TrueDiv {
                    return Err(self.mismatch(e, "a real division (Python's `/`)", want));
                }
                let (na, nb) = (self.number(a, real)?, self.number(b, real)?);
                self.check_divisor(*op, b, &nb)?;
                if real {
                    let op = if *op == BinOp::Div {
                        BinOp::TrueDiv
                    } else {
                        *op
                    };
                    fold(Node::RBin(op, Box::new(na), Box::new(nb)))
                } else {
                    fold(Node::Bin(*op, Box::new(na), Box::new(nb)))
                }
            }
            ExprKind::Call(f, args) => match f {
                Func::Min | Func::Max | Func::Abs => {
                    let nodes = args
                        .iter()
                        .map(|a| self.number(a, real))
                        .collect::<Result<Vec<_>, _>>()?;
                    fold(if real {
                        Node::RCall(*f, nodes)
                    } else {
                        Node::Call(*f, nodes)
                    })
                }
                Func::Int | Func::Floor | Func::Ceil | Func::Round => {
                    let a = &args[0];
                    let n = if self.is_real(a) {
                        fold(Node::ToInt(*f, Box::new(self.number(a, true)?)))
                    } else {
                        self.number(a, false)?
                    };
                    as_real(n)
                }
                Func::Float | Func::Sqrt | Func::Log2 => {
                    if !real {
                        return Err(self.mismatch(
                            e,
                            &format!("`{}(...)`, a real number", f.name()),
                            want,
                        ));
                    }
                    let a = self.number(&args[0], true)?;
                    if *f == Func::Float {
                        a
                    } else {
                        fold(Node::RCall(*f, vec![a]))
                    }
                }
            },
            ExprKind::Cond(c, a, b) => fold(Node::Cond(
                Box::new(self.condition(c)?),
                Box::new(self.number(a, real)?),
                Box::new(self.number(b, real)?),
            )),
        })
    }

    /// A division by a divisor that is always zero is an error (not where a device property
    /// makes it so: another device may not).
    fn check_divisor(&self, op: BinOp, b: &Expr, nb: &Node) -> Result<(), ExprError> {
        let divides = matches!(
            op,
            BinOp::Div | BinOp::TrueDiv | BinOp::FloorDiv | BinOp::Rem | BinOp::Mod
        );
        let zero = matches!(nb, Node::Const(0)) || matches!(nb, Node::Real(v) if *v == 0.0);
        let names_device = b.names().iter().any(|(n, _)| n.starts_with("device."));
        if divides && zero && !names_device {
            return Err(self.err(b, format!("division by zero: `{b}` is always 0")));
        }
        Ok(())
    }

    /// A condition.
    fn condition(&self, e: &Expr) -> Result<Node, ExprError> {
        Ok(match &e.kind {
            ExprKind::Bool(b) => Node::Bool(*b),
            ExprKind::Not(a) => fold(Node::Not(Box::new(self.condition(a)?))),
            ExprKind::Bin(op, a, b) if op.is_logical() => fold(Node::Bin(
                *op,
                Box::new(self.condition(a)?),
                Box::new(self.condition(b)?),
            )),
            ExprKind::Bin(op, a, b) if op.is_comparison() => self.comparison(e, *op, a, b)?,
            ExprKind::In {
                item,
                list,
                negated,
            } => {
                let mut any: Option<Node> = None;
                for v in list {
                    let eq = self.comparison(e, BinOp::Eq, item, v)?;
                    any = Some(match any {
                        None => eq,
                        Some(acc) => fold(Node::Bin(BinOp::Or, Box::new(acc), Box::new(eq))),
                    });
                }
                let any = any.expect("the parser refuses an empty list");
                if *negated {
                    fold(Node::Not(Box::new(any)))
                } else {
                    any
                }
            }
            ExprKind::Cond(c, a, b) => fold(Node::Cond(
                Box::new(self.condition(c)?),
                Box::new(self.condition(a)?),
                Box::new(self.condition(b)?),
            )),
            ExprKind::Str(_) => return Err(self.mismatch(e, "an identifier", Type::Bool)),
            _ => {
                let found = if self.is_real(e) {
                    "a real number"
                } else {
                    "an integer"
                };
                return Err(self.mismatch(e, found, Type::Bool));
            }
        })
    }

    /// A comparison of two numbers, two conditions or two identifiers.
    fn comparison(&self, e: &Expr, op: BinOp, a: &Expr, b: &Expr) -> Result<Node, ExprError> {
        if self.is_text(a) || self.is_text(b) {
            return self.text_comparison(e, op, a, b);
        }
        if self.is_condition(a) || self.is_condition(b) {
            if !matches!(op, BinOp::Eq | BinOp::Ne) {
                return Err(self.err(
                    e,
                    format!("`{}` compares numbers, not conditions", op.symbol()),
                ));
            }
            let (na, nb) = (self.condition(a)?, self.condition(b)?);
            return Ok(fold(Node::Bin(op, Box::new(na), Box::new(nb))));
        }
        let real = self.is_real(a) || self.is_real(b);
        let (na, nb) = (self.number(a, real)?, self.number(b, real)?);
        Ok(fold(if real {
            Node::RBin(op, Box::new(na), Box::new(nb))
        } else {
            Node::Bin(op, Box::new(na), Box::new(nb))
        }))
    }

    /// `TYPE == 'float'`: an identifier parameter's index compared with the value's, or two
    /// known identifiers folded.
    fn text_comparison(&self, e: &Expr, op: BinOp, a: &Expr, b: &Expr) -> Result<Node, ExprError> {
        if !matches!(op, BinOp::Eq | BinOp::Ne) {
            return Err(self.err(
                e,
                format!(
                    "identifiers compare with `==` and `!=` only, not `{}`",
                    op.symbol()
                ),
            ));
        }
        let (sa, sb) = (self.text_side(a)?, self.text_side(b)?);
        let eq = op == BinOp::Eq;
        Ok(match (sa, sb) {
            (Side::Known(x), Side::Known(y)) => Node::Bool((x == y) == eq),
            (Side::Param(i, t, n), Side::Known(s)) | (Side::Known(s), Side::Param(i, t, n)) => {
                let Some(k) = t
                    .iter()
                    .position(|v| matches!(v, Value::Text(x) if *x == s))
                else {
                    let values: Vec<String> = t.iter().map(Value::to_string).collect();
                    return Err(self.err(
                        e,
                        format!("'{s}' is not one of `{n}`'s values ({})", values.join(", ")),
                    ));
                };
                Node::Bin(op, Box::new(Node::Var(i)), Box::new(Node::Const(k as i64)))
            }
            (Side::Param(i, t, n), Side::Param(j, u, m)) => {
                if t != u {
                    return Err(self.err(
                        e,
                        format!(
                            "`{n}` and `{m}` take different identifiers; compare each with a value"
                        ),
                    ));
                }
                Node::Bin(op, Box::new(Node::Var(i)), Box::new(Node::Var(j)))
            }
        })
    }
}

/// One side of a comparison of identifiers.
enum Side<'t> {
    /// A parameter: its slot, table and name.
    Param(usize, &'t [Value], &'t str),
    /// A known identifier (a string or a constant).
    Known(String),
}

impl<'a> Resolver<'a> {
    /// What one side of a comparison of identifiers is.
    fn text_side<'e>(&self, x: &'e Expr) -> Result<Side<'e>, ExprError>
    where
        'a: 'e,
    {
        match &x.kind {
            ExprKind::Str(s) => Ok(Side::Known(s.clone())),
            ExprKind::Name(n) => match self.name(n) {
                Some(Named::Param(i, Coding::Table(t))) => Ok(Side::Param(i, t, n)),
                Some(Named::Constant(Value::Text(s))) => Ok(Side::Known(s.clone())),
                None => Err(self.unknown(n, x)),
                Some(_) => Err(self.err(
                    x,
                    format!("`{n}` is a number: it cannot equal an identifier"),
                )),
            },
            _ => Err(self.err(x, "this is a number: it cannot equal an identifier")),
        }
    }
}

/// The known name closest to `name`, if it is close enough to be a likely typo.
pub fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .map(|k| (strsim::damerau_levenshtein(&lower, &k.to_lowercase()), k))
        .filter(|(d, k)| *d <= (k.len().max(name.len()) / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Folds a node whose operands are all known; keeps undefinedness as [`Node::Undef`]. A
/// conditional with a known condition becomes its branch.
fn fold(n: Node) -> Node {
    let known = |n: &Node| {
        matches!(
            n,
            Node::Const(_) | Node::Real(_) | Node::Bool(_) | Node::Undef
        )
    };
    match &n {
        // Short-circuit folding: `false && X` is false, `true || X` is true.
        Node::Bin(BinOp::And, a, _) if **a == Node::Bool(false) => return Node::Bool(false),
        Node::Bin(BinOp::Or, a, _) if **a == Node::Bool(true) => return Node::Bool(true),
        Node::Cond(c, a, b) => {
            return match **c {
                Node::Bool(true) => (**a).clone(),
                Node::Bool(false) => (**b).clone(),
                Node::Undef => Node::Undef,
                _ => n,
            }
        }
        _ => {}
    }
    if n.children().is_empty() || !n.children().into_iter().all(known) {
        return n;
    }
    match n.ty() {
        Type::Bool => n.eval(&[]).map_or(Node::Undef, |v| Node::Bool(v != 0)),
        Type::Int => n.eval(&[]).map_or(Node::Undef, Node::Const),
        Type::Real => n.eval_real(&[]).map_or(Node::Undef, Node::Real),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Dialect;

    fn scope() -> Scope {
        let types: Arc<[Value]> = vec![Value::from("float"), Value::from("half")].into();
        let alphas: Arc<[Value]> = vec![Value::Real(0.5), Value::Int(1), Value::Real(2.5)].into();
        Scope {
            params: vec!["WG_X".into(), "WG_Y".into(), "TYPE".into(), "ALPHA".into()],
            codings: vec![
                Coding::Int,
                Coding::Int,
                Coding::Table(types),
                Coding::Table(alphas),
            ],
            constants: [
                ("N".to_string(), Value::Int(1024)),
                ("HALF".to_string(), Value::Real(0.5)),
                ("KIND".to_string(), Value::from("fast")),
            ]
            .into_iter()
            .collect(),
            device: Some(
                [("max_work_group_size".to_string(), 256)]
                    .into_iter()
                    .collect(),
            ),
        }
    }

    fn res_in(s: &str, dialect: Dialect, want: Type) -> Result<Node, ExprError> {
        resolve(&Expr::parse_in(s, dialect).unwrap(), s, &scope(), want)
    }

    fn res(s: &str) -> Result<Node, ExprError> {
        res_in(s, Dialect::C, Type::Bool)
    }

    #[test]
    fn constants_and_device_fold() {
        assert_eq!(
            res("N / 4 == device.max_work_group_size").unwrap(),
            Node::Bool(true)
        );
        assert_eq!(
            res("N / (N - 1024 + device.max_work_group_size - 256) == 1").unwrap(),
            Node::Undef
        );
        assert_eq!(
            res("KIND == 'fast' and HALF < 1").unwrap(),
            Node::Bool(true)
        );
        assert_eq!(res("(3 if N > 4 else 5) == 3").unwrap(), Node::Bool(true));
    }

    #[test]
    fn real_contexts_compute_in_double_precision() {
        let half = res_in("1 / 2", Dialect::C, Type::Real).unwrap();
        assert_eq!(half, Node::Real(0.5));
        assert_eq!(
            res_in("1 / 2", Dialect::C, Type::Int).unwrap(),
            Node::Const(0)
        );
        assert_eq!(
            res_in("7 // 2 + 0.5", Dialect::C, Type::Real).unwrap(),
            Node::Real(3.5)
        );
        // A comparison with a real side compares reals: 1000 / 3 is 333.33.., not 333.
        let n = res("N / 3 > 341.3").unwrap();
        assert_eq!(n, Node::Bool(true));
        assert_eq!(res("N / 3 == 341").unwrap(), Node::Bool(true));
        // A real parameter reads its table.
        let n = res("ALPHA * WG_X >= 2").unwrap();
        assert!(n.holds(&[4, 0, 0, 0]) && !n.holds(&[3, 0, 0, 0]) && n.holds(&[1, 0, 0, 2]));
        let e = res_in("N * 0.5", Dialect::C, Type::Int).unwrap_err();
        assert!(e.message.contains("real number 0.5"), "{}", e.message);
        let e = res_in("ALPHA + 1", Dialect::C, Type::Int).unwrap_err();
        assert!(e.message.contains("whose values are real"), "{}", e.message);
        assert_eq!(
            res_in("int(N * 0.3)", Dialect::C, Type::Int).unwrap(),
            Node::Const(307)
        );
        assert_eq!(
            res_in("ceil(N / 3.0)", Dialect::C, Type::Int).unwrap(),
            Node::Const(342)
        );
        assert_eq!(
            res_in("sqrt(N)", Dialect::C, Type::Real).unwrap(),
            Node::Real(32.0)
        );
    }

    #[test]
    fn python_division_is_real_and_modulo_floors() {
        let n = res_in("WG_X / 32 <= 2", Dialect::Python, Type::Bool).unwrap();
        // 65 / 32 = 2.03 > 2 in Python; C's truncation would say 2 <= 2.
        assert!(!n.holds(&[65, 0, 0, 0]) && n.holds(&[64, 0, 0, 0]));
        let c = res_in("WG_X / 32 <= 2", Dialect::C, Type::Bool).unwrap();
        assert!(c.holds(&[65, 0, 0, 0]));
        assert_eq!(
            res_in("-7 % 3 == 2", Dialect::Python, Type::Bool).unwrap(),
            Node::Bool(true)
        );
        assert_eq!(
            res_in("-7 % 3 == -1", Dialect::C, Type::Bool).unwrap(),
            Node::Bool(true)
        );
        assert_eq!(
            res_in("-7 // 2 == -4", Dialect::C, Type::Bool).unwrap(),
            Node::Bool(true)
        );
        let e = res_in("N / 2", Dialect::Python, Type::Int).unwrap_err();
        assert!(e.message.contains("real division"), "{}", e.message);
        assert_eq!(
            res_in("N // 2", Dialect::Python, Type::Int).unwrap(),
            Node::Const(512)
        );
        assert_eq!(
            res_in("2 ** 10 == N", Dialect::Python, Type::Bool).unwrap(),
            Node::Bool(true)
        );
        // Python precedence: `&` before `==`.
        let n = res_in("WG_X & 7 == 0", Dialect::Python, Type::Bool).unwrap();
        assert!(n.holds(&[16, 0, 0, 0]) && !n.holds(&[12, 0, 0, 0]));
        // In C it would be `WG_X & (7 == 0)`: a type error, not a silent other meaning.
        assert!(res("WG_X & 7 == 0").is_err());
    }

    #[test]
    fn identifiers_compare_by_value() {
        let n = res("TYPE == 'half' || WG_X > 8").unwrap();
        assert!(n.holds(&[0, 0, 1, 0]) && !n.holds(&[4, 0, 0, 0]));
        let n = res("TYPE in ['float', 'half'] and TYPE != \"float\"").unwrap();
        assert!(n.holds(&[0, 0, 1, 0]) && !n.holds(&[0, 0, 0, 0]));
        let e = res("TYPE == 'double'").unwrap_err();
        assert!(
            e.message
                .contains("not one of `TYPE`'s values (float, half)"),
            "{}",
            e.message
        );
        let e = res("TYPE < 'half'").unwrap_err();
        assert!(e.message.contains("`==` and `!=` only"), "{}", e.message);
        let e = res_in("TYPE + 1", Dialect::C, Type::Int).unwrap_err();
        assert!(e.message.contains("takes identifiers"), "{}", e.message);
        let e = res("WG_X == float").unwrap_err();
        assert!(e.to_string().contains("'float'"), "{e}");
    }

    #[test]
    fn unknown_names_suggest_the_closest() {
        let e = res("WG_X * WGY <= 64").unwrap_err();
        assert_eq!(e.column(), 8);
        assert_eq!(e.help.as_deref(), Some("did you mean `WG_Y`?"));
        let e = res("device.max_workgroup_size >= WG_X").unwrap_err();
        assert_eq!(
            e.help.as_deref(),
            Some("did you mean `device.max_work_group_size`?")
        );
        let e = res("ZZZZZZ > 1").unwrap_err();
        assert!(e.help.unwrap().contains("WG_X, WG_Y"));
    }

    #[test]
    fn types_are_checked() {
        let e = res("WG_X + 1").unwrap_err();
        assert!(e.message.contains("a condition is needed"), "{}", e.message);
        let e = res("(WG_X < 1) + 1 > 0").unwrap_err();
        assert_eq!(e.column(), 1);
        assert!(res("(WG_X < 4) == (WG_Y < 4)").is_ok());
        let no_device = Scope {
            device: None,
            ..scope()
        };
        let src = "WG_X <= device.max_work_group_size";
        let e = resolve(&Expr::parse(src).unwrap(), src, &no_device, Type::Bool).unwrap_err();
        assert!(e.message.contains("needs a device"));
        let e = res("(WG_X & 1.5) == 0").unwrap_err();
        assert!(e.message.contains("real number"), "{}", e.message);
    }

    #[test]
    fn bitwise_and_conditionals() {
        let n = res("(WG_X & (WG_X - 1)) == 0").unwrap();
        assert!(n.holds(&[64, 0, 0, 0]) && !n.holds(&[48, 0, 0, 0]));
        let n = res("1 << WG_Y <= 16 && (WG_X ^ 3) == 1 && ~WG_X == -3").unwrap();
        assert!(n.holds(&[2, 4, 0, 0]) && !n.holds(&[2, 5, 0, 0]));
        let n = res("(WG_X > 4 ? WG_X : 4) == 4").unwrap();
        assert!(n.holds(&[2, 0, 0, 0]) && !n.holds(&[8, 0, 0, 0]));
        assert!(
            !res("1 << WG_X > 0").unwrap().holds(&[64, 0, 0, 0]),
            "a shift by 64 is undefined"
        );
    }

    #[test]
    fn constants_refuse_inexact_integer_division() {
        let scope = scope();
        let c = |s: &str| resolve_constant(&Expr::parse(s).unwrap(), s, &scope);
        assert_eq!(c("N / 4").unwrap(), Value::Int(256));
        assert_eq!(c("1.0 / 2").unwrap(), Value::Real(0.5));
        assert_eq!(c("'fast'").unwrap(), Value::from("fast"));
        assert_eq!(c("1 // 2").unwrap(), Value::Int(0));
        let e = c("1 / 2").unwrap_err();
        assert!(
            e.message.contains("not exact") && e.message.contains("truncates it to 0"),
            "{e}"
        );
        assert!(e.to_string().contains("0.5"), "{e}");
    }

    #[test]
    fn division_by_zero_and_overflow_are_undefined() {
        let e = res("WG_X % (N - 1024) == 0").unwrap_err();
        assert_eq!(
            (e.column(), e.message.as_str()),
            (8, "division by zero: `N - 1024` is always 0")
        );
        let n = res("N / (WG_X - 4) >= 0").unwrap();
        assert!(n.holds(&[5, 0, 0, 0]));
        assert!(!n.holds(&[4, 0, 0, 0]));
        let n = res("WG_X % WG_Y == 0 || WG_X == 0").unwrap();
        assert!(
            !n.holds(&[0, 0, 0, 0]),
            "the % by zero is evaluated first and makes it false"
        );
        let n = res("WG_X * WG_Y > 0").unwrap();
        assert!(!n.holds(&[i64::MAX, 2, 0, 0]));
        assert_eq!(
            res("-7 / 2 == -3 && -7 % 2 == -1").unwrap(),
            Node::Bool(true)
        );
        let n = res("WG_X / (WG_Y - 1.0) > 0").unwrap();
        assert!(
            !n.holds(&[4, 1, 0, 0]),
            "a real division by zero is undefined too"
        );
    }
}
