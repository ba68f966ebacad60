//! Reading OpenCL sources: bounded reads (a size limit, regular files only, UTF-8 text), a
//! kernel's files concatenated in order, and every header their `#include` lines reach, so that
//! a result's setup covers all the text the compiler reads ([`KernelSource`]).
//!
//! Includes are followed as the compiler finds them: `#include "name"` in the including file's
//! own directory, then in the search directories; `#include <name>` in the search directories.
//! The kernel files reach the compiler as one text from memory, whose own directory is the
//! working directory: PoCL's clang and NVRTC both look there first for its quoted includes, so
//! a header there counts, and so does the one the search directories hold of the same name.
//! The search directories are the kernel files' directories and then `include_dirs` (the
//! compiler gets them as `-I`, since it compiles the concatenated text from memory, not from
//! the files). Lines inside `#if` blocks are followed too: a header that a configuration may
//! include counts. A header found nowhere is recorded as missing, so that creating it later
//! changes the setup.
//!
//! The scan knows only `#include "name"` and `<name>`. What the preprocessor itself reads is
//! added by [`KernelSource::add_preprocessed`]: clang's dependency output (`-M -MG`), run on the
//! same text with the same search directories and the build options the preprocessor reads,
//! finds a header named by a macro (`#include HDR`) and one behind an `-I` that the scan did not
//! see.

use crate::{read_bytes, read_text};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The largest source file ndtune reads: 16 MiB.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// A file a build reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The file; for a header found nowhere, its name as the `#include` line writes it.
    pub path: PathBuf,
    /// The start of the SHA-256 of its bytes (16 hex digits); `None` for a header found
    /// nowhere.
    pub digest: Option<String>,
}

/// Why a kernel's sources could not be read: the message, and which of the listed files it
/// concerns (itself, or a header it includes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    pub file: usize,
    pub message: String,
}

/// A kernel's OpenCL source: the text the compiler gets and every file that text depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSource {
    /// The kernel files concatenated in order (a newline between files that lack one).
    pub text: String,
    /// The kernel files in order, then the headers their `#include` lines reach (found or
    /// not), in the order first met.
    pub files: Vec<SourceFile>,
    /// `-I DIR` for each search directory, where the files include anything; else empty.
    pub include_options: String,
    /// Every identifier of the text and of the headers found.
    names: HashSet<String>,
    /// Whether a file has an `#include`, `#import` or `#embed` line, of any form.
    reads_files: bool,
}

impl KernelSource {
    /// Reads `files` (in order) and the headers they include, searching `include_dirs` after
    /// the files' own directories (and the working directory first for the kernel text's
    /// quoted includes). Every path should be absolute or relative to the working directory.
    pub fn read(files: &[PathBuf], include_dirs: &[PathBuf]) -> Result<KernelSource, SourceError> {
        Self::read_in(files, include_dirs, Path::new("."))
    }

    /// [`KernelSource::read`] for a compiler whose working directory is `text_dir`.
    fn read_in(
        files: &[PathBuf],
        include_dirs: &[PathBuf],
        text_dir: &Path,
    ) -> Result<KernelSource, SourceError> {
        let mut search: Vec<PathBuf> = Vec::new();
        for dir in files
            .iter()
            .map(|f| parent(f))
            .chain(include_dirs.iter().cloned())
        {
            if !search.contains(&dir) {
                search.push(dir);
            }
        }
        let mut source = KernelSource {
            text: String::new(),
            files: Vec::new(),
            include_options: String::new(),
            names: HashSet::new(),
            reads_files: false,
        };
        let mut includes = false;
        let mut seen = HashSet::new();
        for (i, path) in files.iter().enumerate() {
            let fail = |message| SourceError { file: i, message };
            let text = read_text(path, MAX_SOURCE_BYTES, "kernel source")
                .map_err(|e| fail(e.to_string()))?;
            if !source.text.is_empty() && !source.text.ends_with('\n') {
                source.text.push('\n');
            }
            source.text.push_str(&text);
            source.files.push(SourceFile {
                path: path.clone(),
                digest: Some(digest(text.as_bytes())),
            });
            let found = include_lines(&text);
            includes |= !found.is_empty() || reads_files(&text);
            source
                .follow(&found, Includer::Text(text_dir), &search, &mut seen)
                .map_err(fail)?;
        }
        source.names.extend(source_names(&source.text));
        source.reads_files = includes;
        if includes {
            let mut options = Vec::new();
            for dir in &search {
                let absolute = std::path::absolute(dir)
                    .map_err(|e| SourceError {
                        file: 0,
                        message: format!("cannot make {} absolute: {e}", dir.display()),
                    })?
                    .display()
                    .to_string();
                if absolute.contains(char::is_whitespace) {
                    return Err(SourceError {
                        file: 0,
                        message: format!(
                            "the include directory `{absolute}` contains white space, which OpenCL build options cannot carry: move the sources"
                        ),
                    });
                }
                options.push(format!("-I {absolute}"));
            }
            source.include_options = options.join(" ");
        }
        Ok(source)
    }

