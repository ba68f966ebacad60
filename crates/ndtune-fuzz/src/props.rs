//! The properties the fuzz targets check, one per reader: it returns a value or an error that
//! names where the input is wrong, and what it returns can be used without a panic (a model
//! trained on a CSV predicts, a resolved expression evaluates alike compiled and interpreted, the
//! service answers the next ordinary request). A panic in the code under test fails the target
//! too (the runner catches it).

use ndtune_learn::data::Data;
use ndtune_learn::eval::{evaluate, Fallback, Method, Protocol};
use ndtune_learn::model::Model;
use ndtune_learn::models::ClassifierKind;
use ndtune_space::compile::{int_fn, pred};
use ndtune_space::expr::Expr;
use ndtune_space::resolve::{resolve, Scope, Type};
use std::path::Path;

/// `Err(message)` unless `ok`.
fn ensure(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(message())
    }
}

/// A spec file parses into a spec, or into an error at a line and column of the file.
pub fn spec(text: &str) -> Result<(), String> {
    match ndtune_spec::Spec::parse(text, Path::new("fuzz/spec.toml")) {
        Ok(_) => Ok(()),
        Err(e) => {
            let shown = e.to_string();
            ensure(e.path == "fuzz/spec.toml", || {
                format!("the error names another file: {shown}")
            })?;
            ensure(!e.message.trim().is_empty(), || {
                format!("an empty message: {shown:?}")
            })?;
            ensure(e.line >= 1 && e.column >= 1, || {
                format!("an error without a line and column: {shown}")
            })
        }
    }
}

/// The scope expressions are resolved in: parameters `X`, `Y`, `Z`, constants `N` and `M`, and
/// three device properties.
fn scope() -> Scope {
    Scope {
        device: Some(
            [
                ("max_work_group_size".to_string(), 1024),
                ("local_mem_size".to_string(), 49152),
                ("compute_units".to_string(), 132),
            ]
            .into(),
        ),
        ..Scope::ints(&["X", "Y", "Z"], &[("N", 1024), ("M", -3)])
    }
}

/// Points the resolved expressions are evaluated at: ordinary values and the edges of `i64`.
const POINTS: [[i64; 3]; 6] = [
    [0, 0, 0],
    [1, 2, 3],
    [16, 64, -4],
    [-1, i64::MAX, i64::MIN],
    [i64::MAX, i64::MAX, 2],
    [i64::MIN, -1, 0],
];

/// An expression parses, or fails with a span inside its text; what parses resolves as a
/// condition and as an integer, or fails so; what resolves evaluates alike compiled to closures
/// and interpreted, at every point of [`POINTS`].
pub fn expr(text: &str) -> Result<(), String> {
    let located = |e: &ndtune_space::expr::ExprError| {
        let shown = e.to_string();
        ensure(
            e.span.start <= e.span.end && e.span.end <= text.len() && !e.message.is_empty(),
            || {
                format!(
                    "an error outside the text ({:?} of {} bytes): {shown}",
                    e.span,
                    text.len()
                )
            },
        )
    };
    let parsed = match Expr::parse(text) {
        Ok(e) => e,
        Err(e) => return located(&e),
    };
    let scope = scope();
    match resolve(&parsed, text, &scope, Type::Bool) {
        Ok(node) => {
            let compiled = pred(&node);
            for p in &POINTS {
                ensure(compiled(p) == node.holds(p), || {
                    format!(
                        "at {p:?} the compiled condition says {}, the interpreter {}",
                        compiled(p),
                        node.holds(p)
                    )
                })?;
            }
        }
        Err(e) => located(&e)?,
    }
    match resolve(&parsed, text, &scope, Type::Int) {
        Ok(node) => {
            let compiled = int_fn(&node);
            for p in &POINTS {
                ensure(compiled(p) == node.eval(p), || {
                    format!(
                        "at {p:?} the compiled expression gives {:?}, the interpreter {:?}",
                        compiled(p),
                        node.eval(p)
                    )
                })?;
            }
            Ok(())
        }
        Err(e) => located(&e),
    }
}

