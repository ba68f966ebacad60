//! The shipped case studies tune on PoCL and every configuration verifies against its host
//! reference (sizes shrunk with `--set` where the paper's would take long on a CI machine).

mod common;
use common::*;

fn tune_all(spec: &str, set: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let spec = examples().join(spec);
    let mut args = vec![
        "tune",
        spec.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--json",
    ];
    for s in set {
        args.extend(["--set", s]);
    }
    let v = json(&args);
    let d = v["devices"][0].clone();
    let o = &d["outcomes"];
    for bad in [
        "build_failed",
        "refused",
        "wrong_result",
        "crashed",
        "timed_out",
    ] {
        assert_eq!(o[bad], 0, "{spec:?}: {bad} in {d}");
    }
    assert_eq!(
        o["measured"], d["pruned"],
        "every valid configuration measured: {d}"
    );
    assert!(d["best"]["time_ms"].as_f64().unwrap() > 0.0);
    d
}

#[test]
fn matmul_tunes_and_verifies() {
    let d = tune_all("matmul.toml", &["N=64"]);
    // Tiles 1 to 32: a 64x64 tile would leave one work-group for two compute units (eq. 3).
    assert_eq!(d["pruned"], 6);
    assert!(d["best"]["gflops"].as_f64().unwrap() > 0.0);
}

#[test]
fn conv1d_tunes_and_verifies() {
    let d = tune_all("conv1d.toml", &["N=4096"]);
    assert!(d["pruned"].as_u64().unwrap() >= 8, "{d}");
}

#[test]
fn cnn_tunes_and_verifies() {
    let d = tune_all("cnn.toml", &[]);
    assert_eq!(d["pruned"], 30);
}

#[test]
fn the_two_stage_reduction_tunes_and_its_host_check_passes() {
    // Stage 1: GROUPS partial sums, each configuration's checked against the input's total.
    let d = tune_all("reduction.toml", &["N=8192"]);
    assert!(d["pruned"].as_u64().unwrap() >= 45, "{d}");
    assert_eq!(d["verified"], true);
    // Stage 2: a single work-group, kept by the legal platform model.
    let d = tune_all("reduction-final.toml", &[]);
    assert_eq!(d["pruned"], 9);
}

#[test]
fn a_gemm_of_several_files_with_an_include_directory_tunes_and_verifies() {
    let d = tune_all("gemm-multi.toml", &["N=64"]);
    // 18 configurations; tiles of 16 make 16 work-groups, too few for eq. 3 beyond 16 cores.
    assert!(d["pruned"].as_u64().unwrap() >= 12, "{d}");
    assert_eq!(d["constants"]["N"], 64);
}

#[test]
fn a_gemm_of_four_files_with_float_scalars_verifies_against_its_host_reference() {
    // alpha = ALPHA = 0.5 and beta = "1 / 2", a float context: 0.5. The host reference computes
    // C = alpha * A * B + beta * C in double from the scalars as the kernel gets them.
    let d = tune_all("gemm-blas.toml", &["N=32"]);
    assert_eq!(d["verified"], true, "{d}");
    assert_eq!(d["constants"]["ALPHA"], 0.5);
    // 9 configurations; tiles of 16 make 4 work-groups, too few for eq. 3 beyond 4 cores.
    assert!(d["pruned"].as_u64().unwrap() >= 6, "{d}");
    assert_eq!(
        d["outcomes"]["measured"].as_u64(),
        d["pruned"].as_u64(),
        "{d}"
    );
}
