//! The pruner: a depth-first walk over the parameters in an order chosen so that every
//! constraint is checked as soon as its last parameter is bound, cutting whole subtrees.
//!
//! At each level a constraint whose truth is monotone in that level's parameter (see
//! [`crate::compile::cut_shapes`]) narrows the sorted domain by a galloping binary search that
//! starts from where the previous sibling's boundary was; the others are tested value by value.
//! Where every cut of the next level only tightens as this level's parameter grows, the first
//! value whose subtree has an empty interval ends the loop: all larger values empty it too. Parameters no constraint mentions come last and are counted by
//! multiplication, so counting never visits them and uses memory proportional to the number of
//! parameters, whatever the size of the space.

use crate::compile::{cut_shapes, interval_halves, pred, tightens_with, Pred, Shape};
use crate::domain::Values;
use crate::resolve::Node;
use ndtune_core::{Codec, Coding};
use std::ops::ControlFlow;

/// A parameter with its resolved values: the point values in ascending order, and how they
/// hold the parameter's own values (integers as they are, anything else as table indices).
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub values: Values,
    pub coding: Coding,
}

impl Param {
    /// An integer parameter.
    pub fn ints(name: impl Into<String>, values: Values) -> Param {
        Param {
            name: name.into(),
            values,
            coding: Coding::Int,
        }
    }
}

/// A resolved constraint; `Var(i)` is parameter `i` in declaration order.
#[derive(Debug, Clone)]
pub struct Constraint {
    pub label: String,
    pub node: Node,
}

/// Counts of one pruning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// The Cartesian product of the domains.
    pub declared: u128,
    /// Configurations that satisfy every constraint.
    pub pruned: u128,
    /// Per constraint (in the order given), the configurations it removed. A configuration that
    /// several constraints reject is counted once, for the first that rejects it in evaluation
    /// order, so `pruned + removed.sum() == declared`.
    pub removed: Vec<u128>,
}

pub(crate) struct Half {
    shape: Shape,
    pub(crate) pred: Pred,
    node: Node,
    /// Index of this half's boundary hint in the walk's hint vector.
    hint: usize,
}

pub(crate) struct Cut {
    pub(crate) constraint: usize,
    pub(crate) halves: Vec<Half>,
}

pub(crate) struct Level {
    pub(crate) param: usize,
    pub(crate) cuts: Vec<Cut>,
    pub(crate) filters: Vec<(usize, Pred)>,
    /// Every cut of the next level tightens as this level's value grows (see module docs).
    pub(crate) stop_on_empty_child: bool,
}

/// A compiled, ordered space, ready to count or enumerate.
pub struct Space {
    /// Number of cut halves, each with a boundary hint during a walk.
    hints: usize,
    params: Vec<Param>,
    labels: Vec<String>,
    pub(crate) upfront: Vec<(usize, Pred)>,
    pub(crate) levels: Vec<Level>,
    /// Levels from here on have no checks.
    pub(crate) free_from: usize,
    /// `rest[k]`: configurations below one node of level k-1 (product of the domain sizes of
    /// levels k..).
    pub(crate) rest: Vec<u128>,
}

