//! `ndtune serve` end to end: the real binary on loopback TCP or a Unix socket, a model trained
//! on the project's collected data, requests good and bad, observations and retraining, model
//! reloads, slow and concurrent clients, graceful shutdown.

mod common;

use common::{fails, json, ndtune, write};
use ndtune_serve::client::{Address, Client, Response};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A decision tree trained once on the shipped CSV (fast to train and to load).
fn model() -> PathBuf {
    static MODEL: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    MODEL.get_or_init(|| trained("tree")).1.clone()
}

/// A classifier of `kind` trained on the shipped CSV, in a folder of its own.
fn trained(kind: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{kind}.json"));
    let csv = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/stencils-2026-11-21/stencils-h100-xeon.csv.gz");
    ndtune()
        .args(["learn", "train", "--model", kind, "--out"])
        .arg(&path)
        .arg("--data")
        .arg(csv)
        .assert()
        .success();
    (dir, path)
}

/// A running `ndtune serve`, stopped with SIGTERM when dropped.
struct Server {
    child: Child,
    address: String,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        Server::start_with(args, |_| {})
    }

    /// [`Server::start`] with the command changed by `change` first.
    fn start_with(args: &[&str], change: impl FnOnce(&mut std::process::Command)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr");
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_ndtune"));
        command
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        change(&mut command);
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| {
                panic!(
                    "no address announced: {line:?}; stderr: {}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                )
            })
            .to_string();
        Server {
            child,
            address,
            stderr,
            _dir: dir,
        }
    }

    fn tcp(extra: &[&str]) -> Server {
        let model = model();
        let mut args = vec![
            "--model",
            model.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(extra);
        Server::start(&args)
    }

    fn client(&self) -> Client {
        Client::new(
            Address::parse(&self.address).unwrap(),
            Duration::from_secs(30),
        )
    }

    fn host_port(&self) -> String {
        self.address.trim_start_matches("http://").to_string()
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client().post_json(path, body).unwrap();
        (r.status, r.json().unwrap())
    }

    fn health(&self) -> Value {
        self.client().get("/v1/health").unwrap().json().unwrap()
    }

    fn metrics(&self) -> String {
        String::from_utf8(self.client().get("/metrics").unwrap().body).unwrap()
    }

    /// Waits until the model in use has `version`.
    fn wait_for_version(&self, version: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let h = self.health();
            if h["model"]["version"] == version {
                return h;
            }
            assert!(
                Instant::now() < deadline,
                "model version {version} never came: {h}; stderr: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn signal(&self, signal: i32) {
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }

    /// SIGTERM, then the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const KERNEL: &str = "kernel void scale(global const float* in, global float* out) {
    size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);
    out[i] = 2.0f * in[i];
}";

fn scenario(device: &str, border: [u32; 4], input: &str) -> Value {
    json!({
        "device": device,
        "kernel": {"source": KERNEL},
        "dataset": {"rows": 1024, "cols": 2048, "input": input, "output": "float", "border": border},
    })
}

fn local(v: &Value) -> (u64, u64) {
    let l = v["local"]
        .as_array()
        .unwrap_or_else(|| panic!("no local: {v}"));
    (l[0].as_u64().unwrap(), l[1].as_u64().unwrap())
}

/// Whether `(wc, wr)` respects the limits the service answered with.
fn within(v: &Value, (wc, wr): (u64, u64)) -> bool {
    let l = &v["limits"];
    let n = |k: &str| l[k].as_u64().unwrap();
    let items = l["max_work_item_sizes"].as_array().unwrap();
    wc * wr <= n("max_work_group_size")
        && wc <= items[0].as_u64().unwrap()
        && wr <= items[1].as_u64().unwrap()
}

#[test]
fn predictions_are_legal_by_scenario_by_hash_and_by_features() {
    let server = Server::tcp(&[]);
    let (status, first) = server.post("/v1/predict", &scenario("gtx-titan", [1; 4], "float"));
    assert_eq!(status, 200, "{first}");
    assert!(within(&first, local(&first)), "{first}");
    assert_eq!(first["model"], "tree");
    assert_eq!(first["model_version"], 1);
    assert!(first["micros"].as_u64().is_some());
    // The same kernel by its hash: the same scenario and answer.
    let hash = first["kernel_hash"].as_str().unwrap();
    let mut by_hash = scenario("gtx-titan", [1; 4], "float");
    by_hash["kernel"] = json!({ "hash": hash });
    let (status, again) = server.post("/v1/predict", &by_hash);
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        (local(&again), &again["scenario"]),
        (local(&first), &first["scenario"])
    );
    // Tighter limits in the request bind the answer.
    let mut small = scenario("gtx-titan", [1; 4], "float");
    small["limits"] = json!({"max_work_group_size": 8, "max_work_item_sizes": [4, 4]});
    let (status, tight) = server.post("/v1/predict", &small);
    assert_eq!(status, 200, "{tight}");
    let (wc, wr) = local(&tight);
    assert!(wc * wr <= 8 && wc <= 4 && wr <= 4, "{tight}");
    // A profile object stands in for a device name.
    let profile = json(&["devices", "--builtin", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "GeForce GT 550M")
        .cloned()
        .expect("the GT 550M profile");
    let (status, by_profile) = server.post(
        "/v1/predict",
        &json!({"device": profile, "kernel": {"hash": hash},
                "dataset": {"rows": 1024, "cols": 2048, "border": [1, 1, 1, 1]}}),
    );
    assert_eq!(status, 200, "{by_profile}");
    let by_name = server
        .post("/v1/predict", &scenario("gt550m", [1; 4], "float"))
        .1;
    assert_eq!(local(&by_profile), local(&by_name));

    // Features computed by `ndtune learn features` give what `ndtune learn predict` says.
    let dir = tempfile::tempdir().unwrap();
    ndtune()
        .args(["stencil", "gen", "--seed", "7", "--count", "1", "--out"])
        .arg(dir.path())
        .assert()
        .success();
    let stencil = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".stencil.toml"))
        .unwrap();
    let stencil = stencil.to_str().unwrap();
    let on = ["--size", "512x256", "--profile", "gtx-titan", "--json"];
    let features = json(&[&["learn", "features", stencil][..], &on].concat());
    let (status, served) = server.post("/v1/predict", &json!({ "features": features }));
    assert_eq!(status, 200, "{served}");
    let model = model();
    let cli = json(
        &[
            &[
                "learn",
                "predict",
                "--model",
                model.to_str().unwrap(),
                "--kernel",
                stencil,
            ][..],
            &on,
        ]
        .concat(),
    );
    assert_eq!(
        json!(served["local"]),
        cli["wg"],
        "service {served}, CLI {cli}"
    );
    assert_eq!(served["fallback_used"], cli["fell_back"]);
}

