//! The planner (pure): split factors from speeds (eq. 4), the integer partition that keeps each
//! device's own work-group size (eq. 5-9, or the rounding that finishes first), and the
//! theoretical time of Algorithm 1.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How each device's share is rounded to whole work-groups of its own size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Residue {
    /// The rounding of every device's group count whose predicted finish time (Algorithm 1,
    /// `max_i size_i·t_i / G`) is least; on a tie, the one that computes the fewest items twice.
    #[default]
    Finish,
    /// Erdem et al. eq. 6-9: every share rounded down, the residue to the device that covers it
    /// with the least extra work (the first on a tie), whatever that does to the finish time.
    Paper,
}

impl Residue {
    /// The rule this one is compared with.
    pub fn other(self) -> Self {
        match self {
            Residue::Finish => Residue::Paper,
            Residue::Paper => Residue::Finish,
        }
    }

    /// The rule plans stored before there was a choice were made with.
    fn stored_default() -> Self {
        Residue::Paper
    }
}

impl fmt::Display for Residue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Residue::Finish => "finish",
            Residue::Paper => "paper",
        })
    }
}

impl FromStr for Residue {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "finish" => Ok(Residue::Finish),
            "paper" => Ok(Residue::Paper),
            _ => Err(format!(
                "`{s}`: the residue rule is `finish` (least predicted time) or `paper` (eq. 9)"
            )),
        }
    }
}

/// What the planner knows of one device: its best work-group size along the split dimension and
/// its best time for the whole range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Device {
    pub wg: u64,
    pub time_ms: f64,
}

/// One device's contiguous partition `[offset, offset + size)` of the split dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub device: usize,
    pub offset: u64,
    pub size: u64,
    pub work_groups: u64,
    /// `size / G`: the adjusted split factor (Table 3, "Adjusted").
    pub factor: f64,
    /// `S_i` of eq. 4 (Table 3, "Optimal").
    pub optimal_factor: f64,
}

impl Part {
    /// Items `[offset, offset + size)` to `device`, not from a plan (factors and group count 0).
    pub fn range(device: usize, offset: u64, size: u64) -> Part {
        Part {
            device,
            offset,
            size,
            work_groups: 0,
            factor: 0.0,
            optimal_factor: 0.0,
        }
    }
}

/// A split of `global` items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub global: u64,
    /// Devices in the order of `plan`'s input; a device whose share is less than one of its
    /// work-groups has no part.
    #[serde(rename = "plan")]
    pub parts: Vec<Part>,
    /// Algorithm 1 on the adjusted factors: `max_i factor_i * t_i`, the best the plan can do.
    pub theoretical_ms: f64,
    /// `1 / Σ speed_i`: the time with the optimal (unrounded) factors.
    pub ideal_ms: f64,
    /// Items computed by two devices (where work-group sizes are not multiples of each other).
    pub overlap: u64,
    /// The rounding rule that made this plan.
    #[serde(default = "Residue::stored_default")]
    pub residue: Residue,
}

/// Why no plan can be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("no device to split across")]
    NoDevice,
    #[error("device {device}: time {time_ms} ms is not a positive number")]
    BadTime { device: usize, time_ms: f64 },
    #[error("device {device}: the work-group size is 0")]
    ZeroWorkGroup { device: usize },
    #[error("the global size {global} is smaller than every device's work-group ({smallest} at least): nothing to split")]
    TooSmall { global: u64, smallest: u64 },
    #[error("device {device}: its work-group of {wg} does not divide the global size {global} (eq. 2 holds for every tuned configuration)")]
    NotDivisible { device: usize, wg: u64, global: u64 },
    #[error("split factors {factors:?}: one per device, each in [0, 1], summing to 1")]
    BadFactors { factors: Vec<f64> },
}

/// Split factors of eq. 4: each device's speed (1 / time) over the sum of speeds.
pub fn optimal_factors(devices: &[Device]) -> Vec<f64> {
    let total: f64 = devices.iter().map(|d| 1.0 / d.time_ms).sum();
    devices.iter().map(|d| (1.0 / d.time_ms) / total).collect()
}

/// Plans the split of `global` items across `devices` with the default rounding
/// ([`Residue::Finish`]): eq. 4's factors, then whole work-groups that finish first.
pub fn plan(global: u64, devices: &[Device]) -> Result<Plan, PlanError> {
    plan_with(global, devices, Residue::default())
}