impl Space {
    /// Compiles `constraints` over `params` and chooses the evaluation order.
    pub fn new(params: Vec<Param>, constraints: Vec<Constraint>) -> Space {
        // Split each constraint into its top-level conjuncts: each is checked as early as it can be.
        let mut parts: Vec<(usize, Node, Vec<usize>)> = Vec::new();
        for (c, con) in constraints.iter().enumerate() {
            for node in conjuncts(&con.node) {
                let mut vars = Vec::new();
                node.vars(&mut vars);
                parts.push((c, node, vars));
            }
        }
        let order = choose_order(&params, &parts);
        let level_of: Vec<usize> = {
            let mut l = vec![0; params.len()];
            for (k, &p) in order.iter().enumerate() {
                l[p] = k;
            }
            l
        };
        let bounds: Vec<(i64, i64)> = params
            .iter()
            .map(|p| (p.values.min(), p.values.max()))
            .collect();
        let mut levels: Vec<Level> = order
            .iter()
            .map(|&param| Level {
                param,
                cuts: vec![],
                filters: vec![],
                stop_on_empty_child: false,
            })
            .collect();
        let mut upfront = Vec::new();
        let mut hints = 0;
        let mut half = |shape: Shape, node: Node| {
            hints += 1;
            Half {
                shape,
                pred: pred(&node),
                node,
                hint: hints - 1,
            }
        };
        for (c, node, vars) in parts {
            let Some(k) = vars.iter().map(|&v| level_of[v]).max() else {
                upfront.push((c, pred(&node)));
                continue;
            };
            let level = &mut levels[k];
            match cut_shapes(&node, level.param, &bounds) {
                Some(shapes) if shapes.len() == 1 => level.cuts.push(Cut {
                    constraint: c,
                    halves: vec![half(shapes[0], node)],
                }),
                Some(shapes) => {
                    let (le, ge) = interval_halves(&node);
                    level.cuts.push(Cut {
                        constraint: c,
                        halves: vec![half(shapes[0], le), half(shapes[1], ge)],
                    });
                }
                None => level.filters.push((c, pred(&node))),
            }
        }
        for k in 0..levels.len().saturating_sub(1) {
            let parent = levels[k].param;
            let child = &levels[k + 1];
            levels[k].stop_on_empty_child = !child.cuts.is_empty()
                && child
                    .cuts
                    .iter()
                    .flat_map(|c| &c.halves)
                    .all(|h| tightens_with(&h.node, parent, &bounds));
        }
        let free_from = levels
            .iter()
            .rposition(|l| !l.cuts.is_empty() || !l.filters.is_empty())
            .map_or(0, |k| k + 1);
        let mut rest = vec![1u128; levels.len() + 1];
        for k in (0..levels.len()).rev() {
            rest[k] = rest[k + 1].saturating_mul(params[levels[k].param].values.len() as u128);
        }
        Space {
            hints,
            params,
            labels: constraints.into_iter().map(|c| c.label).collect(),
            upfront,
            levels,
            free_from,
            rest,
        }
    }

    /// How points of this space hold configurations.
    pub fn codec(&self) -> Codec {
        Codec::new(
            self.params.iter().map(|p| p.name.clone()).collect(),
            self.params.iter().map(|p| p.coding.clone()).collect(),
        )
    }

    pub fn params(&self) -> &[Param] {
        &self.params
    }

    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// Parameter names in evaluation order (the order `for_each` varies them, outermost first).
    pub fn order(&self) -> Vec<&str> {
        self.levels
            .iter()
            .map(|l| self.params[l.param].name.as_str())
            .collect()
    }

    /// The Cartesian product of the domains.
    pub fn declared(&self) -> u128 {
        self.rest[0]
    }

    /// How many configurations satisfy every constraint.
    pub fn count(&self) -> u128 {
        self.stats().pruned
    }

    /// Counts the space and what each constraint removed.
    pub fn stats(&self) -> Stats {
        let mut sink = Counter::default();
        let removed = self.walk(&mut sink);
        Stats {
            declared: self.declared(),
            pruned: sink.count,
            removed,
        }
    }

    /// Calls `f` with every valid configuration (values in declaration order) until it breaks.
    pub fn for_each(&self, f: impl FnMut(&[i64]) -> ControlFlow<()>) {
        let mut sink = Lister { f };
        self.walk(&mut sink);
    }

    /// The first valid configuration in evaluation order, if any.
    pub fn configs_first(&self) -> Option<Vec<i64>> {
        let mut first = None;
        self.for_each(|c| {
            first = Some(c.to_vec());
            ControlFlow::Break(())
        });
        first
    }

    /// Every valid configuration; for small spaces and tests.
    pub fn configs(&self) -> Vec<Vec<i64>> {
        let mut out = Vec::new();
        self.for_each(|c| {
            out.push(c.to_vec());
            ControlFlow::Continue(())
        });
        out
    }

