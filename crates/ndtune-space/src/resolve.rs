//! Name resolution, type checking and constant folding: a parsed [`Expr`] becomes a [`Node`]
//! whose names are either folded to numbers (constants, `device.*`) or parameter slots.

use crate::expr::{BinOp, Expr, ExprError, ExprKind, Func};
use std::collections::BTreeMap;

/// What names mean while resolving: parameters (by slot), constants and device properties.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub params: Vec<String>,
    pub constants: BTreeMap<String, i64>,
    /// `device.*` properties, or `None` where no device is given (then naming one is an error).
    pub device: Option<BTreeMap<String, i64>>,
}

/// The two types of the language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Int,
    Bool,
}

impl Type {
    fn name(self) -> &'static str {
        match self {
            Type::Int => "an integer",
            Type::Bool => "a condition",
        }
    }
}

/// A resolved expression. `Undef` is a folded division by zero or an overflow: the constraint
/// holding it is false wherever it is evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Const(i64),
    Bool(bool),
    Var(usize),
    Undef,
    Neg(Box<Node>),
    Not(Box<Node>),
    Bin(BinOp, Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
}

/// Applies an integer operator with the language's semantics: `/` and `%` truncate toward zero;
/// division by zero and overflow are undefined (`None`).
#[inline(always)]
pub fn arith(op: BinOp, a: i64, b: i64) -> Option<i64> {
    match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        BinOp::Div => a.checked_div(b),
        BinOp::Rem => a.checked_rem(b),
        _ => unreachable!("{op:?} is not arithmetic"),
    }
}

