//! Properties of every plan: factors sum to 1, the parts cover [0, G) with no gap and stay inside
//! it, each part is whole work-groups of its own device, the overlap is smaller than the largest
//! work-group, and the residue went to the device that needed the least extra work.

use ndtune_split::{optimal_factors, plan, Device};
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
        let p = plan(global, &devs).unwrap();
        let sum: f64 = optimal_factors(&devs).iter().sum();
        prop_assert!((sum - 1.0).abs() < 1e-9);
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
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
