//! The valid configurations of a pruned [`Space`] as an indexed set that is never listed:
//! count, membership, rank and unrank (so a uniform random valid configuration is the unrank of
//! a uniform random rank) and lazy iteration in order.
//!
//! The order is the pruner's: its evaluation order of the parameters (outermost first, see
//! [`Space::order`]), each parameter's values ascending. Unranking descends the pruner's tree: at
//! each constrained level it needs, for the node it stands on, how many valid configurations lie
//! below its children. A node is one of:
//!
//! - arithmetic: the last constrained level without filters, whose children (the interval its
//!   cuts leave) each have the same count: one interval search, no table;
//! - a table of cumulative counts, searched by bisection, made by the pruner's own counting walk
//!   over the node's subtree (the cuts, galloping searches and bulk counts that make counting
//!   fast). Where the children are cheap to count, the table may keep one row per block of
//!   `stride` children, a lookup then recounting one block: a table `stride` times smaller for
//!   a lookup that walks a bounded amount of counting (the cache's block work).
//!
//! Tables are kept in a cache of bounded size. The root's table, made in [`ValidSpace::new`] by
//! the count itself, and the other upper levels stay: when the cache is full it drops the deepest
//! levels first. Tables start whole (a row per child); each time the cache has to drop tables,
//! the block work of the tables made after doubles, up to [`BLOCK_WORK`], and tables cheaper to
//! make than a block lookup are no longer kept. So a space whose tables fit keeps them whole, and
//! one whose tables do not (millions of deep nodes) keeps them blocked: a draw costs a bisection
//! per upper level and, at the deep levels, a block recount or (while a table is not cached) one
//! count of the node's subtree. The unconstrained parameters the pruner puts last are
//! mixed-radix digits.
//!
//! Memory: the cache holds at most [`CACHE_ROWS`] rows (32 bytes each: 16 MiB) by default, a
//! node's key and bookkeeping counted in rows too, whatever the size of the space; one node's children (the values of one parameter that lead to
//! valid configurations under one prefix) are held while its table is made, so a parameter with
//! 10^9 values that are all reachable under one prefix, followed by constrained ones, would need
//! that much for a moment.

use crate::compile::Pred;
use crate::domain::Values;
use crate::space::{Counter, Param, Space, Walk};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

/// The most table rows the cache holds by default (32 bytes each: 16 MiB).
pub const CACHE_ROWS: usize = 1 << 19;

/// The most counting (counts the walk reaches, see `Counter`) that one lookup in a table may
/// redo: a table's stride is how many of its children cost about the cache's block work to
/// count, which grows to this under memory pressure.
pub const BLOCK_WORK: u64 = 64;

/// The most children in one block of a table.
const MAX_STRIDE: u64 = 64;

/// One node's children.
enum Node {
    /// Children `lo..`, each with `below` valid configurations.
    Arithmetic {
        lo: usize,
        below: u128,
    },
    Table(Table),
}

/// A cumulative-count table over a node's children (children without valid configurations
/// left out), one row per block of `stride` consecutive children.
struct Table {
    /// Per block: the domain index of its first child, and the valid configurations below the
    /// children before the block.
    rows: Vec<(usize, u128)>,
    /// One past the domain index of the last child.
    end: usize,
    stride: usize,
    /// The counting it took to make the table.
    work: u64,
}

/// A pruned space, indexed without listing it. Points are values in declaration order (as
/// [`Space::for_each`] gives them); ranks follow the pruner's order, so `unrank(0)` is the first
/// configuration [`Space::for_each`] visits and the ranks list the configurations as it does.
pub struct ValidSpace {
    space: Space,
    count: u128,
    names: Vec<String>,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for ValidSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidSpace")
            .field("names", &self.names)
            .field("order", &self.space.order())
            .field("len", &self.count)
            .finish()
    }
}

struct Cache {
    /// Per constrained level, the tables kept, keyed by the values of the levels above the node
    /// in level order.
    levels: Vec<HashMap<Vec<i64>, Arc<Node>>>,
    rows: usize,
    limit: usize,
    /// The counting a lookup may redo in the tables made from now on: 1 (whole tables) until
    /// the cache first drops tables, then doubling at each drop up to [`BLOCK_WORK`].
    block_work: u64,
}

