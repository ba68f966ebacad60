//! Compilation of resolved nodes to closures, and the monotonicity analysis that lets the pruner
//! cut a sorted domain with a binary search instead of testing every value.
//!
//! A closure tree costs one indirect call per node; the common leaves (`X op Y`, `X op 4`) are
//! fused into one closure, so a typical constraint evaluates in a few nanoseconds.

use crate::expr::{BinOp, Func};
use crate::resolve::{arith, compare, int_call, real_arith, real_call, to_int, Node, Type};

/// A compiled integer expression over the parameter values; `None` = undefined.
pub type IntFn = Box<dyn Fn(&[i64]) -> Option<i64> + Send + Sync>;
/// A compiled real expression; `None` = undefined.
pub type RealFn = Box<dyn Fn(&[i64]) -> Option<f64> + Send + Sync>;
/// A compiled condition; `None` = undefined (the constraint is then false).
pub type BoolFn = Box<dyn Fn(&[i64]) -> Option<bool> + Send + Sync>;
/// A compiled constraint: defined and true.
pub type Pred = Box<dyn Fn(&[i64]) -> bool + Send + Sync>;

#[derive(Clone, Copy)]
enum Leaf {
    Var(usize),
    Const(i64),
}

fn leaf(n: &Node) -> Option<Leaf> {
    match n {
        Node::Var(i) => Some(Leaf::Var(*i)),
        Node::Const(c) => Some(Leaf::Const(*c)),
        _ => None,
    }
}

/// Builds `$body` with `$a`/`$b` bound to the fastest reader of each leaf operand, so the
/// common shapes `X op Y`, `X op 4` and `4 op X` compile to one closure with no inner calls.
macro_rules! fused {
    ($la:expr, $lb:expr, |$a:ident, $b:ident| $body:expr) => {
        match ($la, $lb) {
            (Leaf::Var(i), Leaf::Var(j)) => Box::new(move |v: &[i64]| {
                let ($a, $b) = (v[i], v[j]);
                $body
            }),
            (Leaf::Var(i), Leaf::Const(c)) => Box::new(move |v: &[i64]| {
                let ($a, $b) = (v[i], c);
                $body
            }),
            (Leaf::Const(c), Leaf::Var(j)) => Box::new(move |v: &[i64]| {
                let ($a, $b) = (c, v[j]);
                $body
            }),
            (Leaf::Const(c), Leaf::Const(d)) => Box::new(move |_: &[i64]| {
                let ($a, $b) = (c, d);
                $body
            }),
        }
    };
}

/// Compiles an integer node.
pub fn int_fn(n: &Node) -> IntFn {
    match n {
        Node::Const(c) => {
            let c = *c;
            Box::new(move |_| Some(c))
        }
        Node::Var(i) => {
            let i = *i;
            Box::new(move |v| Some(v[i]))
        }
        Node::Undef => Box::new(|_| None),
        Node::Neg(a) => {
            let a = int_fn(a);
            Box::new(move |v| a(v)?.checked_neg())
        }
        Node::BitNot(a) => {
            let a = int_fn(a);
            Box::new(move |v| Some(!a(v)?))
        }
        Node::Bin(op, a, b) => {
            let op = *op;
            if let (Some(la), Some(lb)) = (leaf(a), leaf(b)) {
                return match op {
                    BinOp::Add => fused!(la, lb, |x, y| x.checked_add(y)),
                    BinOp::Sub => fused!(la, lb, |x, y| x.checked_sub(y)),
                    BinOp::Mul => fused!(la, lb, |x, y| x.checked_mul(y)),
                    BinOp::Div => fused!(la, lb, |x, y| x.checked_div(y)),
                    BinOp::Rem => fused!(la, lb, |x, y| x.checked_rem(y)),
                    _ => fused!(la, lb, |x, y| arith(op, x, y)),
                };
            }
            let (a, b) = (int_fn(a), int_fn(b));
            match op {
                BinOp::Add => Box::new(move |v| a(v)?.checked_add(b(v)?)),
                BinOp::Sub => Box::new(move |v| a(v)?.checked_sub(b(v)?)),
                BinOp::Mul => Box::new(move |v| a(v)?.checked_mul(b(v)?)),
                BinOp::Div => Box::new(move |v| a(v)?.checked_div(b(v)?)),
                _ => Box::new(move |v| arith(op, a(v)?, b(v)?)),
            }
        }
        Node::Call(f, args) => {
            let args: Vec<IntFn> = args.iter().map(int_fn).collect();
            let f = *f;
            Box::new(move |v| int_call(f, args.iter().map(|a| a(v))))
        }
        Node::ToInt(f, a) => {
            let (f, a) = (*f, real_fn(a));
            Box::new(move |v| to_int(f, a(v)?))
        }
        Node::Cond(c, a, b) => {
            let (c, a, b) = (bool_fn(c), int_fn(a), int_fn(b));
            Box::new(move |v| if c(v)? { a(v) } else { b(v) })
        }
        other => unreachable!("type-checked: {other:?} is not an integer"),
    }
}