/// Plans the split of `global` items across `devices` (eq. 4-8, Algorithm 1) with the given
/// rounding rule.
pub fn plan_with(global: u64, devices: &[Device], residue: Residue) -> Result<Plan, PlanError> {
    check(global, devices)?;
    let optimal = optimal_factors(devices);
    match residue {
        Residue::Paper => partition(global, devices, &optimal),
        Residue::Finish => {
            let groups = finish_first(global, devices, round_down(global, devices, &optimal));
            let last = (0..devices.len()).rev().find(|&i| groups[i] > 0);
            Ok(layout(
                global,
                devices,
                &optimal,
                &groups,
                last,
                Residue::Finish,
            ))
        }
    }
}

/// Plans the split at given factors (summing to 1) instead of eq. 4's, with the paper's integer
/// adjustment (eq. 5-9): the points of a sweep (Fig. 6-7). `optimal_factor` of each part is the
/// given factor.
pub fn plan_factors(global: u64, devices: &[Device], factors: &[f64]) -> Result<Plan, PlanError> {
    check(global, devices)?;
    let sum: f64 = factors.iter().sum();
    if factors.len() != devices.len()
        || factors.iter().any(|f| !(0.0..=1.0).contains(f))
        || (sum - 1.0).abs() > 1e-9
    {
        return Err(PlanError::BadFactors {
            factors: factors.to_vec(),
        });
    }
    partition(global, devices, factors)
}

fn check(global: u64, devices: &[Device]) -> Result<(), PlanError> {
    if devices.is_empty() {
        return Err(PlanError::NoDevice);
    }
    for (i, d) in devices.iter().enumerate() {
        if !(d.time_ms.is_finite() && d.time_ms > 0.0) {
            return Err(PlanError::BadTime {
                device: i,
                time_ms: d.time_ms,
            });
        }
        if d.wg == 0 {
            return Err(PlanError::ZeroWorkGroup { device: i });
        }
    }
    let smallest = devices.iter().map(|d| d.wg).min().expect("not empty");
    if global < smallest {
        return Err(PlanError::TooSmall { global, smallest });
    }
    if let Some((i, d)) = devices
        .iter()
        .enumerate()
        .find(|(_, d)| !global.is_multiple_of(d.wg))
    {
        return Err(PlanError::NotDivisible {
            device: i,
            wg: d.wg,
            global,
        });
    }
    Ok(())
}

/// Eq. 6-7 (whole work-groups of each device's own size, rounded down), never more than `global`
/// items in all even where float rounding says otherwise.
fn round_down(global: u64, devices: &[Device], factors: &[f64]) -> Vec<u64> {
    let mut groups: Vec<u64> = devices
        .iter()
        .zip(factors)
        .map(|(d, s)| ((global as f64 * s) / d.wg as f64).floor() as u64)
        .collect();
    while covered(devices, &groups) > global {
        let i = (0..devices.len())
            .max_by_key(|&i| groups[i] * devices[i].wg)
            .expect("not empty");
        groups[i] -= 1;
    }
    groups
}

fn covered(devices: &[Device], groups: &[u64]) -> u64 {
    devices.iter().zip(groups).map(|(d, g)| d.wg * g).sum()
}

/// Device `i`'s predicted finish time with `n` groups: Algorithm 1's `(n·wg_i / G)·t_i`.
fn finish(global: u64, d: &Device, n: u64) -> f64 {
    (n * d.wg) as f64 / global as f64 * d.time_ms
}

/// The group counts that cover `global` with the least predicted finish time, from the rounded
/// down shares. Adding, one group at a time, the group that would finish earliest is exact: the
/// least finish time `T` of any cover is the first at which the groups finishing by `T` cover the
/// range, and the rounded-down shares all finish by the ideal time, which no cover beats. Groups
/// then go back, largest work-group first, while the rest still covers the range: that never
/// raises the finish time and leaves an overlap smaller than every used device's work-group.
fn finish_first(global: u64, devices: &[Device], mut groups: Vec<u64>) -> Vec<u64> {
    while covered(devices, &groups) < global {
        let i = (0..devices.len())
            .filter(|&i| (groups[i] + 1) * devices[i].wg <= global)
            .min_by(|&a, &b| {
                finish(global, &devices[a], groups[a] + 1)
                    .total_cmp(&finish(global, &devices[b], groups[b] + 1))
                    .then(devices[b].wg.cmp(&devices[a].wg))
            })
            .expect("a device short of the whole range");
        groups[i] += 1;
    }
    loop {
        let over = covered(devices, &groups) - global;
        let Some(i) = (0..devices.len())
            .filter(|&i| groups[i] > 0 && devices[i].wg <= over)
            .max_by(|&a, &b| {
                devices[a].wg.cmp(&devices[b].wg).then(
                    finish(global, &devices[a], groups[a]).total_cmp(&finish(
                        global,
                        &devices[b],
                        groups[b],
                    )),
                )
            })
        else {
            return groups;
        };
        groups[i] -= 1;
    }
}