    fn walk(&self, sink: &mut impl Sink) -> Vec<u128> {
        let mut w = Walk::at(self, self.params.iter().map(|p| p.values.min()).collect());
        if let Some((c, _)) = self.upfront.iter().find(|(_, p)| !p(&w.vals)) {
            w.removed[*c] = self.declared();
            return w.removed;
        }
        let _ = self.descend(0, &mut w, sink);
        w.removed
    }

    /// Walks level `k` and below. Continues with `Some(c)` where the cuts of level `k` left no
    /// value, constraint `c` being the one that emptied the interval.
    pub(crate) fn descend(
        &self,
        k: usize,
        w: &mut Walk,
        sink: &mut impl Sink,
    ) -> ControlFlow<(), Option<usize>> {
        if k == self.free_from {
            return sink.free_tail(self, k, &mut w.vals).map_continue(|()| None);
        }
        let level = &self.levels[k];
        let dom = &self.params[level.param].values;
        let below = self.rest[k + 1];
        let (lo, hi) = match self.interval(k, w) {
            Ok(interval) => interval,
            Err(c) => return ControlFlow::Continue(Some(c)),
        };
        if level.filters.is_empty()
            && k + 1 == self.free_from
            && sink.add_bulk((hi - lo) as u128 * below)
        {
            return ControlFlow::Continue(None);
        }
        for i in lo..hi {
            w.vals[level.param] = dom.get(i);
            if !self.passes_filters(level, below, w) {
                continue;
            }
            let emptied = self.descend(k + 1, w, sink)?;
            if let (Some(c), true) = (emptied, level.stop_on_empty_child) {
                // Every larger value empties the child's interval too: account for them, stop.
                for j in i + 1..hi {
                    w.vals[level.param] = dom.get(j);
                    if self.passes_filters(level, below, w) {
                        w.removed[c] += self.rest[k + 1];
                    }
                }
                break;
            }
        }
        ControlFlow::Continue(None)
    }

    /// The domain indices `lo..hi` of level `k` that its cuts leave, given the levels above in
    /// `w`; `Err(c)` where constraint `c` emptied it.
    pub(crate) fn interval(&self, k: usize, w: &mut Walk) -> Result<(usize, usize), usize> {
        let level = &self.levels[k];
        let dom = &self.params[level.param].values;
        let below = self.rest[k + 1];
        let (mut lo, mut hi) = (0usize, dom.len());
        for cut in &level.cuts {
            let before = hi - lo;
            for h in &cut.halves {
                let vals = &mut w.vals;
                let mut holds = |i: usize| {
                    vals[level.param] = dom.get(i);
                    (h.pred)(vals)
                };
                let hint = w.hints[h.hint];
                let boundary = match h.shape {
                    Shape::Prefix => gallop(lo, hi, hint, &mut holds),
                    Shape::Suffix => gallop(lo, hi, hint, |i| !holds(i)),
                };
                w.hints[h.hint] = boundary;
                match h.shape {
                    Shape::Prefix => hi = boundary,
                    Shape::Suffix => lo = boundary,
                }
            }
            w.removed[cut.constraint] += (before - (hi - lo)) as u128 * below;
            if lo == hi {
                return Err(cut.constraint);
            }
        }
        Ok((lo, hi))
    }

    /// Tests the current value of `level` against its filters, charging a failure to the first.
    pub(crate) fn passes_filters(&self, level: &Level, below: u128, w: &mut Walk) -> bool {
        for (c, p) in &level.filters {
            if !p(&w.vals) {
                w.removed[*c] += below;
                return false;
            }
        }
        true
    }
}

/// The mutable state of one walk.
pub(crate) struct Walk {
    pub(crate) vals: Vec<i64>,
    removed: Vec<u128>,
    /// Per cut half, where its boundary was last found: siblings' boundaries are close.
    hints: Vec<usize>,
}

impl Walk {
    /// A walk with every parameter at `vals` (declaration order); levels above the one it starts
    /// from must hold a valid prefix.
    pub(crate) fn at(space: &Space, vals: Vec<i64>) -> Walk {
        Walk {
            vals,
            removed: vec![0u128; space.labels.len()],
            hints: vec![0; space.hints],
        }
    }
}