/// A learning CSV loads, or fails naming the file (and the line where a row is wrong). What
/// loads is evaluated under two protocols with cheap models and trained on: an evaluation
/// error is a value, a trained model predicts every row, ordinary or extreme.
pub fn learn_csv(text: &str) -> Result<(), String> {
    let data = match Data::read(text.as_bytes(), Path::new("fuzz.csv")) {
        Ok(d) => d,
        Err(e) => {
            let shown = e.to_string();
            return ensure(
                shown.starts_with("fuzz.csv:") && !shown.starts_with("fuzz.csv:0:"),
                || format!("an error without its file or line: {shown}"),
            );
        }
    };
    let methods: Vec<Method> = [
        ClassifierKind::DecisionTree,
        ClassifierKind::NaiveBayes,
        ClassifierKind::Logistic,
        ClassifierKind::Svm,
    ]
    .into_iter()
    .map(|k| Method::Classify(k, Fallback::NearestNeighbour))
    .chain([Method::Baseline])
    .collect();
    for protocol in [Protocol::Cv10, Protocol::LooDevice, Protocol::SyntheticReal] {
        if let Ok(report) = evaluate(
            &data,
            protocol,
            &methods,
            &ndtune_learn::eval::Options {
                jobs: 2,
                ..Default::default()
            },
            &mut |_| {},
        ) {
            for r in &report.results {
                ensure(
                    r.performance.iter().all(|p| p.is_finite() && *p > 0.0),
                    || {
                        format!(
                            "{} {}: a performance that is not a positive number: {:?}",
                            protocol.name(),
                            r.model,
                            r.performance
                        )
                    },
                )?;
            }
        }
    }
    let width = data.feature_names.len();
    for kind in [ClassifierKind::NaiveBayes, ClassifierKind::Svm] {
        let model = Model::train(&data, kind, 1).map_err(|e| format!("training {kind}: {e}"))?;
        let rows = model.training.iter().map(|t| t.features.clone()).chain([
            vec![1e308; width],
            vec![-1e308; width],
            vec![0.0; width],
        ]);
        for row in rows {
            model
                .predict_row(&row, |_| true)
                .map_err(|e| format!("{kind} cannot predict {row:?}: {e}"))?
                .ok_or_else(|| format!("{kind} knows no size"))?;
        }
    }
    Ok(())
}

/// A Kernel Tuner cache reads, or fails naming its file.
pub fn kt_cache(bytes: &[u8]) -> Result<(), String> {
    match ndtune_store::kt::parse_kt_cache(bytes, Path::new("fuzz.json")) {
        Ok(_) => Ok(()),
        Err(e) => {
            let shown = e.to_string();
            ensure(shown.starts_with("fuzz.json: "), || {
                format!("an error without its file: {shown}")
            })
        }
    }
}

/// A CLTune table reads, or fails naming its file (and the line of a bad row).
pub fn cltune(bytes: &[u8]) -> Result<(), String> {
    match ndtune_store::cltune::parse_cltune_csv(bytes, Path::new("fuzz.csv")) {
        Ok(_) => Ok(()),
        Err(e) => {
            let shown = e.to_string();
            ensure(shown.starts_with("fuzz.csv: "), || {
                format!("an error without its file: {shown}")
            })
        }
    }
}

/// A prediction service on the shipped data's naive-Bayes model (the kind that once panicked on
/// extreme features), without a store, learning again after every two observations, answering
/// in process through its router.
pub struct LocalService {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    /// The model's features and training rows, for the requests' generator.
    pub known: crate::gen::Known,
    /// A prediction it must always answer.
    ordinary: Vec<u8>,
    _dir: tempfile::TempDir,
}