fn partition(global: u64, devices: &[Device], optimal: &[f64]) -> Result<Plan, PlanError> {
    let mut groups = round_down(global, devices, optimal);
    // Eq. 8-9: the residue goes to the device that covers it with the least extra work. As every
    // work-group divides G, any device's share plus its cover of the residue still fits in G.
    let residue = global - covered(devices, &groups);
    let mut residue_device = None;
    if residue > 0 {
        let extra = |i: usize| residue.div_ceil(devices[i].wg) * devices[i].wg;
        let k = (0..devices.len())
            .min_by_key(|&i| extra(i))
            .expect("not empty");
        groups[k] += residue.div_ceil(devices[k].wg);
        residue_device = Some(k);
    }
    Ok(layout(
        global,
        devices,
        optimal,
        &groups,
        residue_device,
        Residue::Paper,
    ))
}

/// Contiguous parts in device order, `last` (if any) moved to the end so that its part ends at
/// `G`, overlapping its neighbour by whatever the group counts cover beyond `G`.
fn layout(
    global: u64,
    devices: &[Device],
    optimal: &[f64],
    groups: &[u64],
    last: Option<usize>,
    residue: Residue,
) -> Plan {
    let mut order: Vec<usize> = (0..devices.len()).filter(|&i| Some(i) != last).collect();
    order.extend(last);
    let mut parts = Vec::new();
    let mut offset = 0u64;
    for &i in &order {
        let size = groups[i] * devices[i].wg;
        if size == 0 {
            continue;
        }
        let start = if Some(i) == last {
            global - size
        } else {
            offset
        };
        parts.push(Part {
            device: i,
            offset: start,
            size,
            work_groups: groups[i],
            factor: size as f64 / global as f64,
            optimal_factor: optimal[i],
        });
        offset = start + size;
    }
    parts.sort_by_key(|p| p.device);
    let covered: u64 = parts.iter().map(|p| p.size).sum();
    let theoretical_ms = parts
        .iter()
        .map(|p| p.factor * devices[p.device].time_ms)
        .fold(0.0, f64::max);
    let ideal_ms = 1.0 / devices.iter().map(|d| 1.0 / d.time_ms).sum::<f64>();
    Plan {
        global,
        parts,
        theoretical_ms,
        ideal_ms,
        overlap: covered - global,
        residue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(wg: u64, time_ms: f64) -> Device {
        Device { wg, time_ms }
    }

    #[test]
    fn the_papers_example_keeps_each_work_group_size() {
        // 512 items at factors 0.4 / 0.6 (Erdem §2.2): 204.8 and 307.2 items are impossible.
        let p = plan_with(512, &[dev(16, 6.0), dev(32, 4.0)], Residue::Paper).unwrap();
        assert!((p.parts[0].optimal_factor - 0.4).abs() < 1e-12);
        let sizes: Vec<(u64, u64)> = p.parts.iter().map(|q| (q.offset, q.size)).collect();
        // 204.8 / 16 -> 12 groups (192); 307.2 / 32 -> 9 groups (288); residue 32: one group of
        // device 1 (32 items) or two of device 0 (32): a tie, the first device takes it.
        assert_eq!(sizes, vec![(288, 224), (0, 288)]);
        assert_eq!(p.overlap, 0);
        assert_eq!((p.residue, p.theoretical_ms), (Residue::Paper, 2.625));
    }

    #[test]
    fn the_default_rounding_finishes_first_on_the_papers_example() {
        // 12 groups of 16 and 9 of 32 leave 32 items: two more groups of device 0 finish at
        // 224/512·6 = 2.625 ms, one more of device 1 at 320/512·4 = 2.5 ms.
        let p = plan(512, &[dev(16, 6.0), dev(32, 4.0)]).unwrap();
        let sizes: Vec<(u64, u64)> = p.parts.iter().map(|q| (q.offset, q.size)).collect();
        assert_eq!(sizes, vec![(0, 192), (192, 320)]);
        assert_eq!(
            (p.residue, p.theoretical_ms, p.overlap),
            (Residue::Finish, 2.5, 0)
        );
    }

    #[test]
    fn equal_devices_split_in_halves_not_by_the_residue_tie() {
        // The matmul: factors 0.503 / 0.497 give 2 and 1 groups of 32; eq. 9's tie sends
        // the residue group to device 0 (96/32), finishing at 1.23 ms instead of 0.83 ms.
        let devs = [dev(32, 1.64), dev(32, 1.66)];
        let sizes = |p: &Plan| p.parts.iter().map(|q| q.size).collect::<Vec<_>>();
        let finish = plan(128, &devs).unwrap();
        let paper = plan_with(128, &devs, Residue::Paper).unwrap();
        assert_eq!(
            (sizes(&finish), sizes(&paper)),
            (vec![64, 64], vec![96, 32])
        );
        assert!((finish.theoretical_ms - 0.83).abs() < 1e-12);
        assert!((paper.theoretical_ms - 1.23).abs() < 1e-12);
    }

    #[test]
    fn a_fast_small_work_group_device_may_take_more_than_its_rounded_up_share() {
        // Device 0's share is 1.2 groups of 64, device 1's 25.6 groups of 2: rounding each up or
        // down cannot do better than 1.0 ms, while 1 + 32 groups finish at 0.75 ms.
        let p = plan(128, &[dev(64, 1.0), dev(2, 1.5)]).unwrap();
        let groups: Vec<u64> = p.parts.iter().map(|q| q.work_groups).collect();
        assert_eq!((groups, p.theoretical_ms), (vec![1, 32], 0.75));
    }

    #[test]
    fn residue_rules_parse_and_print() {
        for r in [Residue::Finish, Residue::Paper] {
            assert_eq!(r.to_string().parse::<Residue>(), Ok(r));
        }
        let e = "least".parse::<Residue>().unwrap_err();
        assert!(e.contains("`finish`") && e.contains("`paper`"), "{e}");
    }

    #[test]
    fn non_multiple_work_groups_overlap_by_less_than_one_group() {
        let p = plan(1200, &[dev(24, 2.0), dev(40, 2.5)]).unwrap();
        let covered: u64 = p.parts.iter().map(|q| q.size).sum();
        assert!(covered >= 1200 && p.overlap == covered - 1200 && p.overlap < 40);
        assert!(
            p.overlap > 0,
            "24 and 40 are not multiples of each other: {p:?}"
        );
        assert!(p.parts.iter().all(|q| q.offset + q.size <= 1200));
    }

    #[test]
    fn theoretical_time_is_algorithm_1_on_the_adjusted_factors() {
        let p = plan(1024, &[dev(64, 1.0), dev(64, 1.0)]).unwrap();
        assert_eq!(p.theoretical_ms, 0.5);
        assert_eq!(p.ideal_ms, 0.5);
        let q = plan(96, &[dev(8, 1.0), dev(8, 3.0)]).unwrap();
        let expect = q
            .parts
            .iter()
            .map(|x| x.factor * [1.0, 3.0][x.device])
            .fold(0.0, f64::max);
        assert_eq!(q.theoretical_ms, expect);
        assert!(q.theoretical_ms >= q.ideal_ms);
    }

    #[test]
    fn a_share_below_one_work_group_gets_no_part() {
        let p = plan(1024, &[dev(64, 1.0), dev(64, 100.0)]).unwrap();
        assert_eq!(p.parts.len(), 1);
        assert_eq!((p.parts[0].device, p.parts[0].size), (0, 1024));
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        assert_eq!(plan(10, &[]), Err(PlanError::NoDevice));
        assert_eq!(
            plan(10, &[dev(2, 0.0)]),
            Err(PlanError::BadTime {
                device: 0,
                time_ms: 0.0
            })
        );
        assert!(matches!(
            plan(10, &[dev(2, -1.0)]),
            Err(PlanError::BadTime { .. })
        ));
        assert_eq!(
            plan(10, &[dev(0, 1.0)]),
            Err(PlanError::ZeroWorkGroup { device: 0 })
        );
        assert_eq!(
            plan(10, &[dev(16, 1.0), dev(32, 1.0)]),
            Err(PlanError::TooSmall {
                global: 10,
                smallest: 16
            })
        );
        assert_eq!(
            plan(100, &[dev(8, 1.0)]),
            Err(PlanError::NotDivisible {
                device: 0,
                wg: 8,
                global: 100
            })
        );
    }
}