impl Cache {
    /// Keeps `node` (of level `k`), dropping whole levels from the deepest up to `k` where the
    /// rows would pass the limit; never a level above `k`, so a node that the upper levels leave
    /// no room for is not kept.
    fn insert(&mut self, k: usize, key: Vec<i64>, node: Arc<Node>) {
        let rows = charge(&key, &node);
        if rows > self.limit {
            return;
        }
        let mut level = self.levels.len();
        while self.rows + rows > self.limit && level > k {
            level -= 1;
            let dropped: usize = self.levels[level].iter().map(|(k, n)| charge(k, n)).sum();
            self.levels[level].clear();
            self.rows -= dropped;
            self.block_work = (self.block_work * 2).min(BLOCK_WORK);
        }
        if self.rows + rows > self.limit {
            return;
        }
        self.rows += rows;
        if let Some(old) = self.levels[k].insert(key.clone(), node) {
            self.rows -= charge(&key, &old);
        }
    }
}

/// The rows a kept node counts for: its table's, and its key and bookkeeping (the key's values,
/// four to a row, and two rows for the map's entry, the table's header and its reference count).
fn charge(key: &[i64], node: &Node) -> usize {
    node.rows() + key.len().div_ceil(4) + 2
}

impl Node {
    fn rows(&self) -> usize {
        match self {
            Node::Arithmetic { .. } => 0,
            Node::Table(t) => t.rows.len(),
        }
    }

    /// Whether making the node again costs more than a lookup that redoes `block_work`.
    fn worth_keeping(&self, block_work: u64) -> bool {
        matches!(self, Node::Table(t) if t.work > block_work)
    }
}

/// What keeps a point out of a space ([`ValidSpace::why_not`]).
enum Outside {
    /// Not one value per parameter.
    Length,
    /// This parameter's value is not one of its declared ones.
    Domain(usize),
    /// This constraint (an index of the space's labels) does not hold.
    Constraint(usize),
}

impl ValidSpace {
    /// Counts `space` once (keeping the root's table); everything after that is lazy.
    pub fn new(space: Space) -> ValidSpace {
        ValidSpace::with_cache_rows(space, CACHE_ROWS)
    }

    /// [`ValidSpace::new`] with a cache of at most `rows` table rows.
    pub fn with_cache_rows(space: Space, rows: usize) -> ValidSpace {
        let names = space.params().iter().map(|p| p.name.clone()).collect();
        let mut cache = Cache {
            levels: (0..space.free_from).map(|_| HashMap::new()).collect(),
            rows: 0,
            limit: rows,
            block_work: 1,
        };
        let mins: Vec<i64> = space.params().iter().map(|p| p.values.min()).collect();
        let count = if !space.upfront.iter().all(|(_, pred)| pred(&mins)) {
            0
        } else if space.free_from == 0 {
            space.rest[0]
        } else {
            let (root, total) = make_node(&space, 0, &mins, 1);
            let root = Arc::new(root);
            if root.worth_keeping(1) {
                cache.insert(0, Vec::new(), root);
            }
            total
        };
        ValidSpace {
            space,
            count,
            names,
            cache: Mutex::new(cache),
        }
    }

    pub fn space(&self) -> &Space {
        &self.space
    }

    /// Parameter names in declaration order: the order of a point's values.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// How this space's points hold configurations.
    pub fn codec(&self) -> ndtune_core::Codec {
        self.space.codec()
    }

    pub fn params(&self) -> &[Param] {
        self.space.params()
    }

    /// The declared values of parameter `p` (declaration order).
    pub fn domain(&self, p: usize) -> &Values {
        &self.space.params()[p].values
    }

    /// How many configurations are valid.
    pub fn len(&self) -> u128 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether `point` (declaration order) takes a declared value for every parameter and
    /// satisfies every constraint.
    pub fn contains(&self, point: &[i64]) -> bool {
        self.outside(point).is_none()
    }

    /// Why `point` is not a valid configuration, as a user reads it; `None` where it is one.
    pub fn why_not(&self, point: &[i64]) -> Option<String> {
        let params = self.space.params();
        Some(match self.outside(point)? {
            Outside::Length => {
                format!("{} values for the {} parameters", point.len(), params.len())
            }
            Outside::Domain(p) => format!("`{}` takes none of its declared values", params[p].name),
            Outside::Constraint(c) => {
                format!("it breaks `{}`", self.space.labels()[c])
            }
        })
    }

