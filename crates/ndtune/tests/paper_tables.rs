//! Erdem et al. 2018, Tables 1 and 2, on the built-in profiles of the paper's four devices.

mod common;
use common::*;

const DEVICES: [&str; 4] = ["i7-4770", "hd4600", "i7-2630qm", "gt550m"];

fn sizes(spec: &str, profile: &str) -> (u64, u64) {
    let v = json(&["space", spec, "--profile", profile, "--json"]);
    (
        v["bounded"].as_u64().unwrap(),
        v["pruned"].as_u64().unwrap(),
    )
}

#[test]
fn matmul_gives_table_1_and_table_2_exactly() {
    let spec = examples().join("matmul.toml");
    let got: Vec<(u64, u64)> = DEVICES
        .iter()
        .map(|d| sizes(spec.to_str().unwrap(), d))
        .collect();
    assert_eq!(
        got,
        vec![(1 << 20, 7), (1 << 18, 5), (1 << 20, 7), (1 << 20, 6)]
    );
}

/// Table 1 comes out exactly. Table 2's convolution row (24, 17, 24, 19) cannot with the model as
/// written: only powers of two divide 2^16, so eq. 2 leaves at most 17 sizes. The model gives
/// (13, 10, 13, 11); the same model gives the paper's row for a global size with more divisors,
/// e.g. 40960 = 5 * 2^13 (see docs/pruning.md).
#[test]
fn conv1d_gives_table_1_and_documents_table_2() {
    let spec = examples().join("conv1d.toml");
    let got: Vec<(u64, u64)> = DEVICES
        .iter()
        .map(|d| sizes(spec.to_str().unwrap(), d))
        .collect();
    assert_eq!(got, vec![(8192, 13), (512, 10), (8192, 13), (1024, 11)]);

    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("N = 65536", "N = 40960");
    let other = write(dir.path(), "conv40960.toml", &text);
    let pruned: Vec<u64> = DEVICES.iter().map(|d| sizes(&other, d).1).collect();
    assert_eq!(pruned, vec![24, 17, 24, 19]);
}

#[test]
fn xgemm_space_counts_exactly() {
    let v = json(&[
        "space",
        examples().join("xgemm-space.toml").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["declared"], 19_660_800);
    assert_eq!(v["pruned"], 6_685_184);
    let removed: u64 = v["constraints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["removed"].as_u64().unwrap())
        .sum();
    assert_eq!(removed + 6_685_184, 19_660_800);
}
