//! Walls that the operating system enforces around a tool run for a client who is not trusted
//! (the service compiling a client's kernel with clang): the process and everything it starts
//! can open no file but the tool's own program, the shared libraries the dynamic loader
//! resolves for it and the folders the caller names (clang's resource directory), read-only;
//! it can write, create, remove or execute nothing else.
//!
//! The walls are a Landlock ruleset (Linux 5.13 and later, through the `landlock` crate). It is
//! built once per tool in this process, with every access right to files handled, and required
//! in full: a kernel without Landlock, or one that cannot handle reads, executes and writes,
//! gives an error here, so a caller can refuse the work instead of running it unconfined. Each
//! run gets a duplicate of the ruleset's descriptor, which the child enforces on itself between
//! fork and exec (two system calls, no allocation: `no_new_privs`, `landlock_restrict_self`).
//!
//! What the walls do not stop is named where the tool is run: its time, memory and output are
//! [`crate::bounded`]'s, and what it reads from its standard input is the caller's.

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, ABI,
};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file access rights every Landlock kernel handles (ABI 1): reading, executing, writing,
/// creating and removing. All of them are required.
const REQUIRED: ABI = ABI::V1;
/// Rights of later ABIs (linking across folders, truncating, device ioctls), handled where the
/// kernel knows them.
const WANTED: ABI = ABI::V5;

/// A ruleset for one tool: what a confined run of it may open.
pub struct Walls {
    ruleset: RulesetCreated,
    /// What the ruleset lets the tool read, for messages and documentation.
    readable: Vec<PathBuf>,
}

impl std::fmt::Debug for Walls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walls")
            .field("readable", &self.readable)
            .finish()
    }
}

impl Walls {
    /// Walls around `program` (found on `PATH` as a command would be, run with the environment
    /// `env`): it may read and execute its own file and the shared libraries the dynamic loader
    /// resolves for it with that environment, and read below each of `folders`. Nothing else.
    /// `Err` where the kernel cannot enforce that (no Landlock, or a file right it lacks), or
    /// the program cannot be found.
    pub fn for_program(
        program: &Path,
        env: &[(&str, &std::ffi::OsStr)],
        folders: &[PathBuf],
    ) -> Result<Walls, String> {
        landlock_version()?;
        let binary = resolve(program)?;
        let libraries = loaded_libraries(&binary, env)?;
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(REQUIRED))
            .and_then(|r| {
                r.set_compatibility(CompatLevel::BestEffort)
                    .handle_access(AccessFs::from_all(WANTED))
            })
            .and_then(|r| r.create())
            .map_err(|e| format!("this kernel cannot confine a process (Landlock): {e}"))?;
        ruleset = ruleset.set_compatibility(CompatLevel::HardRequirement);
        let run = AccessFs::from_read(REQUIRED) & AccessFs::from_file(REQUIRED);
        let mut readable = Vec::new();
        let files = std::iter::once(binary)
            .chain(libraries)
            .chain(std::iter::once(PathBuf::from("/etc/ld.so.cache")))
            .filter(|p| p.is_file());
        for file in files {
            ruleset = allow(ruleset, &file, run)?;
            readable.push(file);
        }
        for folder in folders {
            ruleset = allow(ruleset, folder, AccessFs::from_read(REQUIRED))?;
            readable.push(folder.clone());
        }
        Ok(Walls { ruleset, readable })
    }

    /// What a confined run may read.
    pub fn readable(&self) -> &[PathBuf] {
        &self.readable
    }

    /// Makes `command`'s process enforce these walls on itself before it runs the program.
    pub fn confine(&self, command: &mut Command) -> Result<(), String> {
        let mut ruleset = Some(
            self.ruleset
                .try_clone()
                .map_err(|e| format!("cannot duplicate the sandbox's ruleset: {e}"))?,
        );
        // SAFETY: between fork and exec: `restrict_self` makes two system calls (prctl,
        // landlock_restrict_self) and closes the duplicated descriptor; it allocates nothing.
        unsafe {
            command.pre_exec(move || match ruleset.take() {
                Some(r) => match r.restrict_self() {
                    Ok(_) => Ok(()),
                    Err(_) => Err(std::io::Error::last_os_error()),
                },
                None => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            });
        }
        Ok(())
    }
}

