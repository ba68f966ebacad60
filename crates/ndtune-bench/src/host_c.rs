//! Host functions written in C for `[verify]`: a reference (`reference = { host = "ref.c",
//! function = "f" }`) fills the expected outputs, a check (`check = { host = "check.c", function
//! = "g" }`) decides itself whether a configuration's outputs are right, with a message.
//!
//! Each is compiled once with clang, together with a small `main` ndtune writes and the header
//! `ndtune.h` beside it ([`HEADER`]: the C ABI, included in the user's file for them so that a
//! wrong signature does not compile), into a program that maps the arguments from a memory
//! file, calls the function and writes its verdict (and a reference's buffers) on stdout. A
//! separate process: a function that crashes cannot take the worker with it, and no foreign
//! code is loaded into ndtune.

use ndtune_core::bounded::{self, Bounds, RunError};
use ndtune_core::Value;
use ndtune_spec::ElemType;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::FileExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The C ABI of host functions (`ndtune.h`).
pub const HEADER: &str = include_str!("ndtune.h");

/// The driver around the user's function. Input: a memory file (its descriptor and the header's
/// offset are the program's arguments) holding each buffer's initial bytes and data at
/// multiples of [`PAGE`] (data equal to the initial bytes are the same bytes, mapped twice),
/// then the header, in host byte order: the counts of buffers, scalars, parameters and
/// constants (u64 each); per buffer its name, type (u64), byte length, initial bytes' and
/// data's offsets (u64 each); per scalar its name, type and 8 bytes of value (the type's bytes
/// first); per parameter and constant its name, kind (u64), integer (i64), real (f64) and text.
/// A name or text is a u64 length and its bytes. Each buffer is mapped privately where it lies:
/// nothing is copied but what the function writes. Output, on stdout: the verdict (u64, 0 for
/// right), the message, then for a reference every buffer's data after the call; the
/// function's own stdout is sent to stderr, which is captured and shown.
const MAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ndtune.h"

static void need(int ok, const char *what) {
    if (!ok) { fprintf(stderr, "ndtune host function: %s\n", what); exit(2); }
}
/* The input file (argv[1], a descriptor) and the part of it being read: the header. */
static int input;
static const unsigned char *cursor, *end;
static unsigned long long number(void) {
    unsigned long long v;
    need(end - cursor >= 8, "short input");
    memcpy(&v, cursor, 8);
    cursor += 8;
    return v;
}
static char *bytes(size_t n) {
    need((size_t)(end - cursor) >= n, "short input");
    char *p = malloc(n + 1);
    need(p != NULL, "out of memory");
    memcpy(p, cursor, n);
    cursor += n;
    p[n] = 0;
    return p;
}
/* A private, writable mapping of n bytes of the input at offset (a multiple of the page size):
   the bytes are the file's, copied only where written. */
static char *region(unsigned long long offset, size_t n) {
    if (n == 0) return calloc(1, 1);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE, input, (off_t)offset);
    need(p != MAP_FAILED, "cannot map the input");
    return p;
}
static const char *text(void) { return bytes(number()); }
static const ndtune_value *values(size_t n) {
    ndtune_value *v = calloc(n + 1, sizeof *v);
    need(v != NULL, "out of memory");
    for (size_t k = 0; k < n; ++k) {
        v[k].name = text();
        v[k].kind = (ndtune_kind)number();
        unsigned long long i = number(), f = number();
        memcpy(&v[k].i, &i, 8);
        memcpy(&v[k].f, &f, 8);
        v[k].text = text();
    }
    return v;
}
static const size_t SIZE[] = { 1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8 };
int main(int argc, char **argv) {
    need(argc == 3, "usage: program INPUT_FD HEADER_OFFSET");
    /* The answer goes to the stdout ndtune reads; what the function prints goes to stderr,
       which ndtune shows: a printf cannot be taken for a verdict. */
    int answer_fd = dup(1);
    need(answer_fd >= 0 && dup2(2, 1) == 1, "cannot set up the output");
    FILE *answer = fdopen(answer_fd, "wb");
    need(answer != NULL, "cannot set up the output");
    input = atoi(argv[1]);
    unsigned long long header = strtoull(argv[2], NULL, 10);
    struct stat st;
    need(fstat(input, &st) == 0 && (unsigned long long)st.st_size >= header, "no input");
    const unsigned char *file = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, input, 0);
    need(file != MAP_FAILED, "cannot map the input");
    cursor = file + header;
    end = file + st.st_size;
    ndtune_args a;
    a.num_buffers = number();
    a.num_scalars = number();
    a.num_params = number();
    a.num_constants = number();
    ndtune_buffer *buffers = calloc(a.num_buffers + 1, sizeof *buffers);
    ndtune_scalar *scalars = calloc(a.num_scalars + 1, sizeof *scalars);
    size_t *size = calloc(a.num_buffers + 1, sizeof *size);
    need(buffers && scalars && size, "out of memory");
    for (size_t k = 0; k < a.num_buffers; ++k) {
        buffers[k].name = text();
        buffers[k].type = (ndtune_type)number();
        size[k] = number();
        buffers[k].len = size[k] / SIZE[buffers[k].type];
        buffers[k].initial = region(number(), size[k]);
        buffers[k].data = region(number(), size[k]);
    }
    for (size_t k = 0; k < a.num_scalars; ++k) {
        scalars[k].name = text();
        scalars[k].type = (ndtune_type)number();
        unsigned long long value = number();
        memcpy(&scalars[k].value, &value, 8);
    }
    a.buffers = buffers;
    a.scalars = scalars;
    a.params = values(a.num_params);
    a.constants = values(a.num_constants);
    static char message[4096];