impl LocalService {
    pub fn start() -> LocalService {
        let csv = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../data/stencils-2026-11-21/stencils-h100-xeon.csv.gz");
        let data = Data::load(&csv).expect("the shipped data loads");
        let model = Model::train(&data, ClassifierKind::NaiveBayes, 1).expect("a model");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("bayes.json");
        model.save(&path).expect("the model is written");
        let devices = ndtune_device::builtin::keys()
            .into_iter()
            .filter_map(ndtune_device::builtin::find)
            .collect();
        let service = ndtune_serve::Service::new(ndtune_serve::Options {
            model_path: path,
            store: None,
            devices,
            retrain_after: 2,
            seed: 1,
            wisdom: None,
        })
        .expect("the service starts");
        let options = ndtune_serve::HttpOptions::new(ndtune_serve::Listen::Tcp("-".into()));
        let router = ndtune_serve::http::router(service, &options);
        let ordinary = serde_json::json!({ "features": model
            .feature_names
            .iter()
            .zip(&model.training[0].features)
            .collect::<std::collections::BTreeMap<_, _>>() });
        let names: Vec<&'static str> = model
            .feature_names
            .iter()
            .map(|n| &*Box::leak(n.clone().into_boxed_str()))
            .collect();
        LocalService {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
            router,
            known: crate::gen::Known {
                names: Box::leak(names.into_boxed_slice()),
                rows: Box::leak(
                    model
                        .training
                        .iter()
                        .map(|t| t.features.clone())
                        .collect::<Vec<_>>()
                        .into_boxed_slice(),
                ),
            },
            ordinary: ordinary.to_string().into_bytes(),
            _dir: dir,
        }
    }

    /// The status and body of one request.
    pub fn send(&self, method: &str, path: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
        use tower::ServiceExt;
        let request = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .expect("a request");
        self.runtime.block_on(async {
            let response = self
                .router
                .clone()
                .oneshot(request)
                .await
                .expect("infallible");
            let status = response.status().as_u16();
            let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .map(|b| b.to_vec())
                .unwrap_or_default();
            (status, body)
        })
    }

    /// A request is answered with a success or a refusal (4xx) whose body is `{"error": "..."}`
    /// (never a 500: a failed prediction or a panic), and an ordinary prediction still succeeds
    /// after it, whatever was observed and learnt.
    pub fn property(&self, method: &str, path: &str, body: Vec<u8>) -> Result<(), String> {
        let (status, answer) = self.send(method, path, body);
        let text = String::from_utf8_lossy(&answer).into_owned();
        ensure((200..500).contains(&status), || {
            format!("status {status}: {text}")
        })?;
        if status != 200 {
            let error = serde_json::from_slice::<serde_json::Value>(&answer)
                .ok()
                .and_then(|v| v.get("error")?.as_str().map(str::to_string));
            ensure(error.is_some_and(|e| !e.is_empty()), || {
                format!("status {status} without an error message: {text}")
            })?;
        }
        let (status, answer) = self.send("POST", "/v1/predict", self.ordinary.clone());
        ensure(status == 200, || {
            format!(
                "then an ordinary prediction answered {status}: {}",
                String::from_utf8_lossy(&answer)
            )
        })
    }
}

/// A client's kernel and options: the checks never panic, and what they let through compiles,
/// or fails, without opening `secret` — a FIFO nobody writes, so that clang opening it to read
/// (an include, an `@file`) or to write (`-o`, `-MF`) would block until the compile's time
/// limit kills it; a compile of these small kernels takes well under that.
pub fn request_kernel(secret: &Path, source: &str, options: &str) -> Result<(), String> {
    let path = secret.to_str().expect("a UTF-8 temporary path");
    let source = source.replace(crate::gen::SECRET, path);
    let options = options.replace(crate::gen::SECRET, path);
    let started = std::time::Instant::now();
    let result = ndtune_learn::features::request_kernel_features(&source, &options);
    let took = started.elapsed();
    let shown = match &result {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    };
    ensure(
        took < ndtune_learn::features::untrusted::TIME_LIMIT.mul_f64(0.8)
            && !shown.contains("did not finish"),
        || format!("the compile took {took:?} (it opened the FIFO?): {shown}"),
    )
}

/// A client's kernel that respells a directive reading `secret` (a regular file holding
/// `marker`): compiled by `compile` (the service's path, or the same without its scan), it
/// never answers with the file's contents, whether the scan refused it or clang ran.
pub fn request_kernel_confined(
    secret: &Path,
    marker: &str,
    source: &str,
    compile: impl Fn(&str) -> Result<Vec<(String, f64)>, ndtune_learn::features::FeatureError>,
) -> Result<(), String> {
    let path = secret.to_str().expect("a UTF-8 temporary path");
    let source = source.replace(crate::gen::SECRET, path);
    let answer = match compile(&source) {
        Ok(features) => format!("{features:?}"),
        Err(e) => e.to_string(),
    };
    ensure(!answer.contains(marker), || {
        format!("the compile read the secret file: {answer}")
    })
}

