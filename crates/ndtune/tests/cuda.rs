//! CUDA where CI runs, without a GPU or a CUDA driver: the missing driver is a note and OpenCL
//! goes on, a CUDA kernel is pruned on a saved CUDA profile with CUDA's own limits, and it is
//! offered only CUDA devices. What needs a GPU is in `scripts/test-gpu.sh`.
//!
//! `examples/profiles/nvidia-h100-cuda.json` holds the limits CUDA reports for an H100 SXM5
//! (compute capability 9.0) as ndtune reads them, written from the GPU's documented attributes.

mod common;
use common::*;

/// Whether this machine has a CUDA device (then the tests of its absence have nothing to test).
fn cuda_here() -> bool {
    let out = ndtune().arg("devices").output().unwrap();
    String::from_utf8_lossy(&out.stdout).contains("platform: CUDA")
}

#[test]
fn a_missing_cuda_driver_is_one_note_and_opencl_devices_are_listed() {
    if cuda_here() {
        return;
    }
    let out = ndtune().arg("devices").output().unwrap();
    assert!(out.status.success());
    let (text, err) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert!(
        text.contains("platform: Portable Computing Language"),
        "{text}"
    );
    assert_eq!(err.matches("no CUDA platform found").count(), 1, "{err}");
    assert!(err.contains("libcuda.so.1"), "says what is missing: {err}");
}

#[test]
fn a_cuda_kernel_is_pruned_on_a_saved_cuda_profile_with_cudas_limits() {
    let spec = examples().join("cuda/sgemm.toml");
    let spec = spec.to_str().unwrap();
    let profile = examples().join("profiles/nvidia-h100-cuda.json");
    let profile = profile.to_str().unwrap();
    let opencl_profile = examples().join("profiles/nvidia-h100.json");
    let space = |profile: &str, extra: &[&str]| {
        let mut args = vec!["space", spec, "--profile-file", profile, "--json"];
        args.extend_from_slice(extra);
        json(&args)
    };
    // 144 declared; TS % RTS and at most 1024 threads a block leave 120 (48 KB of shared memory
    // a block removes none: TS = 64 needs 33 KB).
    let cuda = space(profile, &[]);
    assert_eq!(cuda["declared"], 144);
    assert_eq!(cuda["pruned"], 120, "{cuda}");
    // The same GPU through OpenCL has the same limits under the same names.
    let opencl = space(opencl_profile.to_str().unwrap(), &[]);
    assert_eq!(opencl["pruned"], cuda["pruned"]);

    // CUDA's own limits are device properties: 0 on an OpenCL device.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(examples().join("cuda/sgemm.toml"))
        .unwrap()
        .replace(
            "constraints = [\"TS % RTS == 0\", \"N % TS == 0\"]",
            "constraints = [\"TS % RTS == 0\", \"N % TS == 0\", \
             \"2 * TS * (TS + PAD) * 4 * 8 <= device.shared_mem_per_block_optin\", \
             \"device.compute_capability >= 90\", \"device.max_grid_size_y >= N / TS\"]",
        );
    std::fs::copy(
        examples().join("cuda/sgemm.cu"),
        dir.path().join("sgemm.cu"),
    )
    .unwrap();
    let narrowed = write(dir.path(), "sgemm.toml", &text);
    let on = |profile: &str| json(&["space", &narrowed, "--profile-file", profile, "--json"]);
    // Eight blocks' shared memory within the 227 KB opt-in: TS = 64 (8 x 33 KB), 30 of the 120,
    // is out. An OpenCL device has no opt-in and no compute capability: nothing is left.
    assert_eq!(on(profile)["pruned"], 90);
    let err = fails(&[
        "space",
        &narrowed,
        "--profile-file",
        opencl_profile.to_str().unwrap(),
    ]);
    assert!(
        err.contains("the space of `sgemm` is empty on NVIDIA H100 80GB HBM3")
            && err.contains("device.compute_capability >= 90"),
        "{err}"
    );
}

#[test]
fn a_cuda_kernel_is_offered_cuda_devices_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let spec = examples().join("cuda/saxpy.toml");
    let base = ["tune", spec.to_str().unwrap(), "--db", db.to_str().unwrap()];
    // Device 0 is PoCL's CPU, an OpenCL device: named by number, its API says why not.
    let mut args = base.to_vec();
    args.extend(["--device", "0"]);
    let err = fails(&args);
    assert!(
        err.contains("--device 0: device 0 (")
            && err.contains("runs OpenCL kernels, not CUDA ones"),
        "{err}"
    );
    if !cuda_here() {
        let err = fails(&base);
        assert!(err.contains("this machine has no CUDA device"), "{err}");
        assert!(!err.contains("--device"), "no --device was given: {err}");
    }
    assert!(!db.exists(), "nothing was measured, no store was made");
}

#[test]
fn split_takes_a_twin_in_the_other_language_and_refuses_what_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let (spec, twin) = (
        examples().join("conv1d.toml"),
        examples().join("cuda/conv1d.toml"),
    );
    let split = |twin: &std::path::Path, devices: &str| {
        let (spec, twin, db) = (
            spec.to_str().unwrap(),
            twin.to_str().unwrap(),
            db.to_str().unwrap(),
        );
        fails(&[
            "split",
            spec,
            "--twin",
            twin,
            "--devices",
            devices,
            "--db",
            db,
        ])
    };
    // The twin's devices are offered beside the spec's: device 0 (PoCL) runs the OpenCL kernel,
    // and the refusal is about the devices, not the twin.
    let err = split(&twin, "0,0");
    assert!(
        err.contains("--devices 0,0: device 0 is named twice"),
        "{err}"
    );
    // Another kernel, or the same language, is no twin.
    let err = split(&examples().join("cuda/saxpy.toml"), "0,0");
    assert!(
        err.contains("is no twin of") && err.contains("their [params] differ"),
        "{err}"
    );
    let err = split(&spec, "0,0");
    assert!(
        err.contains("a twin is the kernel in the other language"),
        "{err}"
    );
    if !cuda_here() {
        // With the twin, a CUDA device is asked for by name; there is none here.
        let err = split(&twin, "0,h100");
        assert!(err.contains("h100"), "{err}");
    }
    assert!(!db.exists(), "nothing was measured, no store was made");
}