/// Compiles a real node (an integer node is converted).
pub fn real_fn(n: &Node) -> RealFn {
    match n {
        Node::Real(c) => {
            let c = *c;
            Box::new(move |_| Some(c))
        }
        Node::Lookup(i, table) => {
            let (i, table) = (*i, table.clone());
            Box::new(move |v| {
                usize::try_from(v[i])
                    .ok()
                    .and_then(|k| table.get(k).copied())
            })
        }
        Node::Undef => Box::new(|_| None),
        Node::ToReal(a) => {
            let a = int_fn(a);
            Box::new(move |v| Some(a(v)? as f64))
        }
        Node::RNeg(a) => {
            let a = real_fn(a);
            Box::new(move |v| Some(-a(v)?))
        }
        Node::RBin(op, a, b) if !op.is_comparison() => {
            let (op, a, b) = (*op, real_fn(a), real_fn(b));
            Box::new(move |v| real_arith(op, a(v)?, b(v)?))
        }
        Node::RCall(f, args) => {
            let args: Vec<RealFn> = args.iter().map(real_fn).collect();
            let f = *f;
            Box::new(move |v| real_call(f, args.iter().map(|a| a(v))))
        }
        Node::Cond(c, a, b) if a.ty() == Type::Real => {
            let (c, a, b) = (bool_fn(c), real_fn(a), real_fn(b));
            Box::new(move |v| if c(v)? { a(v) } else { b(v) })
        }
        other => {
            let a = int_fn(other);
            Box::new(move |v| Some(a(v)? as f64))
        }
    }
}

/// Compiles a condition node, with C's short-circuit `&&`/`||`.
pub fn bool_fn(n: &Node) -> BoolFn {
    match n {
        Node::Bool(b) => {
            let b = *b;
            Box::new(move |_| Some(b))
        }
        Node::Undef => Box::new(|_| None),
        Node::Not(a) => {
            let a = bool_fn(a);
            Box::new(move |v| Some(!a(v)?))
        }
        Node::Bin(BinOp::And, a, b) => {
            let (a, b) = (bool_fn(a), bool_fn(b));
            Box::new(move |v| Some(a(v)? && b(v)?))
        }
        Node::Bin(BinOp::Or, a, b) => {
            let (a, b) = (bool_fn(a), bool_fn(b));
            Box::new(move |v| Some(a(v)? || b(v)?))
        }
        Node::Bin(op, a, b) if a.ty() == Type::Bool => {
            // `==`/`!=` between two conditions.
            let (a, b, eq) = (bool_fn(a), bool_fn(b), *op == BinOp::Eq);
            Box::new(move |v| Some((a(v)? == b(v)?) == eq))
        }
        Node::RBin(op, a, b) => {
            let (op, a, b) = (*op, real_fn(a), real_fn(b));
            Box::new(move |v| Some(compare(op, a(v)?, b(v)?)))
        }
        Node::Cond(c, a, b) => {
            let (c, a, b) = (bool_fn(c), bool_fn(a), bool_fn(b));
            Box::new(move |v| if c(v)? { a(v) } else { b(v) })
        }
        Node::Bin(op, a, b) => {
            let op = *op;
            if let (Some(la), Some(lb)) = (leaf(a), leaf(b)) {
                return match op {
                    BinOp::Eq => fused!(la, lb, |x, y| Some(x == y)),
                    BinOp::Ne => fused!(la, lb, |x, y| Some(x != y)),
                    BinOp::Lt => fused!(la, lb, |x, y| Some(x < y)),
                    BinOp::Le => fused!(la, lb, |x, y| Some(x <= y)),
                    BinOp::Gt => fused!(la, lb, |x, y| Some(x > y)),
                    _ => fused!(la, lb, |x, y| Some(x >= y)),
                };
            }
            // `A % B == 0`, the most common constraint shape, in one closure.
            if let (BinOp::Eq | BinOp::Ne, Node::Bin(BinOp::Rem, x, y), Node::Const(0)) =
                (op, a.as_ref(), b.as_ref())
            {
                if let (Some(lx), Some(ly)) = (leaf(x), leaf(y)) {
                    let eq = op == BinOp::Eq;
                    return fused!(lx, ly, |p, q| Some((p.checked_rem(q)? == 0) == eq));
                }
            }
            let (a, b) = (int_fn(a), int_fn(b));
            match op {
                BinOp::Eq => Box::new(move |v| Some(a(v)? == b(v)?)),
                BinOp::Ne => Box::new(move |v| Some(a(v)? != b(v)?)),
                BinOp::Le => Box::new(move |v| Some(a(v)? <= b(v)?)),
                _ => Box::new(move |v| Some(compare(op, a(v)?, b(v)?))),
            }
        }
        other => unreachable!("type-checked: {other:?} is not a condition"),
    }
}

