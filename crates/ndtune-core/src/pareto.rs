//! Pareto fronts of points that minimise several objectives at once, and the hypervolume they
//! cover.
//!
//! Every function here takes points whose coordinates are all *minimised* (an objective where
//! higher is better enters negated, or as a cost such as its reciprocal: any strictly
//! decreasing map keeps who dominates whom). A point dominates another when it is no worse in
//! every coordinate and better in one; the front is the set of points nothing dominates.
//!
//! The hypervolume of a set is the measure of the region that its points dominate and that
//! dominates the reference point (the region every point of the set "covers" up to the
//! reference): the standard measure of a front's quality (Zitzler and Thiele, 1998), exact here
//! for any number of objectives by slicing along the last coordinate (fast for the two or three
//! objectives of a tuning campaign).
//!
//! ```
//! use ndtune_core::pareto::{front, hypervolume};
//! let points = vec![vec![1.0, 4.0], vec![2.0, 2.0], vec![3.0, 3.0], vec![4.0, 1.0]];
//! assert_eq!(front(&points), vec![0, 1, 3]); // (3, 3) is dominated by (2, 2)
//! // Against (5, 5), the staircase of the front: (2-1)x(5-4) + (4-2)x(5-2) + (5-4)x(5-1).
//! assert_eq!(hypervolume(&points, &[5.0, 5.0]), 1.0 + 6.0 + 4.0);
//! ```

/// Whether `a` dominates `b`: no worse in every coordinate and better in at least one.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    let mut better = false;
    for (x, y) in a.iter().zip(b) {
        if x > y {
            return false;
        }
        better |= x < y;
    }
    better
}

/// The indices of the non-dominated points, in the order given. Of points equal in every
/// coordinate only the first is kept; a point with a coordinate that is not finite is never on
/// the front.
pub fn front(points: &[Vec<f64>]) -> Vec<usize> {
    let finite = |p: &[f64]| p.iter().all(|x| x.is_finite());
    (0..points.len())
        .filter(|&i| {
            let p = &points[i];
            finite(p)
                && !points
                    .iter()
                    .enumerate()
                    .any(|(j, q)| finite(q) && (dominates(q, p) || (j < i && q == p)))
        })
        .collect()
}

/// The fronts of successive non-dominated sorting (NSGA-II's ranks): the first is [`front`],
/// each next one the front of what is left. Points with a coordinate that is not finite form
/// the last rank.
pub fn ranks(points: &[Vec<f64>]) -> Vec<Vec<usize>> {
    let n = points.len();
    let finite: Vec<bool> = points
        .iter()
        .map(|p| p.iter().all(|x| x.is_finite()))
        .collect();
    let mut dominated_by = vec![0usize; n];
    let mut dominating: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in 0..n {
            if i != j && finite[i] && finite[j] && dominates(&points[i], &points[j]) {
                dominating[i].push(j);
                dominated_by[j] += 1;
            }
        }
    }
    let mut out = Vec::new();
    let mut current: Vec<usize> = (0..n)
        .filter(|&i| finite[i] && dominated_by[i] == 0)
        .collect();
    while !current.is_empty() {
        let mut next = Vec::new();
        for &i in &current {
            for &j in &dominating[i] {
                dominated_by[j] -= 1;
                if dominated_by[j] == 0 {
                    next.push(j);
                }
            }
        }
        next.sort_unstable();
        out.push(std::mem::replace(&mut current, next));
    }
    let failed: Vec<usize> = (0..n).filter(|&i| !finite[i]).collect();
    if !failed.is_empty() {
        out.push(failed);
    }
    out
}

/// NSGA-II's crowding distance of each point of one front (`members`, indices into `points`):
/// the sum over coordinates of the normalised gap between its neighbours on that coordinate;
/// the extremes of each coordinate get infinity, so they are always kept.
pub fn crowding(points: &[Vec<f64>], members: &[usize]) -> Vec<f64> {
    let mut distance = vec![0.0; members.len()];
    let Some(dims) = members.first().map(|&i| points[i].len()) else {
        return distance;
    };
    // `d` is a coordinate of every member, not an index into `points` (clippy misreads it).
    #[allow(clippy::needless_range_loop)]
    for d in 0..dims {
        let coordinate = |i: usize| points[members[i]][d];
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by(|&a, &b| coordinate(a).total_cmp(&coordinate(b)));
        let (lo, hi) = (
            coordinate(order[0]),
            coordinate(*order.last().expect("not empty")),
        );
        distance[order[0]] = f64::INFINITY;
        distance[*order.last().expect("not empty")] = f64::INFINITY;
        if hi > lo {
            for w in order.windows(3) {
                distance[w[1]] += (coordinate(w[2]) - coordinate(w[0])) / (hi - lo);
            }
        }
    }
    distance
}

/// The hypervolume that `points` cover up to `reference` (see the module's header). Points that
/// do not dominate the reference strictly in every coordinate add nothing.
pub fn hypervolume(points: &[Vec<f64>], reference: &[f64]) -> f64 {
    let inside: Vec<&[f64]> = points
        .iter()
        .map(Vec::as_slice)
        .filter(|p| p.len() == reference.len() && p.iter().zip(reference).all(|(x, r)| x < r))
        .collect();
    covered(inside, reference)
}

