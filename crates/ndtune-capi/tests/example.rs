//! `examples/c/blur.c` built with its Makefile against `include/ndtune.h` and the
//! `libndtune_capi.so` cargo built for these tests, and run on the first OpenCL device (PoCL):
//! in process with a model trained here, and through a service started here.

use ndtune_learn::data::Data;
use ndtune_learn::features::{dataset_features, device_features, Dataset};
use ndtune_learn::model::Model;
use ndtune_learn::models::ClassifierKind;
use ndtune_serve::client::{Address, Client};
use ndtune_serve::limits::{LimitOverrides, Limits};
use ndtune_serve::{HttpOptions, Listen, Options};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn train_tree(dir: &Path) -> PathBuf {
    let data =
        Data::load(&Path::new(ROOT).join("data/stencils-2026-11-21/stencils-h100-xeon.csv.gz"))
            .unwrap();
    let path = dir.join("tree.json");
    Model::train(&data, ClassifierKind::DecisionTree, 1)
        .unwrap()
        .save(&path)
        .unwrap();
    path
}

/// Where cargo put the cdylib of the crate under test: target/<profile>/deps/, beside the test
/// executable, and target/<profile>/ when the crate was built alone (`cargo test -p`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    let candidates = [deps.clone(), deps.parent().unwrap().to_path_buf()];
    let found = candidates
        .into_iter()
        .find(|d| d.join("libndtune_capi.so").is_file());
    match found {
        Some(dir) => dir,
        None => panic!(
            "no libndtune_capi.so in {} or its parent: cargo builds the cdylib with the tests of ndtune-capi",
            deps.display()
        ),
    }
}

/// Builds the example with `make -C examples/c` into `dir`; a missing compiler or missing
/// OpenCL headers fail with what to install.
fn build_example(dir: &Path) -> PathBuf {
    for tool in ["make", "cc"] {
        if Command::new(tool).arg("--version").output().is_err() {
            panic!("`{tool}` is not installed: the C example needs it (Debian: apt-get install gcc libc6-dev make)");
        }
    }
    let out = dir.join("blur");
    let built = Command::new("make")
        .arg("-C")
        .arg(Path::new(ROOT).join("examples/c"))
        .arg(format!("LIBDIR={}", library_dir().display()))
        .arg(format!("OUT={}", out.display()))
        .arg(format!("SAXPY={}", dir.join("saxpy").display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&built.stderr).to_string()
        + &String::from_utf8_lossy(&built.stdout);
    assert!(
        !log.contains("CL/cl.h: No such file"),
        "the OpenCL headers are missing (Debian: apt-get install ocl-icd-opencl-dev opencl-c-headers):\n{log}"
    );
    assert!(
        built.status.success(),
        "building the C example failed:\n{log}"
    );
    out
}

/// Runs the example and checks what it printed; answers its local size.
fn run_example(program: &Path, args: &[&str]) -> (String, [u64; 2]) {
    let run = Command::new(program).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    let stderr = String::from_utf8_lossy(&run.stderr);
    eprintln!("$ blur {}\n{stdout}{stderr}", args.join(" "));
    assert!(
        run.status.success(),
        "the example failed:\n{stdout}{stderr}"
    );
    let line = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line:\n{stdout}"))
            .to_string()
    };
    let size = line("local size: ");
    let (wc, rest) = size.split_once(" x ").unwrap();
    let wr = rest.split_whitespace().next().unwrap();
    let local = [wc.parse().unwrap(), wr.parse().unwrap()];

    let cached = line("cached prediction: ");
    let micros: f64 = cached.split_whitespace().next().unwrap().parse().unwrap();
    assert!(micros.is_finite() && micros > 0.0, "{cached}");
    assert!(line("verified: ").starts_with("1000 x 700 cells"));

    // Two parts of the split rows, each whole work-groups, covering them.
    let total: u64 = line("split of ")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut covered = 0;
    for i in 0..2 {
        let part = line(&format!("  part {i}: "));
        let words: Vec<&str> = part.split_whitespace().collect();
        let (size, groups): (u64, u64) = (words[3].parse().unwrap(), words[5].parse().unwrap());
        let wg = local[1] * (i + 1);
        assert_eq!(size, groups * wg, "{part}");
        covered += size;
    }
    assert_eq!(covered, total);
    (stdout, local)
}

/// Whether `local` fits the first device and the blur's tile (a one-cell border of floats).
fn assert_legal(local: [u64; 2]) {
    let device = ndtune_cl::discover()
        .expect("the example needs an OpenCL device (PoCL)")
        .remove(0);
    let mut features = device_features(ndtune_device::backend::Device::profile(&device));
    features.extend(dataset_features(&Dataset {
        rows: 700,
        cols: 1000,
        input: "float".into(),
        output: "float".into(),
        border: [1; 4],
    }));
    let get = |n: &str| features.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    let limits = Limits::from_features(get, &LimitOverrides::default()).unwrap();
    assert!(
        limits.allows((local[0], local[1])),
        "{local:?} is not legal: {limits:?}"
    );
}

#[test]
fn the_c_example_runs_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let program = build_example(dir.path());
    let model = train_tree(dir.path());
    let (stdout, local) = run_example(&program, &["--model", model.to_str().unwrap()]);
    assert!(stdout.contains("(in process)"));
    assert!(stdout.contains("observed: not kept (an in-process predictor keeps no observations"));
    assert_legal(local);

    let run = Command::new(&program)
        .args(["--model", "/nonexistent/m.json"])
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("/nonexistent/m.json"));
}

#[test]
fn the_c_example_runs_through_a_service() {
    let dir = tempfile::tempdir().unwrap();
    let program = build_example(dir.path());
    let options = Options {
        model_path: train_tree(dir.path()),
        store: None,
        // No device of its own: the C API sends the whole profile.
        devices: Vec::new(),
        retrain_after: 1_000,
        seed: 1,
        wisdom: None,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    // The service runs until the test process ends.
    std::thread::spawn(move || {
        let http = HttpOptions::new(Listen::Tcp("127.0.0.1:0".into()));
        ndtune_serve::run(options, http, |address| tx.send(address).unwrap())
    });
    let address = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the service listens");
    let (stdout, local) = run_example(&program, &["--service", &address]);
    assert!(stdout.contains("(through the service)"));
    assert!(stdout.contains("reported to the service"));
    assert_legal(local);

    let mut client = Client::new(Address::parse(&address).unwrap(), Duration::from_secs(5));
    let health = client.get("/v1/health").unwrap().json().unwrap();
    assert_eq!(health["observations"], 1, "{health}");
}