/// Applies a comparison operator.
#[inline(always)]
pub fn compare(op: BinOp, a: i64, b: i64) -> bool {
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

impl Node {
    /// Evaluates the node directly (slow path: tests, folding, brute force). `None` = undefined.
    pub fn eval(&self, vars: &[i64]) -> Option<i64> {
        Some(match self {
            Node::Const(v) => *v,
            Node::Bool(b) => i64::from(*b),
            Node::Var(i) => vars[*i],
            Node::Undef => return None,
            Node::Neg(a) => a.eval(vars)?.checked_neg()?,
            Node::Not(a) => i64::from(a.eval(vars)? == 0),
            Node::Bin(BinOp::And, a, b) => i64::from(a.eval(vars)? != 0 && b.eval(vars)? != 0),
            Node::Bin(BinOp::Or, a, b) => i64::from(a.eval(vars)? != 0 || b.eval(vars)? != 0),
            Node::Bin(op, a, b) if op.is_comparison() => {
                i64::from(compare(*op, a.eval(vars)?, b.eval(vars)?))
            }
            Node::Bin(op, a, b) => arith(*op, a.eval(vars)?, b.eval(vars)?)?,
            Node::Call(f, args) => {
                let mut acc = args[0].eval(vars)?;
                for a in &args[1..] {
                    let v = a.eval(vars)?;
                    acc = if *f == Func::Min {
                        acc.min(v)
                    } else {
                        acc.max(v)
                    };
                }
                acc
            }
        })
    }

    /// Whether a constraint holds: defined and true.
    pub fn holds(&self, vars: &[i64]) -> bool {
        self.eval(vars) == Some(1)
    }

    /// The parameter slots the node reads.
    pub fn vars(&self, out: &mut Vec<usize>) {
        match self {
            Node::Var(i) => {
                if !out.contains(i) {
                    out.push(*i)
                }
            }
            Node::Const(_) | Node::Bool(_) | Node::Undef => {}
            Node::Neg(a) | Node::Not(a) => a.vars(out),
            Node::Bin(_, a, b) => {
                a.vars(out);
                b.vars(out);
            }
            Node::Call(_, args) => args.iter().for_each(|a| a.vars(out)),
        }
    }

    /// Replaces parameter slots through `map` (slot -> new slot).
    pub fn remap(&self, map: &dyn Fn(usize) -> usize) -> Node {
        match self {
            Node::Var(i) => Node::Var(map(*i)),
            Node::Const(_) | Node::Bool(_) | Node::Undef => self.clone(),
            Node::Neg(a) => Node::Neg(Box::new(a.remap(map))),
            Node::Not(a) => Node::Not(Box::new(a.remap(map))),
            Node::Bin(op, a, b) => Node::Bin(*op, Box::new(a.remap(map)), Box::new(b.remap(map))),
            Node::Call(f, args) => Node::Call(*f, args.iter().map(|a| a.remap(map)).collect()),
        }
    }
}

/// Resolves `expr` in `scope` and checks that it has type `want`.
pub fn resolve(expr: &Expr, source: &str, scope: &Scope, want: Type) -> Result<Node, ExprError> {
    let (node, ty) = resolve_node(expr, source, scope)?;
    if ty != want {
        return Err(ExprError::new(
            format!("this is {}, but {} is needed here", ty.name(), want.name()),
            source,
            expr.span.clone(),
        )
        .with_help(match want {
            Type::Bool => "a constraint must be a condition, e.g. `X % 4 == 0`",
            Type::Int => "a size must be an integer expression, e.g. `2 * X`",
        }));
    }
    Ok(node)
}

fn resolve_node(e: &Expr, src: &str, scope: &Scope) -> Result<(Node, Type), ExprError> {
    let expect = |(n, t): (Node, Type), want: Type, sub: &Expr, ctx: &str| {
        if t == want {
            Ok(n)
        } else {
            Err(ExprError::new(
                format!("{ctx} needs {}, but this is {}", want.name(), t.name()),
                src,
                sub.span.clone(),
            ))
        }
    };
    Ok(match &e.kind {
        ExprKind::Int(v) => (Node::Const(*v), Type::Int),
        ExprKind::Name(n) => (resolve_name(n, e, src, scope)?, Type::Int),
        ExprKind::Neg(a) => {
            let a = expect(resolve_node(a, src, scope)?, Type::Int, a, "`-`")?;
            (fold(Node::Neg(Box::new(a))), Type::Int)
        }
        ExprKind::Not(a) => {
            let a = expect(resolve_node(a, src, scope)?, Type::Bool, a, "`!`")?;
            (fold(Node::Not(Box::new(a))), Type::Bool)
        }
        ExprKind::Bin(op, a, b) => {
            let (operand, result) = if op.is_logical() {
                (Type::Bool, Type::Bool)
            } else if op.is_comparison() {
                (Type::Int, Type::Bool)
            } else {
                (Type::Int, Type::Int)
            };
            let ctx = format!("`{}`", op.symbol());
            let ra = resolve_node(a, src, scope)?;
            let rb = resolve_node(b, src, scope)?;
            // `==`/`!=` also compare two conditions.
            let operand = if matches!(op, BinOp::Eq | BinOp::Ne) && ra.1 == Type::Bool {
                Type::Bool
            } else {
                operand
            };
            let na = expect(ra, operand, a, &ctx)?;
            let nb = expect(rb, operand, b, &ctx)?;
            let names_device = b.names().iter().any(|(n, _)| n.starts_with("device."));
            if matches!(op, BinOp::Div | BinOp::Rem) && nb == Node::Const(0) && !names_device {
                return Err(ExprError::new(
                    format!("division by zero: `{b}` is always 0"),
                    src,
                    b.span.clone(),
                ));
            }
            (fold(Node::Bin(*op, Box::new(na), Box::new(nb))), result)
        }
        ExprKind::Call(f, args) => {
            let name = if *f == Func::Min { "`min`" } else { "`max`" };
            let nodes = args
                .iter()
                .map(|a| expect(resolve_node(a, src, scope)?, Type::Int, a, name))
                .collect::<Result<Vec<_>, _>>()?;
            (fold(Node::Call(*f, nodes)), Type::Int)
        }
    })
}

fn resolve_name(n: &str, e: &Expr, src: &str, scope: &Scope) -> Result<Node, ExprError> {
    if let Some(i) = scope.params.iter().position(|p| p == n) {
        return Ok(Node::Var(i));
    }
    if let Some(v) = scope.constants.get(n) {
        return Ok(Node::Const(*v));
    }
    if let Some(prop) = n.strip_prefix("device.") {
        return match &scope.device {
            None => Err(ExprError::new(
                format!("`{n}` needs a device, and none is given"),
                src,
                e.span.clone(),
            )
            .with_help("pass --device SEL, --profile NAME or --profile-file F")),
            Some(props) => match props.get(prop) {
                Some(v) => Ok(Node::Const(*v)),
                None => {
                    let err = ExprError::new(
                        format!("unknown device property `{n}`"),
                        src,
                        e.span.clone(),
                    );
                    Err(match closest(prop, props.keys().map(String::as_str)) {
                        Some(s) => err.with_help(format!("did you mean `device.{s}`?")),
                        None => err,
                    })
                }
            },
        };
    }
    let known = scope
        .params
        .iter()
        .map(String::as_str)
        .chain(scope.constants.keys().map(String::as_str));
    let err = ExprError::new(format!("unknown name `{n}`"), src, e.span.clone());
    Err(match closest(n, known) {
        Some(s) => err.with_help(format!("did you mean `{s}`?")),
        None => err.with_help(format!(
            "names are the parameters ({}), constants and device.*",
            scope.params.join(", ")
        )),
    })
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

/// Folds a node whose operands are all constants; keeps undefinedness as [`Node::Undef`].
fn fold(n: Node) -> Node {
    let constant = |n: &Node| matches!(n, Node::Const(_) | Node::Bool(_) | Node::Undef);
    let all_const = match &n {
        Node::Neg(a) | Node::Not(a) => constant(a),
        Node::Bin(BinOp::And | BinOp::Or, a, b) => {
            // Short-circuit folding: `false && X` is false, `true || X` is true.
            match (&n, a.as_ref()) {
                (Node::Bin(BinOp::And, ..), Node::Bool(false)) => return Node::Bool(false),
                (Node::Bin(BinOp::Or, ..), Node::Bool(true)) => return Node::Bool(true),
                _ => constant(a) && constant(b),
            }
        }
        Node::Bin(_, a, b) => constant(a) && constant(b),
        Node::Call(_, args) => args.iter().all(constant),
        _ => false,
    };
    if !all_const {
        return n;
    }
    let is_bool = matches!(n, Node::Not(_))
        || matches!(&n, Node::Bin(op, ..) if op.is_comparison() || op.is_logical());
    match (n.eval(&[]), is_bool) {
        (None, _) => Node::Undef,
        (Some(v), true) => Node::Bool(v != 0),
        (Some(v), false) => Node::Const(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope {
            params: vec!["WG_X".into(), "WG_Y".into()],
            constants: [("N".to_string(), 1024)].into_iter().collect(),
            device: Some(
                [("max_work_group_size".to_string(), 256)]
                    .into_iter()
                    .collect(),
            ),
        }
    }

    fn res(s: &str) -> Result<Node, ExprError> {
        resolve(&Expr::parse(s).unwrap(), s, &scope(), Type::Bool)
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
    }

    #[test]
    fn division_by_zero_and_overflow_are_undefined() {
        let e = res("WG_X % (N - 1024) == 0").unwrap_err();
        assert_eq!(
            (e.column(), e.message.as_str()),
            (8, "division by zero: `N - 1024` is always 0")
        );
        let n = res("N / (WG_X - 4) >= 0").unwrap();
        assert!(n.holds(&[5, 0]));
        assert!(!n.holds(&[4, 0]));
        let n = res("WG_X % WG_Y == 0 || WG_X == 0").unwrap();
        assert!(
            !n.holds(&[0, 0]),
            "the % by zero is evaluated first and makes it false"
        );
        let n = res("WG_X * WG_Y > 0").unwrap();
        assert!(!n.holds(&[i64::MAX, 2]));
        assert_eq!(
            res("-7 / 2 == -3 && -7 % 2 == -1").unwrap(),
            Node::Bool(true)
        );
    }
}
