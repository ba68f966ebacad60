//! The C functions called through their C ABI from Rust: errors (NULLs, bad UTF-8, a missing
//! model, a bad split), the split planner against `ndtune_split::plan`, and an in-process
//! prediction on the live OpenCL device (PoCL) against the model applied to features computed
//! independently.

use ndtune_capi::*;
use ndtune_learn::data::Data;
use ndtune_learn::features::{scenario_features, Dataset};
use ndtune_learn::model::Model;
use ndtune_learn::models::ClassifierKind;
use ndtune_serve::limits::{LimitOverrides, Limits};
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};

const BLUR: &str = "__kernel void blur(__global const float *in, __global float *out, int cols,
    int rows, __local float *tile) {
  int lx = get_local_id(0), ly = get_local_id(1);
  int wc = get_local_size(0), wr = get_local_size(1);
  int x0 = get_group_id(0) * wc - 1, y0 = get_group_id(1) * wr - 1;
  for (int y = ly; y < wr + 2; y += wr)
    for (int x = lx; x < wc + 2; x += wc)
      tile[y * (wc + 2) + x] = in[clamp(y0 + y, 0, rows - 1) * cols + clamp(x0 + x, 0, cols - 1)];
  barrier(CLK_LOCAL_MEM_FENCE);
  int c = get_global_id(0), r = get_global_id(1);
  if (c < cols && r < rows)
    out[r * cols + c] = (tile[ly * (wc + 2) + lx] + tile[(ly + 2) * (wc + 2) + lx + 2]) / 2.0f;
}";

fn last_error() -> String {
    let e = ndtune_last_error();
    assert!(!e.is_null(), "a failure leaves a message");
    unsafe { CStr::from_ptr(e) }.to_str().unwrap().to_string()
}

fn data_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/stencils-2026-11-21/stencils-h100-xeon.csv.gz")
}

fn train_tree(dir: &Path) -> PathBuf {
    let data = Data::load(&data_path()).unwrap();
    let model = Model::train(&data, ClassifierKind::DecisionTree, 1).unwrap();
    let path = dir.join("tree.json");
    model.save(&path).unwrap();
    path
}

#[test]
fn loading_and_connecting_fail_with_a_message() {
    assert!(unsafe { ndtune_predictor_load(null()) }.is_null());
    assert!(last_error().contains("`model_path` is NULL"));

    let missing = CString::new("/nonexistent/ndtune-model.json").unwrap();
    assert!(unsafe { ndtune_predictor_load(missing.as_ptr()) }.is_null());
    let message = last_error();
    assert!(
        message.contains("/nonexistent/ndtune-model.json"),
        "{message}"
    );

    let bad = [0xffu8, 0xfe, 0];
    assert!(unsafe { ndtune_predictor_load(bad.as_ptr().cast()) }.is_null());
    assert!(last_error().contains("not UTF-8"));

    let dir = tempfile::tempdir().unwrap();
    let not_a_model = dir.path().join("x.json");
    std::fs::write(&not_a_model, "{}").unwrap();
    let path = CString::new(not_a_model.to_str().unwrap()).unwrap();
    assert!(unsafe { ndtune_predictor_load(path.as_ptr()) }.is_null());
    assert!(last_error().contains("not an ndtune model file"));

    let address = CString::new("no-port").unwrap();
    assert!(unsafe { ndtune_predictor_connect(address.as_ptr()) }.is_null());
    assert!(last_error().contains("HOST:PORT"));
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = CString::new(format!("127.0.0.1:{port}")).unwrap();
    assert!(unsafe { ndtune_predictor_connect(address.as_ptr()) }.is_null());
    assert!(last_error().contains("cannot reach the service"));

    unsafe { ndtune_predictor_free(null_mut()) };
}

