//! NVRTC builds: a source, a kernel name (plain, `extern "C"`, or a template instance such as
//! `name<float, 4>`, looked up through NVRTC's name expressions) and options into a cubin for
//! one architecture. A build needs NVRTC only, no driver context, so build workers run it on
//! every core without touching the GPU.
//!
//! The cubin travels with the kernel's name as asked for and its lowered (mangled) name, as
//! [`Compiled::to_bytes`] lays them out: what a build worker hands the measurement worker, and
//! what the binary cache keeps. A binary of another kernel of the same source and options is
//! never taken for this one.

use cudarc::nvrtc::sys::{self, nvrtcResult};
use ndtune_device::backend::{Api, DeviceError, Fault};
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A built kernel: the name it was asked for by, the name its function has in the cubin, and
/// the cubin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    pub name: String,
    pub lowered: String,
    pub cubin: Vec<u8>,
}

const MAGIC: &[u8; 8] = b"NDTCUBIN";

impl Compiled {
    /// `NDTCUBIN`, then the name and the lowered name, each its length (4 bytes,
    /// little-endian) then its bytes, then the cubin.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(16 + self.name.len() + self.lowered.len() + self.cubin.len());
        out.extend_from_slice(MAGIC);
        for text in [&self.name, &self.lowered] {
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        out.extend_from_slice(&self.cubin);
        out
    }

    /// What [`Compiled::to_bytes`] wrote; `None` for anything else.
    pub fn from_bytes(bytes: &[u8]) -> Option<Compiled> {
        let mut rest = bytes.strip_prefix(MAGIC)?;
        let mut text = || -> Option<String> {
            let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            let text = std::str::from_utf8(rest.get(4..4 + len)?).ok()?.to_string();
            rest = &rest[4 + len..];
            Some(text)
        };
        let (name, lowered) = (text()?, text()?);
        (!rest.is_empty()).then(|| Compiled {
            name,
            lowered,
            cubin: rest.to_vec(),
        })
    }
}

/// NVRTC, loaded once per process: the file loaded (a path, or a name the dynamic loader
/// resolved).
pub fn library() -> Result<String, DeviceError> {
    static NVRTC: OnceLock<Result<String, String>> = OnceLock::new();
    NVRTC
        .get_or_init(|| crate::preload("nvrtc", c"nvrtcVersion", &crate::toolkit_folders()))
        .clone()
        .map_err(|reason| DeviceError::Unavailable {
            api: Api::Cuda,
            reason: format!("NVRTC: {reason}"),
            hint: crate::INSTALL_HINT,
        })
}

/// NVRTC's version, `MAJOR.MINOR`.
pub fn version() -> Result<String, DeviceError> {
    library()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two ints written.
    call("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok(format!("{major}.{minor}"))
}

fn name_of(result: nvrtcResult) -> String {
    // SAFETY: NVRTC returns a static string for every result.
    unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(result)) }
        .to_string_lossy()
        .into_owned()
}

fn call(what: &'static str, result: nvrtcResult) -> Result<(), DeviceError> {
    match result {
        nvrtcResult::NVRTC_SUCCESS => Ok(()),
        other => Err(DeviceError::Failed {
            call: what,
            code: other as i32,
            name: name_of(other),
            fault: Fault::Call,
        }),
    }
}

/// Splits build options as a shell would split plain words (quotes group, no expansion), and
/// joins `-D NAME=V` / `-I DIR` written as two words, which NVRTC takes as one.
pub fn split_options(options: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in options.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    let mut joined: Vec<String> = Vec::with_capacity(words.len());
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "-D" | "-I" | "-U" => match words.next() {
                Some(value) => joined.push(format!("{w}{value}")),
                None => joined.push(w),
            },
            _ => joined.push(w),
        }
    }
    joined
}

