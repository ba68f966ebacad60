//! [`Spec::setup`]: everything besides the device, the constants and the configuration that
//! can change a result, described and digested ([`ndtune_core::setup`]).
//!
//! The description takes the spec's sections as written (canonical JSON of the parsed TOML), so
//! that a key added to one of them later is covered without anyone remembering to add it:
//! `[kernel]` (source files, include directories, build options), `[launch]`, `[[args]]`,
//! `[verify]` and `[measure]` (without `flops` and `bytes`, which only change what reports
//! show, nor the racing settings, which a raced timing records itself; with the protocol's
//! values filled in, so that a changed default counts too); then the contents of every file
//! those name (kernel files, the headers they include, a reference's files) by SHA-256, input
//! data files by BLAKE3 (they may be large), and the data seed where an input is drawn from it. Files an argument reads must be added to
//! [`Spec::setup`]'s list as arguments gain them.
//! `[constants]` are left out (the constants key results themselves), as are `[params]`,
//! `[space]` and `[split]`, which choose configurations but do not change what one measures.

use crate::sources::KernelSource;
use crate::{Reference, SpanKey, Spec, SpecError};
use ndtune_core::setup::Setup;
use serde_json::{Map, Value};
use std::path::Path;

impl Spec {
    /// The setup of this spec's results with `source` (read by [`Spec::kernel_source`]) and
    /// input data drawn with `seed`. A reference file that cannot be read is an error at
    /// `[verify]`.
    pub fn setup(&self, source: &KernelSource, seed: u64) -> Result<Setup, SpecError> {
        let raw: toml::Table = toml::from_str(&self.text).expect("the spec parsed before");
        let section = |name: &str| {
            raw.get(name).map_or(Value::Null, |v| {
                serde_json::to_value(v).expect("TOML values are JSON values")
            })
        };
        let mut files = Map::new();
        // A header found nowhere is named as its `#include` line writes it.
        let mut add = |path: &Path, digest: Option<&str>| match digest {
            Some(digest) => files.insert(self.shown(path), digest.into()),
            None => files.insert(path.display().to_string(), "missing".into()),
        };
        for f in &source.files {
            add(&f.path, f.digest.as_deref());
        }
        let at_verify = |message: String| self.error_at(&SpanKey::Section("verify"), message);
        let verify = self.verify.as_ref();
        match verify.and_then(|v| v.reference.as_ref()) {
            Some(Reference::Kernel { source, .. }) => {
                let reference =
                    KernelSource::read(std::slice::from_ref(source), &self.kernel.search_dirs())
                        .map_err(|e| at_verify(format!("[verify] reference: {}", e.message)))?;
                for f in &reference.files {
                    add(&f.path, f.digest.as_deref());
                }
            }
            Some(Reference::Host(host)) => {
                for f in
                    host_files(host).map_err(|e| at_verify(format!("[verify] reference: {e}")))?
                {
                    add(&f.path, f.digest.as_deref());
                }
            }
            Some(Reference::Config(_) | Reference::Builtin(_)) | None => {}
        }
        if let Some(check) = verify.and_then(|v| v.check.as_ref()) {
            for f in host_files(check).map_err(|e| at_verify(format!("[verify] check: {e}")))? {
                add(&f.path, f.digest.as_deref());
            }
        }
        // Inputs read from files are data whose every byte can change a result: digested each
        // in a thread of its own (three 40 MB inputs in the time of one).
        let data: Vec<(&str, &Path)> = self
            .args
            .iter()
            .filter_map(|arg| match &arg.kind {
                crate::ArgKind::Buffer {
                    init: crate::Init::Npy(path),
                    ..
                } => Some((arg.name.as_str(), path.as_path())),
                _ => None,
            })
            .collect();
        let digests: Vec<_> = std::thread::scope(|s| {
            let each: Vec<_> = data
                .iter()
                .map(|(_, path)| s.spawn(|| ndtune_core::text::short_blake3_file(path)))
                .collect();
            each.into_iter()
                .map(|h| h.join().expect("a digest does not panic"))
                .collect()
        });
        for ((name, path), digest) in data.iter().zip(digests) {
            let digest = digest.map_err(|e| {
                self.error_at(
                    &SpanKey::Section("args"),
                    format!("[[args]] {name}: init.npy: {}: {e}", path.display()),
                )
            })?;
            add(path, Some(&format!("blake3:{digest}")));
        }
        let mut measure = match section("measure") {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        // Racing settings are left out too: a timing the full protocol took is the same with or
        // without racing, and a raced one names its rule in the outcome (a campaign under
        // another rule measures it again).
        for not_a_result in ["flops", "bytes", "race", "race_margin", "race_confidence"] {
            measure.remove(not_a_result);
        }
        let m = &self.measure;
        for (key, value) in [
            ("warmup", m.warmup),
            ("runs", m.runs),
            ("best_of", m.best_of),
        ] {
            measure.insert(key.into(), value.into());
        }
        let seeded = self.args.iter().any(|a| match &a.kind {
            crate::ArgKind::Buffer { init, .. } => init.is_seeded(),
            _ => false,
        });
        let mut description = Map::new();
        for name in ["kernel", "launch", "args", "verify"] {
            description.insert(name.into(), section(name));
        }
        description.insert("files".into(), Value::Object(files));
        description.insert("measure".into(), Value::Object(measure));
        if seeded {
            description.insert("seed".into(), seed.into());
        }
        Ok(Setup::new(Value::Object(description)))
    }

    /// A file as the description names it: relative to the spec's directory where it is
    /// inside it, the same however the spec's path was given (`spec.toml`, `./spec.toml`,
    /// `../spec.toml`, an absolute path: a worker may get another form than the command line).
    fn shown(&self, path: &Path) -> String {
        // The file and folder as the file system resolves them (`..` and links), so that a
        // header found from the working directory and a spec reached through `..` compare;
        // where that fails, absolute, with the `.`s that `absolute` keeps dropped.
        let absolute = |p: &Path| {
            std::fs::canonicalize(p).unwrap_or_else(|_| {
                let a = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
                a.components().collect::<std::path::PathBuf>()
            })
        };
        // `spec.toml`'s parent is the empty path, which `absolute` refuses.
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => absolute(d),
            _ => absolute(Path::new(".")),
        };
        let path = absolute(path);
        path.strip_prefix(&dir)
            .unwrap_or(&path)
            .display()
            .to_string()
    }
}

/// A C host function's file and the headers its `#include` lines reach from its own directory
/// (found or not: creating one later changes the setup).
fn host_files(host: &crate::HostFunction) -> Result<Vec<crate::sources::SourceFile>, String> {
    KernelSource::read(std::slice::from_ref(&host.source), &[])
        .map(|read| read.files)
        .map_err(|e| e.message)
}
