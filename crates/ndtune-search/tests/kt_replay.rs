//! Strategies replayed on a real, brute-forced space: Kernel Tuner's convolution cache for the
//! A100 (benchmark_hub; format in shared/data/kt-benchmark-hub/SOURCE.md).

use ndtune_search::{evaluate_strategy, Recorded};
use std::path::Path;

const CACHE: &str =
    "../../../shared/data/kt-benchmark-hub/cachefiles/convolution_milo/A100.json.gz";

/// The cache, read by the store's Kernel Tuner reader, as a recording.
fn read_kt_cache(path: &Path) -> Recorded {
    let cache = ndtune_store::kt::read_kt_cache(path).unwrap_or_else(|e| {
        panic!("the Kernel Tuner cache shipped in shared/data must be readable: {e}")
    });
    Recorded::from_configs(cache.header.codec(), cache.entries).expect("the cache is a space")
}

#[test]
fn anneal_does_at_least_as_well_as_random_on_the_a100_convolution_space() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(CACHE);
    let mut recorded = read_kt_cache(&path);
    let space = recorded.space().clone();
    assert_eq!((space.names().len(), space.len()), (10, 4362));
    let failed = space
        .points()
        .iter()
        .filter(|p| recorded.outcome(p).unwrap().score_ms().is_none());
    assert_eq!(failed.count(), 161);

    let mut score = |name| evaluate_strategy(name, &space, &mut recorded, Some(200), 10).unwrap();
    let (anneal, random) = (score("anneal"), score("random"));
    println!("{anneal}\n{random}");
    assert!(
        (anneal.optimum_ms - 0.5536).abs() < 1e-4,
        "SOURCE.md's best time"
    );
    assert!(
        anneal.mean() >= random.mean(),
        "anneal {:.3} vs random {:.3}",
        anneal.mean(),
        random.mean()
    );
}