fn is_bool_operand(n: &Node) -> bool {
    n.ty() == Type::Bool
}

/// Compiles a constraint: true only where it is defined and holds.
pub fn pred(n: &Node) -> Pred {
    let f = bool_fn(n);
    Box::new(move |v| f(v) == Some(true))
}

/// How the set of domain values that satisfy a constraint lies in the sorted domain of the
/// parameter bound last, all others fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// True on a prefix (smallest values), false after.
    Prefix,
    /// False on a prefix, true after.
    Suffix,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mono {
    Const,
    Inc,
    Dec,
    Unknown,
}

impl Mono {
    fn flip(self) -> Mono {
        match self {
            Mono::Inc => Mono::Dec,
            Mono::Dec => Mono::Inc,
            m => m,
        }
    }

    /// Direction of a sum of two terms.
    fn plus(self, o: Mono) -> Mono {
        match (self, o) {
            (Mono::Const, m) | (m, Mono::Const) => m,
            (a, b) if a == b => a,
            _ => Mono::Unknown,
        }
    }
}

/// Value bounds of every parameter slot (min and max of its domain).
pub type Bounds = [(i64, i64)];

/// The range of `n` over all values in `bounds`, if no intermediate result can leave i64
/// (then checked arithmetic never fails by overflow and monotone reasoning is exact).
fn range(n: &Node, bounds: &Bounds) -> Option<(i128, i128)> {
    let fits =
        |lo: i128, hi: i128| (lo >= i64::MIN as i128 && hi <= i64::MAX as i128).then_some((lo, hi));
    match n {
        Node::Const(c) => Some((*c as i128, *c as i128)),
        Node::Var(i) => Some((bounds[*i].0 as i128, bounds[*i].1 as i128)),
        Node::Undef => Some((0, 0)),
        Node::Neg(a) => {
            let (lo, hi) = range(a, bounds)?;
            fits(-hi, -lo)
        }
        Node::Bin(op, a, b) => {
            let (al, ah) = range(a, bounds)?;
            let (bl, bh) = range(b, bounds)?;
            match op {
                BinOp::Add => fits(al + bl, ah + bh),
                BinOp::Sub => fits(al - bh, ah - bl),
                BinOp::Mul => {
                    let c = [al * bl, al * bh, ah * bl, ah * bh];
                    fits(*c.iter().min()?, *c.iter().max()?)
                }
                // |a / b| <= |a| and |a % b| <= |a| for every non-zero b; i64::MIN / -1 is excluded.
                BinOp::Div | BinOp::Rem => {
                    let m = al.abs().max(ah.abs());
                    fits(-m, m).filter(|_| al > i64::MIN as i128)
                }
                _ => None,
            }
        }
        Node::Call(Func::Min | Func::Max, args) => {
            let rs = args
                .iter()
                .map(|a| range(a, bounds))
                .collect::<Option<Vec<_>>>()?;
            Some((rs.iter().map(|r| r.0).min()?, rs.iter().map(|r| r.1).max()?))
        }
        _ => None,
    }
}

