//! The fuzz targets, a bounded time each (`NDTUNE_FUZZ_SECONDS`, 2 s by default): see the
//! crate's documentation.

use ndtune_fuzz::{fuzz, gen, props};

#[test]
fn spec_files() {
    fuzz("spec", gen::spec(), |text| props::spec(&text));
}

#[test]
fn expressions() {
    fuzz("expr", gen::expr(), |text| props::expr(&text));
}

#[test]
fn learning_csv() {
    fuzz("learn-csv", gen::learn_csv(), |text| {
        props::learn_csv(&text)
    });
}

#[test]
fn kernel_tuner_caches() {
    fuzz("kt-cache", gen::kt_cache(), |bytes| props::kt_cache(&bytes));
}

#[test]
fn cltune_tables() {
    fuzz("cltune", gen::cltune(), |bytes| props::cltune(&bytes));
}

#[test]
fn service_requests() {
    let service = props::LocalService::start();
    fuzz("serve", gen::serve_request(service.known), |r| {
        service.property(r.method, r.path, r.body)
    });
}

#[test]
fn service_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.h");
    let c = std::ffi::CString::new(secret.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    fuzz(
        "serve-kernel",
        (gen::request_kernel(), gen::request_options()),
        |(source, options)| props::request_kernel(&secret, &source, &options),
    );
}

/// Directives that read a file, respelt every way clang might accept, compiled as the service
/// does and without its scan: the operating system's walls keep the file from clang both ways.
#[test]
fn service_kernel_respellings() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.h");
    let marker = "ndtune_fuzz_secret_c0ffee";
    std::fs::write(&secret, format!("#error {marker}\n{marker} x;\n")).unwrap();
    fuzz(
        "serve-kernel-respelt",
        gen::directive_respelling(),
        |source| {
            props::request_kernel_confined(&secret, marker, &source, |s| {
                ndtune_learn::features::request_kernel_features(s, "")
            })?;
            props::request_kernel_confined(&secret, marker, &source, |s| {
                ndtune_learn::features::request_kernel_features_unscanned(s, "")
            })
        },
    );
}

#[test]
fn input_files() {
    let dir = tempfile::tempdir().unwrap();
    fuzz("input-files", gen::input_file(), |file| {
        props::input_file(dir.path(), &file)
    });
}
