//! Wisdom from Kernel Tuner caches (the benchmark hub's convolution measured on whole GPUs):
//! an entry is its cache's fastest configuration with the next fastest ranked after it; a
//! tuned GPU is answered `exact`, a GPU never tuned gets a `predicted` configuration of a tuned
//! one that ran on it too (what bench/heldout_devices.sh measures over six GPUs).

use ndtune_spec::Spec;
use ndtune_store::kt::{read_kt_cache, KtCache};
use ndtune_wisdom::{entry_from_kt_cache, kernel_wisdom, How, Picker, RANKED};
use std::path::{Path, PathBuf};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn cache(gpu: &str) -> KtCache {
    let path = repo(&format!(
        "../shared/data/kt-benchmark-hub/cachefiles/convolution_milo/{gpu}.json.gz"
    ));
    read_kt_cache(&path).unwrap()
}

fn profile(key: &str) -> ndtune_device::DeviceProfile {
    ndtune_device::builtin::find(key).unwrap()
}

#[test]
fn entries_from_caches_answer_tuned_gpus_exactly_and_predict_an_untuned_one() {
    let spec_path = repo("bench/heldout/convolution_milo.toml");
    let spec = Spec::load(&spec_path).unwrap();
    let (a100, mi250x, a4000) = (cache("A100"), cache("MI250X"), cache("A4000"));

    let entry = entry_from_kt_cache(&a100, &spec, profile("a100-pcie-40gb"), "A100").unwrap();
    let mut measured: Vec<(f64, &ndtune_core::Config)> = a100
        .entries
        .iter()
        .filter_map(|(c, o)| Some((o.score_ms()?, c)))
        .collect();
    measured.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(entry.measured, 4201);
    assert_eq!(
        (entry.objective, &entry.config),
        (measured[0].0, measured[0].1)
    );
    assert_eq!(entry.ranked.len(), RANKED);
    for (r, m) in entry.ranked.iter().zip(&measured) {
        assert_eq!((r.objective, &r.config), (m.0, m.1));
    }

    let other = entry_from_kt_cache(&mi250x, &spec, profile("mi250x"), "MI250X").unwrap();
    let tuned = [entry.config.clone(), other.config.clone()];
    assert_ne!(tuned[0], tuned[1], "two GPUs whose bests differ");
    let wisdom = kernel_wisdom(&spec, Vec::new(), vec![entry, other]);
    let picker = Picker::new(&wisdom, &spec_path.display().to_string()).unwrap();
    let constants = &spec.problem.constants;

    let exact = picker.pick(&profile("mi250x"), constants).unwrap();
    assert_eq!((exact.how, &exact.config), (How::Exact, &tuned[1]));

    let predicted = picker.pick(&profile("rtx-a4000"), constants).unwrap();
    assert_eq!(predicted.how, How::Predicted, "{}", predicted.reason);
    assert!(tuned.contains(&predicted.config), "{predicted:?}");
    assert!(
        a4000.entries[&predicted.config].score_ms().is_some(),
        "the pick ran on the A4000: {predicted:?}"
    );
}
