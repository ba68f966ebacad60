//! Every file ndtune is given is read within bounds (`ndtune_core::input`): a device such as
//! `/dev/zero`, a FIFO or a symbolic link to either is refused at once with the file named, and
//! a gzip bomb stops at the unpacked limit instead of filling the memory.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `/dev/zero` behind a symlink and a FIFO that nobody writes. (Gzip bombs are tested where
/// they are cheap, in `ndtune_core::input`: the limits of real inputs are gigabytes.)
struct Traps {
    _dir: tempfile::TempDir,
    zero: PathBuf,
    fifo: PathBuf,
}

fn traps() -> Traps {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let fifo = dir.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    Traps {
        _dir: dir,
        zero,
        fifo,
    }
}

/// Runs ndtune with `args`, `{}` replaced by `path`: it must fail within seconds, naming the
/// file as not a regular file.
fn refused(args: &[&str], path: &Path) {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{}", path.to_str().unwrap()))
        .collect();
    let out = ndtune()
        .args(&args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(
        stderr.contains("not a regular file") && stderr.contains(path.to_str().unwrap()),
        "{args:?}: {stderr}"
    );
}

#[test]
fn devices_fifos_and_links_to_them_are_refused_by_every_reader() {
    let t = traps();
    let commands: [&[&str]; 9] = [
        &["learn", "eval", "--data", "{}"],
        &["learn", "train", "--data", "{}", "--out", "/dev/null"],
        &[
            "learn",
            "predict",
            "--model",
            "{}",
            "--kernel",
            "x.stencil.toml",
            "--size",
            "8x8",
            "--profile",
            "hd4600",
        ],
        &["learn", "features", "{}"],
        &["space", "{}"],
        &[
            "space",
            &examples().join("conv1d.toml").display().to_string(),
            "--profile-file",
            "{}",
        ],
        &["collect", "{}"],
        &["tune", "--replay", "{}"],
        &["bench-strategies", "{}"],
    ];
    for args in commands {
        for path in [&t.zero, &t.fifo] {
            refused(args, path);
        }
    }
    let serve = ["serve", "--model", "{}", "--listen", "127.0.0.1:0"];
    refused(&serve, &t.zero);
    refused(&serve, &t.fifo);
}