#ifdef NDTUNE_CHECK
    unsigned long long verdict = NDTUNE_CHECK(&a, message, sizeof message) != 0;
#else
    NDTUNE_REFERENCE(&a);
    unsigned long long verdict = 0;
#endif
    message[sizeof message - 1] = 0;
    unsigned long long n = strlen(message);
    fflush(stdout);
    need(fwrite(&verdict, 8, 1, answer) == 1 && fwrite(&n, 8, 1, answer) == 1
         && fwrite(message, 1, n, answer) == n, "cannot write");
#ifndef NDTUNE_CHECK
    /* A reference's outputs; a check's verdict is all that is read back. */
    for (size_t k = 0; k < a.num_buffers; ++k)
        need(fwrite(buffers[k].data, 1, size[k], answer) == size[k], "cannot write");
#endif
    return fflush(answer) != 0;
}
"#;

/// What a host function is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `void f(const ndtune_args *)`: fills the expected outputs.
    Reference,
    /// `int f(const ndtune_args *, char *message, size_t size)`: 0 where the outputs are right.
    Check,
}

impl Role {
    fn macro_name(self) -> &'static str {
        match self {
            Role::Reference => "NDTUNE_REFERENCE",
            Role::Check => "NDTUNE_CHECK",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Role::Reference => "host reference",
            Role::Check => "host check",
        }
    }
}

/// A buffer argument as a host function gets it (`ndtune_buffer`).
pub struct HostBuffer<'a> {
    pub name: &'a str,
    pub ty: ElemType,
    /// The contents the kernel started from.
    pub initial: &'a [u8],
    /// What the function gets as `data` (see `ndtune.h`).
    pub data: &'a [u8],
}

/// A scalar argument as a host function gets it: the bytes the kernel gets
/// ([`crate::data::scalar_bytes`]).
pub struct HostScalar<'a> {
    pub name: &'a str,
    pub ty: ElemType,
    pub bytes: &'a [u8],
}

/// A parameter's or constant's value as a host function gets it (`ndtune_value`).
pub struct HostValue {
    pub name: String,
    kind: u64,
    integer: i64,
    real: f64,
    text: String,
}

impl HostValue {
    /// `value` as C gets it: its kind, as an integer and a real where it is a number, and as
    /// the text `-D NAME=text` passes.
    pub fn new(name: &str, value: &Value) -> HostValue {
        HostValue {
            name: name.to_string(),
            kind: match value {
                Value::Int(_) => 0,  // NDTUNE_INTEGER
                Value::Real(_) => 1, // NDTUNE_REAL
                Value::Text(_) => 2, // NDTUNE_TEXT
            },
            integer: value.as_int().unwrap_or(0),
            real: value.as_f64().unwrap_or(0.0),
            text: value.to_string(),
        }
    }
}

