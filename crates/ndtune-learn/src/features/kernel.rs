//! Kernel features: static instruction counts and densities of the kernel's LLVM IR, as
//! Cummins et al. 2016 §3.2 obtain them, plus its blocks, loops, memory accesses per address
//! space and calls per kind of callee.
//!
//! The source is compiled by the `clang` binary to textual IR for the `spir64` target, which keeps
//! OpenCL's address spaces and does not depend on the machine doing the extraction (SPIR's
//! 64-bit `size_t` is what current devices use). Results are cached for the life of the process
//! by a hash of the source and the build options.

use super::ir::{self, IrStats, CALL_KINDS, OPCODES, SPACES};
use super::FeatureError;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// clang's arguments before the build options, which come after them so that they can override
/// them (`-cl-std=CL2.0`); `-- -` after the options makes stdin the only input.
/// `-ffp-contract=off` keeps `a * b + c` as the `fmul` and `fadd` written, where clang's OpenCL
/// default would fuse them into an `llvm.fmuladd` call. `-O1` removes the stack traffic of
/// unoptimised IR without the full unrolling of `-O2`, which would count a loop's body once per
/// iteration.
const CLANG_ARGS: [&str; 13] = [
    "-x",
    "cl",
    "-cl-std=CL1.2",
    "-Xclang",
    "-finclude-default-header",
    "-target",
    "spir64",
    "-ffp-contract=off",
    "-emit-llvm",
    "-S",
    "-O1",
    "-o",
    "-",
];

type Cache = Mutex<HashMap<[u8; 32], Vec<(String, f64)>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The kernel feature names, in column order; they do not depend on the kernel.
pub(super) fn names() -> Vec<String> {
    named(&IrStats::default())
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// The features of every function `source` defines, compiled with `build_options` (OpenCL build
/// options such as `-D N=1024 -cl-mad-enable`, separated by whitespace, without quoting).
/// `f_ker_density_<op>` is `f_ker_count_<op>` over `f_ker_total`; the densities, `other`
/// included, sum to 1.
pub fn kernel_features(
    source: &str,
    build_options: &str,
) -> Result<Vec<(String, f64)>, FeatureError> {
    let mut hasher = Sha256::new();
    // Length-prefixed, so that no (source, options) pair hashes like another.
    hasher.update((source.len() as u64).to_le_bytes());
    hasher.update(source);
    hasher.update(build_options);
    let key: [u8; 32] = hasher.finalize().into();
    if let Some(hit) = cache()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
    {
        return Ok(hit.clone());
    }
    // Compiled without the lock held, so that threads extracting different kernels run clang in
    // parallel.
    let stats = ir::parse(&compile(source, build_options)?);
    if stats.total() == 0 {
        return Err(FeatureError::NoInstructions);
    }
    let features = named(&stats);
    cache()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key, features.clone());
    Ok(features)
}

/// The LLVM IR text of `source`.
fn compile(source: &str, build_options: &str) -> Result<String, FeatureError> {
    let mut child = Command::new(ndtune_core::tools::clang())
        .args(CLANG_ARGS)
        .args(build_options.split_whitespace())
        .args(["--", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(FeatureError::Clang)?;
    // clang reads all of stdin before it writes anything, so writing first cannot deadlock. A
    // write fails when clang exits early (a bad option); its exit status and stderr say why.
    let written = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(source.as_bytes());
    let out = child.wait_with_output().map_err(FeatureError::Clang)?;
    if !out.status.success() {
        return Err(FeatureError::Compile {
            options: build_options.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
        });
    }
    written.map_err(FeatureError::Clang)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `stats` as named features, in column order.
fn named(stats: &IrStats) -> Vec<(String, f64)> {
    let total = stats.total() as f64;
    let ops = OPCODES.iter().copied().chain(["other"]).zip(stats.ops);
    let mut features = vec![
        ("f_ker_total".to_string(), total),
        ("f_ker_blocks".to_string(), stats.blocks as f64),
        ("f_ker_loops".to_string(), stats.loops as f64),
    ];
    features.extend(
        ops.clone()
            .map(|(op, n)| (format!("f_ker_count_{op}"), n as f64)),
    );
    features.extend(ops.map(|(op, n)| (format!("f_ker_density_{op}"), n as f64 / total)));
    features.extend(
        SPACES
            .iter()
            .zip(stats.loads)
            .map(|(space, n)| (format!("f_ker_load_{space}"), n as f64)),
    );
    // Constant memory cannot be written: no column for it.
    features.extend(
        SPACES
            .iter()
            .zip(stats.stores)
            .filter(|(space, _)| **space != "constant")
            .map(|(space, n)| (format!("f_ker_store_{space}"), n as f64)),
    );
    features.extend(
        CALL_KINDS
            .iter()
            .zip(stats.calls)
            .map(|(kind, n)| (format!("f_ker_calls_{kind}"), n as f64)),
    );
    features
}
