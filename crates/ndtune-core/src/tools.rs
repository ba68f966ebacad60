//! External tools ndtune runs. Distributions install clang as `clang`, or only under a versioned
//! name (`clang-16`); `NDTUNE_CLANG` names one explicitly.

use std::path::{Path, PathBuf};

/// The clang to run: `$NDTUNE_CLANG`, else `clang` on `PATH`, else the newest `clang-N` on
/// `PATH`, else plain `clang` (whose absence the caller then reports).
pub fn clang() -> PathBuf {
    if let Some(p) = std::env::var_os("NDTUNE_CLANG") {
        return PathBuf::from(p);
    }
    let dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if dirs.iter().any(|d| d.join("clang").is_file()) {
        return PathBuf::from("clang");
    }
    newest_versioned(&dirs).unwrap_or_else(|| PathBuf::from("clang"))
}

fn newest_versioned(dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| {
            let path = e.ok()?.path();
            let version: u32 = file_name(&path)?.strip_prefix("clang-")?.parse().ok()?;
            Some((version, path))
        })
        .max_by_key(|(v, _)| *v)
        .map(|(_, p)| p)
}

fn file_name(p: &Path) -> Option<&str> {
    p.file_name()?.to_str()
}

/// The prerequisites of a make rule as `clang -M` writes it (`target: a.c b.h \` lines;
/// a space in a name escaped with a backslash).
pub fn make_dependencies(rule: &str) -> Vec<PathBuf> {
    let joined = rule.replace("\\\n", " ");
    let Some((_, prerequisites)) = joined.split_once(": ") else {
        return Vec::new();
    };
    let mut files = Vec::new();
    let mut name = String::new();
    let mut chars = prerequisites.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => name.extend(chars.next()),
            c if c.is_whitespace() => {
                if !name.is_empty() {
                    files.push(PathBuf::from(std::mem::take(&mut name)));
                }
            }
            c => name.push(c),
        }
    }
    if !name.is_empty() {
        files.push(PathBuf::from(name));
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_versioned_clang_is_found() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["clang-14", "clang-16", "clang-cpp-16", "clang-9"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let found = newest_versioned(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(found.file_name().unwrap(), "clang-16");
        assert_eq!(newest_versioned(&[]), None);
    }
}