#[test]
fn the_split_agrees_with_the_planner_and_bad_input_is_refused() {
    let (wgs, times) = ([16usize, 32, 8], [6.0, 4.0, 9.0]);
    let mut parts = [ndtune_split_part::default(); 3];
    let mut theoretical = 0.0;
    let s = unsafe {
        ndtune_split_plan(
            512,
            3,
            wgs.as_ptr(),
            times.as_ptr(),
            parts.as_mut_ptr(),
            &mut theoretical,
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_OK);
    let devices: Vec<_> = wgs
        .iter()
        .zip(times)
        .map(|(&wg, time_ms)| ndtune_split::Device {
            wg: wg as u64,
            time_ms,
        })
        .collect();
    let plan = ndtune_split::plan(512, &devices).unwrap();
    assert_eq!(theoretical, plan.theoretical_ms);
    for p in &plan.parts {
        let c = parts[p.device];
        assert_eq!(
            (c.offset, c.size, c.work_groups),
            (p.offset as usize, p.size as usize, p.work_groups as usize)
        );
        assert_eq!((c.factor, c.optimal_factor), (p.factor, p.optimal_factor));
    }
    assert_eq!(
        parts.iter().map(|p| p.size).sum::<usize>() as u64,
        512 + plan.overlap
    );

    // 500 is no multiple of 16: refused with the planner's reason; NULLs and no device too.
    let s = unsafe {
        ndtune_split_plan(
            500,
            3,
            wgs.as_ptr(),
            times.as_ptr(),
            parts.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(last_error().contains("does not divide the global size 500"));
    let bad_time = [6.0, f64::NAN, 1.0];
    let s = unsafe {
        ndtune_split_plan(
            512,
            3,
            wgs.as_ptr(),
            bad_time.as_ptr(),
            parts.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(last_error().contains("device 1: time NaN ms"));
    let s = unsafe {
        ndtune_split_plan(
            512,
            3,
            null(),
            times.as_ptr(),
            parts.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(last_error().contains("`work_group` is NULL"));
    let s = unsafe { ndtune_split_plan(512, 0, null(), null(), null_mut(), null_mut()) };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
}

/// A predictor of the trained tree, the first OpenCL device, and a checked prediction call.
struct Fixture {
    _dir: tempfile::TempDir,
    model_path: PathBuf,
    predictor: *mut ndtune_predictor,
    device: ndtune_capi::cl_device_id,
    profile: ndtune_device::DeviceProfile,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let model_path = train_tree(dir.path());
        let path = CString::new(model_path.to_str().unwrap()).unwrap();
        let predictor = unsafe { ndtune_predictor_load(path.as_ptr()) };
        assert!(!predictor.is_null(), "{}", last_error());
        let cl = ndtune_cl::discover()
            .expect("these tests need an OpenCL device (PoCL)")
            .remove(0);
        Fixture {
            _dir: dir,
            model_path,
            predictor,
            device: cl.id(),
            profile: ndtune_device::backend::Device::profile(&cl).clone(),
        }
    }

    fn predict(
        &self,
        source: *const c_char,
        options: *const c_char,
        global: [usize; 2],
        shape: *const ndtune_stencil_shape,
    ) -> Result<[usize; 2], (ndtune_status, String)> {
        let mut local = [0usize; 2];
        match unsafe {
            ndtune_predict_local_size(
                self.predictor,
                self.device,
                source,
                options,
                global.as_ptr(),
                shape,
                local.as_mut_ptr(),
            )
        } {
            ndtune_status::NDTUNE_OK => Ok(local),
            s => Err((s, last_error())),
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        unsafe { ndtune_predictor_free(self.predictor) };
    }
}

#[test]
fn an_in_process_prediction_is_the_models_on_independent_features_and_legal() {
    let f = Fixture::new();
    let source = CString::new(BLUR).unwrap();
    let options = CString::new("-D UNUSED=1").unwrap();
    let int = CString::new("int").unwrap();
    let model = Model::load(&f.model_path).unwrap();
    for (global, border, input) in [
        ([1000usize, 700usize], [1u32, 1, 1, 1], "float"),
        ([4096, 4096], [2, 0, 3, 1], "int"),
        ([64, 8], [0, 0, 0, 0], "float"),
    ] {
        let shape = ndtune_stencil_shape {
            north: border[0],
            south: border[1],
            east: border[2],
            west: border[3],
            input_type: if input == "int" { int.as_ptr() } else { null() },
            output_type: null(),
        };
        let got = f
            .predict(source.as_ptr(), options.as_ptr(), global, &shape)
            .unwrap();
        // Twice: the second from the caches, the same answer.
        let again = f
            .predict(source.as_ptr(), options.as_ptr(), global, &shape)
            .unwrap();
        assert_eq!(got, again);

        let dataset = Dataset {
            rows: global[1] as u64,
            cols: global[0] as u64,
            input: input.into(),
            output: "float".into(),
            border,
        };
        let features = scenario_features(&f.profile, BLUR, "-D UNUSED=1", &dataset).unwrap();
        let limits =
            Limits::from_features(|n| features.get(n), &LimitOverrides::default()).unwrap();
        let pairs: Vec<(String, f64)> = model
            .feature_names
            .iter()
            .map(|n| (n.clone(), features.get(n).unwrap()))
            .collect();
        let expected = model
            .predict(&pairs, |w| limits.allows(w))
            .unwrap()
            .unwrap()
            .wg;
        assert_eq!(
            got,
            [expected.0 as usize, expected.1 as usize],
            "{global:?}"
        );
        assert!(limits.allows((got[0] as u64, got[1] as u64)));
    }
}

#[test]
fn prediction_arguments_are_checked() {
    let f = Fixture::new();
    let source = CString::new(BLUR).unwrap();
    let global = [256usize, 256];
    let mut local = [0usize; 2];
    let call = |p, d, s, g: *const usize, l: *mut usize| unsafe {
        ndtune_predict_local_size(p, d, s, null(), g, null(), l)
    };
    let check = |status: ndtune_status, message: &str| {
        assert_eq!(status, ndtune_status::NDTUNE_ERR_ARGUMENT, "{message}");
        let e = last_error();
        assert!(e.contains(message), "{e}");
    };
    let (s, g, l) = (source.as_ptr(), global.as_ptr(), local.as_mut_ptr());
    check(call(null_mut(), f.device, s, g, l), "`predictor` is NULL");
    check(call(f.predictor, null_mut(), s, g, l), "`device` is NULL");
    check(
        call(f.predictor, f.device, null(), g, l),
        "`kernel_source` is NULL",
    );
    check(
        call(f.predictor, f.device, s, null(), l),
        "`global` is NULL",
    );
    check(
        call(f.predictor, f.device, s, g, null_mut()),
        "`local` is NULL",
    );

    let bad = [b'_', 0xc3, 0x28, 0];
    let e = f
        .predict(bad.as_ptr().cast(), null(), global, null())
        .unwrap_err();
    assert_eq!(e.0, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(e.1.contains("`kernel_source` is not UTF-8"), "{}", e.1);

    let e = f
        .predict(source.as_ptr(), null(), [0, 5], null())
        .unwrap_err();
    assert_eq!(e.0, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(e.1.contains("global {0, 5}"), "{}", e.1);

    let flaot = CString::new("flaot").unwrap();
    let shape = ndtune_stencil_shape {
        north: 1,
        south: 1,
        east: 1,
        west: 1,
        input_type: null(),
        output_type: flaot.as_ptr(),
    };
    let e = f
        .predict(source.as_ptr(), null(), global, &shape)
        .unwrap_err();
    assert_eq!(e.0, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(e.1.contains("output type `flaot`"), "{}", e.1);

    let broken = CString::new("__kernel void k(__global float *x) { x[0] = ; }").unwrap();
    let e = f
        .predict(broken.as_ptr(), null(), global, null())
        .unwrap_err();
    assert_eq!(e.0, ndtune_status::NDTUNE_ERR_KERNEL);
    assert!(
        e.1.contains("cannot extract the kernel's features"),
        "{}",
        e.1
    );

    // A border whose tile cannot fit in any local memory: no legal size.
    let huge = ndtune_stencil_shape {
        north: 1 << 20,
        south: 1 << 20,
        east: 1 << 20,
        west: 1 << 20,
        input_type: null(),
        output_type: null(),
    };
    let e = f
        .predict(source.as_ptr(), null(), global, &huge)
        .unwrap_err();
    assert_eq!(e.0, ndtune_status::NDTUNE_ERR_NO_LEGAL_SIZE);

    // In process, observations are not kept, and say so.
    let local = [8usize, 8];
    let s = unsafe {
        ndtune_observe(
            f.predictor,
            f.device,
            source.as_ptr(),
            null(),
            global.as_ptr(),
            null(),
            local.as_ptr(),
            1.5,
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_UNSUPPORTED);
    assert!(last_error().contains("report them to a service"));
    let s = unsafe {
        ndtune_observe(
            f.predictor,
            f.device,
            source.as_ptr(),
            null(),
            global.as_ptr(),
            null(),
            local.as_ptr(),
            f64::NAN,
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(last_error().contains("runtime_ms NaN"));
}

/// `ndtune_pick`'s arguments are checked, and a wisdom file that cannot be used still gives a
/// handle whose picks say why (the program keeps its own configuration).
#[test]
fn picks_check_their_arguments_and_unusable_wisdom_says_why() {
    assert!(unsafe { ndtune_wisdom_open(null()) }.is_null());
    assert!(last_error().contains("`path` is NULL"));
    let dir = tempfile::tempdir().unwrap();
    let missing = CString::new(dir.path().join("none.json").to_str().unwrap()).unwrap();
    let w = unsafe { ndtune_wisdom_open(missing.as_ptr()) };
    assert!(!w.is_null());
    let kernel = CString::new("saxpy").unwrap();
    let mut out = std::mem::MaybeUninit::<ndtune_config>::uninit();
    // A device id the API never reads: the arguments fail before it does.
    let device = 1usize as cl_device_id;
    let pick = |k: *const c_char, d: cl_device_id, c: *const c_char, o: *mut ndtune_config| unsafe {
        ndtune_pick(w, k, d, c, o)
    };
    assert_eq!(
        pick(null(), device, null(), out.as_mut_ptr()),
        ndtune_status::NDTUNE_ERR_ARGUMENT
    );
    assert!(last_error().contains("`kernel` is NULL"));
    assert_eq!(
        pick(kernel.as_ptr(), null_mut(), null(), out.as_mut_ptr()),
        ndtune_status::NDTUNE_ERR_ARGUMENT
    );
    assert!(last_error().contains("`device` is NULL"));
    assert_eq!(
        pick(kernel.as_ptr(), device, null(), null_mut()),
        ndtune_status::NDTUNE_ERR_ARGUMENT
    );
    let bad = CString::new("N768").unwrap();
    assert_eq!(
        pick(kernel.as_ptr(), device, bad.as_ptr(), out.as_mut_ptr()),
        ndtune_status::NDTUNE_ERR_ARGUMENT
    );
    assert!(
        last_error().contains("`N768` is not NAME=VALUE"),
        "{}",
        last_error()
    );
    assert_eq!(
        unsafe {
            ndtune_pick(
                null_mut(),
                kernel.as_ptr(),
                device,
                null(),
                out.as_mut_ptr(),
            )
        },
        ndtune_status::NDTUNE_ERR_ARGUMENT
    );
    unsafe { ndtune_wisdom_free(w) };
    unsafe { ndtune_wisdom_free(null_mut()) };
}

/// Two host threads drive "their devices" through one schedule: every scheduler hands out the
/// range exactly once; a device that fails gives its chunk to the other; bad input is named.
#[test]
fn schedules_hand_each_item_to_one_device_and_take_back_a_failed_ones() {
    use ndtune_capi::{
        ndtune_schedule, ndtune_schedule_fail, ndtune_schedule_free, ndtune_schedule_new,
        ndtune_schedule_next,
    };
    use std::ffi::CString;
    struct Shared(*mut ndtune_schedule);
    unsafe impl Send for Shared {}
    unsafe impl Sync for Shared {}
    let wgs = [16usize, 32];
    let times = [2.0, 1.0];
    for (name, fail) in [
        ("static", false),
        ("dynamic", false),
        ("hguided", false),
        ("dynamic", true),
    ] {
        let c = CString::new(name).unwrap();
        let mut handle = null_mut();
        let s = unsafe {
            ndtune_schedule_new(
                c.as_ptr(),
                4096,
                2,
                wgs.as_ptr(),
                times.as_ptr(),
                8,
                &mut handle,
            )
        };
        assert_eq!(s, ndtune_status::NDTUNE_OK, "{}", last_error());
        let shared = std::sync::Arc::new(Shared(handle));
        let threads: Vec<_> = (0..2)
            .map(|device| {
                let shared = std::sync::Arc::clone(&shared);
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        let (mut offset, mut size, mut overlap) = (0, 0, 0);
                        let s = unsafe {
                            ndtune_schedule_next(
                                shared.0,
                                device,
                                &mut offset,
                                &mut size,
                                &mut overlap,
                            )
                        };
                        assert_eq!(s, ndtune_status::NDTUNE_OK);
                        if size == 0 {
                            return got;
                        }
                        if fail && device == 1 {
                            // Device 1 fails at its first chunk: it goes back to device 0.
                            let mut back = 0;
                            unsafe { ndtune_schedule_fail(shared.0, 1, &mut back) };
                            assert_eq!(back, size);
                            return got;
                        }
                        assert_eq!(overlap, 0);
                        got.push((offset, size));
                    }
                })
            })
            .collect();
        let mut all: Vec<(usize, usize)> = Vec::new();
        let per_device: Vec<Vec<(usize, usize)>> =
            threads.into_iter().map(|t| t.join().unwrap()).collect();
        for got in &per_device {
            all.extend(got);
        }
        all.sort_unstable();
        let mut at = 0;
        for (offset, size) in &all {
            assert_eq!(*offset, at, "{name}: {all:?}");
            at += size;
        }
        assert_eq!(at, 4096, "{name}");
        match (name, fail) {
            ("static", _) => assert!(per_device.iter().all(|g| g.len() == 1)),
            ("dynamic", false) => assert_eq!(all.len(), 8),
            ("dynamic", true) => assert!(per_device[1].is_empty()),
            _ => assert!(all.len() > 2),
        }
        unsafe { ndtune_schedule_free(handle) };
    }
    let mut handle = null_mut();
    let auto = CString::new("auto").unwrap();
    let s = unsafe {
        ndtune_schedule_new(
            auto.as_ptr(),
            4096,
            2,
            wgs.as_ptr(),
            times.as_ptr(),
            0,
            &mut handle,
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(last_error().contains("name one of"), "{}", last_error());
    let dynamic = CString::new("dynamic").unwrap();
    let s = unsafe {
        ndtune_schedule_new(
            dynamic.as_ptr(),
            4010,
            2,
            wgs.as_ptr(),
            times.as_ptr(),
            0,
            &mut handle,
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(last_error().contains("does not divide the global size 4010"));
    let s = unsafe {
        ndtune_schedule_new(
            dynamic.as_ptr(),
            4096,
            2,
            wgs.as_ptr(),
            times.as_ptr(),
            0,
            &mut handle,
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_OK);
    let (mut o, mut z) = (0, 0);
    let s = unsafe { ndtune_schedule_next(handle, 2, &mut o, &mut z, null_mut()) };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT);
    assert!(last_error().contains("device 2: the schedule has 2 devices"));
    unsafe { ndtune_schedule_free(handle) };
}

/// `ndtune_pick_preferring` picks from a kernel's tuned Pareto front on a live device: the
/// fastest under a power limit, the least power within a factor of the fastest; a preference
/// nothing meets says so, a malformed one is an argument error.
#[test]
fn a_preference_picks_from_the_tuned_front_through_the_c_api() {
    let cl = ndtune_cl::discover()
        .expect("these tests need an OpenCL device (PoCL)")
        .remove(0);
    let profile = ndtune_device::backend::Device::profile(&cl).clone();
    let spec = "[kernel]\nname = \"scale\"\nsource = \"scale.cl\"\n[constants]\nN = 4096\n[params]\nWG = [8, 16, 32, 64]\n[launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n";
    let wisdom = serde_json::json!({"schema": 1, "ndtune": "test", "kernels": [{
        "kernel": "scale", "spec_file": "scale.toml", "spec": spec, "defines": ["WG"],
        "objective": {"metric": "time", "unit": "ms", "higher_is_better": false},
        "more_objectives": [{"metric": "power_w", "unit": "W", "higher_is_better": false}],
        "entries": [{"device": profile, "constants": {"N": 4096}, "config": {"WG": 32},
                     "objective": 0.5, "setup": "0123456789abcdef", "measured": 4,
                     "front": [{"config": {"WG": 32}, "values": [0.5, 300.0]},
                               {"config": {"WG": 16}, "values": [0.7, 180.0]},
                               {"config": {"WG": 8}, "values": [1.2, 120.0]}]}]}]});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json");
    std::fs::write(&path, wisdom.to_string()).unwrap();
    let path = CString::new(path.to_str().unwrap()).unwrap();
    let w = unsafe { ndtune_wisdom_open(path.as_ptr()) };
    assert!(!w.is_null(), "{}", last_error());
    let kernel = CString::new("scale").unwrap();
    let pick = |prefer: Option<&str>| -> Result<String, (ndtune_status, String)> {
        let prefer = prefer.map(|p| CString::new(p).unwrap());
        let mut out = std::mem::MaybeUninit::<ndtune_config>::uninit();
        let s = unsafe {
            ndtune_pick_preferring(
                w,
                kernel.as_ptr(),
                cl.id(),
                null(),
                prefer.as_ref().map_or(null(), |p| p.as_ptr()),
                out.as_mut_ptr(),
            )
        };
        if s != ndtune_status::NDTUNE_OK {
            return Err((s, last_error()));
        }
        let out = unsafe { out.assume_init() };
        Ok(unsafe { CStr::from_ptr(out.params) }
            .to_str()
            .unwrap()
            .to_string())
    };
    assert_eq!(
        pick(None).unwrap(),
        "WG=32",
        "the best by the first objective"
    );
    assert_eq!(pick(Some("time,power_w<=200")).unwrap(), "WG=16");
    assert_eq!(pick(Some("power_w,time<=3x")).unwrap(), "WG=8");
    let (s, why) = pick(Some("time,power_w<=100")).unwrap_err();
    assert_eq!(s, ndtune_status::NDTUNE_ERR_NO_CONFIG, "{why}");
    assert!(why.contains("the least power_w is 120"), "{why}");
    let (s, why) = pick(Some("time,power_w")).unwrap_err();
    assert_eq!(s, ndtune_status::NDTUNE_ERR_ARGUMENT, "{why}");
    assert!(why.contains("is not NAME<=VALUE"), "{why}");
    unsafe { ndtune_wisdom_free(w) };
}

/// `ndtune_pick_cuda` reads its device through the CUDA driver: where there is none (CI), the
/// pick says so with its own status, and an ordinal below 0 is an argument error.
#[test]
fn a_cuda_pick_without_a_cuda_driver_says_so() {
    if ndtune_cuda::driver_version().is_ok() {
        return; // a CUDA machine: scripts/test-gpu.sh picks on its GPU
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json");
    std::fs::write(&path, r#"{"schema": 1, "ndtune": "test", "kernels": []}"#).unwrap();
    let path = CString::new(path.to_str().unwrap()).unwrap();
    let w = unsafe { ndtune_wisdom_open(path.as_ptr()) };
    let kernel = CString::new("saxpy").unwrap();
    let mut out = std::mem::MaybeUninit::<ndtune_config>::uninit();
    let pick = |ordinal: i32, out: *mut ndtune_config| unsafe {
        ndtune_pick_cuda(w, kernel.as_ptr(), ordinal, null(), null(), out)
    };
    assert_eq!(pick(0, out.as_mut_ptr()), ndtune_status::NDTUNE_ERR_CUDA);
    assert!(
        last_error().contains("cannot read CUDA device 0") && last_error().contains("libcuda"),
        "{}",
        last_error()
    );
    assert_eq!(
        pick(-1, out.as_mut_ptr()),
        ndtune_status::NDTUNE_ERR_ARGUMENT
    );
    assert!(
        last_error().contains("an ordinal is 0 or more"),
        "{}",
        last_error()
    );
    unsafe { ndtune_wisdom_free(w) };
}