/// A user's own CSV in the collect format with features of its own: in scenarios of much
/// arithmetic 16x16 is fastest, in the others 64x4.
fn user_csv(dir: &Path) -> String {
    let mut text =
        String::from("scenario,device,kernel,dataset,f_rows,f_arith,wg_c,wg_r,runtime_ms,status\n");
    for i in 0..12u32 {
        let (rows, arith) = (256 << (i % 3), if i % 2 == 0 { 4 } else { 40 });
        let (fast, slow) = if arith > 10 {
            ((16, 16), (64, 4))
        } else {
            ((64, 4), (16, 16))
        };
        for ((wc, wr), ms) in [(fast, 1.0), (slow, 2.0), ((8, 8), 3.0)] {
            text +=
                &format!("s{i},gpu,k{i},{rows}x{rows},{rows},{arith},{wc},{wr},{ms},measured\n");
        }
    }
    write(dir, "mine.csv", &text)
}

#[test]
fn a_model_trained_on_a_users_own_features_is_served_with_limits_from_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let csv = user_csv(dir.path());
    let model = dir.path().join("mine.json");
    ndtune()
        .args(["learn", "train", "--model", "tree", "--data", &csv, "--out"])
        .arg(&model)
        .assert()
        .success();
    let server = Server::start(&[
        "--model",
        model.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let limits = json!({"max_work_group_size": 256, "max_work_item_sizes": [256, 256],
                        "local_mem_size": 32768, "border": [1, 1, 1, 1], "input_bytes": 4});
    // Its own features, one it does not use, and the limits the legality check needs.
    let (status, v) = server.post(
        "/v1/predict",
        &json!({"features": {"f_rows": 512, "f_arith": 40, "f_vendor": 3}, "limits": limits}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (local(&v), &v["fallback_used"]),
        ((16, 16), &json!(false)),
        "{v}"
    );
    assert_eq!(v["ignored_features"], json!(["f_vendor"]));
    assert_eq!(v["limits"]["border"], json!([1, 1, 1, 1]));
    let (_, low) = server.post(
        "/v1/predict",
        &json!({"features": {"f_rows": 512, "f_arith": 4}, "limits": limits}),
    );
    assert_eq!(local(&low), (64, 4), "{low}");
    assert!(low.get("ignored_features").is_none(), "{low}");
    // Tighter limits: 16x16 with its border, (16 + 2)^2 * 4 = 1296 bytes, no longer fits 1 KiB.
    let mut tight = limits.clone();
    tight["local_mem_size"] = json!(1024);
    let (_, small) = server.post(
        "/v1/predict",
        &json!({"features": {"f_rows": 512, "f_arith": 40}, "limits": tight}),
    );
    let (wc, wr) = local(&small);
    assert!(
        (wr + 2) * (wc + 2) * 4 <= 1024 && small["fallback_used"] == true,
        "{small}"
    );
    // Without limits, the answer says what to send.
    let (status, e) = server.post(
        "/v1/predict",
        &json!({"features": {"f_rows": 512, "f_arith": 4}}),
    );
    assert_eq!(status, 400, "{e}");
    let e = e["error"].as_str().unwrap();
    assert!(
        e.contains("`max_work_group_size` in the request's `limits`"),
        "{e}"
    );
    // A feature the model needs is still required.
    let (status, e) = server.post(
        "/v1/predict",
        &json!({"features": {"f_rows": 512}, "limits": limits}),
    );
    assert_eq!(status, 400, "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("missing feature `f_arith` the model needs"),
        "{e}"
    );
    // What the program then measured is taken back by the scenario id.
    let (status, o) = server.post(
        "/v1/observe",
        &json!({"scenario": v["scenario"], "local": [16, 16], "runtime_ms": 0.9}),
    );
    assert_eq!((status, &o["observations"]), (200, &json!(1)), "{o}");
    assert!(server.stop().success());
}

#[test]
fn bad_requests_get_a_4xx_and_a_message_and_the_service_carries_on() {
    let server = Server::tcp(&[]);
    let raw = |method: &str, path: &str, body: &[u8]| -> Response {
        server.client().request(method, path, Some(body)).unwrap()
    };
    let error = |r: &Response| r.json().unwrap()["error"].as_str().unwrap().to_string();
    let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
        ("POST", "/v1/predict", b"{\"features\": ".to_vec(), 400, "line 1 column"),
        ("POST", "/v1/predict", b"[1, 2]".to_vec(), 422, "invalid type"),
        ("POST", "/v1/predict", br#"{"features": {"f_x": "a"}}"#.to_vec(), 422, "invalid type"),
        ("POST", "/v1/predict", br#"{"feature": {}}"#.to_vec(), 422, "unknown field `feature`"),
        ("POST", "/v1/predict", br#"{"features": {}}"#.to_vec(), 400, "missing feature `f_dev_max_work_group_size`"),
        ("POST", "/v1/predict", br#"{"device": "gtx-titan"}"#.to_vec(), 400, "all of `device`, `kernel` and `dataset`"),
        (
            "POST",
            "/v1/predict",
            scenario("no-such-gpu", [1; 4], "float").to_string().into_bytes(),
            422,
            "unknown device `no-such-gpu`",
        ),
        (
            "POST",
            "/v1/predict",
            scenario("gtx-titan", [1; 4], "quaternion").to_string().into_bytes(),
            400,
            "`quaternion`",
        ),
        (
            "POST",
            "/v1/predict",
            br#"{"device": "gtx-titan", "kernel": {"hash": "0123"}, "dataset": {"rows": 8, "cols": 8}}"#.to_vec(),
            422,
            "unknown kernel hash `0123`",
        ),
        (
            "POST",
            "/v1/predict",
            br#"{"device": "gtx-titan", "kernel": {"source": "kernel void k( {"}, "dataset": {"rows": 8, "cols": 8}}"#.to_vec(),
            400,
            "clang cannot compile",
        ),
        ("POST", "/v1/predict", vec![b' '; (1 << 20) + 1], 413, "length limit"),
        ("POST", "/v1/observe", br#"{"scenario": "abc", "local": [8, 8], "runtime_ms": 1}"#.to_vec(), 422, "unknown scenario `abc`"),
        ("POST", "/v1/observe", br#"{"scenario": "abc", "local": [8, 8]}"#.to_vec(), 400, "`runtime_ms` or"),
        ("POST", "/v1/observe", br#"{"scenario": 5, "local": [8, 8], "refused": true}"#.to_vec(), 400, "`scenario`"),
        ("POST", "/v1/observe", br#"{"scenario": "abc", "local": [8], "refused": true}"#.to_vec(), 422, "invalid length"),
        ("POST", "/v1/observe", br#"{"scenario": "abc", "local": [8, 8, 8], "refused": true}"#.to_vec(), 422, "request body"),
        ("GET", "/v1/nothing", Vec::new(), 404, "no route GET /v1/nothing"),
    ];
    for (method, path, body, status, message) in &cases {
        let r = raw(method, path, body);
        assert_eq!(
            r.status,
            *status,
            "{method} {path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let e = error(&r);
        assert!(
            e.contains(message),
            "{method} {path}: `{e}` lacks `{message}`"
        );
    }
    let wrong_method = raw("GET", "/v1/predict", b"");
    assert_eq!(wrong_method.status, 405);
    assert!(
        error(&wrong_method).contains("method GET is not allowed on /v1/predict"),
        "{}",
        error(&wrong_method)
    );
    // Observations of a bad local size or runtime, for a scenario it predicted.
    let (_, p) = server.post("/v1/predict", &scenario("gtx-titan", [1; 4], "float"));
    for (body, message) in [
        (
            json!({"scenario": p["scenario"], "local": [0, 8], "runtime_ms": 1.0}),
            "positive",
        ),
        (
            json!({"scenario": p["scenario"], "local": [8, 8], "runtime_ms": -1.0}),
            "`runtime_ms`",
        ),
    ] {
        let (status, v) = server.post("/v1/observe", &body);
        assert_eq!(status, 400, "{v}");
        assert!(v["error"].as_str().unwrap().contains(message), "{v}");
    }
    assert_eq!(server.health()["status"], "ok");
    let metrics = server.metrics();
    for line in [
        "ndtune_requests_total{endpoint=\"/v1/predict\",status=\"413\"} 1",
        "ndtune_requests_total{endpoint=\"other\",status=\"404\"} 1",
        "ndtune_model_version 1",
    ] {
        assert!(metrics.contains(line), "no `{line}` in\n{metrics}");
    }
    assert!(metrics
        .contains("ndtune_request_duration_seconds_bucket{le=\"0.001\",endpoint=\"/v1/predict\"}"));
    assert!(server.stop().success());
}

#[test]
fn observations_are_stored_and_learnt_from_in_the_background_and_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("serve.db");
    let db_arg = db.to_str().unwrap();
    let server = Server::tcp(&["--db", db_arg, "--retrain-after", "3"]);
    let (_, p) = server.post("/v1/predict", &scenario("gtx-titan", [2; 4], "float"));
    let id = p["scenario"].as_str().unwrap();
    let observed = [
        json!({"scenario": id, "local": [8, 8], "runtime_ms": 3.0}),
        json!({"scenario": id, "local": [64, 2], "refused": true}),
        // By the scenario itself rather than its id.
        json!({"scenario": scenario("gtx-titan", [2; 4], "float"), "local": [32, 4], "runtime_ms": 1.5}),
    ];
    for (i, body) in observed.iter().enumerate() {
        let (status, v) = server.post("/v1/observe", body);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["scenario"], id);
        assert_eq!(v["observations"], i + 1);
        assert_eq!(v["stored"], i + 1);
    }
    let h = server.wait_for_version(2);
    assert_eq!(h["model"]["learnt_observations"], 3);
    // One observed scenario (its best size 32x4) joins the 140 training rows.
    assert_eq!(h["model"]["training_rows"], 141);
    assert!(server.metrics().contains("ndtune_retrains_total 1"));
    let (status, after) = server.post("/v1/predict", &scenario("gtx-titan", [2; 4], "float"));
    assert_eq!((status, after["model_version"].as_u64()), (200, Some(2)));
    assert!(
        server.log().contains("model version 2: trained again"),
        "{}",
        server.log()
    );
    assert!(server.stop().success());

    let stored = ndtune_store::Store::open(&db)
        .unwrap()
        .observations()
        .unwrap();
    assert_eq!(stored.len(), 3);
    assert_eq!(stored[1].runtime_ms, None);
    assert_eq!(stored[2].local, [32, 4]);
    // A restarted service learns from what the store holds.
    let again = Server::tcp(&["--db", db_arg, "--retrain-after", "3"]);
    let h = again.wait_for_version(2);
    assert_eq!(h["observations"], 3);
    assert_eq!(h["model"]["training_rows"], 141);
}

/// The features `ndtune learn features` computes for a generated stencil on the GTX Titan.
fn stencil_features() -> Value {
    let dir = tempfile::tempdir().unwrap();
    ndtune()
        .args(["stencil", "gen", "--seed", "3", "--count", "1", "--out"])
        .arg(dir.path())
        .assert()
        .success();
    let stencil = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".stencil.toml"))
        .unwrap();
    json(&[
        "learn",
        "features",
        stencil.to_str().unwrap(),
        "--size",
        "1024x512",
        "--profile",
        "gtx-titan",
        "--json",
    ])
}

/// Issue 22's poisoned observations: with naive Bayes, features near ±1e308 once made the
/// handler panic, and three observations of them a retrained model that panicked on every
/// prediction while health said `ok`, also after a restart with the store. Now such a request is
/// answered (flagged as beyond the model's reach), the observations are refused and counted,
/// normal predictions are unchanged, and the store's copies of such observations (as an older
/// ndtune kept them) are skipped at start with a count.
#[test]
fn poisoned_observations_are_refused_and_predictions_stay_unchanged_also_after_a_restart() {
    let (_dir, bayes) = trained("bayes");
    let bayes = bayes.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("serve.db");
    let db_arg = db.to_str().unwrap();
    let start = || {
        Server::start(&[
            "--model",
            bayes,
            "--listen",
            "127.0.0.1:0",
            "--db",
            db_arg,
            "--retrain-after",
            "3",
        ])
    };
    let normal = json!({ "features": stencil_features() });
    let mut extreme = normal.clone();
    for (i, (_, v)) in extreme["features"]
        .as_object_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        *v = json!(if i % 2 == 0 { 1.7e308 } else { -1.7e308 });
    }
    // The limits of the GTX Titan, so that the legality check does not read the extremes.
    extreme["limits"] = json!({"max_work_group_size": 1024, "max_work_item_sizes": [1024, 1024],
        "local_mem_size": 49152, "border": [1, 1, 1, 1], "input_bytes": 4});

    let server = start();
    let (status, before) = server.post("/v1/predict", &normal);
    assert_eq!(status, 200, "{before}");
    assert!(before.get("features_out_of_reach").is_none(), "{before}");
    let (status, wild) = server.post("/v1/predict", &extreme);
    assert_eq!(status, 200, "{wild}");
    assert!(within(&wild, local(&wild)), "{wild}");
    assert_eq!(
        wild["features_out_of_reach"].as_array().unwrap().len(),
        117,
        "{wild}"
    );
    for _ in 0..3 {
        let (status, v) = server.post(
            "/v1/observe",
            &json!({"scenario": extreme, "local": [16, 16], "runtime_ms": 0.5}),
        );
        assert_eq!(status, 422, "{v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("is beyond what the model can learn from"),
            "{v}"
        );
    }
    let (status, v) = server.post(
        "/v1/observe",
        &json!({"scenario": wild["scenario"], "local": [16, 16], "runtime_ms": 1e-300}),
    );
    assert_eq!(status, 422, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("no measured run time"),
        "{v}"
    );
    let h = server.health();
    assert_eq!(h["status"], "ok", "{h}");
    assert_eq!(h["observations"], 0, "{h}");
    assert_eq!(
        h["rejected_observations"]["sent"],
        json!({"feature_out_of_reach": 3, "runtime_out_of_range": 1}),
        "{h}"
    );
    assert_eq!(h["last_retrain"], Value::Null, "{h}");
    assert_eq!(h["model"]["version"], 1, "{h}");
    let (status, after) = server.post("/v1/predict", &normal);
    assert_eq!(status, 200, "{after}");
    assert_eq!(local(&after), local(&before));
    assert!(server
        .metrics()
        .contains("ndtune_observations_rejected_total{reason=\"feature_out_of_reach\"} 3"));
    assert!(server.stop().success());

    // An older ndtune kept such observations: the store now holds three.
    let store = ndtune_store::Store::open(&db).unwrap();
    let features: Vec<(String, f64)> = extreme["features"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect();
    for local in [[16, 16], [8, 8], [32, 4]] {
        store
            .add_observation(&ndtune_store::Observation {
                scenario: "poison".into(),
                features: features.clone(),
                local,
                runtime_ms: Some(1.0),
                received_at: 0,
            })
            .unwrap();
    }
    drop(store);
    let again = start();
    let h = again.health();
    assert_eq!(
        (&h["observations"], &h["model"]["version"], &h["status"]),
        (&json!(0), &json!(1), &json!("ok")),
        "{h}"
    );
    assert_eq!(
        h["rejected_observations"]["stored"],
        json!({"feature_out_of_reach": 3}),
        "{h}"
    );
    assert!(
        again.log().contains("3 observations in the store skipped"),
        "{}",
        again.log()
    );
    let (status, v) = again.post("/v1/predict", &extreme);
    assert_eq!(status, 200, "{v}");
    let (status, v) = again.post("/v1/predict", &normal);
    assert_eq!((status, local(&v)), (200, local(&before)), "{v}");
    // Good observations are learnt from: the retrained model passed its check and serves.
    for (local, ms) in [([16, 16], 3.0), ([8, 8], 2.0), ([32, 4], 1.0)] {
        let (status, o) = again.post(
            "/v1/observe",
            &json!({"scenario": v["scenario"], "local": local, "runtime_ms": ms}),
        );
        assert_eq!(status, 200, "{o}");
    }
    let h = again.wait_for_version(2);
    assert_eq!(h["last_retrain"]["result"], "swapped", "{h}");
    assert_eq!(h["model"]["origin"], "retrained", "{h}");
    assert_eq!(h["model"]["training_rows"], 141, "{h}");
    let (status, v) = again.post("/v1/predict", &normal);
    assert_eq!(status, 200, "{v}");
    assert_eq!(again.health()["status"], "ok");
}

#[test]
fn a_replaced_model_file_is_reloaded_a_broken_one_is_not_and_sighup_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    std::fs::copy(model(), &path).unwrap();
    let server = Server::start(&["--model", path.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    // Replaced by a rename, as deployments do.
    let text = std::fs::read_to_string(model()).unwrap();
    write(dir.path(), "new.json", &text);
    std::fs::rename(dir.path().join("new.json"), &path).unwrap();
    server.wait_for_version(2);
    // A broken file: the model in use is kept.
    std::fs::write(&path, "{\"format\": 2, \"truncated").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server
        .metrics()
        .contains("ndtune_model_reload_failures_total 1")
    {
        assert!(
            Instant::now() < deadline,
            "no failed reload: {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.health()["model"]["version"], 2);
    let (status, _) = server.post("/v1/predict", &scenario("gtx-titan", [1; 4], "float"));
    assert_eq!(status, 200);
    // Written back in place, and a SIGHUP for good measure.
    std::fs::write(&path, &text).unwrap();
    server.wait_for_version(3);
    server.signal(libc::SIGHUP);
    server.wait_for_version(4);
    assert!(
        server.log().contains("SIGHUP: model version 4"),
        "{}",
        server.log()
    );
}

#[test]
fn slow_clients_time_out_while_others_are_served() {
    let server = Server::tcp(&["--header-timeout", "0.5", "--request-timeout", "1"]);
    // Headers never finished: disconnected.
    let mut slow = std::net::TcpStream::connect(server.host_port()).unwrap();
    slow.write_all(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // A body that never comes in full: 408.
    let mut trickle = std::net::TcpStream::connect(server.host_port()).unwrap();
    trickle
        .write_all(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"feat")
        .unwrap();
    // Meanwhile others are answered.
    assert_eq!(server.health()["status"], "ok");
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut rest = Vec::new();
    let started = Instant::now();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not disconnected"
    );
    assert!(!String::from_utf8_lossy(&rest).contains("200 OK"));
    trickle
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = vec![0; 4096];
    let n = trickle.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("{\"error\":\"no answer within 1.0 s (--request-timeout)"),
        "{answer}"
    );
    assert_eq!(server.health()["status"], "ok");
}

#[test]
fn a_body_announced_over_the_limit_gets_413_at_once() {
    // The default request timeout is 10 s: the answer must come long before it.
    let server = Server::tcp(&[]);
    let mut huge = std::net::TcpStream::connect(server.host_port()).unwrap();
    let started = Instant::now();
    huge.write_all(
        b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n{",
    )
    .unwrap();
    huge.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut answer = vec![0; 4096];
    let n = huge.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "413 took {:?}",
        started.elapsed()
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains(
            "{\"error\":\"a request body of 100000000000 bytes is over the length limit of 1048576 bytes (--max-body)\"}"
        ),
        "{answer}"
    );
    assert_eq!(server.health()["status"], "ok");
}

#[test]
fn many_concurrent_clients_are_all_answered() {
    let server = Server::tcp(&[]);
    let (_, first) = server.post("/v1/predict", &scenario("gtx-titan", [1; 4], "float"));
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let address = server.address.clone();
            let hash = first["kernel_hash"].clone();
            std::thread::spawn(move || {
                let mut client =
                    Client::new(Address::parse(&address).unwrap(), Duration::from_secs(30));
                let mut answers = Vec::new();
                for i in 0..50u64 {
                    let body = json!({"device": if t % 2 == 0 { "gtx-titan" } else { "gt550m" },
                        "kernel": {"hash": hash},
                        "dataset": {"rows": 256 + 64 * i, "cols": 512, "border": [1, 1, 1, 1]}});
                    let r = client.post_json("/v1/predict", &body).unwrap();
                    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
                    answers.push(local(&r.json().unwrap()));
                }
                answers
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap().len(), 50);
    }
    assert!(server
        .metrics()
        .contains("ndtune_requests_total{endpoint=\"/v1/predict\",status=\"200\"} 801"));
}

#[test]
fn a_unix_socket_service_finishes_requests_in_flight_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ndtune.sock");
    let model = model();
    let server = Server::start(&[
        "--model",
        model.to_str().unwrap(),
        "--socket",
        socket.to_str().unwrap(),
    ]);
    assert_eq!(server.address, format!("unix:{}", socket.display()));
    assert_eq!(server.health()["status"], "ok");
    // A kernel it has not seen: clang runs for a while; SIGTERM arrives meanwhile.
    let address = server.address.clone();
    let in_flight = std::thread::spawn(move || {
        let mut c = Client::new(Address::parse(&address).unwrap(), Duration::from_secs(30));
        let mut body = scenario("gtx-titan", [1; 4], "float");
        body["kernel"]["source"] = json!(format!("{KERNEL}\n// another kernel"));
        c.post_json("/v1/predict", &body).unwrap()
    });
    std::thread::sleep(Duration::from_millis(30));
    let status = server.stop();
    let answer = in_flight.join().unwrap();
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "the socket file is removed");
}

#[test]
fn bad_arguments_are_refused_before_serving() {
    let model = model();
    let m = model.to_str().unwrap();
    let e = fails(&["serve", "--model", m]);
    assert!(e.contains("--listen") && e.contains("--socket"), "{e}");
    let e = fails(&[
        "serve",
        "--model",
        m,
        "--listen",
        "127.0.0.1:0",
        "--socket",
        "/tmp/x",
    ]);
    assert!(e.contains("cannot be used with"), "{e}");
    let e = fails(&[
        "serve",
        "--model",
        "/nonexistent/m.json",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(e.contains("/nonexistent/m.json"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let not_socket = write(dir.path(), "file", "x");
    let e = fails(&["serve", "--model", m, "--socket", &not_socket]);
    assert!(e.contains("is not a socket"), "{e}");
    let e = fails(&["serve", "--model", m, "--listen", "256.0.0.1:80"]);
    assert!(e.contains("256.0.0.1:80"), "{e}");
    let e = fails(&[
        "serve",
        "--model",
        m,
        "--listen",
        "127.0.0.1:0",
        "--request-timeout",
        "0",
    ]);
    assert!(e.contains("--request-timeout"), "{e}");
}

/// A request whose kernel is `source` with build `options`.
fn with_kernel(source: &str, options: &str) -> Value {
    let mut body = scenario("gtx-titan", [1; 4], "float");
    body["kernel"] = json!({"source": source, "options": options});
    body
}

#[test]
fn a_clients_kernel_cannot_read_or_write_the_servers_files() {
    let server = Server::tcp(&[]);
    let dir = tempfile::tempdir().unwrap();
    let secret = write(dir.path(), "secret.h", "int the_secret_is_swordfish;\n");
    let victim = write(dir.path(), "victim", "precious\n");
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let plugin = write(dir.path(), "plugin.so", "not a plugin");
    let include = |path: &str| format!("#include \"{path}\"\n{KERNEL}");
    let cases = [
        (include(&secret), String::new(), "`#include` is not allowed"),
        (
            format!("%:include <{secret}>\n{KERNEL}"),
            String::new(),
            "`#include` is not allowed",
        ),
        (
            format!("#if __has_include(\"{secret}\")\n#endif\n{KERNEL}"),
            String::new(),
            "`__has_include` is not allowed",
        ),
        (
            format!("#pragma GCC dependency \"{secret}\"\n{KERNEL}"),
            String::new(),
            "`#pragma GCC` is not allowed",
        ),
        (
            include(fifo.to_str().unwrap()),
            String::new(),
            "`#include` is not allowed",
        ),
        // Four spellings clang accepts that an earlier scan let through (and the sandbox stops
        // whatever the scan misses: crates/ndtune-learn/tests/sandbox.rs).
        (
            format!("#/**/include \"{secret}\"\n{KERNEL}"),
            String::new(),
            "`#include` is not allowed",
        ),
        (
            format!("int x;\r#include \"{secret}\"\r{KERNEL}"),
            String::new(),
            "`#include` is not allowed",
        ),
        (
            format!("\u{feff}#include \"{secret}\"\n{KERNEL}"),
            String::new(),
            "`#include` is not allowed",
        ),
        (
            format!("\x0c#\x0binclude \"{secret}\"\n{KERNEL}"),
            String::new(),
            "`#include` is not allowed",
        ),
        (
            KERNEL.into(),
            format!("@{secret}"),
            "is not allowed in a request",
        ),
        (KERNEL.into(), secret.clone(), "is not allowed in a request"),
        (KERNEL.into(), format!("-o {victim}"), "`-o` is not allowed"),
        (
            KERNEL.into(),
            format!("-MD -MF {victim}"),
            "`-MD` is not allowed",
        ),
        (
            KERNEL.into(),
            format!("-fplugin={plugin}"),
            "is not allowed",
        ),
        (
            KERNEL.into(),
            format!("-Xclang -load -Xclang {plugin}"),
            "`-Xclang` is not allowed",
        ),
        (
            KERNEL.into(),
            format!("-I {}", dir.path().display()),
            "`-I` is not allowed",
        ),
        (
            KERNEL.into(),
            "-DX=_Pragma(\"GCC\")".into(),
            "`_Pragma` is not allowed",
        ),
    ];
    let started = Instant::now();
    for (source, options, message) in &cases {
        let (status, v) = server.post("/v1/predict", &with_kernel(source, options));
        let error = v["error"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{options} {source}: {v}");
        assert!(
            error.contains(message),
            "{options}: `{error}` lacks `{message}`"
        );
        assert!(!error.contains("swordfish"), "the secret leaked: {error}");
    }
    // None of it blocked on the FIFO or took clang's time limit.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        4,
        "no file was created"
    );
    // What a client may send still works: defines, undefines and OpenCL's flags.
    let (status, v) = server.post(
        "/v1/predict",
        &with_kernel(
            "#define TWO 2.0f\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\nkernel void k(global float *a) { a[get_global_id(0)] *= TWO * SCALE; }",
            "-D SCALE=3 -UOTHER -cl-mad-enable -cl-std=CL1.2",
        ),
    );
    assert_eq!(status, 200, "{v}");
    assert!(
        server
            .log()
            .contains("client kernels are compiled in a sandbox (Landlock)"),
        "{}",
        server.log()
    );
    assert!(server.stop().success());
}

#[test]
fn a_kernel_that_makes_clang_run_away_is_killed_at_its_limits() {
    let server = Server::tcp(&[]);
    // Each level doubles the expansion: 2^40 tokens, which clang would expand for hours.
    let mut bomb = String::from("#define L0 x x\n");
    for i in 1..=40 {
        bomb.push_str(&format!("#define L{i} L{} L{}\n", i - 1, i - 1));
    }
    bomb.push_str("kernel void k(global float *a) { int L40; }\n");
    let started = Instant::now();
    let (status, v) = server.post("/v1/predict", &with_kernel(&bomb, ""));
    assert_eq!(status, 400, "{v}");
    let error = v["error"].as_str().unwrap();
    // Killed at the time limit, or out of its address space first.
    assert!(error.contains("clang cannot compile"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // No clang is left behind.
    std::thread::sleep(Duration::from_millis(300));
    let clangs = std::process::Command::new("pgrep")
        .args(["-P", &server.child.id().to_string()])
        .output()
        .unwrap();
    assert!(
        clangs.stdout.is_empty(),
        "children left: {}",
        String::from_utf8_lossy(&clangs.stdout)
    );
    assert_eq!(server.health()["status"], "ok");
    assert!(server.stop().success());
}

/// `POST /v1/config` answers from `--wisdom`: the exact entry for a device by name or profile,
/// a prediction for another; a kernel it lacks is a 404, constants not the spec's a 422; a
/// service without wisdom says how to give it one.
#[test]
fn config_answers_from_the_wisdom_file() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "[kernel]\nname = \"scale\"\nsource = \"scale.cl\"\n[constants]\nN = 4096\n[params]\nWG = [8, 16, 32, 64]\n[launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n[space]\nconstraints = [\"N % WG == 0\"]\n";
    let titan = ndtune_device::builtin::find("gtx-titan").unwrap();
    let wisdom = json!({"schema": 1, "ndtune": "test", "kernels": [{
        "kernel": "scale", "spec_file": "scale.toml", "spec": spec, "defines": ["WG"],
        "objective": {"metric": "time", "unit": "ms", "higher_is_better": false},
        "entries": [{"device": titan, "constants": {"N": 4096}, "config": {"WG": 32},
                     "objective": 0.5, "setup": "0123456789abcdef", "measured": 4}]}]});
    let w = write(dir.path(), "w.json", &wisdom.to_string());
    let server = Server::tcp(&["--wisdom", &w]);
    let (status, body) = server.post(
        "/v1/config",
        &json!({"kernel": "scale", "device": "gtx-titan", "constants": {"N": 4096}}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["how"].as_str(), body["config"]["WG"].as_i64()),
        (Some("exact"), Some(32))
    );
    assert_eq!(body["build_options"], "-D WG=32");
    let (status, body) = server.post(
        "/v1/config",
        &json!({"kernel": "scale", "device": titan, "constants": {"N": 1024}}),
    );
    assert_eq!(
        (status, body["how"].as_str()),
        (200, Some("nearest")),
        "{body}"
    );
    let (status, body) = server.post(
        "/v1/config",
        &json!({"kernel": "scale", "device": "hd4600", "constants": {"N": 8192}}),
    );
    assert_eq!(
        (status, body["how"].as_str()),
        (200, Some("predicted")),
        "{body}"
    );
    let (status, body) = server.post(
        "/v1/config",
        &json!({"kernel": "sgemm", "device": "gtx-titan"}),
    );
    assert_eq!(status, 404, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("no kernel `sgemm`"),
        "{body}"
    );
    let (status, body) = server.post(
        "/v1/config",
        &json!({"kernel": "scale", "device": "gtx-titan", "constants": {"M": 2}}),
    );
    assert_eq!(status, 422, "{body}");
    drop(server);

    // A kernel tuned for time and power keeps its front: a preference picks from it.
    let mut fronted = wisdom.clone();
    fronted["kernels"][0]["more_objectives"] =
        json!([{"metric": "power_w", "unit": "W", "higher_is_better": false}]);
    fronted["kernels"][0]["entries"][0]["front"] = json!([
        {"config": {"WG": 32}, "values": [0.5, 300.0]},
        {"config": {"WG": 16}, "values": [0.7, 180.0]},
        {"config": {"WG": 8}, "values": [1.2, 120.0]}]);
    let w = write(dir.path(), "front.json", &fronted.to_string());
    let server = Server::tcp(&["--wisdom", &w]);
    let ask = |prefer: &str| {
        server.post(
            "/v1/config",
            &json!({"kernel": "scale", "device": "gtx-titan", "constants": {"N": 4096},
                    "prefer": prefer}),
        )
    };
    let (status, body) = ask("time,power_w<=200");
    assert_eq!(
        (status, body["config"]["WG"].as_i64()),
        (200, Some(16)),
        "{body}"
    );
    let (status, body) = ask("power_w,time<=2x");
    assert_eq!(
        (status, body["config"]["WG"].as_i64()),
        (200, Some(16)),
        "{body}"
    );
    let (status, body) = ask("time,power_w<=100");
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("the least power_w is 120"),
        "{body}"
    );
    let (status, body) = ask("time,power_w");
    assert_eq!(status, 400, "{body}");
    drop(server);
    let bare = Server::tcp(&[]);
    let (status, body) = bare.post(
        "/v1/config",
        &json!({"kernel": "scale", "device": "gtx-titan"}),
    );
    assert_eq!(status, 404);
    assert!(
        body["error"].as_str().unwrap().contains("--wisdom FILE"),
        "{body}"
    );
}

/// A wisdom of kernel `scale` whose one entry for the GTX TITAN at N = 4096 is `WG`.
fn scale_wisdom(wg: i64) -> String {
    let spec = "[kernel]\nname = \"scale\"\nsource = \"scale.cl\"\n[constants]\nN = 4096\n[params]\nWG = [8, 16, 32, 64]\n[launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n[space]\nconstraints = [\"N % WG == 0\"]\n";
    let titan = ndtune_device::builtin::find("gtx-titan").unwrap();
    json!({"schema": 1, "ndtune": "test", "kernels": [{
        "kernel": "scale", "spec_file": "scale.toml", "spec": spec, "defines": ["WG"],
        "objective": {"metric": "time", "unit": "ms", "higher_is_better": false},
        "entries": [{"device": titan, "constants": {"N": 4096}, "config": {"WG": wg},
                     "objective": 0.5, "setup": "0123456789abcdef", "measured": 4}]}]})
    .to_string()
}

#[test]
fn the_wisdom_is_reloaded_when_replaced_or_on_sighup_and_health_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let w = write(dir.path(), "w.json", "{\"schema\": 1, \"trunc");
    let server = Server::tcp(&["--wisdom", &w]);
    let ask = || {
        server.post(
            "/v1/config",
            &json!({"kernel": "scale", "device": "gtx-titan", "constants": {"N": 4096}}),
        )
    };
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: {}", server.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // Corrupt at start: 503, and health says so.
    assert_eq!(ask().0, 503);
    let health = server.health();
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["wisdom"]["status"], "unusable", "{health}");
    assert!(
        health["wisdom"]["error"]
            .as_str()
            .unwrap()
            .contains("w.json"),
        "{health}"
    );
    // Replaced by a good file (renamed over it): answered without a restart.
    write(dir.path(), "new.json", &scale_wisdom(32));
    std::fs::rename(dir.path().join("new.json"), &w).unwrap();
    wait("the good wisdom was not loaded", &|| ask().0 == 200);
    assert_eq!(ask().1["config"]["WG"], 32);
    assert_eq!(server.health()["status"], "ok");
    assert_eq!(server.health()["wisdom"]["status"], "ok");
    // Broken again: the good one keeps answering, health says the reload failed.
    std::fs::write(&w, "not json").unwrap();
    wait("the broken file went unnoticed", &|| {
        server.health()["wisdom"]["status"] == "stale"
    });
    assert_eq!(ask().1["config"]["WG"], 32);
    assert_eq!(server.health()["status"], "degraded");
    // A new file written in place of the watched one, then SIGHUP: the new answer.
    std::fs::write(&w, scale_wisdom(64)).unwrap();
    server.signal(libc::SIGHUP);
    wait("no reload to WG = 64", &|| ask().1["config"]["WG"] == 64);
    assert_eq!(server.health()["wisdom"]["status"], "ok");
    assert!(
        server.log().contains("wisdom loaded from"),
        "{}",
        server.log()
    );
}

/// Makes `command`'s process see a kernel without Landlock: a seccomp filter answers its system
/// calls (444-446) ENOSYS, as a kernel before 5.13 or without the module does.
fn without_landlock(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    const ERRNO_ENOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;
    const ALLOW: u32 = 0x7fff_0000;
    let filter = [
        // The system call's number (offset 0 of seccomp_data).
        libc::sock_filter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        },
        // 444 <= nr <= 446: landlock_create_ruleset, _add_rule, _restrict_self.
        libc::sock_filter {
            code: 0x35,
            jt: 0,
            jf: 2,
            k: 444,
        },
        libc::sock_filter {
            code: 0x25,
            jt: 1,
            jf: 0,
            k: 446,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: ERRNO_ENOSYS,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: ALLOW,
        },
    ];
    // SAFETY: between fork and exec only prctl(2), with a filter that lives in this closure.
    unsafe {
        command.pre_exec(move || {
            let program = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, 2, &program as *const libc::sock_fprog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn without_landlock_client_kernels_are_refused_and_the_rest_is_served() {
    let model = model();
    let server = Server::start_with(
        &[
            "--model",
            model.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        without_landlock,
    );
    assert!(
        server
            .log()
            .contains("serve: client kernels are refused (503)")
            && server.log().contains("Landlock"),
        "{}",
        server.log()
    );
    let (status, v) = server.post("/v1/predict", &with_kernel(KERNEL, ""));
    assert_eq!(status, 503, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("cannot confine a process (Landlock)"),
        "{v}"
    );
    // A scenario by its features is answered as ever.
    let (status, v) = server.post("/v1/predict", &json!({ "features": stencil_features() }));
    assert_eq!(status, 200, "{v}");
    assert!(server.stop().success());
}
