//! Host references written in C (`reference = { host = "ref.c", function = "f" }`): compiled once
//! with clang, together with a small `main` ndtune writes, into a program that reads the
//! arguments on stdin, calls `void f(void **buffers, const long long *scalars)` and writes every
//! buffer back on stdout. A separate process: a reference that crashes cannot take the worker
//! with it, and no foreign code is loaded into ndtune.

use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The driver around the user's function. Input: buffer count, scalar count (u64 each), each
/// buffer's byte length (u64), the scalars (i64), then the buffers' bytes; output: the buffers'
/// bytes after the call.
const MAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
void NDTUNE_FUNCTION(void **buffers, const long long *scalars);
static void need(int ok, const char *what) {
    if (!ok) { fprintf(stderr, "ndtune host reference: %s\n", what); exit(2); }
}
int main(void) {
    unsigned long long nb, ns;
    need(fread(&nb, 8, 1, stdin) == 1 && fread(&ns, 8, 1, stdin) == 1, "short header");
    unsigned long long *len = calloc(nb + 1, 8);
    long long *scalars = calloc(ns + 1, 8);
    void **buffers = calloc(nb + 1, sizeof(void *));
    need(len && scalars && buffers, "out of memory");
    need(fread(len, 8, nb, stdin) == nb && fread(scalars, 8, ns, stdin) == ns, "short sizes");
    for (unsigned long long i = 0; i < nb; ++i) {
        buffers[i] = malloc(len[i] ? len[i] : 1);
        need(buffers[i] != NULL, "out of memory");
        need(fread(buffers[i], 1, len[i], stdin) == len[i], "short buffer");
    }
    NDTUNE_FUNCTION(buffers, scalars);
    for (unsigned long long i = 0; i < nb; ++i)
        need(fwrite(buffers[i], 1, len[i], stdout) == len[i], "cannot write");
    return fflush(stdout) != 0;
}
"#;

/// Runs the reference `function` of C file `source` on `buffers` (bytes, in argument order) and
/// `scalars`; the buffers after the call.
pub fn run(
    source: &Path,
    function: &str,
    buffers: &[&[u8]],
    scalars: &[i64],
) -> Result<Vec<Vec<u8>>, String> {
    let program = compile(source, function)?;
    let mut input = Vec::new();
    input.extend((buffers.len() as u64).to_ne_bytes());
    input.extend((scalars.len() as u64).to_ne_bytes());
    for b in buffers {
        input.extend((b.len() as u64).to_ne_bytes());
    }
    for s in scalars {
        input.extend(s.to_ne_bytes());
    }
    for b in buffers {
        input.extend_from_slice(b);
    }
    let mut child = Command::new(&program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    // Feed stdin from a thread: the program may fill its stdout before it has read everything.
    let mut stdin = child.stdin.take().expect("piped");
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    let status = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = feeder.join();
    if !status.status.success() {
        return Err(format!(
            "host reference {} `{function}` failed ({}): {}",
            source.display(),
            status.status,
            String::from_utf8_lossy(&status.stderr).trim()
        ));
    }
    let total: usize = buffers.iter().map(|b| b.len()).sum();
    if out.len() != total {
        return Err(format!(
            "host reference {} `{function}` wrote {} bytes, not the {total} of its buffers",
            source.display(),
            out.len()
        ));
    }
    let mut rest = &out[..];
    Ok(buffers
        .iter()
        .map(|b| {
            let (head, tail) = rest.split_at(b.len());
            rest = tail;
            head.to_vec()
        })
        .collect())
}

/// The compiled program for a source and function, built once per content (cached in the
/// temporary directory, keyed by a hash of both).
fn compile(source: &Path, function: &str) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(source)
        .map_err(|e| format!("host reference {}: {e}", source.display()))?;
    let hash = Sha256::digest(format!("{function}\0{text}\0{MAIN}"));
    let hex = ndtune_core::text::hex(&hash[..12]);
    let dir = std::env::temp_dir().join("ndtune-host-references");
    let program = dir.join(format!("ref-{hex}"));
    if program.exists() {
        return Ok(program);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Build under a name of our own, then rename: concurrent workers never see half a file.
    let unique = format!("{hex}-{}", std::process::id());
    let main_c = dir.join(format!("main-{unique}.c"));
    std::fs::write(&main_c, MAIN).map_err(|e| format!("{}: {e}", main_c.display()))?;
    let building = dir.join(format!("building-{unique}"));
    let out = Command::new(ndtune_core::tools::clang())
        .args(["-std=c99", "-O2", "-w"])
        .arg(format!("-DNDTUNE_FUNCTION={function}"))
        .arg(source)
        .arg(&main_c)
        .arg("-lm")
        .arg("-o")
        .arg(&building)
        .output()
        .map_err(|e| {
            format!(
                "cannot run clang to build host reference {}: {e}",
                source.display()
            )
        })?;
    let _ = std::fs::remove_file(&main_c);
    if !out.status.success() {
        return Err(format!(
            "host reference {} does not compile:\n{}",
            source.display(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        ));
    }
    std::fs::rename(&building, &program).map_err(|e| format!("{}: {e}", program.display()))?;
    Ok(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_c_reference_fills_its_outputs_and_errors_are_clear() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("ref.c");
        std::fs::write(
            &src,
            "void add(void **b, const long long *s) {\n  const float *x = b[0]; float *y = b[1];\n  for (long long i = 0; i < s[0]; ++i) y[i] = x[i] + (float)s[1];\n}\n",
        )
        .unwrap();
        let x: Vec<u8> = [1.0f32, 2.0, 3.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let y = vec![0u8; 12];
        let out = run(&src, "add", &[&x, &y], &[3, 10]).unwrap();
        let got: Vec<f32> = out[1]
            .chunks(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, vec![11.0, 12.0, 13.0]);
        assert_eq!(out[0], x, "inputs come back as they went");

        std::fs::write(&src, "void add(void **b, const long long *s) { oops }\n").unwrap();
        let err = run(&src, "add", &[&x, &y], &[3, 10]).unwrap_err();
        assert!(
            err.contains("does not compile") && err.contains("oops"),
            "{err}"
        );
        let err = run(&dir.path().join("none.c"), "add", &[], &[]).unwrap_err();
        assert!(err.contains("none.c"), "{err}");
    }
}