    /// The first thing that keeps `point` out of the space, in the order the walk checks them.
    fn outside(&self, point: &[i64]) -> Option<Outside> {
        let s = &self.space;
        if point.len() != s.params().len() {
            return Some(Outside::Length);
        }
        if let Some(p) =
            (s.params().iter().zip(point)).position(|(p, &v)| p.values.position(v).is_none())
        {
            return Some(Outside::Domain(p));
        }
        let broken = |(c, pred): &(usize, Pred)| (!pred(point)).then_some(*c);
        s.upfront
            .iter()
            .find_map(broken)
            .or_else(|| {
                s.levels.iter().find_map(|level| {
                    level
                        .cuts
                        .iter()
                        .find(|c| c.halves.iter().any(|h| !(h.pred)(point)))
                        .map(|c| c.constraint)
                        .or_else(|| level.filters.iter().find_map(broken))
                })
            })
            .map(Outside::Constraint)
    }

    /// The valid configuration of rank `rank`, `None` from [`ValidSpace::len`] on.
    pub fn unrank(&self, mut rank: u128) -> Option<Vec<i64>> {
        if rank >= self.count {
            return None;
        }
        let s = &self.space;
        let mut vals = self.mins();
        let mut key = Vec::with_capacity(s.free_from);
        for k in 0..s.free_from {
            let i = match &*self.node(k, &vals, &key) {
                Node::Arithmetic { lo, below } => {
                    let i = lo + (rank / below) as usize;
                    rank %= below;
                    i
                }
                Node::Table(t) => {
                    let j = t.rows.partition_point(|&(_, before)| before <= rank) - 1;
                    let (start, before) = t.rows[j];
                    rank -= before;
                    if t.stride == 1 {
                        start
                    } else {
                        let stop = t.rows.get(j + 1).map_or(t.end, |r| r.0);
                        let mut w = Walk::at(s, vals.clone());
                        let mut found = None;
                        for i in start..stop {
                            let n = count_child(s, k, &mut w, i).0;
                            if rank < n {
                                found = Some(i);
                                break;
                            }
                            rank -= n;
                        }
                        found?
                    }
                }
            };
            let param = s.levels[k].param;
            vals[param] = s.params()[param].values.get(i);
            key.push(vals[param]);
        }
        for k in s.free_from..s.levels.len() {
            let below = s.rest[k + 1];
            let param = s.levels[k].param;
            vals[param] = s.params()[param].values.get((rank / below) as usize);
            rank %= below;
        }
        Some(vals)
    }

    /// The rank of `point`, `None` where it is not valid.
    pub fn rank(&self, point: &[i64]) -> Option<u128> {
        if !self.contains(point) {
            return None;
        }
        let s = &self.space;
        let mut vals = self.mins();
        let mut key = Vec::with_capacity(s.free_from);
        let mut rank = 0u128;
        for k in 0..s.free_from {
            let param = s.levels[k].param;
            let index = s.params()[param].values.position(point[param])?;
            rank += match &*self.node(k, &vals, &key) {
                Node::Arithmetic { lo, below } => index.checked_sub(*lo)? as u128 * below,
                Node::Table(t) => {
                    let j = t.rows.partition_point(|&(start, _)| start <= index);
                    let (start, before) = t.rows[j.checked_sub(1)?];
                    if t.stride == 1 && start != index {
                        return None;
                    }
                    let mut w = Walk::at(s, vals.clone());
                    before
                        + (start..index)
                            .map(|i| count_child(s, k, &mut w, i).0)
                            .sum::<u128>()
                }
            };
            vals[param] = point[param];
            key.push(point[param]);
        }
        for k in s.free_from..s.levels.len() {
            let param = s.levels[k].param;
            let index = s.params()[param].values.position(point[param])?;
            rank += index as u128 * s.rest[k + 1];
        }
        Some(rank)
    }

