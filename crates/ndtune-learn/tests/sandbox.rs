//! A client's kernel cannot read the server's files, whatever it writes: the operating system's
//! walls ([`client_sandbox`]) stop clang, with the scan of the source on and off.

use ndtune_learn::features::{
    client_sandbox, request_kernel_features, request_kernel_features_unscanned,
};
use std::path::Path;

/// What the planted secret holds: a line that clang would print back if it read the file.
const MARKER: &str = "ndtune_secret_7f3a91";

fn plant(dir: &Path) -> String {
    let secret = dir.join("secret.h");
    std::fs::write(&secret, format!("#error {MARKER}\n{MARKER} x;\n")).unwrap();
    secret.to_str().unwrap().to_string()
}

/// Ways to make clang read `path` from a kernel, those the scan refuses and those it never
/// could: every one compiled without the scan must fail without the file's contents.
fn spellings(path: &str) -> Vec<String> {
    let kernel = "kernel void k(global float *a) { a[0] = 1.0f; }\n";
    let mut all: Vec<String> = [
        format!("#include \"{path}\"\n"),
        format!("#/**/include \"{path}\"\n"),
        format!("int x;\r#include \"{path}\"\r"),
        format!("\u{feff}#include \"{path}\"\n"),
        format!("\x0c#\x0binclude \"{path}\"\n"),
        format!("%:include <{path}>\n"),
        format!("#define H \"{path}\"\n#include H\n"),
        format!("#if __has_include(\"{path}\")\n#error found\n#endif\n"),
        format!("#pragma GCC dependency \"{path}\"\n"),
        format!("_Pragma(\"GCC dependency \\\"{path}\\\"\")\n"),
        format!("#embed \"{path}\"\n"),
    ]
    .into_iter()
    .map(|s| s + kernel)
    .collect();
    all.push(format!("{kernel}#include_next \"{path}\"\n"));
    all
}

fn shown(result: Result<Vec<(String, f64)>, ndtune_learn::features::FeatureError>) -> String {
    match result {
        Ok(_) => "compiled".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn this_machine_can_build_the_walls() {
    let walls = client_sandbox().expect("Landlock on this machine's kernel");
    assert!(
        walls
            .readable()
            .iter()
            .any(|p| p.to_string_lossy().contains("clang")),
        "{walls:?}"
    );
}

#[test]
fn the_spellings_a_scan_missed_are_refused_and_read_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let secret = plant(dir.path());
    for source in spellings(&secret) {
        let answer = shown(request_kernel_features(&source, ""));
        assert_ne!(answer, "compiled", "{source:?}");
        assert!(
            !answer.contains(MARKER),
            "{source:?} read the secret: {answer}"
        );
    }
}

#[test]
fn without_the_scan_no_file_outside_the_sandbox_can_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let secret = plant(dir.path());
    let cwd = std::env::current_dir().unwrap().join("Cargo.toml");
    let targets = [
        secret.clone(),
        "/etc/passwd".into(),
        "/proc/self/environ".into(),
        cwd.to_str().unwrap().to_string(),
    ];
    for target in &targets {
        for source in spellings(target) {
            let answer = shown(request_kernel_features_unscanned(&source, ""));
            assert!(
                !answer.contains(MARKER),
                "{source:?} read the secret: {answer}"
            );
            assert!(
                !answer.contains("root:"),
                "{source:?} read /etc/passwd: {answer}"
            );
            assert!(
                !answer.contains("[package]"),
                "{source:?} read {target}: {answer}"
            );
        }
    }
    // The file is there and readable by this process: only the walls stopped clang.
    assert!(std::fs::read_to_string(&secret).unwrap().contains(MARKER));
    let plain =
        format!("#include \"{secret}\"\nkernel void k(global float *a) {{ a[0] = 1.0f; }}\n");
    let answer = shown(request_kernel_features_unscanned(&plain, ""));
    assert!(answer.contains("Permission denied"), "{answer}");
    // An ordinary kernel still compiles inside them, with OpenCL's headers.
    let ordinary = "kernel void k(global float *a) { a[get_global_id(0)] = sqrt(a[0]); }\n";
    request_kernel_features_unscanned(ordinary, "-DX=1").unwrap();
}
