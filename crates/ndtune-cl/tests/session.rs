//! A session on the real PoCL device: build, buffers, arguments, timed launches, refusals.

use ndtune_cl::discover;
use ndtune_device::backend::{Arg, Device, DeviceError as ClError, Fault};

const SAXPY: &str = "__kernel void saxpy(__global float *y, __global const float *x, float a) {
    size_t i = get_global_id(0); y[i] = a * x[i] + y[i] + (float)SHIFT; }";

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

#[test]
fn saxpy_runs_timed_and_builds_once_per_option_set() {
    let device = discover().unwrap().remove(0);
    let mut s = device.session().unwrap();
    let n = 1024;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y = vec![1.0f32; n];
    let yb = s.buffer(&to_bytes(&y)).unwrap();
    let xb = s.buffer(&to_bytes(&x)).unwrap();
    let k = s.kernel(SAXPY, "saxpy", "-D SHIFT=0").unwrap();
    let a = 2.0f32.to_ne_bytes();
    s.set_args(&k, &[Arg::Buffer(&yb), Arg::Buffer(&xb), Arg::Scalar(&a)])
        .unwrap();
    let ms = s.launch(&k, &[n], Some(&[64]), None).unwrap();
    assert!(ms > 0.0 && ms < 1000.0, "{ms} ms");
    let out = floats(&s.read(&yb).unwrap());
    assert_eq!(out[10], 21.0);
    // A global offset shifts the work-items.
    s.launch(&k, &[8], Some(&[8]), Some(&[100])).unwrap();
    let out = floats(&s.read(&yb).unwrap());
    // y = 2i + 1 after the first launch; 4i + 1 where the second one ran (i in 100..108).
    assert_eq!(
        (out[99], out[100], out[107], out[108]),
        (199.0, 401.0, 429.0, 217.0)
    );
    // Same options: no new build; new options: one more.
    s.kernel(SAXPY, "saxpy", "-D SHIFT=0").unwrap();
    assert_eq!(s.builds(), 1);
    s.kernel(SAXPY, "saxpy", "-D SHIFT=1").unwrap();
    assert_eq!(s.builds(), 2);
}

#[test]
fn mismatched_arguments_and_refused_launches_are_errors() {
    let device = discover().unwrap().remove(0);
    let mut s = device.session().unwrap();
    let k = s.kernel(SAXPY, "saxpy", "-D SHIFT=0").unwrap();
    let b = s.buffer(&[0u8; 64]).unwrap();
    let e = s.set_args(&k, &[Arg::Buffer(&b)]).unwrap_err();
    assert!(
        matches!(
            e,
            ClError::ArgCount {
                expected: 3,
                given: 1
            }
        ),
        "{e}"
    );
    let e = s
        .set_args(
            &k,
            &[Arg::Buffer(&b), Arg::Buffer(&b), Arg::Scalar(&[0u8; 8])],
        )
        .unwrap_err();
    assert!(matches!(e, ClError::Arg { index: 2, .. }), "{e}");
    s.set_args(
        &k,
        &[Arg::Buffer(&b), Arg::Buffer(&b), Arg::Scalar(&[0u8; 4])],
    )
    .unwrap();
    let too_big = device.profile().max_work_group_size as usize * 2;
    let e = s
        .launch(&k, &[too_big], Some(&[too_big]), None)
        .unwrap_err();
    assert!(
        matches!(
            &e,
            ClError::Failed {
                code: -54,
                fault: Fault::Call,
                ..
            }
        ),
        "CL_INVALID_WORK_GROUP_SIZE expected: {e}"
    );
    let e = s.kernel(SAXPY, "nope", "-D SHIFT=0").unwrap_err();
    assert!(matches!(e, ClError::NoKernel { .. }));
    let e = s.kernel(SAXPY, "saxpy", "").unwrap_err();
    assert!(matches!(e, ClError::Build { .. }), "SHIFT undefined: {e}");
}

#[test]
fn buffers_are_allocated_copied_and_mapped_on_the_device() {
    let device = discover().unwrap().remove(0);
    let s = device.session().unwrap();
    let mut b = s.alloc(4 * 1000).unwrap();
    let src = s.buffer(&to_bytes(&vec![2.5; 1000])).unwrap();
    s.copy(&src, &mut b).unwrap();
    let sum: f32 = s.map(&b, |bytes| floats(bytes).iter().sum()).unwrap();
    assert_eq!(sum, 2500.0);
    let head = s.buffer(&to_bytes(&[1.0, 2.0, 3.0])).unwrap();
    s.copy(&head, &mut b).unwrap();
    let first = s.map(&b, |bytes| floats(&bytes[..16])).unwrap();
    assert_eq!(first, [1.0, 2.0, 3.0, 2.5]);
    assert_eq!(s.map(&s.alloc(0).unwrap(), <[u8]>::len).unwrap(), 0);
}

#[test]
fn discovery_without_a_build_reads_the_whole_profile_where_the_driver_answers_the_device_query() {
    let probed = discover().unwrap();
    let unprobed = ndtune_cl::discover_unprobed().unwrap();
    assert_eq!(probed.len(), unprobed.len());
    for (p, u) in probed.iter().zip(&unprobed) {
        // PoCL 3 answers OpenCL 3.0's CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE: no build, no
        // context, and the profile is the one discovery reads.
        assert!(
            u.profile().preferred_work_group_size_multiple > 0,
            "{}",
            u.label()
        );
        assert_eq!(u.profile(), p.profile(), "{}", p.label());
        // The device's answer is what a kernel built on it reports (the probe of older drivers).
        let probe = "__kernel void probe(__global float *x) { x[get_global_id(0)] *= 2.0f; }";
        let limits = p.kernel_limits(probe, "probe", "").unwrap();
        assert_eq!(
            limits.preferred_work_group_size_multiple,
            p.profile().preferred_work_group_size_multiple,
            "{}",
            p.label()
        );
        // A profile handed over by the process that read it makes a device whole as it is.
        let whole = u.clone().with_profile(p.profile().clone());
        assert_eq!(whole.profile(), p.profile());
        assert_eq!(whole.selector(), p.selector());
    }
}
