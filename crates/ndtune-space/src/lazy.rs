//! The valid configurations of a pruned [`Space`] as an indexed set that is never listed:
//! count, membership, rank and unrank (so a uniform random valid configuration is the unrank of
//! a uniform random rank) and lazy iteration in order.
//!
//! The order is the pruner's: its evaluation order of the parameters (outermost first, see
//! [`Space::order`]), each parameter's values ascending. Unranking descends the pruner's tree: at
//! each constrained level it needs, for the node it stands on, how many valid configurations lie
//! below each child. Those come from the pruner's own counting walk over the node's subtree (the
//! cuts, galloping searches and bulk counts that make counting fast) and are kept in a cache of
//! bounded size, so the first draw costs about one count of the space and later ones a few
//! lookups per level. The unconstrained parameters the pruner puts last are mixed-radix digits.
//!
//! Memory: the cache holds at most [`CACHE_ENTRIES`] children in all and is emptied when full; one
//! node's children (the values of one parameter that lead to valid configurations under one
//! prefix) are held while they are used, so a parameter with 10^9 values that are all reachable
//! under one prefix, followed by constrained ones, would need that much.

use crate::domain::Values;
use crate::space::{Counter, Param, Space, Walk};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most children the cache holds (32 bytes each: 16 MiB).
pub const CACHE_ENTRIES: usize = 1 << 19;

/// One node's children: (index in the level's domain, valid configurations below this child and
/// every earlier one), children without valid configurations left out.
type Children = Arc<[(usize, u128)]>;

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

#[derive(Default)]
struct Cache {
    /// Keyed by the values of the levels above the node, in level order.
    nodes: HashMap<Vec<i64>, Children>,
    entries: usize,
}

impl ValidSpace {
    /// Counts `space` once; everything after that is lazy.
    pub fn new(space: Space) -> ValidSpace {
        let count = space.count();
        let names = space.params().iter().map(|p| p.name.clone()).collect();
        ValidSpace {
            space,
            count,
            names,
            cache: Mutex::new(Cache::default()),
        }
    }

    pub fn space(&self) -> &Space {
        &self.space
    }

    /// Parameter names in declaration order: the order of a point's values.
    pub fn names(&self) -> &[String] {
        &self.names
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
        let s = &self.space;
        point.len() == s.params().len()
            && s.params()
                .iter()
                .zip(point)
                .all(|(p, &v)| p.values.position(v).is_some())
            && s.upfront.iter().all(|(_, pred)| pred(point))
            && s.levels.iter().all(|level| {
                level
                    .cuts
                    .iter()
                    .flat_map(|c| &c.halves)
                    .all(|h| (h.pred)(point))
                    && level.filters.iter().all(|(_, pred)| pred(point))
            })
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
            let children = self.children(k, &vals, &key);
            let j = children.partition_point(|&(_, cum)| cum <= rank);
            rank -= if j == 0 { 0 } else { children[j - 1].1 };
            let param = s.levels[k].param;
            vals[param] = s.params()[param].values.get(children[j].0);
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
            let children = self.children(k, &vals, &key);
            let j = children.binary_search_by_key(&index, |&(i, _)| i).ok()?;
            rank += if j == 0 { 0 } else { children[j - 1].1 };
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

    /// The children of the node at level `k` whose levels above hold `vals` (`key`: those values
    /// in level order).
    fn children(&self, k: usize, vals: &[i64], key: &[i64]) -> Children {
        if let Some(c) = self.lock().nodes.get(key) {
            return Arc::clone(c);
        }
        let s = &self.space;
        let level = &s.levels[k];
        let dom = &s.params()[level.param].values;
        let below = s.rest[k + 1];
        let mut w = Walk::at(s, vals.to_vec());
        let mut out = Vec::new();
        let mut total = 0u128;
        if let Ok((lo, hi)) = s.interval(k, &mut w) {
            for i in lo..hi {
                w.vals[level.param] = dom.get(i);
                if !s.passes_filters(level, below, &mut w) {
                    continue;
                }
                let mut counter = Counter { count: 0 };
                let emptied = match s.descend(k + 1, &mut w, &mut counter) {
                    std::ops::ControlFlow::Continue(e) => e,
                    std::ops::ControlFlow::Break(()) => None,
                };
                if counter.count > 0 {
                    total += counter.count;
                    out.push((i, total));
                }
                if emptied.is_some() && level.stop_on_empty_child {
                    break;
                }
            }
        }
        let children: Children = out.into();
        let mut cache = self.lock();
        if cache.entries + children.len() > CACHE_ENTRIES {
            cache.nodes.clear();
            cache.entries = 0;
        }
        if children.len() <= CACHE_ENTRIES {
            cache.entries += children.len();
            cache.nodes.insert(key.to_vec(), Arc::clone(&children));
        }
        children
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A panic elsewhere cannot leave the cache inconsistent: entries are inserted whole.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
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
            .map(|(n, v)| Param {
                name: n.to_string(),
                values: v.clone(),
            })
            .collect();
        ValidSpace::new(Space::new(ps, cons))
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
        for r in [0, 1, 1_000_000, 3_468_064] {
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
    fn the_cache_is_emptied_rather_than_grown_past_its_bound() {
        let s = space(
            &[
                ("X", arith(1, 1, 2000)),
                ("Y", arith(1, 1, 2000)),
                ("Z", arith(0, 1, 600)),
            ],
            &["Y <= X".into(), "Z <= Y".into()],
        );
        // X, then Y under each X: 2000 + sum(1..=2000) children once all are visited.
        let step = (s.len() / 3000) as usize;
        for r in (0..s.len()).step_by(step) {
            assert!(s.unrank(r).is_some());
            assert!(s.lock().entries <= CACHE_ENTRIES);
        }
    }
}