/// `options` as words ([`split_options`]), with `--gpu-architecture=ARCH` added unless they
/// name an architecture: what NVRTC and nvcc are given alike.
pub(crate) fn words_for(options: &str, arch: &str) -> Vec<String> {
    let mut words = split_options(options);
    if !words
        .iter()
        .any(|w| w.starts_with("-arch") || w.starts_with("--gpu-architecture"))
    {
        words.push(format!("--gpu-architecture={arch}"));
    }
    words
}

/// An NVRTC program, destroyed when dropped.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once.
        unsafe {
            sys::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

/// The CUDA toolkit's header folders, which nvcc searches and NVRTC does not: `include`, and
/// `include/cccl` where CUDA 13 keeps CUB, Thrust and libcu++ (`cub/cub.cuh`, `cuda/std/...`).
/// They are the headers of the toolkit NVRTC was loaded from, so that NVRTC never compiles
/// against another version's; where the file loaded is not known, the first root's that has
/// them. Found once per process, as NVRTC is.
pub fn toolkit_headers() -> Vec<PathBuf> {
    static HEADERS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    HEADERS
        .get_or_init(|| {
            let loaded = library().ok().map(PathBuf::from);
            let of_loaded = loaded
                .as_deref()
                .filter(|path| path.is_absolute())
                .and_then(|path| path.parent()?.parent())
                .map(headers_of);
            of_loaded.unwrap_or_else(|| {
                crate::toolkit_roots()
                    .iter()
                    .map(|root| headers_of(root))
                    .find(|dirs| !dirs.is_empty())
                    .unwrap_or_default()
            })
        })
        .clone()
}

/// The header folders of the toolkit at `root` (none where it has no `cuda.h`). CUDA 12's
/// Python packages keep NVRTC in `nvidia/cuda_nvrtc` and the headers in its siblings
/// `cuda_runtime` and `cuda_cccl`.
fn headers_of(root: &Path) -> Vec<PathBuf> {
    let packaged_12 = root.file_name() == Some("cuda_nvrtc".as_ref());
    let (include, cccl) = match root.parent() {
        Some(nvidia) if packaged_12 => (
            nvidia.join("cuda_runtime/include"),
            nvidia.join("cuda_cccl/include"),
        ),
        _ => (root.join("include"), root.join("include/cccl")),
    };
    if !include.join("cuda.h").is_file() {
        return Vec::new();
    }
    let mut dirs = vec![include];
    if cccl.is_dir() {
        dirs.push(cccl);
    }
    dirs
}

/// Builds kernel `name` of `source` with `options` for architecture `arch` (`sm_90`); an
/// `-arch`/`--gpu-architecture` among the options wins, and the toolkit's headers are searched
/// after the options' own folders, as nvcc searches them. A compile error is
/// [`DeviceError::Build`] with NVRTC's log.
pub fn compile(
    device: &str,
    source: &str,
    name: &str,
    options: &str,
    arch: &str,
) -> Result<Compiled, DeviceError> {
    library()?;
    let nul = |what| DeviceError::InvalidInput { what };
    let c_source =
        CString::new(source).map_err(|_| nul("kernel source: it contains a NUL byte"))?;
    let c_name = CString::new(name).map_err(|_| nul("kernel name: it contains a NUL byte"))?;
    let mut words = words_for(options, arch);
    for dir in toolkit_headers() {
        words.push(format!("-I{}", dir.display()));
    }
    let c_words = words
        .iter()
        .map(|w| CString::new(w.as_str()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| nul("build options: they contain a NUL byte"))?;
    let pointers: Vec<*const c_char> = c_words.iter().map(|w| w.as_ptr()).collect();
    let mut raw = std::ptr::null_mut();
    // SAFETY: the strings live across the call; no headers are passed.
    call("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            c_source.as_ptr(),
            c"kernel.cu".as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })?;
    let program = Program(raw);
    // SAFETY: a live program and a NUL-terminated name.
    call("nvrtcAddNameExpression", unsafe {
        sys::nvrtcAddNameExpression(program.0, c_name.as_ptr())
    })?;
    // SAFETY: the option pointers live across the call.
    let compiled =
        unsafe { sys::nvrtcCompileProgram(program.0, pointers.len() as i32, pointers.as_ptr()) };
    if compiled != nvrtcResult::NVRTC_SUCCESS {
        return Err(DeviceError::Build {
            device: device.to_string(),
            options: words.join(" "),
            code: compiled as i32,
            name: name_of(compiled),
            log: log(&program),
        });
    }
    let mut lowered: *const c_char = std::ptr::null();
    // SAFETY: the name expression was added before compiling; NVRTC owns the string until the
    // program is destroyed, and it is copied before that.
    let found = unsafe { sys::nvrtcGetLoweredName(program.0, c_name.as_ptr(), &mut lowered) };
    if found != nvrtcResult::NVRTC_SUCCESS || lowered.is_null() {
        return Err(DeviceError::NoKernel {
            name: name.to_string(),
            available: "NVRTC found no __global__ function of that name".into(),
        });
    }
    // SAFETY: a NUL-terminated string of the live program.
    let lowered = unsafe { CStr::from_ptr(lowered) }
        .to_string_lossy()
        .into_owned();
    let mut size = 0usize;
    // SAFETY: one size written.
    call("nvrtcGetCUBINSize", unsafe {
        sys::nvrtcGetCUBINSize(program.0, &mut size)
    })?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `size` bytes written into a buffer of that size.
    call("nvrtcGetCUBIN", unsafe {
        sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast())
    })?;
    Ok(Compiled {
        name: name.to_string(),
        lowered,
        cubin,
    })
}