/// Everything a host function gets.
#[derive(Default)]
pub struct HostArgs<'a> {
    pub buffers: Vec<HostBuffer<'a>>,
    pub scalars: Vec<HostScalar<'a>>,
    /// The configuration's parameters (a check's only: a reference must not depend on them).
    pub params: Vec<HostValue>,
    pub constants: Vec<HostValue>,
}

/// What a host function said: 0 where the outputs are right (always for a reference), its
/// message, every buffer's data after the call, and what it printed (control characters
/// escaped).
struct Answer {
    verdict: u64,
    message: String,
    buffers: Vec<Vec<u8>>,
    printed: String,
}

/// The most of a host function's printed output that is kept and shown.
const PRINTED: usize = 64 << 10;

/// Runs the reference `function` of C file `source` within `limit`: every buffer's data after
/// the call.
pub fn reference(
    source: &Path,
    function: &str,
    args: &HostArgs,
    limit: Duration,
) -> Result<Vec<Vec<u8>>, String> {
    Ok(run(source, function, Role::Reference, args, limit)?.buffers)
}

/// Runs the check `function` of C file `source` within `limit`: `Ok(Err(message))` where it
/// found the outputs wrong (with what it printed); `Err` where it could not run or did not end.
pub fn check(
    source: &Path,
    function: &str,
    args: &HostArgs,
    limit: Duration,
) -> Result<Result<(), String>, String> {
    let answer = run(source, function, Role::Check, args, limit)?;
    let printed = match answer.printed.trim() {
        "" => String::new(),
        text => format!("\n(it printed: {text})"),
    };
    Ok(match answer.verdict {
        0 => Ok(()),
        _ if answer.message.trim().is_empty() => Err(format!("check `{function}` failed{printed}")),
        _ => Err(format!(
            "check `{function}`: {}{printed}",
            answer.message.trim()
        )),
    })
}

fn put(input: &mut Vec<u8>, bytes: &[u8]) {
    input.extend((bytes.len() as u64).to_ne_bytes());
    input.extend_from_slice(bytes);
}

/// The index of `ty` in `ndtune_type`.
fn type_code(ty: ElemType) -> u64 {
    ElemType::ALL
        .iter()
        .position(|(_, t)| *t == ty)
        .expect("every type is listed") as u64
}

/// The input file of this process's host functions: a memory file (`memfd_create`), kept and
/// rewritten for each call (its pages stay allocated between calls of one size), which the
/// program inherits and maps.
static INPUT: Mutex<Option<File>> = Mutex::new(None);

/// Buffers lie in the input at multiples of this (the page size or a multiple of it), so that
/// the program maps each where it lies.
const PAGE: u64 = 1 << 16;

fn run<'a>(
    source: &Path,
    function: &str,
    role: Role,
    args: &'a HostArgs<'a>,
    limit: Duration,
) -> Result<Answer, String> {
    let program = compile(source, function, role)?;
    let what = format!("{} {} `{function}`", role.noun(), source.display());
    execute(&program, &what, role, args, limit)
}