/// Every reader of an input file, on one file: none panics or hangs (a FIFO or a device is
/// refused before a byte is read), every error names the file, and a gzip bomb stops at the
/// unpacked limit.
pub fn input_file(dir: &Path, file: &crate::gen::InputFile) -> Result<(), String> {
    use crate::gen::InputFile;
    use ndtune_core::input;
    let path = dir.join("input");
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir(&path),
        Ok(_) => std::fs::remove_file(&path),
        Err(_) => Ok(()),
    }
    .map_err(|e| format!("cleaning up: {e}"))?;
    let special = match file {
        InputFile::Bytes(b) => std::fs::write(&path, b).map(|()| false),
        InputFile::Gzip(b) => std::fs::write(&path, crate::gen::gzip(b)).map(|()| false),
        InputFile::Bomb(mib) => {
            std::fs::write(&path, crate::gen::gzip(&vec![0; mib << 20])).map(|()| false)
        }
        InputFile::Fifo => {
            let c = std::ffi::CString::new(path.to_str().expect("UTF-8")).expect("no NUL");
            // SAFETY: mkfifo(3) with a NUL-terminated path.
            match unsafe { libc::mkfifo(c.as_ptr(), 0o600) } {
                0 => Ok(true),
                _ => Err(std::io::Error::last_os_error()),
            }
        }
        InputFile::DevZero => std::os::unix::fs::symlink("/dev/zero", &path).map(|()| true),
        InputFile::Directory => std::fs::create_dir(&path).map(|()| true),
    }
    .map_err(|e| format!("making the input: {e}"))?;
    let shown = path.display().to_string();
    let errors: Vec<(&str, Option<String>)> = vec![
        (
            "profile",
            ndtune_device::DeviceProfile::load(&path)
                .err()
                .map(|e| e.to_string()),
        ),
        ("model", Model::load(&path).err().map(|e| e.to_string())),
        (
            "learning data",
            Data::load(&path).err().map(|e| e.to_string()),
        ),
        (
            "stencil",
            ndtune_stencil::Stencil::load(&path)
                .err()
                .map(|e| e.to_string()),
        ),
        (
            "campaign",
            ndtune_collect::CollectCampaign::load(&path)
                .err()
                .map(|e| e.to_string()),
        ),
        (
            "kt cache",
            ndtune_store::kt::read_kt_cache(&path)
                .err()
                .map(|e| e.to_string()),
        ),
        (
            "cltune",
            ndtune_store::cltune::read_cltune_csv(&path)
                .err()
                .map(|e| e.to_string()),
        ),
        (
            "npy",
            ndtune_bench::data::read_npy(&path, ndtune_spec::ElemType::Float, 4)
                .err()
                .map(|e| format!("{shown}: {e}")),
        ),
        (
            "source",
            input::read_text(&path, input::SOURCE)
                .err()
                .map(|e| e.to_string()),
        ),
    ];
    for (reader, error) in errors {
        match error {
            None => ensure(!special, || format!("{reader} read a {file:?}"))?,
            Some(e) => {
                ensure(e.contains(&shown), || {
                    format!("{reader}: an error without its file: {e}")
                })?;
                ensure(!special || e.contains("not a regular file"), || {
                    format!("{reader} on a {file:?}: {e}")
                })?;
            }
        }
    }
    // The unpacked limit holds, at a size a test can afford.
    let small = input::Kind::packed("fuzz input", 1 << 20, 1 << 20);
    if let (InputFile::Bomb(mib), Err(e)) = (file, input::read_bytes(&path, small)) {
        ensure(
            *mib >= 1 && e.message.contains("unpacks to more than"),
            || format!("a {mib} MiB bomb: {e}"),
        )?;
    }
    Ok(())
}
