//! The user's cache folder (`$NDTUNE_CACHE_DIR`, else `$XDG_CACHE_HOME/ndtune`, else
//! `~/.cache/ndtune`) and the checks that make what is kept there safe to use: a folder is
//! created private (0700) and used only where this user owns it and nobody else can write to
//! it, and a file is taken only where the same holds for it. Programs that ndtune runs from
//! there are verified against the content hash recorded when they were made
//! ([`record_digest`], [`verify_digest`]): a shared, predictable path such as `/tmp/...` is
//! never trusted.

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The cache folder `sub` (created private where missing); `Ok(None)` where the cache is off
/// (`NDTUNE_CACHE_DIR=off`) or no home is known; `Err` where the folder or one above it in the
/// cache is not safe (another owner, writable by others), saying which and why.
pub fn folder(sub: &str) -> Result<Option<PathBuf>, String> {
    let base = match std::env::var_os("NDTUNE_CACHE_DIR") {
        Some(d) if d == "off" => return Ok(None),
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let Some(cache) = user_cache() else {
                return Ok(None);
            };
            cache.join("ndtune")
        }
    };
    folder_in(&base, sub).map(Some)
}

/// The folder `sub` of the cache folder `base` (a program's own, in place of the user's), made
/// and checked as [`folder`] makes and checks the user's.
pub fn folder_in(base: &Path, sub: &str) -> Result<PathBuf, String> {
    let dir = base.join(sub);
    made_by_its_owner(&dir)?;
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make the cache folder {}: {e}", dir.display()))?;
    for d in [base, &dir] {
        owned_and_private(d)?;
    }
    Ok(dir)
}

/// The user's cache folder of every program: `$XDG_CACHE_HOME`, else `~/.cache`.
fn user_cache() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
}

/// Where the OpenCL driver should keep its own kernel cache (PoCL's `POCL_CACHE_DIR`) when its
/// default, in the user's cache folder, lies inside another user's folder (root given another
/// user's `HOME`), so that nothing of root's is made there: ndtune's cache folder `pocl`, else
/// a private folder of this user's in the temporary folder. `None` where the default is safe,
/// or the user chose (`POCL_CACHE_DIR` set).
pub fn driver_cache_override() -> Option<PathBuf> {
    if std::env::var_os("POCL_CACHE_DIR").is_some() {
        return None;
    }
    made_by_its_owner(&user_cache()?.join("pocl")).err()?;
    if let Ok(Some(dir)) = folder("pocl") {
        return Some(dir);
    }
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("ndtune-pocl-{me}"));
    let made = DirBuilder::new().mode(0o700).create(&dir);
    match made.is_ok() || dir.is_dir() {
        true => owned_and_private(&dir).ok().map(|()| dir),
        false => None,
    }
}

/// `Ok` where the folders of `dir` that are missing would be made inside a folder of this
/// user's, or of root's (`/tmp`, `/var/cache`), or `dir` is such a folder: root, given another
/// user's `HOME`, must not make folders of its own inside that user's home.
fn made_by_its_owner(dir: &Path) -> Result<(), String> {
    let existing = dir
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    let meta = std::fs::metadata(existing).map_err(|e| format!("{}: {e}", existing.display()))?;
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    match meta.uid() {
        owner if owner == me || owner == 0 => Ok(()),
        owner if existing == dir => Err(format!(
            "the cache folder {} belongs to user {owner}, not to this user ({me}): ndtune does not use it (set NDTUNE_CACHE_DIR, XDG_CACHE_HOME or HOME to a folder of this user's)",
            dir.display(),
        )),
        owner => Err(format!(
            "the cache folder {} would be made inside {}, which belongs to user {owner}, not to this user ({me}): ndtune makes no folder there (set NDTUNE_CACHE_DIR, XDG_CACHE_HOME or HOME to a folder of this user's)",
            dir.display(),
            existing.display()
        )),
    }
}

/// A private (0700) temporary folder of this process, `TMPDIR/PREFIXPID-XXXXXX` (`PREFIX` is
/// `ndtune-` and a name without digits, ending in `-`), removed when the value is dropped. The
/// folders of the same prefix that this user's processes now dead left (killed before they
/// could remove theirs) are removed first.
pub fn private_temp_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    sweep_dead(&std::env::temp_dir(), prefix);
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// Removes the private temporary folders ([`private_temp_dir`]) that process `pid` made: a
/// parent that killed a worker cleans up after it, and a process about to exit at once (a
/// second Ctrl-C) after itself.
pub fn remove_private_temp_dirs_of(pid: u32) {
    remove_private_dirs(&std::env::temp_dir(), "ndtune-", |made_by| {
        made_by == pid as libc::pid_t
    });
}

