//! The space a strategy searches, as a trait: a listed [`Candidates`] (replay) or a lazy
//! [`ValidSpace`] (any pruned space, never listed). Also what every strategy draws from it:
//! neighbourhoods and random points without replacement.

use crate::{Candidates, Point};
use ndtune_space::lazy::ValidSpace;
use rand::seq::SliceRandom;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

/// The valid points of a space, indexed: a strategy proposes only points it [`contains`].
///
/// Points hold one value per name; each parameter has a sorted domain, and a point's values lie
/// in the domains. Ranks `0..len()` number the valid points in the space's own order.
///
/// [`contains`]: SearchSpace::contains
pub trait SearchSpace {
    fn names(&self) -> &[String];
    /// How many valid points there are.
    fn len(&self) -> u128;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn contains(&self, point: &[i64]) -> bool;
    /// The valid point of rank `rank`, `None` from `len()` on.
    fn nth(&self, rank: u128) -> Option<Point>;
    /// How many values parameter `p`'s domain has.
    fn domain_len(&self, p: usize) -> usize;
    /// Value `i` of parameter `p`'s domain (ascending).
    fn domain_value(&self, p: usize, i: usize) -> i64;
    /// Where `v` lies in parameter `p`'s domain.
    fn domain_index(&self, p: usize, v: i64) -> Option<usize>;
}

impl SearchSpace for Candidates {
    fn names(&self) -> &[String] {
        Candidates::names(self)
    }
    fn len(&self) -> u128 {
        Candidates::len(self) as u128
    }
    fn contains(&self, point: &[i64]) -> bool {
        Candidates::contains(self, point)
    }
    fn nth(&self, rank: u128) -> Option<Point> {
        usize::try_from(rank)
            .ok()
            .and_then(|r| self.points().get(r))
            .cloned()
    }
    fn domain_len(&self, p: usize) -> usize {
        self.domains()[p].len()
    }
    fn domain_value(&self, p: usize, i: usize) -> i64 {
        self.domains()[p][i]
    }
    fn domain_index(&self, p: usize, v: i64) -> Option<usize> {
        self.domains()[p].binary_search(&v).ok()
    }
}

impl SearchSpace for ValidSpace {
    fn names(&self) -> &[String] {
        ValidSpace::names(self)
    }
    fn len(&self) -> u128 {
        ValidSpace::len(self)
    }
    fn contains(&self, point: &[i64]) -> bool {
        ValidSpace::contains(self, point)
    }
    fn nth(&self, rank: u128) -> Option<Point> {
        self.unrank(rank)
    }
    fn domain_len(&self, p: usize) -> usize {
        self.domain(p).len()
    }
    fn domain_value(&self, p: usize, i: usize) -> i64 {
        self.domain(p).get(i)
    }
    fn domain_index(&self, p: usize, v: i64) -> Option<usize> {
        self.domain(p).position(v)
    }
}

/// Which points are next to a point (Kernel Tuner's neighbourhoods).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbourhood {
    /// One parameter changed to any other value that gives a valid point.
    Hamming,
    /// One parameter moved to the nearest value, down or up its sorted domain, that gives a valid
    /// point: the next value where the constraints allow it, else a jump over the gap they cut.
    Adjacent,
}

/// How far along a domain, from the current value, neighbours are looked for: a parameter with
/// a million values has at most this many Hamming neighbours, the closest ones.
pub const SCAN: usize = 256;

/// The valid neighbours of `point`, parameter by parameter, lower values first.
pub fn neighbours(space: &dyn SearchSpace, point: &[i64], kind: Neighbourhood) -> Vec<Point> {
    let mut probe = point.to_vec();
    let mut found = Vec::new();
    for p in 0..point.len() {
        let Some(at) = space.domain_index(p, point[p]) else {
            continue;
        };
        let len = space.domain_len(p);
        let down = (at.saturating_sub(SCAN)..at).rev();
        let up = at + 1..len.min(at + 1 + SCAN);
        let mut valid = |i: usize| {
            probe[p] = space.domain_value(p, i);
            space.contains(&probe).then(|| probe.clone())
        };
        match kind {
            Neighbourhood::Adjacent => {
                found.extend(down.clone().find_map(&mut valid));
                found.extend(up.clone().find_map(&mut valid));
            }
            Neighbourhood::Hamming => {
                let half = SCAN / 2;
                let lo = at.saturating_sub(half);
                let hi = len.min(at + 1 + half);
                found.extend((lo..hi).filter(|&i| i != at).filter_map(&mut valid));
            }
        }
        probe[p] = point[p];
    }
    found
}

/// Ranks drawn uniformly without replacement: each rank at most once, every rank eventually.
/// Spaces of up to [`DENSE`] points are shuffled once; larger ones are drawn by rejection, with
/// memory for the ranks drawn only.
pub struct Draws {
    len: u128,
    shuffled: Option<Vec<u128>>,
    drawn: HashSet<u128>,
}

/// The largest space [`Draws`] shuffles whole (16 bytes a point).
pub const DENSE: u128 = 1 << 18;

impl Draws {
    pub fn new(len: u128, rng: &mut ChaCha8Rng) -> Draws {
        let shuffled = (len <= DENSE).then(|| {
            let mut all: Vec<u128> = (0..len).collect();
            all.shuffle(rng);
            all
        });
        Draws {
            len,
            shuffled,
            drawn: HashSet::new(),
        }
    }

    /// A rank not drawn before; `None` once all are.
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> Option<u128> {
        if let Some(all) = &mut self.shuffled {
            return all.pop();
        }
        if self.drawn.len() as u128 >= self.len {
            return None;
        }
        loop {
            let r = rng.random_range(0..self.len);
            if self.drawn.insert(r) {
                return Some(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn grid_without_two() -> Candidates {
        // A 4x4 grid without (1, 1) and (2, 1).
        let points = (0..4)
            .flat_map(|x| (0..4).map(move |y| vec![x, y]))
            .filter(|p| !(p[1] == 1 && (p[0] == 1 || p[0] == 2)))
            .collect();
        Candidates::new(vec!["X".into(), "Y".into()], points).unwrap()
    }

    #[test]
    fn adjacent_neighbours_step_one_value_and_jump_gaps_the_constraints_cut() {
        let space = grid_without_two();
        let of = |p: &[i64]| {
            let mut n = neighbours(&space, p, Neighbourhood::Adjacent);
            n.sort();
            n
        };
        assert_eq!(of(&[0, 0]), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(of(&[0, 1]), vec![vec![0, 0], vec![0, 2], vec![3, 1]]);
        assert_eq!(of(&[1, 0]), vec![vec![0, 0], vec![1, 2], vec![2, 0]]);
    }

    #[test]
    fn hamming_neighbours_change_one_parameter_to_any_valid_value() {
        let space = grid_without_two();
        let mut n = neighbours(&space, &[0, 1], Neighbourhood::Hamming);
        n.sort();
        assert_eq!(
            n,
            vec![vec![0, 0], vec![0, 2], vec![0, 3], vec![3, 1]],
            "(1, 1) and (2, 1) are not in the space"
        );
    }

    #[test]
    fn draws_give_every_rank_once() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for len in [0u128, 1, 7, DENSE + 5] {
            let mut draws = Draws::new(len, &mut rng);
            let mut got: Vec<u128> = std::iter::from_fn(|| draws.next(&mut rng)).collect();
            got.sort_unstable();
            assert_eq!(got, (0..len).collect::<Vec<_>>());
        }
    }
}
