//! A predictor through a service that is restarted under it: the service forgets the kernel
//! hashes it gave, and the predictor sends the source again instead of failing. The service runs
//! in a child process (this test executable, running the ignored `service_process`), so that it
//! can be killed and started again on the same Unix socket.

use ndtune_capi::*;
use ndtune_learn::data::Data;
use ndtune_learn::model::Model;
use ndtune_learn::models::ClassifierKind;
use std::ffi::{CStr, CString};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::ptr::null;
use std::time::{Duration, Instant};

const MODEL_ENV: &str = "NDTUNE_CAPI_TEST_MODEL";
const SOCKET_ENV: &str = "NDTUNE_CAPI_TEST_SOCKET";

#[test]
#[ignore = "the service process of `a_restarted_service_is_sent_the_source_again`, which runs it"]
fn service_process() {
    let options = ndtune_serve::Options {
        model_path: std::env::var(MODEL_ENV).unwrap().into(),
        store: None,
        devices: Vec::new(),
        retrain_after: 1_000,
        seed: 1,
        wisdom: None,
    };
    let listen = ndtune_serve::Listen::Unix(std::env::var(SOCKET_ENV).unwrap().into());
    ndtune_serve::run(options, ndtune_serve::HttpOptions::new(listen), |_| {}).unwrap();
}

/// The service process, killed when dropped (also when the test fails).
struct Service(Child);

impl Service {
    fn stop(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the service process and waits until it answers on `socket`.
fn start(model: &Path, socket: &Path) -> Service {
    let child = Service(
        Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "service_process"])
            .env(MODEL_ENV, model)
            .env(SOCKET_ENV, socket)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while UnixStream::connect(socket).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the service does not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(ndtune_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_restarted_service_is_sent_the_source_again() {
    let dir = tempfile::tempdir().unwrap();
    let model: PathBuf = dir.path().join("tree.json");
    let data = Data::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../data/stencils-2026-11-21/stencils-h100-xeon.csv.gz"),
    )
    .unwrap();
    Model::train(&data, ClassifierKind::DecisionTree, 1)
        .unwrap()
        .save(&model)
        .unwrap();
    let socket = dir.path().join("serve.sock");
    let device = ndtune_cl::discover()
        .expect("this test needs an OpenCL device (PoCL)")
        .remove(0)
        .id();

    let service = start(&model, &socket);
    let address = CString::new(format!("unix:{}", socket.display())).unwrap();
    let predictor = unsafe { ndtune_predictor_connect(address.as_ptr()) };
    assert!(!predictor.is_null(), "{}", last_error());
    let source =
        CString::new("__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }")
            .unwrap();
    let global = [512usize, 256];
    let predict = || {
        let mut local = [0usize; 2];
        let s = unsafe {
            ndtune_predict_local_size(
                predictor,
                device,
                source.as_ptr(),
                null(),
                global.as_ptr(),
                null(),
                local.as_mut_ptr(),
            )
        };
        assert_eq!(s, ndtune_status::NDTUNE_OK, "{}", last_error());
        local
    };
    // The source, then its hash.
    let first = predict();
    assert_eq!(predict(), first);

    service.stop();
    let service = start(&model, &socket);
    // The new service does not know the hash: the predictor sends the source again.
    assert_eq!(predict(), first);
    let s = unsafe {
        ndtune_observe(
            predictor,
            device,
            source.as_ptr(),
            null(),
            global.as_ptr(),
            null(),
            first.as_ptr(),
            NDTUNE_REFUSED,
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_OK, "{}", last_error());

    service.stop();
    // No service at all: a service error naming the address.
    let mut local = [0usize; 2];
    let s = unsafe {
        ndtune_predict_local_size(
            predictor,
            device,
            source.as_ptr(),
            null(),
            global.as_ptr(),
            null(),
            local.as_mut_ptr(),
        )
    };
    assert_eq!(s, ndtune_status::NDTUNE_ERR_SERVICE);
    assert!(last_error().contains("cannot reach the service at unix:"));
    unsafe { ndtune_predictor_free(predictor) };
}