fn nonneg(n: &Node, bounds: &Bounds) -> bool {
    range(n, bounds).is_some_and(|(lo, _)| lo >= 0)
}

fn positive(n: &Node, bounds: &Bounds) -> bool {
    range(n, bounds).is_some_and(|(lo, _)| lo > 0)
}

/// How `n` moves as slot `x` grows, the other slots fixed.
fn mono(n: &Node, x: usize, bounds: &Bounds) -> Mono {
    let mut vars = Vec::new();
    n.vars(&mut vars);
    if !vars.contains(&x) {
        return Mono::Const;
    }
    match n {
        Node::Var(_) => Mono::Inc,
        Node::Neg(a) => mono(a, x, bounds).flip(),
        Node::Bin(BinOp::Add, a, b) => mono(a, x, bounds).plus(mono(b, x, bounds)),
        Node::Bin(BinOp::Sub, a, b) => mono(a, x, bounds).plus(mono(b, x, bounds).flip()),
        Node::Bin(BinOp::Mul, a, b) => {
            let (ma, mb) = (mono(a, x, bounds), mono(b, x, bounds));
            let (na, nb) = (nonneg(a, bounds), nonneg(b, bounds));
            match (ma, mb) {
                (Mono::Const, m) if na => m,
                (m, Mono::Const) if nb => m,
                (Mono::Inc, Mono::Inc) | (Mono::Dec, Mono::Dec) if na && nb => ma,
                _ => Mono::Unknown,
            }
        }
        Node::Bin(BinOp::Div, a, b) => match (mono(a, x, bounds), mono(b, x, bounds)) {
            // A divisor that does not move is either zero (all undefined: no value passes, which
            // is still a prefix) or of one sign for this parent.
            (m, Mono::Const) if nonneg(b, bounds) => m,
            (Mono::Const, m) if nonneg(a, bounds) && positive(b, bounds) => m.flip(),
            _ => Mono::Unknown,
        },
        Node::Call(Func::Min | Func::Max, args) => args
            .iter()
            .map(|a| mono(a, x, bounds))
            .fold(Mono::Const, Mono::plus),
        _ => Mono::Unknown,
    }
}

/// If constraint part `n` is a comparison whose truth, as slot `x` grows with the others fixed,
/// is monotone, the shapes it has: one for `<`, `<=`, `>`, `>=`; two (an interval) for `==`.
pub fn cut_shapes(n: &Node, x: usize, bounds: &Bounds) -> Option<Vec<Shape>> {
    let Node::Bin(op, a, b) = n else { return None };
    if !op.is_comparison() || *op == BinOp::Ne || is_bool_operand(a) {
        return None;
    }
    range(a, bounds)?;
    range(b, bounds)?;
    // Direction of a - b in x.
    let d = mono(a, x, bounds).plus(mono(b, x, bounds).flip());
    let up = match d {
        Mono::Inc => true,
        Mono::Dec => false,
        _ => return None,
    };
    let (le, ge) = if up {
        (Shape::Prefix, Shape::Suffix)
    } else {
        (Shape::Suffix, Shape::Prefix)
    };
    Some(match op {
        BinOp::Lt | BinOp::Le => vec![le],
        BinOp::Gt | BinOp::Ge => vec![ge],
        _ => vec![le, ge],
    })
}

/// Whether comparison `n` can only get harder to satisfy as slot `p` grows, the others fixed
/// (its truth is non-increasing in `p`). Used on the halves of cuts: if every cut of a level
/// tightens as the parent parameter grows, an empty interval stays empty for larger parents.
pub fn tightens_with(n: &Node, p: usize, bounds: &Bounds) -> bool {
    let Node::Bin(op, a, b) = n else { return false };
    if !op.is_comparison()
        || is_bool_operand(a)
        || range(a, bounds).is_none()
        || range(b, bounds).is_none()
    {
        return false;
    }
    let d = mono(a, p, bounds).plus(mono(b, p, bounds).flip());
    match op {
        BinOp::Lt | BinOp::Le => matches!(d, Mono::Inc | Mono::Const),
        BinOp::Gt | BinOp::Ge => matches!(d, Mono::Dec | Mono::Const),
        _ => false,
    }
}