fn log(program: &Program) -> String {
    let mut size = 0usize;
    // SAFETY: one size written, then that many bytes.
    unsafe {
        if sys::nvrtcGetProgramLogSize(program.0, &mut size) != nvrtcResult::NVRTC_SUCCESS {
            return String::new();
        }
        let mut bytes = vec![0u8; size];
        if sys::nvrtcGetProgramLog(program.0, bytes.as_mut_ptr().cast())
            != nvrtcResult::NVRTC_SUCCESS
        {
            return String::new();
        }
        String::from_utf8_lossy(&bytes)
            .trim_end_matches('\0')
            .trim_end()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_split_as_words_with_defines_joined() {
        assert_eq!(
            split_options("-D SHIFT=0 -DN=4  -I '/a b' -use_fast_math --std=c++17"),
            [
                "-DSHIFT=0",
                "-DN=4",
                "-I/a b",
                "-use_fast_math",
                "--std=c++17"
            ]
        );
        assert_eq!(split_options(""), Vec::<String>::new());
        assert_eq!(split_options("-D"), ["-D"]);
    }

    /// Where NVRTC is missing (CI), a build, a template instance's included, says what is
    /// missing and where ndtune looks; on a machine with NVRTC scripts/test-gpu.sh builds.
    #[test]
    fn without_nvrtc_a_build_says_what_is_missing() {
        if library().is_ok() {
            return;
        }
        let e = compile(
            "dev",
            "template <int K> __global__ void k() {}",
            "k<4>",
            "",
            "sm_90",
        )
        .unwrap_err();
        match &e {
            DeviceError::Unavailable {
                api: Api::Cuda,
                reason,
                ..
            } => assert!(
                reason.starts_with("NVRTC: libnvrtc could not be loaded"),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("CUDA_HOME"), "{e}");
    }

    #[test]
    fn a_binary_carries_its_names() {
        let c = Compiled {
            name: "vector<float>".into(),
            lowered: "_Z6vectorIfEvPT_".into(),
            cubin: vec![1, 2, 3],
        };
        assert_eq!(Compiled::from_bytes(&c.to_bytes()), Some(c));
        assert_eq!(Compiled::from_bytes(b"\x7fELF...."), None);
        assert_eq!(
            Compiled::from_bytes(b"NDTCUBIN\x01\0\0\0a\x02\0\0\0ab"),
            None
        );
        assert_eq!(
            Compiled::from_bytes(b"NDTCUBIN\x01\0\0\0a\x09\0\0\0ab"),
            None
        );
    }
}