/// Runs `program` (a host function compiled for `role`, described as `what`) on `args`.
fn execute<'a>(
    program: &Path,
    what: &str,
    role: Role,
    args: &'a HostArgs<'a>,
    limit: Duration,
) -> Result<Answer, String> {
    let mut held = INPUT.lock().unwrap_or_else(|p| p.into_inner());
    let file = match held.as_mut() {
        Some(file) => file,
        None => held.insert(memory_file()?),
    };
    // Each buffer's bytes at an aligned offset, data equal to the initial bytes (the inputs,
    // nearly always) written once; the header after them.
    let mut placed: Vec<(u64, &[u8])> = Vec::new();
    let mut offsets = Vec::new();
    let mut next = 0u64;
    let mut place = |bytes: &'a [u8]| {
        let at = next;
        next = (at + bytes.len() as u64).div_ceil(PAGE) * PAGE;
        placed.push((at, bytes));
        at
    };
    for b in &args.buffers {
        let initial = place(b.initial);
        let data = match b.data == b.initial {
            true => initial,
            false => place(b.data),
        };
        offsets.push((initial, data));
    }
    let header_at = next;
    let mut input = Vec::new();
    for n in [
        args.buffers.len(),
        args.scalars.len(),
        args.params.len(),
        args.constants.len(),
    ] {
        input.extend((n as u64).to_ne_bytes());
    }
    for (b, (initial, data)) in args.buffers.iter().zip(&offsets) {
        put(&mut input, b.name.as_bytes());
        input.extend(type_code(b.ty).to_ne_bytes());
        input.extend((b.initial.len() as u64).to_ne_bytes());
        input.extend(initial.to_ne_bytes());
        input.extend(data.to_ne_bytes());
    }
    for s in &args.scalars {
        put(&mut input, s.name.as_bytes());
        input.extend(type_code(s.ty).to_ne_bytes());
        let mut value = [0u8; 8];
        value[..s.bytes.len()].copy_from_slice(s.bytes);
        input.extend(value);
    }
    for v in args.params.iter().chain(&args.constants) {
        put(&mut input, v.name.as_bytes());
        input.extend(v.kind.to_ne_bytes());
        input.extend(v.integer.to_ne_bytes());
        input.extend(v.real.to_ne_bytes());
        put(&mut input, v.text.as_bytes());
    }
    let written = file
        .set_len(header_at + input.len() as u64)
        .and_then(|()| {
            placed
                .iter()
                .try_for_each(|(at, bytes)| file.write_all_at(bytes, *at))
        })
        .and_then(|()| file.write_all_at(&input, header_at));
    written.map_err(|e| format!("cannot write the input of the host function: {e}"))?;
    let mut command = Command::new(program);
    command
        .arg(file.as_raw_fd().to_string())
        .arg(header_at.to_string());
    // The program inherits the input: close-on-exec is cleared in the child alone.
    let fd = file.as_raw_fd();
    // SAFETY: fcntl(2) is async-signal-safe; `fd` stays open until the run ends.
    unsafe {
        command.pre_exec(move || match libc::fcntl(fd, libc::F_SETFD, 0) {
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        });
    }
    let answer_bytes = 16 + 4096 + args.buffers.iter().map(|b| b.data.len()).sum::<usize>();
    let bounds = Bounds {
        output: answer_bytes.max(PRINTED),
        ..Bounds::wall(limit)
    };
    let ran = bounded::run(command, &[], bounds).map_err(|e| match e {
        RunError::Spawn(e) => format!("cannot run {}: {e}", program.display()),
        e => format!("{what} {e}"),
    })?;
    drop(held);
    let printed = {
        let mut text =
            String::from_utf8_lossy(&ran.stderr[..ran.stderr.len().min(PRINTED)]).into_owned();
        if ran.stderr.len() > PRINTED {
            text.push_str(" [...]");
        }
        bounded::printable(&text)
    };
    if !ran.status.success() {
        let status = match ran.status.signal() {
            Some(signal) => format!("killed by signal {signal}"),
            None => ran.status.to_string(),
        };
        return Err(format!("{what} failed ({status}): {printed}"));
    }
    let out = ran.stdout;
    let mut rest = &out[..];
    let mut take = |n: usize| -> Result<&[u8], String> {
        if rest.len() < n {
            return Err(format!("{what} wrote too little"));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().expect("8 bytes"));
    let verdict = word(take(8)?);
    let length = word(take(8)?) as usize;
    let message = bounded::printable(&String::from_utf8_lossy(take(length)?));
    let buffers = match role {
        Role::Reference => args
            .buffers
            .iter()
            .map(|b| take(b.data.len()).map(<[u8]>::to_vec))
            .collect::<Result<Vec<_>, _>>()?,
        Role::Check => Vec::new(),
    };
    Ok(Answer {
        verdict,
        message,
        buffers,
        printed,
    })
}

