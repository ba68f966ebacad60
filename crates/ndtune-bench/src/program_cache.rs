//! Program binaries kept across campaigns, as PyOpenCL keeps its own: a build worker's binary of a
//! define set is copied into `$NDTUNE_CACHE_DIR/programs` (default `$XDG_CACHE_HOME/ndtune` or
//! `~/.cache/ndtune`; used only where it and each file are the user's own and nobody else's to
//! write: [`ndtune_core::cache`]), named by a hash of the device (name, platform, language and
//! driver versions), the kernel source with every header it includes ([`KernelSource::digest`]),
//! the kernel's name (a CUDA binary is of one kernel: two kernels of one source and options are two
//! binaries) and the build options. A later campaign that needs the same
//! program takes the file instead of starting a build worker: on a GPU, where each build worker
//! opens a context of its own on the device, a campaign whose programs are all cached starts none.
//!
//! A binary the driver no longer takes (another driver, say) is only a miss: the measurement
//! worker compiles from source. A driver that keeps its builds itself (PoCL's kernel cache) gets
//! an empty file: the build was made into that cache, where the measurement's build from source
//! finds it (or, where that cache was emptied since, compiles it again). `NDTUNE_CACHE_DIR=off`
//! turns the cache off; deleting the folder empties it.

use crate::builder::Built;
use ndtune_core::text::hex;
use ndtune_device::DeviceProfile;
use ndtune_spec::KernelSource;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The cached programs of one source on one device.
#[derive(Debug, Clone)]
pub struct ProgramCache {
    dir: PathBuf,
    /// Hash input shared by every program of this source on this device.
    identity: String,
}

impl ProgramCache {
    /// The cache of `source`'s programs of `kernel` on `device`, in the cache folder `base`,
    /// else the one the environment names; none where that is `off` or no folder can be made.
    pub fn open(
        base: Option<&Path>,
        device: &DeviceProfile,
        source: &KernelSource,
        kernel: &str,
    ) -> Option<ProgramCache> {
        // A folder that is not the user's own and private is not used (nor is one that cannot
        // be made): the driver would load what another user put there.
        let dir = match base {
            Some(base) => ndtune_core::cache::folder_in(base, "programs").ok()?,
            None => ndtune_core::cache::folder("programs").ok()??,
        };
        Some(ProgramCache::in_dir(dir, device, source, kernel))
    }

    /// The cache of `source`'s programs of `kernel` on `device` in the folder `dir`.
    fn in_dir(
        dir: PathBuf,
        device: &DeviceProfile,
        source: &KernelSource,
        kernel: &str,
    ) -> ProgramCache {
        let identity = format!(
            "{}\0{}\0{}\0{}\0{}\0{kernel}",
            device.name,
            device.platform_name,
            device.version,
            device.driver_version,
            source.digest()
        );
        ProgramCache { dir, identity }
    }

    /// The file a binary built with `options` is kept in.
    fn path(&self, options: &str) -> PathBuf {
        let mut h = Sha256::new();
        h.update(self.identity.as_bytes());
        h.update([0]);
        h.update(options.as_bytes());
        self.dir.join(format!("{}.bin", hex(&h.finalize())))
    }

    /// What is kept of the program built with `options`, if its file is the user's own and
    /// private: its binary, or that the driver's own cache holds it.
    pub fn get(&self, options: &str) -> Option<Built> {
        let path = self.path(options);
        let file = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
        ndtune_core::cache::owned_and_private(&path).ok()?;
        Some(if file.len() == 0 {
            Built::InDriverCache
        } else {
            Built::Binary(path)
        })
    }

    /// Keeps a copy of `binary` (a file; none: built into the driver's own cache, kept as an
    /// empty file) as the program built with `options`; written aside and renamed, so that a
    /// reader never sees half of it. A failure only means nothing is kept.
    pub fn keep(&self, options: &str, binary: Option<&Path>) {
        let path = self.path(options);
        let partial = path.with_extension(format!("{}.partial", std::process::id()));
        let written = match binary {
            Some(binary) => std::fs::copy(binary, &partial).map(drop),
            None => std::fs::write(&partial, []),
        };
        if written.is_ok() && std::fs::rename(&partial, &path).is_err() {
            let _ = std::fs::remove_file(&partial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two kernels of one source built with the same options are two binaries (a CUDA binary
    /// holds one kernel): the cache never hands one kernel's binary to the other.
    #[test]
    fn each_kernel_of_a_source_has_its_own_binaries() {
        // A folder of its own, not through the environment: the tests of this crate run in
        // threads of one process, and a cache folder set there would be theirs too.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k.cu");
        std::fs::write(&file, "__global__ void a() {}\n__global__ void b() {}\n").unwrap();
        let source = KernelSource::read(&[file], &[]).unwrap();
        let device = ndtune_device::builtin::find("gt550m").unwrap();
        let binary = dir.path().join("a.bin");
        std::fs::write(&binary, b"binary of a").unwrap();
        let open =
            |kernel| ProgramCache::in_dir(dir.path().to_path_buf(), &device, &source, kernel);
        let a = open("a");
        a.keep("-DX=1", Some(&binary));
        let b = open("b");
        assert!(b.get("-DX=1").is_none());
        match a.get("-DX=1") {
            Some(Built::Binary(path)) => {
                assert_eq!(std::fs::read(path).unwrap(), b"binary of a")
            }
            other => panic!("{other:?}"),
        }
    }
}