/// First index in `lo..hi` where `pred` is false, given it is true on a prefix; searches outwards
/// from `hint` in doubling steps, then bisects, so a boundary near the hint costs few tests.
fn gallop(lo: usize, hi: usize, hint: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    if lo >= hi {
        return lo;
    }
    let h = hint.clamp(lo, hi - 1);
    let mut step = 1;
    if pred(h) {
        let mut last_true = h;
        loop {
            let probe = last_true + step;
            if probe >= hi {
                return partition_point(last_true + 1, hi, pred);
            }
            if !pred(probe) {
                return partition_point(last_true + 1, probe, pred);
            }
            last_true = probe;
            step *= 2;
        }
    } else {
        let mut first_false = h;
        loop {
            if first_false - lo < step {
                return partition_point(lo, first_false, pred);
            }
            let probe = first_false - step;
            if pred(probe) {
                return partition_point(probe + 1, first_false, pred);
            }
            first_false = probe;
            step *= 2;
        }
    }
}

/// First index in `lo..hi` where `pred` is false, given it is true on a prefix.
fn partition_point(mut lo: usize, mut hi: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Where the walk delivers valid configurations.
pub(crate) trait Sink {
    /// All levels from `k` on are unconstrained and `vals` holds the bound ones.
    fn free_tail(&mut self, space: &Space, k: usize, vals: &mut [i64]) -> ControlFlow<()>;
    /// `n` valid configurations at once; false if the sink needs them one by one.
    fn add_bulk(&mut self, n: u128) -> bool;
}

/// Counts valid configurations, and how many times the walk reached a count (free tails and
/// bulk counts): a measure of the walk's work.
#[derive(Default)]
pub(crate) struct Counter {
    pub(crate) count: u128,
    pub(crate) calls: u64,
}

impl Sink for Counter {
    fn free_tail(&mut self, space: &Space, k: usize, _: &mut [i64]) -> ControlFlow<()> {
        self.count += space.rest[k];
        self.calls += 1;
        ControlFlow::Continue(())
    }
    fn add_bulk(&mut self, n: u128) -> bool {
        self.count += n;
        self.calls += 1;
        true
    }
}

struct Lister<F> {
    f: F,
}

impl<F: FnMut(&[i64]) -> ControlFlow<()>> Sink for Lister<F> {
    fn free_tail(&mut self, space: &Space, k: usize, vals: &mut [i64]) -> ControlFlow<()> {
        if k == space.levels.len() {
            return (self.f)(vals);
        }
        let param = space.levels[k].param;
        for v in space.params[param].values.iter() {
            vals[param] = v;
            self.free_tail(space, k + 1, vals)?;
        }
        ControlFlow::Continue(())
    }
    fn add_bulk(&mut self, _: u128) -> bool {
        false
    }
}

fn conjuncts(n: &Node) -> Vec<Node> {
    match n {
        Node::Bin(crate::expr::BinOp::And, a, b) => {
            let mut v = conjuncts(a);
            v.extend(conjuncts(b));
            v
        }
        _ => vec![n.clone()],
    }
}

/// Greedy order: next comes the parameter that completes the most constraint parts, then the one
/// that brings the open parts closest to completion, then the smaller domain. Parameters in no
/// constraint go last.
fn choose_order(params: &[Param], parts: &[(usize, Node, Vec<usize>)]) -> Vec<usize> {
    let constrained: Vec<bool> = (0..params.len())
        .map(|p| parts.iter().any(|(_, _, vars)| vars.contains(&p)))
        .collect();
    let mut chosen: Vec<usize> = Vec::with_capacity(params.len());
    let mut bound = vec![false; params.len()];
    while let Some(next) = (0..params.len())
        .filter(|&p| !bound[p] && constrained[p])
        .max_by(|&a, &b| {
            let score = |p: usize| {
                let mut completed = 0usize;
                let mut progress = 0f64;
                for (_, _, vars) in parts.iter().filter(|(_, _, v)| v.contains(&p)) {
                    let open = vars.iter().filter(|&&v| v != p && !bound[v]).count();
                    if open == 0 {
                        completed += 1;
                    }
                    progress += 1.0 / (open + 1) as f64;
                }
                (completed, progress)
            };
            let (ca, pa) = score(a);
            let (cb, pb) = score(b);
            ca.cmp(&cb)
                .then(pa.total_cmp(&pb))
                .then(params[b].values.len().cmp(&params[a].values.len()))
                .then(b.cmp(&a))
        })
    {
        bound[next] = true;
        chosen.push(next);
    }
    chosen.extend((0..params.len()).filter(|&p| !constrained[p]));
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::resolve::{resolve, Scope, Type};

    fn space(params: &[(&str, Vec<i64>)], constraints: &[&str]) -> Space {
        let scope = Scope {
            params: params.iter().map(|p| p.0.to_string()).collect(),
            ..Scope::default()
        };
        let cons = constraints
            .iter()
            .map(|s| Constraint {
                label: s.to_string(),
                node: resolve(&Expr::parse(s).unwrap(), s, &scope, Type::Bool).unwrap(),
            })
            .collect();
        let ps = params
            .iter()
            .map(|(n, v)| Param::ints(n.to_string(), Values::Explicit(v.clone())))
            .collect();
        Space::new(ps, cons)
    }

    #[test]
    fn counts_and_attributes_removals() {
        let s = space(
            &[
                ("X", vec![1, 2, 4, 8]),
                ("Y", vec![1, 2, 4, 8]),
                ("F", vec![0, 1, 2]),
            ],
            &["X * Y <= 8", "X % 2 == 0"],
        );
        let st = s.stats();
        assert_eq!(st.declared, 48);
        // X in {2, 4, 8}; X*Y <= 8: (2,{1,2,4}) (4,{1,2}) (8,{1}) = 6, times 3 free values.
        assert_eq!(st.pruned, 18);
        assert_eq!(st.pruned + st.removed.iter().sum::<u128>(), st.declared);
        assert_eq!(s.configs().len(), 18);
        assert_eq!(s.order().last(), Some(&"F"));
    }

    #[test]
    fn a_false_constant_constraint_removes_everything() {
        let s = space(&[("X", vec![1, 2])], &["1 > 2", "X > 0"]);
        assert_eq!(s.stats().removed, vec![2, 0]);
        assert!(s.configs().is_empty());
    }

    #[test]
    fn listing_stops_when_asked() {
        let s = space(&[("X", (1..100).collect()), ("Y", (1..100).collect())], &[]);
        let mut n = 0;
        s.for_each(|_| {
            n += 1;
            if n == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(n, 5);
    }

    #[test]
    fn gallop_finds_the_boundary_from_any_hint() {
        for n in 0..40usize {
            for boundary in 0..=n {
                for hint in 0..=n + 2 {
                    let got = gallop(0, n, hint, |i| i < boundary);
                    assert_eq!(got, boundary, "n {n} boundary {boundary} hint {hint}");
                }
            }
        }
    }

    #[test]
    fn an_emptied_child_interval_ends_the_parent_loop_with_exact_counts() {
        let s = space(
            &[("X", (1..=1000).collect()), ("Y", (1..=1000).collect())],
            &["X * Y <= 2000", "Y >= X", "X % 3 != 0"],
        );
        let brute: usize = (1..=1000i64)
            .map(|x| {
                (1..=1000i64)
                    .filter(|y| x * y <= 2000 && *y >= x && x % 3 != 0)
                    .count()
            })
            .sum();
        let st = s.stats();
        assert_eq!(st.pruned, brute as u128);
        assert_eq!(st.pruned + st.removed.iter().sum::<u128>(), st.declared);
    }

    #[test]
    fn interval_cuts_match_filtering() {
        let s = space(
            &[("X", (1..=64).collect()), ("Y", (1..=64).collect())],
            &["X == Y * 2", "X - Y >= 3"],
        );
        let brute = (1..=64)
            .flat_map(|x| (1..=64).map(move |y| (x, y)))
            .filter(|(x, y)| *x == y * 2 && x - y >= 3)
            .count();
        assert_eq!(s.count(), brute as u128);
    }
}