    /// Whether a build of this source is a build of `other` too: the same text and, where the
    /// files include anything, the same files and headers in the same places (the same `-I`
    /// folders). Files that include nothing may lie anywhere: a Python call writes its kernel
    /// in a spec folder of its own, and the next call's same kernel builds the same.
    pub fn builds_alike(&self, other: &KernelSource) -> bool {
        self.text == other.text
            && self.reads_files == other.reads_files
            && (!self.reads_files
                || (self.files == other.files && self.include_options == other.include_options))
    }

    /// Adds the headers that `found`, the include lines of `includer`, reach, recursively.
    fn follow(
        &mut self,
        found: &[Include],
        includer: Includer,
        search: &[PathBuf],
        seen: &mut HashSet<PathBuf>,
    ) -> Result<(), String> {
        for include in found {
            let in_search = || {
                search
                    .iter()
                    .map(|d| d.join(&include.name))
                    .find(|p| p.is_file())
            };
            let own = |dir: &Path| {
                Some(dir.join(&include.name)).filter(|p| include.quoted && p.is_file())
            };
            let paths: Vec<PathBuf> = match includer {
                Includer::File(dir) => own(dir).or_else(in_search).into_iter().collect(),
                Includer::Text(dir) => own(dir).into_iter().chain(in_search()).collect(),
            };
            if paths.is_empty() {
                let missing = PathBuf::from(&include.name);
                if seen.insert(missing.clone()) {
                    self.files.push(SourceFile {
                        path: missing,
                        digest: None,
                    });
                }
                continue;
            }
            for path in paths {
                if !seen.insert(path.clone()) {
                    continue;
                }
                let bytes =
                    read_bytes(&path, MAX_SOURCE_BYTES, "header").map_err(|e| e.to_string())?;
                self.files.push(SourceFile {
                    path: path.clone(),
                    digest: Some(digest(&bytes)),
                });
                let text = String::from_utf8_lossy(&bytes);
                self.names.extend(source_names(&text));
                let dir = parent(&path);
                self.follow(&include_lines(&text), Includer::File(&dir), search, seen)?;
            }
        }
        Ok(())
    }

