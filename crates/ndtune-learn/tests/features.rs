//! Feature extraction end to end, with the installed clang and the built-in device profiles.

use ndtune_learn::features::{
    dataset_features, device_features, feature_names, kernel_features, scenario_features, Dataset,
    FeatureError,
};
use std::collections::HashSet;

/// Three fmuls per iteration of a loop the optimiser keeps (its trip count is a run-time value).
const POWER: &str = r#"
kernel void power(global const float *in, global float *out, int n) {
    int i = get_global_id(0);
    float x = in[i], acc = 1.0f;
    for (int k = 0; k < n; ++k)
        acc = acc * x * x * 0.5f;
    out[i] = acc;
}
"#;

/// No floating-point arithmetic at all.
const COPY: &str = r#"
kernel void copy(global const int *in, global int *out) {
    int i = get_global_id(0);
    out[i] = in[i];
}
"#;

const CONV1D: &str = include_str!("../../../examples/conv1d.cl");
const CONV1D_OPTIONS: &str = "-D N=1024 -D MASK=5 -D WG=8";

fn get(features: &[(String, f64)], name: &str) -> f64 {
    features
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no feature {name}"))
        .1
}

fn names(features: &[(String, f64)]) -> Vec<&str> {
    features.iter().map(|(n, _)| n.as_str()).collect()
}

fn stencil() -> Dataset {
    Dataset {
        rows: 4096,
        cols: 1024,
        input: "float".into(),
        output: "int".into(),
        border: [2, 2, 1, 1],
    }
}

#[test]
fn kernels_differ_where_their_code_does() {
    let power = kernel_features(POWER, "").unwrap();
    let copy = kernel_features(COPY, "").unwrap();
    assert_eq!(names(&power), names(&copy));
    assert!(get(&power, "f_ker_total") > get(&copy, "f_ker_total"));
    assert_eq!(get(&power, "f_ker_count_fmul"), 3.0);
    assert_eq!(get(&copy, "f_ker_count_fmul"), 0.0);
    assert_eq!(get(&power, "f_ker_loops"), 1.0);
    assert_eq!(get(&copy, "f_ker_loops"), 0.0);
    assert!(get(&power, "f_ker_blocks") > get(&copy, "f_ker_blocks"));
    for f in [&power, &copy] {
        assert_eq!(get(f, "f_ker_load_global"), 1.0);
        assert_eq!(get(f, "f_ker_store_global"), 1.0);
        assert_eq!(get(f, "f_ker_calls_work_item"), 1.0);
    }
}

#[test]
fn conv1d_uses_local_memory_and_a_barrier() {
    let f = kernel_features(CONV1D, CONV1D_OPTIONS).unwrap();
    assert!(get(&f, "f_ker_total") > 0.0);
    assert_eq!(get(&f, "f_ker_calls_barrier"), 1.0);
    assert_eq!(get(&f, "f_ker_calls_work_item"), 2.0);
    assert_eq!(get(&f, "f_ker_store_local"), 1.0);
    assert_eq!(get(&f, "f_ker_load_local"), 1.0);
    assert_eq!(get(&f, "f_ker_load_global"), 2.0);
    // Not contracted into llvm.fmuladd: the multiply-add stays as written.
    assert_eq!(get(&f, "f_ker_count_fmul"), 1.0);
    assert_eq!(get(&f, "f_ker_count_fadd"), 1.0);
    assert_eq!(get(&f, "f_ker_loops"), 2.0);
}

#[test]
fn densities_sum_to_one_and_counts_to_the_total() {
    for (source, options) in [(POWER, ""), (COPY, ""), (CONV1D, CONV1D_OPTIONS)] {
        let f = kernel_features(source, options).unwrap();
        let sum = |prefix: &str| -> f64 {
            f.iter()
                .filter(|(n, _)| n.starts_with(prefix))
                .map(|(_, v)| v)
                .sum()
        };
        assert!((sum("f_ker_density_") - 1.0).abs() < 1e-12);
        assert_eq!(sum("f_ker_count_"), get(&f, "f_ker_total"));
        assert_eq!(sum("f_ker_calls_"), get(&f, "f_ker_count_call"));
    }
}

#[test]
fn build_options_change_the_code() {
    let wide = kernel_features(CONV1D, "-D N=1024 -D MASK=5 -D WG=8").unwrap();
    // MASK=1 leaves a single tap: the mask loop disappears.
    let narrow = kernel_features(CONV1D, "-D N=1024 -D MASK=1 -D WG=8").unwrap();
    assert!(get(&narrow, "f_ker_loops") < get(&wide, "f_ker_loops"));
}

