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
            let Some(cache) = std::env::var_os("XDG_CACHE_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            else {
                return Ok(None);
            };
            cache.join("ndtune")
        }
    };
    let dir = base.join(sub);
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make the cache folder {}: {e}", dir.display()))?;
    for d in [&base, &dir] {
        owned_and_private(d)?;
    }
    Ok(Some(dir))
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