    /// Adds every file the preprocessor reads for this text that the scan did not find (see the
    /// module's header), running clang with `-M -MG`, the search directories and `options`
    /// (`-I`, `-D`, `-U`, `-cl-std=`). Nothing runs where no file has an include line. `Err`
    /// where clang cannot be run or lists nothing.
    pub fn add_preprocessed(&mut self, options: &[String]) -> Result<(), String> {
        use ndtune_core::bounded::{self, Bounds};
        if !self.reads_files {
            return Ok(());
        }
        let clang = ndtune_core::tools::clang();
        let mut command = std::process::Command::new(&clang);
        command
            .args(["-x", "cl", "-cl-no-stdinc", "-E", "-M", "-MG", "-w"])
            .args(self.include_options.split_whitespace())
            .args(options)
            .arg("-");
        let ran = bounded::run(
            command,
            self.text.as_bytes(),
            Bounds::wall(std::time::Duration::from_secs(60)),
        )
        .map_err(|e| {
            format!(
                "cannot list the headers the kernel reads with {} (install clang, or set NDTUNE_CLANG): {e}",
                clang.display()
            )
        })?;
        // The rule is written whatever else the preprocessor says (an `#error` that a
        // configuration's defines would avoid).
        let rule = String::from_utf8_lossy(&ran.stdout);
        if !rule.contains(':') {
            return Err(format!(
                "clang listed no dependencies of the kernel: {}",
                ran.failure()
            ));
        }
        let known: HashSet<PathBuf> = self
            .files
            .iter()
            .map(|f| std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone()))
            .collect();
        for file in ndtune_core::tools::make_dependencies(&rule) {
            if file.as_os_str() == "-" {
                continue;
            }
            let canonical = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
            if known.contains(&canonical) || self.files.iter().any(|f| f.path == file) {
                continue;
            }
            let digest = match file.is_file() {
                true => {
                    let bytes =
                        read_bytes(&file, MAX_SOURCE_BYTES, "header").map_err(|e| e.to_string())?;
                    self.names
                        .extend(source_names(&String::from_utf8_lossy(&bytes)));
                    Some(digest(&bytes))
                }
                false => None,
            };
            self.files.push(SourceFile { path: file, digest });
        }
        Ok(())
    }

    /// Whether the text or a header mentions `name` (a constant or parameter that then becomes
    /// a define).
    pub fn mentions(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// A 16-hex-digit id of everything the compiler reads: the text and each header's digest.
    pub fn digest(&self) -> String {
        let mut all = self.text.clone();
        for f in &self.files {
            all.push('\0');
            all.push_str(&f.path.display().to_string());
            all.push('\0');
            all.push_str(f.digest.as_deref().unwrap_or("missing"));
        }
        digest(all.as_bytes())
    }
}

fn digest(bytes: &[u8]) -> String {
    ndtune_core::text::short_sha256(bytes)
}

/// The directory of `file` (`.` for a bare file name).
fn parent(file: &Path) -> PathBuf {
    match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whose include lines [`KernelSource::follow`] follows: where a quoted include is looked for
/// before the search directories.
#[derive(Clone, Copy)]
enum Includer<'a> {
    /// The kernel text, which reaches the compiler from memory: PoCL's clang and NVRTC look in
    /// the working directory (this) first. A driver that does not is not known, but would find
    /// the header in the search directories, so where both have it, both count.
    Text(&'a Path),
    /// A header file, in this directory: every compiler looks there first.
    File(&'a Path),
}

/// One `#include` line.
#[derive(Debug, PartialEq)]
struct Include {
    name: String,
    /// `"name"` (searched in the including file's directory first), not `<name>`.
    quoted: bool,
}

/// Whether `text` has a directive that reads a file, in any form (`#include NAME` too).
fn reads_files(text: &str) -> bool {
    text.lines().any(|line| {
        line.trim_start()
            .strip_prefix('#')
            .map(str::trim_start)
            .is_some_and(|d| {
                ["include", "import", "embed"]
                    .iter()
                    .any(|w| d.starts_with(w))
            })
    })
}

/// The `#include "..."` and `#include <...>` lines of a source, in order.
fn include_lines(text: &str) -> Vec<Include> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let (close, quoted) = match rest.chars().next()? {
                '"' => ('"', true),
                '<' => ('>', false),
                _ => return None,
            };
            let name = &rest[1..][..rest[1..].find(close)?];
            Some(Include {
                name: name.to_string(),
                quoted,
            })
        })
        .collect()
}