#[test]
fn identical_input_gives_identical_output() {
    let first = kernel_features(CONV1D, CONV1D_OPTIONS).unwrap();
    let again = kernel_features(CONV1D, CONV1D_OPTIONS).unwrap();
    assert_eq!(first, again);
    let gpu = ndtune_device::builtin::find("gt550m").unwrap();
    let a = scenario_features(&gpu, POWER, "", &stencil()).unwrap();
    let b = scenario_features(&gpu, POWER, "", &stencil()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn compile_error_carries_clangs_message() {
    let err = kernel_features("kernel void broken(global int *a) { a[0] = ; }", "").unwrap_err();
    assert!(matches!(err, FeatureError::Compile { .. }));
    let msg = err.to_string();
    assert!(msg.contains("expected expression"), "{msg}");
    assert!(msg.contains("<stdin>:1:"), "{msg}");

    let err = kernel_features(COPY, "-D N=1 -cl-no-such-option")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("build options `-D N=1 -cl-no-such-option`"),
        "{err}"
    );
    assert!(
        err.contains("unknown argument: '-cl-no-such-option'"),
        "{err}"
    );
}

#[test]
fn a_source_without_functions_has_no_features() {
    let err = kernel_features("constant int x = 1;", "").unwrap_err();
    assert!(matches!(err, FeatureError::NoInstructions), "{err}");
}

#[test]
fn device_features_of_builtin_profiles() {
    let gpu = device_features(&ndtune_device::builtin::find("gt550m").unwrap());
    let cpu = device_features(&ndtune_device::builtin::find("i7-4770").unwrap());
    assert_eq!(names(&gpu), names(&cpu));
    assert!(names(&gpu).iter().all(|n| n.starts_with("f_dev_")));
    assert_eq!(get(&gpu, "f_dev_compute_units"), 2.0);
    assert_eq!(get(&gpu, "f_dev_max_work_group_size"), 1024.0);
    assert_eq!(get(&gpu, "f_dev_max_work_item_size_z"), 64.0);
    assert_eq!(get(&gpu, "f_dev_local_mem_size"), 48.0 * 1024.0);
    assert_eq!(get(&gpu, "f_dev_log2_global_mem_size"), 30.0);
    assert_eq!(get(&gpu, "f_dev_preferred_work_group_size_multiple"), 32.0);
    assert_eq!(
        (get(&gpu, "f_dev_is_gpu"), get(&gpu, "f_dev_is_cpu")),
        (1.0, 0.0)
    );
    assert_eq!(
        (get(&cpu, "f_dev_is_gpu"), get(&cpu, "f_dev_is_cpu")),
        (0.0, 1.0)
    );
    assert!(gpu
        .iter()
        .chain(&cpu)
        .all(|(_, v)| v.is_finite() && *v >= 0.0));
}

#[test]
fn dataset_features_have_their_prefix() {
    let f = dataset_features(&stencil());
    assert!(names(&f).iter().all(|n| n.starts_with("f_data_")));
    assert_eq!(get(&f, "f_data_cells"), 4096.0 * 1024.0);
    assert_eq!(get(&f, "f_data_stencil_area"), 5.0 * 3.0);
    assert_eq!(get(&f, "f_data_output_is_float"), 0.0);
}

#[test]
fn scenario_features_follow_feature_names() {
    let all = feature_names();
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "duplicate feature names");
    assert!(all
        .iter()
        .all(|n| n.starts_with("f_dev_") || n.starts_with("f_ker_") || n.starts_with("f_data_")));

    let cpu = ndtune_device::builtin::find("i7-4770").unwrap();
    let f = scenario_features(&cpu, CONV1D, CONV1D_OPTIONS, &stencil()).unwrap();
    assert_eq!(f.names, all);
    assert_eq!(f.values.len(), all.len());
    assert_eq!(f.get("f_dev_is_cpu"), Some(1.0));
    assert_eq!(f.get("f_ker_calls_barrier"), Some(1.0));
    assert_eq!(f.get("f_data_rows"), Some(4096.0));
    assert_eq!(f.get("f_nope"), None);
    assert!(f.iter().all(|(_, v)| v.is_finite()));
    assert!(f.iter().map(|(n, _)| n).eq(all.iter().map(String::as_str)));
}

#[test]
fn scenario_refuses_an_unknown_element_type() {
    let cpu = ndtune_device::builtin::find("i7-4770").unwrap();
    let data = Dataset {
        input: "float4".into(),
        ..stencil()
    };
    let err = scenario_features(&cpu, COPY, "", &data).unwrap_err();
    assert!(
        matches!(err, FeatureError::UnknownType { field: "input", .. }),
        "{err}"
    );
}