/// The Landlock ABI version this kernel offers, or why it offers none.
fn landlock_version() -> Result<i64, String> {
    const VERSION: libc::c_uint = 1; // LANDLOCK_CREATE_RULESET_VERSION
                                     // SAFETY: landlock_create_ruleset(2) asked for its version: no attribute, no descriptor.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            VERSION,
        )
    };
    if v >= 1 {
        return Ok(v);
    }
    let e = std::io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "this kernel cannot confine a process (Landlock): it has no Landlock (Linux 5.13 or later built with it is needed)".into()
        }
        Some(libc::EOPNOTSUPP) => {
            "this kernel cannot confine a process (Landlock): Landlock is built in but not enabled (add `landlock` to the `lsm=` boot parameter)".into()
        }
        _ => format!("this kernel cannot confine a process (Landlock): {e}"),
    })
}

/// Adds a rule letting the tool reach `path` (a file or a folder and all below it) with `access`
/// (narrowed to what a file can have, where `path` is one).
fn allow(
    ruleset: RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(REQUIRED)
    };
    let fd = PathFd::new(path).map_err(|e| format!("{}: {e}", path.display()))?;
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("cannot let the sandbox read {}: {e}", path.display()))
}

/// `program`'s file: as given where it names a folder, else the first match on `PATH`; links
/// resolved (Landlock's rules hold for the file, not for the names leading to it).
fn resolve(program: &Path) -> Result<PathBuf, String> {
    let found = if program.components().count() > 1 {
        Some(program.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
    };
    let found = found.ok_or_else(|| format!("`{}` is not on PATH", program.display()))?;
    std::fs::canonicalize(&found).map_err(|e| format!("{}: {e}", found.display()))
}

/// The shared libraries and the loader that glibc's dynamic loader resolves for `binary` with
/// `env` (what `ldd` prints, asked of the loader itself): the program is not run.
fn loaded_libraries(
    binary: &Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<Vec<PathBuf>, String> {
    let out = Command::new(binary)
        .env_clear()
        .envs(env.iter().copied())
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut libraries = Vec::new();
    for line in text.lines() {
        // `\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)` or `\t/lib64/ld-linux... (0x...)`
        let path = match line.split_once("=>") {
            Some((_, right)) => right.trim(),
            None => line.trim(),
        };
        let path = path.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            let path = Path::new(path);
            // The name the loader opens may be a link: the rule holds for the file it leads to.
            libraries.push(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()));
        }
    }
    Ok(libraries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat_walls(folder: &Path) -> Walls {
        let path = std::env::var_os("PATH").unwrap_or_default();
        Walls::for_program(
            Path::new("cat"),
            &[("PATH", path.as_os_str())],
            &[folder.to_path_buf()],
        )
        .expect("this machine's kernel has Landlock")
    }

    fn cat(walls: &Walls, file: &Path) -> std::process::Output {
        let mut command = Command::new("cat");
        command.env_clear().arg(file);
        walls.confine(&mut command).unwrap();
        command.output().unwrap()
    }

    #[test]
    fn a_confined_program_reads_only_what_its_walls_let_it() {
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(inside.path().join("ok"), "readable").unwrap();
        std::fs::write(outside.path().join("secret"), "hidden").unwrap();
        let walls = cat_walls(inside.path());
        let ok = cat(&walls, &inside.path().join("ok"));
        assert!(ok.status.success(), "{ok:?}");
        assert_eq!(ok.stdout, b"readable");
        for file in [
            outside.path().join("secret"),
            PathBuf::from("/etc/passwd"),
            PathBuf::from("/proc/self/environ"),
        ] {
            let denied = cat(&walls, &file);
            assert!(!denied.status.success(), "{} was read", file.display());
            assert!(denied.stdout.is_empty());
            assert!(
                String::from_utf8_lossy(&denied.stderr).contains("Permission denied"),
                "{}: {}",
                file.display(),
                String::from_utf8_lossy(&denied.stderr)
            );
        }
        // Nothing can be written either, not even inside the readable folder.
        let mut sh = Command::new("sh");
        sh.env_clear()
            .args(["-c", "echo x > \"$1\""])
            .arg("sh")
            .arg(inside.path().join("new"));
        // `sh` is not in the walls: it cannot even start.
        walls.confine(&mut sh).unwrap();
        assert!(!sh.output().is_ok_and(|o| o.status.success()));
        assert!(!inside.path().join("new").exists());
    }
}