/// Removes the folders `PREFIXPID-...` in `dir` of this user's whose process `PID` is gone.
fn sweep_dead(dir: &Path, prefix: &str) {
    remove_private_dirs(dir, prefix, |pid| {
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    });
}

/// Removes the folders of this user's in `dir` named `PREFIX...PID-SUFFIX` (a name without
/// digits after `PREFIX`, as [`private_temp_dir`] makes them) for which `remove(PID)` holds.
fn remove_private_dirs(dir: &Path, prefix: &str, remove: impl Fn(libc::pid_t) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| {
                rest.trim_start_matches(|c: char| !c.is_ascii_digit())
                    .split_once('-')
            })
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let owned_dir = entry
            .path()
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir() && m.uid() == me);
        if owned_dir && remove(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `Ok` where `path` (not followed where it is a symlink) belongs to this user and nobody
/// else may write to it.
pub fn owned_and_private(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "{} belongs to user {}, not to this user ({me}): ndtune does not use it",
            path.display(),
            meta.uid()
        ));
    }
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{} is a symbolic link: ndtune does not use it",
            path.display()
        ));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(format!(
            "{} can be written by other users (mode {:o}): ndtune does not use it",
            path.display(),
            meta.permissions().mode() & 0o777
        ));
    }
    Ok(())
}

/// Where [`record_digest`] keeps the digest of `path`: `PATH.sha256`.
pub fn digest_file(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    crate::text::sha256_file(path).map(|d| crate::text::hex(&d))
}

/// Records the SHA-256 of `path` beside it (`PATH.sha256`), for [`verify_digest`].
pub fn record_digest(path: &Path) -> std::io::Result<()> {
    std::fs::write(digest_file(path), sha256_of(path)?)
}

/// `Ok` where `path` and its recorded digest are this user's own, private, and the file's
/// content still has that digest; else why not.
pub fn verify_digest(path: &Path) -> Result<(), String> {
    let recorded_at = digest_file(path);
    owned_and_private(path)?;
    owned_and_private(&recorded_at)?;
    let recorded = std::fs::read_to_string(&recorded_at)
        .map_err(|e| format!("{}: {e}", recorded_at.display()))?;
    let now = sha256_of(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match recorded.trim() == now {
        true => Ok(()),
        false => Err(format!(
            "{} does not have the content recorded when it was made",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_temporary_folders_are_private_and_dead_processes_ones_are_swept() {
        let tmp = tempfile::tempdir().unwrap();
        // A folder of a process that is gone (pid 2^22 + 1 exceeds pid_max's default), and one
        // of this living process.
        let dead = tmp.path().join("ndtune-x-4194305-abc");
        let living = tmp
            .path()
            .join(format!("ndtune-x-{}-abc", std::process::id()));
        for d in [&dead, &living] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("f"), "x").unwrap();
        }
        sweep_dead(tmp.path(), "ndtune-x-");
        assert!(!dead.exists());
        assert!(living.exists());
        let private = private_temp_dir("ndtune-test-private-").unwrap();
        let mode = std::fs::metadata(private.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let path = private.path().to_path_buf();
        drop(private);
        assert!(!path.exists());
    }

    #[test]
    fn no_folder_is_made_inside_another_users_folder() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("someone");
        std::fs::create_dir(&home).unwrap();
        // SAFETY: geteuid(2) cannot fail.
        let me = unsafe { libc::geteuid() };
        if me == 0 {
            // Root gives the folder away, as another user's home is.
            let c = std::ffi::CString::new(home.to_str().unwrap()).unwrap();
            // SAFETY: chown(2) of a path this test made, with a NUL-terminated path.
            assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
            let e = made_by_its_owner(&home.join(".cache/ndtune/programs")).unwrap_err();
            assert!(e.contains("belongs to user 65534"), "{e}");
        }
        // A folder of this user's, or root's, takes new folders.
        made_by_its_owner(&dir.path().join("mine/ndtune")).unwrap();
        made_by_its_owner(Path::new("/tmp/ndtune-test-none/x")).unwrap();
    }

    #[test]
    fn a_file_others_can_write_or_of_changed_content_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("program");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o700)).unwrap();
        record_digest(&program).unwrap();
        std::fs::set_permissions(
            digest_file(&program),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        verify_digest(&program).unwrap();
        std::fs::write(&program, "#!/bin/sh\nrm -rf /\n").unwrap();
        let e = verify_digest(&program).unwrap_err();
        assert!(e.contains("does not have the content recorded"), "{e}");
        record_digest(&program).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = verify_digest(&program).unwrap_err();
        assert!(
            e.contains("can be written by other users (mode 777)"),
            "{e}"
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&program, &link).unwrap();
        assert!(owned_and_private(&link)
            .unwrap_err()
            .contains("symbolic link"));
    }
}