/// Every identifier-like word of an OpenCL C source outside its comments and string or
/// character literals: the names it may use as defines. A name the code never uses gets no
/// define, so configurations that differ only in it share one build (a name only a comment
/// mentions would otherwise cost a build per value).
pub fn source_names(source: &str) -> HashSet<String> {
    code_only(source)
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// `source` with each comment and each string or character literal blanked out, as the
/// preprocessor sees it: a line comment ends at a newline not preceded by a backslash, a block
/// comment at the first `*/`, a literal at its unescaped closing quote or the line's end.
fn code_only(source: &str) -> String {
    #[derive(Clone, Copy, PartialEq)]
    enum In {
        Code,
        LineComment,
        BlockComment,
        Literal(char),
    }
    let mut code = String::with_capacity(source.len());
    let mut state = In::Code;
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        state = match (state, c) {
            (In::Code, '/') if chars.peek() == Some(&'/') => In::LineComment,
            (In::Code, '/') if chars.peek() == Some(&'*') => {
                chars.next();
                In::BlockComment
            }
            (In::Code, '"' | '\'') => In::Literal(c),
            (In::Code, _) => {
                code.push(c);
                continue;
            }
            (In::LineComment | In::Literal(_), '\\') => {
                chars.next();
                state
            }
            (In::LineComment | In::Literal(_), '\n') => In::Code,
            (In::Literal(quote), _) if c == quote => In::Code,
            (In::BlockComment, '*') if chars.peek() == Some(&'/') => {
                chars.next();
                In::Code
            }
            _ => state,
        };
        code.push(if c == '\n' { '\n' } else { ' ' });
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The same kernel in two folders builds alike where it includes nothing; where it includes
    /// a header, each folder's header is another build (found through another `-I`).
    #[test]
    fn the_same_text_builds_alike_wherever_it_lies_unless_it_includes_files() {
        let dir = tempfile::tempdir().unwrap();
        let read = |folder: &str, text: &[u8]| {
            let kernel = write(dir.path(), &format!("{folder}/k.cl"), text);
            write(dir.path(), &format!("{folder}/h.h"), b"#define H 1\n");
            KernelSource::read(&[kernel], &[]).unwrap()
        };
        let plain = b"kernel void k() {}";
        assert!(read("a", plain).builds_alike(&read("b", plain)));
        assert!(!read("a", plain).builds_alike(&read("b", b"kernel void k() { }")));
        let including = b"#include \"h.h\"\nkernel void k() {}";
        assert!(!read("a", including).builds_alike(&read("b", including)));
        assert!(read("a", including).builds_alike(&read("a", including)));
    }

    #[test]
    fn include_lines_are_found_in_both_forms() {
        let text = "#include \"a.h\"\n  #  include <b/c.h>\n// #include \"no.h\"\n#define X\n#include NAME\n#include \"unclosed";
        assert_eq!(
            include_lines(text),
            [
                Include {
                    name: "a.h".into(),
                    quoted: true
                },
                Include {
                    name: "b/c.h".into(),
                    quoted: false
                }
            ]
        );
    }

    #[test]
    fn files_are_concatenated_and_headers_followed_where_the_compiler_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let a = write(
            d,
            "src/a.cl",
            b"#include \"common.h\"\nkernel void a() { TILE; }",
        );
        let b = write(d, "src/b.cl", b"#include <lib.h>\n");
        write(
            d,
            "inc/common.h",
            b"#include \"deeper.h\"\n#include \"common.h\"\n",
        );
        write(d, "inc/deeper.h", b"#define DEEP WPT\n#include <gone.h>\n");
        write(d, "inc/lib.h", b"// lib\n");
        let source = KernelSource::read(&[a.clone(), b.clone()], &[d.join("inc")]).unwrap();
        assert_eq!(
            source.text,
            "#include \"common.h\"\nkernel void a() { TILE; }\n#include <lib.h>\n"
        );
        let paths: Vec<PathBuf> = source.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            paths,
            [
                a,
                d.join("inc/common.h"),
                d.join("inc/deeper.h"),
                PathBuf::from("gone.h"),
                b,
                d.join("inc/lib.h")
            ]
        );
        assert_eq!(source.files[3].digest, None);
        assert_eq!(
            source.files[5].digest.as_deref(),
            Some(digest(b"// lib\n").as_str())
        );
        assert!(source.mentions("TILE") && source.mentions("WPT") && !source.mentions("NOPE"));
        let src = std::path::absolute(d.join("src")).unwrap();
        let inc = std::path::absolute(d.join("inc")).unwrap();
        assert_eq!(
            source.include_options,
            format!("-I {} -I {}", src.display(), inc.display())
        );

        // A header's content, and a missing header that appears, change the digest.
        let before = source.digest();
        write(d, "inc/lib.h", b"// lib 2\n");
        let changed =
            KernelSource::read(&[d.join("src/a.cl"), d.join("src/b.cl")], &[d.join("inc")]);
        assert_ne!(changed.unwrap().digest(), before);
        write(d, "inc/lib.h", b"// lib\n");
        write(d, "src/gone.h", b"");
        let appeared =
            KernelSource::read(&[d.join("src/a.cl"), d.join("src/b.cl")], &[d.join("inc")]);
        assert_ne!(appeared.unwrap().digest(), before);
    }

    /// The kernel text reaches the compiler from memory: its quoted includes are found in the
    /// working directory first (as PoCL and NVRTC find them), so a header there counts, and
    /// changing it changes the digest; so does the search directories' header of that name.
    #[test]
    fn the_texts_quoted_includes_are_looked_for_in_the_working_directory_first() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let k = write(
            d,
            "spec/k.cl",
            b"#include \"factor.h\"\n#include \"both.h\"\n#include <angled.h>\n",
        );
        write(d, "run/factor.h", b"#define FACTOR 1.0f\n");
        write(d, "run/both.h", b"// the working directory's\n");
        write(d, "spec/both.h", b"// the kernel directory's\n");
        write(d, "run/angled.h", b"// not searched for <angled.h>\n");
        let run = d.join("run");
        let read = || KernelSource::read_in(std::slice::from_ref(&k), &[], &run).unwrap();
        let source = read();
        let found: Vec<(PathBuf, bool)> = source
            .files
            .iter()
            .map(|f| (f.path.clone(), f.digest.is_some()))
            .collect();
        assert_eq!(
            found,
            [
                (k.clone(), true),
                (run.join("factor.h"), true),
                (run.join("both.h"), true),
                (d.join("spec/both.h"), true),
                (PathBuf::from("angled.h"), false),
            ]
        );
        let before = source.digest();
        write(d, "run/factor.h", b"#define FACTOR 2.0f\n");
        let changed = read().digest();
        assert_ne!(changed, before);
        // A driver that skips the working directory reads the kernel directory's `both.h`.
        write(d, "spec/both.h", b"// changed\n");
        assert_ne!(read().digest(), changed);
    }

    #[test]
    fn a_source_without_includes_gets_no_include_options() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a b/k.cl", b"kernel void k() {}");
        let source = KernelSource::read(&[a], &[]).unwrap();
        assert_eq!(source.include_options, "");
        assert_eq!(source.files.len(), 1);
    }

    #[test]
    fn bad_sources_are_clear_errors_that_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let read = |files: &[PathBuf]| KernelSource::read(files, &[]).unwrap_err();
        let bad = write(d, "bad.cl", b"kernel void k() {}\n// caf\xe9\n");
        let err = read(std::slice::from_ref(&bad));
        assert!(
            err.message
                .ends_with("bad.cl:2:7: the kernel source is not UTF-8 text"),
            "{err:?}"
        );
        let err = read(&[PathBuf::from("/dev/zero")]);
        assert_eq!(
            err.message,
            "/dev/zero: the kernel source is not a regular file (a directory, a device or a pipe)"
        );
        let big = d.join("big.cl");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_SOURCE_BYTES + 1).unwrap();
        let err = read(&[big]);
        assert!(
            err.message.ends_with(
                "big.cl: the kernel source is larger than 16 MiB; ndtune reads at most that"
            ),
            "{err:?}"
        );
        let err = read(&[d.join("none.cl")]);
        assert!(
            err.message
                .contains("none.cl: cannot read the kernel source"),
            "{err:?}"
        );

        // A header too large is an error of the file that includes it.
        std::fs::File::create(d.join("huge.h"))
            .unwrap()
            .set_len(MAX_SOURCE_BYTES + 1)
            .unwrap();
        let ok = write(d, "ok.cl", b"kernel void k() {}\n");
        let main = write(d, "main.cl", b"#include \"huge.h\"\n");
        let err = read(&[ok, main]);
        assert_eq!(err.file, 1);
        assert!(
            err.message
                .contains("huge.h: the header is larger than 16 MiB"),
            "{err:?}"
        );
    }

    #[test]
    fn an_include_directory_with_white_space_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "with space/k.cl", b"#include \"h.h\"\n");
        let err = KernelSource::read(&[a], &[]).unwrap_err();
        assert!(err.message.contains("contains white space"), "{err:?}");
    }
}
