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
use ndtune_core::bounded::{self, Bounds, RunError};
use ndtune_core::sandbox::Walls;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

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
/// included, sum to 1. For the user's own kernels: the options may name files (`-I`), which
/// clang reads; a kernel from a client goes through [`request_kernel_features`].
pub fn kernel_features(
    source: &str,
    build_options: &str,
) -> Result<Vec<(String, f64)>, FeatureError> {
    let args: Vec<String> = build_options
        .split_whitespace()
        .map(str::to_string)
        .collect();
    features(source, build_options, &args, Trust::User)
}

/// [`kernel_features`] of a kernel sent by a client who is not trusted: the source and the
/// options are checked first ([`super::untrusted`]: an early, friendly error), and clang runs
/// walled off from the file system by the operating system ([`client_sandbox`]), within a time
/// and memory limit. Where the walls cannot be built, nothing is compiled.
pub fn request_kernel_features(
    source: &str,
    options: &str,
) -> Result<Vec<(String, f64)>, FeatureError> {
    let args = super::untrusted::check_options(options).map_err(FeatureError::Refused)?;
    super::untrusted::check_source(source).map_err(FeatureError::Refused)?;
    features(source, options, &args, Trust::Client)
}

/// [`request_kernel_features`] without the scan of the source: the sandbox alone stands between
/// the client and the server's files. For tests that show it does (built with the `unscanned`
/// feature only).
#[cfg(feature = "unscanned")]
#[doc(hidden)]
pub fn request_kernel_features_unscanned(
    source: &str,
    options: &str,
) -> Result<Vec<(String, f64)>, FeatureError> {
    let args = super::untrusted::check_options(options).map_err(FeatureError::Refused)?;
    features(source, options, &args, Trust::Client)
}

/// The walls a client's compile runs in: clang may read its own program, its shared libraries
/// and its resource directory (the OpenCL headers), and nothing else; it may write nothing.
/// Built once; `Err` says why this machine cannot (no Landlock in its kernel, no clang), and a
/// client's kernel is then refused with that reason.
pub fn client_sandbox() -> Result<&'static Walls, String> {
    static WALLS: OnceLock<Result<Walls, String>> = OnceLock::new();
    WALLS
        .get_or_init(|| {
            let clang = ndtune_core::tools::clang();
            let path = client_path();
            let env = [("PATH", path.as_os_str())];
            let resources = Command::new(&clang)
                .env_clear()
                .envs(env)
                .arg("-print-resource-dir")
                .output()
                .map_err(|e| format!("cannot run {}: {e}", clang.display()))?;
            let resources = String::from_utf8_lossy(&resources.stdout)
                .trim()
                .to_string();
            if resources.is_empty() {
                return Err(format!(
                    "{} -print-resource-dir named no folder",
                    clang.display()
                ));
            }
            Walls::for_program(&clang, &env, &[resources.into()])
        })
        .as_ref()
        .map_err(|e| format!("client kernels are not compiled on this machine: {e}"))
}

/// The only environment a client's compile gets: clang is found where this process finds it;
/// nothing else (CPATH, C_INCLUDE_PATH, ...) reaches it.
fn client_path() -> std::ffi::OsString {
    std::env::var_os("PATH").unwrap_or_default()
}

/// Whose kernel is compiled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trust {
    User,
    Client,
}

fn features(
    source: &str,
    build_options: &str,
    args: &[String],
    trust: Trust,
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
    let stats = ir::parse(&compile(source, build_options, args, trust)?);
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

/// The LLVM IR text of `source`. A client's kernel is compiled inside [`client_sandbox`]'s
/// walls, without the standard include directories or trigraphs, from `/`, with an empty
/// environment.
fn compile(
    source: &str,
    build_options: &str,
    args: &[String],
    trust: Trust,
) -> Result<String, FeatureError> {
    let clang = ndtune_core::tools::clang();
    let mut command = Command::new(&clang);
    command.args(CLANG_ARGS);
    let mut bounds = Bounds::wall(Duration::from_secs(300));
    bounds.output = 256 << 20;
    if trust == Trust::Client {
        let walls = client_sandbox().map_err(FeatureError::Refused)?;
        walls.confine(&mut command).map_err(FeatureError::Refused)?;
        command
            .env_clear()
            .env("PATH", client_path())
            .current_dir("/")
            .args(["-nostdlibinc", "-fno-trigraphs"]);
        bounds.wall = super::untrusted::TIME_LIMIT;
        bounds.memory = Some(super::untrusted::MEMORY_LIMIT);
        bounds.output = 64 << 20;
    }
    command.args(args).args(["--", "-"]);
    let ran = bounded::run(command, source.as_bytes(), bounds).map_err(|e| match e {
        RunError::Spawn(e) => FeatureError::Clang(e),
        e => FeatureError::Compile {
            options: build_options.to_string(),
            stderr: format!("clang {e}"),
        },
    })?;
    if !ran.status.success() {
        return Err(FeatureError::Compile {
            options: build_options.to_string(),
            stderr: ran.failure(),
        });
    }
    if ran.truncated {
        return Err(FeatureError::Compile {
            options: build_options.to_string(),
            stderr: format!("the LLVM IR is larger than {} MiB", bounds.output >> 20),
        });
    }
    Ok(String::from_utf8_lossy(&ran.stdout).into_owned())
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