/// The comparison that gives each shape of an `==` cut: `a <= b` and `a >= b`.
pub fn interval_halves(n: &Node) -> (Node, Node) {
    let Node::Bin(_, a, b) = n else {
        unreachable!("cut_shapes accepted only comparisons")
    };
    (
        Node::Bin(BinOp::Le, a.clone(), b.clone()),
        Node::Bin(BinOp::Ge, a.clone(), b.clone()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::resolve::{resolve, Scope, Type};

    fn node(src: &str) -> Node {
        let scope = Scope {
            params: vec!["X".into(), "Y".into(), "Z".into()],
            ..Scope::default()
        };
        resolve(&Expr::parse(src).unwrap(), src, &scope, Type::Bool).unwrap()
    }

    #[test]
    fn compiled_closures_agree_with_the_interpreter() {
        let cases = [
            "X * Y <= 64",
            "X % Y == 0",
            "X % Y != 0 || Z % (X * Y / Y) == 0",
            "min(X, Y, 3) + max(Z, -2) >= X - Y",
            "!(X == Y) && (X < 3) == (Y < 3)",
            "1000 / (X - Y) > Z",
            "-X < Y % 3",
            "(X & Y) == 1 || (X | Z) > 2 || (X ^ Y) << 1 == 4",
            "X // 2 == Y % 3 or X ** 2 > Y or -X // 3 == Z",
            "(X > Y ? X : Y) >= Z",
            "X * 0.5 > Y / 3 - 1",
            "X / (Y - 1.0) < 2.5",
            "int(X / 2.0) == floor(X * 0.5) and ceil(X / 3.0) >= round(X / 3.0)",
            "abs(X - Y) <= 2 and not X in [1, 3]",
        ];
        for src in cases {
            let n = node(src);
            let p = pred(&n);
            for x in -3..5 {
                for y in -3..5 {
                    for z in [-1, 0, 2] {
                        let v = [x, y, z];
                        assert_eq!(p(&v), n.holds(&v), "{src} at {v:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn monotone_comparisons_are_recognised() {
        let b = [(1, 1024), (1, 1024), (0, 64)];
        assert_eq!(
            cut_shapes(&node("X * Y <= 1024"), 1, &b),
            Some(vec![Shape::Prefix])
        );
        assert_eq!(
            cut_shapes(&node("X * Y >= 16"), 1, &b),
            Some(vec![Shape::Suffix])
        );
        assert_eq!(
            cut_shapes(&node("1024 / Y >= X"), 1, &b),
            Some(vec![Shape::Prefix])
        );
        // `X <= Y` grows true with Y (a suffix), `X >= Y` shrinks (a prefix).
        assert_eq!(
            cut_shapes(&node("X == Y"), 1, &b),
            Some(vec![Shape::Suffix, Shape::Prefix])
        );
        assert_eq!(
            cut_shapes(&node("X - Y > Z"), 2, &b),
            Some(vec![Shape::Prefix])
        );
        assert_eq!(cut_shapes(&node("X % Y == 0"), 1, &b), None);
        assert_eq!(cut_shapes(&node("X != Y"), 1, &b), None);
        // A negative factor could flip the direction: not monotone as far as we can tell.
        let signed = [(-4, 4), (1, 8), (0, 1)];
        assert_eq!(cut_shapes(&node("X * Y <= 8"), 1, &signed), None);
        // As X grows, `X * Y <= 1024` gets harder and `Y >= X` too; `Y <= X` gets easier.
        assert!(tightens_with(&node("X * Y <= 1024"), 0, &b));
        assert!(tightens_with(&node("Y >= X"), 0, &b));
        assert!(!tightens_with(&node("Y <= X"), 0, &b));
        assert!(tightens_with(&node("Y <= Z"), 0, &b), "independent of X");
        // Overflow possible: no cut.
        let huge = [(1, i64::MAX), (1, i64::MAX), (0, 1)];
        assert_eq!(cut_shapes(&node("X * Y <= 8"), 1, &huge), None);
    }
}
