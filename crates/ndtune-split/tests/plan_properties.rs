//! Properties of every plan, under both residue rules: factors sum to 1, the parts cover [0, G)
//! with no gap and stay inside it, each part is whole work-groups of its own device, and the
//! overlap is smaller than the largest work-group. The default plan's predicted time is never
//! worse than the paper's, and on small ranges it is the least of every possible cover.

use ndtune_split::{optimal_factors, plan, plan_with, Device, Plan, Residue};
use proptest::prelude::*;

fn devices() -> impl Strategy<Value = Vec<Device>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![1u64, 2, 3, 4, 7, 8, 16, 24, 32, 64, 96, 128, 256]),
            0.01f64..100.0,
        )
            .prop_map(|(wg, time_ms)| Device { wg, time_ms }),
        1..5,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn plans_cover_the_range_in_whole_work_groups(devs in devices(), k in 1u64..40) {
        // Every tuned work-group divides the global size (eq. 2): G is a multiple of their lcm.
        let lcm = devs.iter().fold(1u64, |a, d| a / gcd(a, d.wg) * d.wg);
        let global = lcm * k;
        let sum: f64 = optimal_factors(&devs).iter().sum();
        prop_assert!((sum - 1.0).abs() < 1e-9);
        for residue in [Residue::Finish, Residue::Paper] {
            let p = plan_with(global, &devs, residue).unwrap();
            prop_assert_eq!(p.residue, residue);
            check_cover(&p, &devs)?;
        }
    }

    #[test]
    fn the_default_plan_finishes_no_later_than_the_papers(devs in devices(), k in 1u64..40) {
        let lcm = devs.iter().fold(1u64, |a, d| a / gcd(a, d.wg) * d.wg);
        let global = lcm * k;
        let finish = plan(global, &devs).unwrap();
        let paper = plan_with(global, &devs, Residue::Paper).unwrap();
        prop_assert!(finish.theoretical_ms <= paper.theoretical_ms, "{finish:?}\nis worse than\n{paper:?}");
    }
}

proptest! {
    // Exhaustive search is slow: fewer, smaller cases.
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_default_plan_is_the_least_finish_time_of_any_cover(
        devs in prop::collection::vec(
            (prop::sample::select(vec![1u64, 2, 3, 4, 6, 8, 12]), 0.1f64..10.0)
                .prop_map(|(wg, time_ms)| Device { wg, time_ms }),
            1..4,
        ),
        k in 1u64..4,
    ) {
        let lcm = devs.iter().fold(1u64, |a, d| a / gcd(a, d.wg) * d.wg);
        let global = lcm * k;
        let best = least_cover(global, &devs, 0, global);
        let p = plan(global, &devs).unwrap();
        prop_assert!((p.theoretical_ms - best).abs() < 1e-9, "{p:?}: best cover {best}");
    }
}

/// The least `max_i n_i·wg_i·t_i / G` over every choice of group counts of devices `from..`
/// that covers `need` more items: exhaustive.
fn least_cover(global: u64, devs: &[Device], from: usize, need: u64) -> f64 {
    let Some(d) = devs.get(from) else {
        return if need == 0 { 0.0 } else { f64::INFINITY };
    };
    (0..=need.div_ceil(d.wg))
        .map(|n| {
            let own = (n * d.wg) as f64 / global as f64 * d.time_ms;
            let rest = least_cover(global, devs, from + 1, need.saturating_sub(n * d.wg));
            own.max(rest)
        })
        .fold(f64::INFINITY, f64::min)
}

fn check_cover(p: &Plan, devs: &[Device]) -> Result<(), TestCaseError> {
    let global = p.global;
    {
        let mut covered = vec![false; global as usize];
        let largest = devs.iter().map(|d| d.wg).max().unwrap();
        for part in &p.parts {
            prop_assert!(part.size > 0 && part.offset + part.size <= global);
            prop_assert_eq!(part.size, part.work_groups * devs[part.device].wg);
            for i in part.offset..part.offset + part.size {
                covered[i as usize] = true;
            }
        }
        prop_assert!(covered.iter().all(|c| *c), "a gap in [0, {})", global);
        let total: u64 = p.parts.iter().map(|q| q.size).sum();
        prop_assert_eq!(p.overlap, total - global);
        prop_assert!(p.overlap < largest);
        prop_assert!(p.theoretical_ms + 1e-12 >= p.ideal_ms);
    }
    Ok(())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