    /// The valid configurations from rank `from` on, in order, one at a time.
    pub fn iter_from(&self, from: u128) -> impl Iterator<Item = Vec<i64>> + '_ {
        (from..self.count).map_while(|r| self.unrank(r))
    }

    fn mins(&self) -> Vec<i64> {
        self.space.params().iter().map(|p| p.values.min()).collect()
    }

    /// The node at level `k` whose levels above hold `vals` (`key`: those values in level
    /// order): from the cache, or made (and kept where that is worth it).
    fn node(&self, k: usize, vals: &[i64], key: &[i64]) -> Arc<Node> {
        let s = &self.space;
        let arithmetic = s.levels[k].filters.is_empty() && k + 1 == s.free_from;
        let block_work = {
            let cache = self.lock();
            if let Some(n) = (!arithmetic).then(|| cache.levels[k].get(key)).flatten() {
                return Arc::clone(n);
            }
            cache.block_work
        };
        let node = Arc::new(make_node(s, k, vals, block_work).0);
        if node.worth_keeping(block_work) {
            self.lock().insert(k, key.to_vec(), Arc::clone(&node));
        }
        node
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A panic elsewhere cannot leave the cache inconsistent: nodes are inserted whole.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The node at level `k` under the prefix in `vals`, and how many valid configurations lie
/// below it; a table's lookups redo about `block_work` counting.
fn make_node(s: &Space, k: usize, vals: &[i64], block_work: u64) -> (Node, u128) {
    let level = &s.levels[k];
    let below = s.rest[k + 1];
    let mut w = Walk::at(s, vals.to_vec());
    let Ok((lo, hi)) = s.interval(k, &mut w) else {
        let empty = Table {
            rows: Vec::new(),
            end: 0,
            stride: 1,
            work: 1,
        };
        return (Node::Table(empty), 0);
    };
    if level.filters.is_empty() && k + 1 == s.free_from {
        return (Node::Arithmetic { lo, below }, (hi - lo) as u128 * below);
    }
    let mut children = Vec::new();
    let mut total = 0u128;
    let mut work = 0u64;
    for i in lo..hi {
        let (n, emptied, calls) = count_child(s, k, &mut w, i);
        work += 1 + calls;
        if n > 0 {
            children.push((i, total));
            total += n;
        }
        if emptied && level.stop_on_empty_child {
            break;
        }
    }
    let end = children.last().map_or(lo, |c| c.0 + 1);
    let per_child = (work / children.len().max(1) as u64).max(1);
    let stride = (block_work / per_child).clamp(1, MAX_STRIDE) as usize;
    let rows = children.into_iter().step_by(stride).collect();
    let table = Table {
        rows,
        end,
        stride,
        work,
    };
    (Node::Table(table), total)
}

/// Child `i` (a domain index) of the node at level `k` whose prefix `w` holds: its valid
/// configurations, whether the cuts of the level below emptied its interval, and the counting
/// that took.
fn count_child(s: &Space, k: usize, w: &mut Walk, i: usize) -> (u128, bool, u64) {
    let level = &s.levels[k];
    w.vals[level.param] = s.params()[level.param].values.get(i);
    if !s.passes_filters(level, s.rest[k + 1], w) {
        return (0, false, 0);
    }
    let mut counter = Counter::default();
    let emptied = match s.descend(k + 1, w, &mut counter) {
        ControlFlow::Continue(e) => e.is_some(),
        ControlFlow::Break(()) => false,
    };
    (counter.count, emptied, counter.calls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::resolve::{resolve, Scope, Type};
    use crate::space::Constraint;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn space(params: &[(&str, Values)], constraints: &[String]) -> ValidSpace {
        space_with_cache(params, constraints, CACHE_ROWS)
    }

    fn space_with_cache(
        params: &[(&str, Values)],
        constraints: &[String],
        rows: usize,
    ) -> ValidSpace {
        let scope = Scope {
            params: params.iter().map(|p| p.0.to_string()).collect(),
            ..Scope::default()
        };
        let cons = constraints
            .iter()
            .map(|s| Constraint {
                label: s.clone(),
                node: resolve(&Expr::parse(s).unwrap(), s, &scope, Type::Bool).unwrap(),
            })
            .collect();
        let ps = params
            .iter()
            .map(|(n, v)| Param::ints(n.to_string(), v.clone()))
            .collect();
        ValidSpace::with_cache_rows(Space::new(ps, cons), rows)
    }

    fn arith(start: i64, step: i64, len: u64) -> Values {
        Values::Arith { start, step, len }
    }

    /// Small spaces with coupled constraints of the shapes the pruner cuts (products, bounds,
    /// intervals) and filters (modulo), plus a free parameter.
    fn small_space() -> impl Strategy<Value = ValidSpace> {
        (
            1i64..40,
            1i64..40,
            1i64..300,
            0i64..3,
            prop::sample::subsequence(vec![0usize, 1, 2, 3, 4], 0..=5),
        )
            .prop_map(|(a, b, p, m, picked)| {
                let all = [
                    format!("X * Y <= {p}"),
                    format!("Y >= X - {m}"),
                    format!("X % 2 == {}", m % 2),
                    format!("Z * 4 <= X * Y && X * Y < (Z + 1) * 4 + {a}"),
                    format!("X + Z >= {b}"),
                ];
                let cons: Vec<String> = picked.into_iter().map(|i| all[i].clone()).collect();
                space(
                    &[
                        ("X", arith(1, 1, a as u64)),
                        ("Y", Values::Explicit(vec![1, 2, 4, 8, 16, 32])),
                        ("Z", arith(0, 3, b as u64)),
                        ("F", Values::Explicit(vec![-1, 5])),
                    ],
                    &cons,
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Unrank lists exactly the enumeration, in its order; rank inverts it; so a uniform
        /// rank is a uniform valid configuration.
        #[test]
        fn ranks_match_the_enumeration(s in small_space()) {
            let listed = s.space().configs();
            prop_assert_eq!(s.len(), listed.len() as u128);
            let unranked: Vec<_> = s.iter_from(0).collect();
            prop_assert_eq!(&unranked, &listed);
            for (r, c) in listed.iter().enumerate() {
                prop_assert_eq!(s.rank(c), Some(r as u128));
                prop_assert!(s.contains(c));
            }
            prop_assert_eq!(s.unrank(s.len()), None);
        }

        /// Membership agrees with the enumeration on every declared configuration.
        #[test]
        fn membership_matches_the_enumeration(s in small_space()) {
            let listed: HashSet<Vec<i64>> = s.space().configs().into_iter().collect();
            let ps = s.params();
            for x in ps[0].values.iter() {
                for y in ps[1].values.iter() {
                    for z in ps[2].values.iter() {
                        for f in ps[3].values.iter() {
                            let c = vec![x, y, z, f];
                            prop_assert_eq!(s.contains(&c), listed.contains(&c));
                            prop_assert_eq!(s.rank(&c).is_some(), listed.contains(&c));
                        }
                    }
                }
            }
            prop_assert!(!s.contains(&[1, 3, 0, 5]), "3 is not a declared value of Y");
            prop_assert!(!s.contains(&[1, 1, 0]), "a value short");
        }
    }

    #[test]
    fn huge_ranges_are_indexed_without_listing() {
        // bench/spaces/huge-ranges.toml: 10^21 declared, 3,468,065 valid.
        let s = space(
            &[
                ("X", arith(1, 1, 1_000_000)),
                ("Y", arith(1, 1, 1_000_000_000)),
                ("Z", arith(1, 1, 1_000_000)),
            ],
            &[
                "X * Y <= 10000000".into(),
                "Y >= X".into(),
                "Y <= 2 * X".into(),
                "Z * 1000 <= X * Y && X * Y < (Z + 1) * 1000".into(),
            ],
        );
        assert_eq!(s.len(), 3_468_065);
        let spread = (0..40u128).map(|i| i * 86_701 + 13);
        for r in [0, 1, 1_000_000, 3_468_064].into_iter().chain(spread) {
            let c = s.unrank(r).unwrap();
            assert!(s.contains(&c), "{c:?}");
            assert_eq!(s.rank(&c), Some(r));
        }
        let first: Vec<_> = s.iter_from(0).take(3).collect();
        assert_eq!(first.len(), 3);
        assert_eq!(Some(first[0].clone()), s.space().configs_first());
        assert_eq!(s.unrank(3_468_065), None);
    }

    #[test]
    fn a_small_cache_drops_deep_tables_first_and_ranks_stay_exact() {
        let params = [
            ("X", arith(1, 1, 300)),
            ("Y", arith(1, 1, 300)),
            ("Z", arith(0, 1, 50)),
        ];
        let cons: Vec<String> = ["Y <= X", "Z <= Y", "(X + Y + Z) % 3 != 1"]
            .map(String::from)
            .into();
        let roomy = space(&params, &cons);
        let limit = 2000;
        let small = space_with_cache(&params, &cons, limit);
        assert_eq!(small.len(), roomy.len());
        let root_rows = small.lock().rows;
        assert!(root_rows > 0, "the root's table is kept from the count");
        let mut dropped = false;
        let mut last = 0;
        for r in (0..small.len()).step_by(97) {
            let c = small.unrank(r).unwrap();
            assert_eq!(Some(&c), roomy.unrank(r).as_ref());
            assert_eq!(small.rank(&c), Some(r));
            let cache = small.lock();
            assert!(cache.rows <= limit);
            assert!(cache.levels[0].contains_key(&[][..]), "the root stays");
            dropped |= cache.rows < last;
            last = cache.rows;
        }
        assert!(
            dropped,
            "the deeper tables outgrow {limit} rows and are dropped"
        );
        assert!(
            small.lock().block_work > 1,
            "tables made after a drop are blocked"
        );
    }
}