/// A memory file, close-on-exec.
fn memory_file() -> Result<File, String> {
    // SAFETY: memfd_create(2) with a NUL-terminated name; the descriptor is owned by the File.
    let fd = unsafe { libc::memfd_create(c"ndtune-host-input".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "cannot make the input of host functions: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// The compiled program for a source, function and role, built once per content and kept in the
/// user's private cache (`host-functions` in [`ndtune_core::cache::folder`]; a private
/// temporary folder of this process where there is none): a program is run from there only
/// where it and its records are the user's own and private, its content has the digest
/// recorded when it was built, and every file its compile read (clang's dependency output:
/// headers `#include`d by the user's file, through any path) still has the content it had.
fn compile(source: &Path, function: &str, role: Role) -> Result<PathBuf, String> {
    compile_in(&programs_folder()?, source, function, role)
}

/// [`compile`] with the programs kept in `dir`.
fn compile_in(dir: &Path, source: &Path, function: &str, role: Role) -> Result<PathBuf, String> {
    let what = format!("{} {}", role.noun(), source.display());
    let text = ndtune_core::input::read_text(source, ndtune_core::input::SOURCE)
        .map_err(|e| format!("{what}: {}", e.message))?;
    let hash = Sha256::digest(format!(
        "{}\0{function}\0{text}\0{MAIN}\0{HEADER}",
        role.macro_name()
    ));
    let key = ndtune_core::text::hex(&hash[..12]);
    let program = dir.join(format!("host-{key}"));
    let deps = dir.join(format!("host-{key}.deps"));
    if !(program.exists() && still_valid(&program, &deps)) {
        build(source, function, role, dir, &program, &deps).map_err(|e| format!("{what}{e}"))?;
    }
    Ok(program)
}

/// The folder compiled host functions are kept in (see [`compile`]).
fn programs_folder() -> Result<PathBuf, String> {
    if let Some(dir) = ndtune_core::cache::folder("host-functions")? {
        return Ok(dir);
    }
    // A static is never dropped: the folder is removed when the process exits (and, where it
    // was killed, by the next process that makes one).
    static PRIVATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    extern "C" fn remove_private() {
        if let Some(Ok(dir)) = PRIVATE.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    PRIVATE
        .get_or_init(|| {
            let dir = ndtune_core::cache::private_temp_dir("ndtune-host-functions-")
                .map_err(|e| format!("cannot make a folder for host functions: {e}"))?;
            // SAFETY: atexit(3) with a function that takes nothing and returns nothing.
            unsafe { libc::atexit(remove_private) };
            Ok(dir.keep())
        })
        .clone()
}

/// Whether a kept program may be run: see [`compile`].
fn still_valid(program: &Path, deps: &Path) -> bool {
    if ndtune_core::cache::verify_digest(program).is_err()
        || ndtune_core::cache::owned_and_private(deps).is_err()
    {
        return false;
    }
    let Ok(recorded) = std::fs::read_to_string(deps) else {
        return false;
    };
    recorded.lines().all(|line| {
        line.split_once('\t').is_some_and(|(digest, path)| {
            ndtune_core::text::short_sha256_file(Path::new(path)).is_ok_and(|now| now == digest)
        })
    })
}

/// Builds `program` in a private folder of `dir` and renames it into place (concurrent
/// workers never see half a file), with its digest and the digests of every file the
/// compile read (`deps`). The error starts where "{what}" ends: ` does not compile: ...`.
fn build(
    source: &Path,
    function: &str,
    role: Role,
    dir: &Path,
    program: &Path,
    deps: &Path,
) -> Result<(), String> {
    let work = tempfile::Builder::new()
        .prefix("building-")
        .tempdir_in(dir)
        .map_err(|e| format!(": cannot make a build folder in {}: {e}", dir.display()))?;
    let header = work.path().join("ndtune.h");
    let main_c = work.path().join("main.c");
    for (path, text) in [(&header, HEADER), (&main_c, MAIN)] {
        std::fs::write(path, text).map_err(|e| format!(": {}: {e}", path.display()))?;
    }
    let clang = |extra: &[&std::ffi::OsStr]| {
        let mut c = Command::new(ndtune_core::tools::clang());
        // POSIX's declarations (fdopen, dup2) in strict C99, before `ndtune.h` includes stdio.h.
        c.args(["-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O2", "-w"])
            .arg(format!("-D{}={function}", role.macro_name()))
            .arg("-I")
            .arg(work.path())
            .arg("-include")
            .arg(&header)
            .args(extra);
        let ran = bounded::run(c, &[], Bounds::wall(CLANG_LIMIT))
            .map_err(|e| format!(": cannot run clang: {e}"))?;
        match ran.status.success() {
            true => Ok(ran.stdout),
            false => {
                let log = bounded::printable(String::from_utf8_lossy(&ran.stderr).trim_end());
                let hint = match log.contains("conflicting types") {
                    true => "\n(a host reference is `void f(const ndtune_args *args)`, a check `int f(const ndtune_args *args, char *message, size_t size)`: docs/spec.md, \"Host functions\")",
                    false => "",
                };
                Err(format!(" does not compile:\n{log}{hint}"))
            }
        }
    };
    // The files the user's source reads, as clang's preprocessor finds them.
    let listed = clang(&["-M".as_ref(), source.as_os_str()])?;
    let mut recorded = String::new();
    for file in ndtune_core::tools::make_dependencies(&String::from_utf8_lossy(&listed)) {
        let absolute = std::path::absolute(&file).unwrap_or(file);
        let digest = ndtune_core::text::short_sha256_file(&absolute)
            .map_err(|e| format!(": {}: {e}", absolute.display()))?;
        recorded.push_str(&format!("{digest}\t{}\n", absolute.display()));
    }
    let building = work.path().join("program");
    clang(&[
        source.as_os_str(),
        main_c.as_os_str(),
        "-lm".as_ref(),
        "-o".as_ref(),
        building.as_os_str(),
    ])?;
    let place = |from: &Path, to: &Path| {
        std::fs::rename(from, to).map_err(|e| format!(": {}: {e}", to.display()))
    };
    let listing = work.path().join("deps");
    std::fs::write(&listing, recorded).map_err(|e| format!(": {}: {e}", listing.display()))?;
    ndtune_core::cache::record_digest(&building)
        .map_err(|e| format!(": {}: {e}", building.display()))?;
    let digest_of = ndtune_core::cache::digest_file;
    place(&listing, deps)?;
    place(&digest_of(&building), &digest_of(program))?;
    place(&building, program)
}

/// How long one clang run building a host function may take.
const CLANG_LIMIT: Duration = Duration::from_secs(300);

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const LIMIT: Duration = Duration::from_secs(120);

    /// One float buffer `y` of `[1, 2]` and no other argument.
    fn one_buffer(y: &[u8]) -> HostArgs<'_> {
        HostArgs {
            buffers: vec![HostBuffer {
                name: "y",
                ty: ElemType::Float,
                initial: y,
                data: y,
            }],
            ..HostArgs::default()
        }
    }

    fn ys() -> Vec<u8> {
        [1.0f32, 2.0].iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    #[test]
    fn what_a_check_prints_is_shown_never_taken_for_its_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("check.c");
        // Printing to stdout, 1 MiB to stderr (more than a pipe holds), escapes for a terminal.
        std::fs::write(
            &src,
            "#include <stdio.h>\nint ok(const ndtune_args *a, char *m, size_t n) {\n  printf(\"checking %zu\\n\", a->buffers[0].len);\n  for (int i = 0; i < 1 << 20; ++i) fputc('x', stderr);\n  return 0;\n}\nint no(const ndtune_args *a, char *m, size_t n) {\n  printf(\"\\033[31mred\\n\");\n  snprintf(m, n, \"\\033[2Jwrong\");\n  return 1;\n}\n",
        )
        .unwrap();
        let y = ys();
        assert_eq!(check(&src, "ok", &one_buffer(&y), LIMIT).unwrap(), Ok(()));
        let wrong = check(&src, "no", &one_buffer(&y), LIMIT)
            .unwrap()
            .unwrap_err();
        assert_eq!(
            wrong,
            "check `no`: \\u{1b}[2Jwrong\n(it printed: \\u{1b}[31mred)"
        );
    }

    #[test]
    fn a_check_that_hangs_is_killed_with_its_children_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("hang.c");
        let pid_file = dir.path().join("pid");
        std::fs::write(
            &src,
            format!("#include <stdio.h>\n#include <unistd.h>\nint hang(const ndtune_args *a, char *m, size_t n) {{\n  if (fork() == 0) {{ FILE *f = fopen(\"{}\", \"w\"); fprintf(f, \"%d\", getpid()); fclose(f); for (;;) pause(); }}\n  for (;;) pause();\n}}\n", pid_file.display()),
        )
        .unwrap();
        let y = ys();
        let started = std::time::Instant::now();
        let e = check(&src, "hang", &one_buffer(&y), Duration::from_secs(2)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(60));
        assert!(
            e.starts_with("host check ") && e.contains("`hang` did not finish within 2 s"),
            "{e}"
        );
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z "), "{state}");
    }

    #[test]
    fn a_planted_or_stale_program_is_never_run() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let src = dir.path().join("check.c");
        let header = dir.path().join("limit.h");
        std::fs::write(&header, "#define LIMIT 0\n").unwrap();
        std::fs::write(
            &src,
            "#include \"limit.h\"\nint c(const ndtune_args *a, char *m, size_t n) {\n  return ((const float *)a->buffers[0].data)[0] > LIMIT;\n}\n",
        )
        .unwrap();
        let y = ys();
        // Check `c` built in `cache`: whether it passes on `y`.
        let passes = || {
            let program = compile_in(&cache, &src, "c", Role::Check).unwrap();
            let answer = execute(&program, "check", Role::Check, &one_buffer(&y), LIMIT).unwrap();
            answer.verdict == 0
        };
        assert!(!passes(), "1 > 0");
        let program = compile_in(&cache, &src, "c", Role::Check).unwrap();
        // A program planted in its place (another content than recorded) is built again.
        let marker = dir.path().join("ran");
        std::fs::write(&program, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        assert!(!passes());
        assert!(!marker.exists(), "the planted program ran");
        ndtune_core::cache::verify_digest(&program).unwrap();
        // A header the check includes changed: the program is built again.
        std::fs::write(&header, "#define LIMIT 5\n").unwrap();
        assert!(passes(), "1 > 5 is false");
        // A cache folder others can write to is not used.
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(ndtune_core::cache::verify_digest(&program).is_err());
        assert!(passes(), "rebuilt over the file others could write");
        ndtune_core::cache::verify_digest(&program).unwrap();
    }

    fn floats(bytes: &[u8]) -> Vec<f32> {
        bytes
            .chunks(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn a_reference_gets_typed_scalars_lengths_and_names() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("ref.c");
        std::fs::write(
            &src,
            "void add(const ndtune_args *a) {\n  const float *x = a->buffers[0].data;\n  float *y = ndtune_buffer_named(a, \"y\")->data;\n  float s = ndtune_scalar_named(a, \"s\")->value.f;\n  long long k = ndtune_value_named(a, \"K\")->i;\n  for (size_t i = 0; i < a->buffers[1].len; ++i) y[i] = x[i] + s + (float)k;\n}\n",
        )
        .unwrap();
        let x: Vec<u8> = [1.0f32, 2.0, 3.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let y = vec![0u8; 12];
        let s = 0.5f32.to_ne_bytes();
        let args = HostArgs {
            buffers: vec![
                HostBuffer {
                    name: "x",
                    ty: ElemType::Float,
                    initial: &x,
                    data: &x,
                },
                HostBuffer {
                    name: "y",
                    ty: ElemType::Float,
                    initial: &y,
                    data: &y,
                },
            ],
            scalars: vec![HostScalar {
                name: "s",
                ty: ElemType::Float,
                bytes: &s,
            }],
            params: vec![],
            constants: vec![
                HostValue::new("K", &Value::Int(10)),
                HostValue::new("R", &Value::Real(0.5)),
                HostValue::new("T", &Value::Text("float".into())),
            ],
        };
        let out = reference(&src, "add", &args, LIMIT).unwrap();
        assert_eq!(floats(&out[1]), vec![11.5, 12.5, 13.5]);
        assert_eq!(out[0], x, "inputs come back as they went");

        // A check says why, and a function of the old signature does not compile.
        std::fs::write(
            &src,
            "#include \"ndtune.h\"\n#include <stdio.h>\nint sums(const ndtune_args *a, char *m, size_t n) {\n  const float *y = a->buffers[1].data;\n  const ndtune_value *r = ndtune_value_named(a, \"R\"), *t = ndtune_value_named(a, \"T\");\n  if (r->kind != NDTUNE_REAL || r->f != 0.5 || t->kind != NDTUNE_TEXT || strcmp(t->text, \"float\")) return 2;\n  if (y[0] != 1.0f) { snprintf(m, n, \"y[0] is %g\", y[0]); return 1; }\n  return 0;\n}\n",
        )
        .unwrap();
        assert_eq!(
            check(&src, "sums", &args, LIMIT).unwrap(),
            Err("check `sums`: y[0] is 0".into())
        );
        std::fs::write(&src, "void add(void **b, const long long *s) {}\n").unwrap();
        let err = reference(&src, "add", &args, LIMIT).unwrap_err();
        assert!(
            err.contains("does not compile") && err.contains("const ndtune_args *args"),
            "{err}"
        );
        let err = reference(&dir.path().join("none.c"), "add", &args, LIMIT).unwrap_err();
        assert!(err.contains("none.c"), "{err}");
    }
}