fn covered(mut points: Vec<&[f64]>, reference: &[f64]) -> f64 {
    let d = reference.len();
    if points.is_empty() || d == 0 {
        return 0.0;
    }
    if d == 1 {
        let best = points.iter().map(|p| p[0]).fold(f64::INFINITY, f64::min);
        return reference[0] - best;
    }
    if d == 2 {
        // Sorted by the first coordinate, the front is a staircase: each of its points covers
        // the box from itself to the next one's first coordinate.
        points.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
        let mut stair: Vec<&[f64]> = Vec::new();
        for p in &points {
            if stair.last().is_none_or(|s| p[1] < s[1]) {
                stair.push(p);
            }
        }
        let mut volume = 0.0;
        for (k, p) in stair.iter().enumerate() {
            let right = stair.get(k + 1).map_or(reference[0], |q| q[0]);
            volume += (right - p[0]) * (reference[1] - p[1]);
        }
        return volume;
    }
    // Slice along the last coordinate: between successive values of it, the points at or
    // below cover the (d-1)-dimensional hypervolume of their first d-1 coordinates.
    points.sort_by(|a, b| a[d - 1].total_cmp(&b[d - 1]));
    let mut volume = 0.0;
    for k in 0..points.len() {
        let top = points.get(k + 1).map_or(reference[d - 1], |q| q[d - 1]);
        let depth = top - points[k][d - 1];
        if depth > 0.0 {
            let slice: Vec<&[f64]> = points[..=k].iter().map(|p| &p[..d - 1]).collect();
            volume += depth * covered(slice, &reference[..d - 1]);
        }
    }
    volume
}

/// A reference point for the hypervolume of points drawn from `all` (every point measured, or a
/// whole recording): in each coordinate the worst value of `all` plus a tenth of its range (of
/// its magnitude where all values are equal, 1 where that is 0), so that the extremes of the
/// front count too. `None` where `all` has no point with finite coordinates.
pub fn reference_point(all: &[Vec<f64>]) -> Option<Vec<f64>> {
    let finite: Vec<&Vec<f64>> = all
        .iter()
        .filter(|p| p.iter().all(|x| x.is_finite()))
        .collect();
    let dims = finite.first()?.len();
    Some(
        (0..dims)
            .map(|d| {
                let (lo, hi) = finite
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                        (lo.min(p[d]), hi.max(p[d]))
                    });
                let margin = if hi > lo {
                    0.1 * (hi - lo)
                } else if hi != 0.0 {
                    0.1 * hi.abs()
                } else {
                    1.0
                };
                hi + margin
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hypervolume by counting unit cells of a grid: the slow, obvious definition.
    fn by_cells(points: &[Vec<f64>], reference: &[f64]) -> f64 {
        let d = reference.len();
        let r: Vec<i64> = reference.iter().map(|&x| x as i64).collect();
        let mut count = 0;
        let mut cell = vec![0i64; d];
        loop {
            // The cell [cell, cell + 1) is covered if a point is <= its lower corner.
            if points
                .iter()
                .any(|p| p.iter().zip(&cell).all(|(x, c)| *x <= *c as f64))
            {
                count += 1;
            }
            let mut k = 0;
            loop {
                if k == d {
                    return count as f64;
                }
                cell[k] += 1;
                if cell[k] < r[k] {
                    break;
                }
                cell[k] = 0;
                k += 1;
            }
        }
    }

    #[test]
    fn hypervolume_matches_counting_cells_in_two_three_and_four_dimensions() {
        let mut state = 7u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % m) as f64
        };
        for d in 2..=4 {
            for _ in 0..20 {
                let n = 1 + next(7) as usize;
                let points: Vec<Vec<f64>> =
                    (0..n).map(|_| (0..d).map(|_| next(6)).collect()).collect();
                let reference = vec![6.0; d];
                assert_eq!(
                    hypervolume(&points, &reference),
                    by_cells(&points, &reference),
                    "{points:?}"
                );
            }
        }
    }

    #[test]
    fn the_front_keeps_the_non_dominated_and_the_first_of_equals() {
        let points = vec![
            vec![2.0, 2.0],
            vec![1.0, 3.0],
            vec![2.0, 2.0],
            vec![3.0, 3.0],
            vec![f64::INFINITY, 0.0],
            vec![3.0, 1.0],
        ];
        assert_eq!(front(&points), vec![0, 1, 5]);
        // Sorting ranks equal points alike.
        assert_eq!(ranks(&points), vec![vec![0, 1, 2, 5], vec![3], vec![4]]);
        assert!(dominates(&[1.0, 2.0], &[1.0, 3.0]));
        assert!(!dominates(&[1.0, 2.0], &[1.0, 2.0]));
    }

    #[test]
    fn crowding_keeps_the_extremes_and_ranks_the_lonely_higher() {
        let points = vec![
            vec![0.0, 4.0],
            vec![1.0, 3.0],
            vec![1.5, 2.5],
            vec![4.0, 0.0],
        ];
        let d = crowding(&points, &[0, 1, 2, 3]);
        assert!(d[0].is_infinite() && d[3].is_infinite());
        // (1, 3) sits between (0, 4) and (1.5, 2.5); (1.5, 2.5) between (1, 3) and (4, 0).
        assert!(d[2] > d[1], "{d:?}");
    }

    #[test]
    fn the_reference_lies_a_tenth_of_the_range_beyond_the_worst() {
        let all = vec![vec![1.0, -5.0], vec![3.0, -1.0], vec![f64::INFINITY, 0.0]];
        assert_eq!(reference_point(&all), Some(vec![3.2, -0.6]));
        assert_eq!(reference_point(&[vec![2.0]]), Some(vec![2.2]));
        assert_eq!(reference_point(&[]), None);
    }
}
