//! nvcc builds, for sources NVRTC refuses. Some CUDA sources are written for nvcc, whose front
//! end compiles host code too: CUB's umbrella header `cub/cub.cuh` pulls in CUB's device-wide
//! dispatch, host code that NVRTC cannot compile (CCCL supports only CUB's block and warp
//! headers under NVRTC), so a kernel that includes it for a `cub::BlockReduce` builds with nvcc
//! alone, as Kernel Tuner's PyCUDA backend built it.
//!
//! [`build`] is the CUDA backend's one way to build: NVRTC first, always; where NVRTC refuses
//! the source and the toolkit has nvcc, nvcc with the same options into a cubin for the same
//! architecture, in a folder of its own. Which compiler built a kernel thus follows from the
//! source and options alone, and nvcc's version is part of the device's identity beside
//! NVRTC's. nvcc needs no driver either: build workers run it without a GPU context.
//!
//! nvcc has no name expressions, so the kernel's function is found among the cubin's ELF
//! symbols: its own name (`extern "C"`), else the one C++ function of that name (a template
//! instance asked for by name is instantiated by a host-side reference appended to the source).

use crate::nvrtc::{self, Compiled};
use ndtune_device::backend::DeviceError;
use object::{Object, ObjectSymbol, SymbolKind};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The toolkit's nvcc and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nvcc {
    pub path: PathBuf,
    /// `13.0.88`, from the toolkit's `version.json` or `nvcc --version`.
    pub version: String,
}

/// The toolkit's nvcc, looked for once per process: `bin/nvcc` under the toolkit's roots
/// (`CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT`, `/usr/local/cuda`), then on `PATH`.
pub fn find() -> Option<&'static Nvcc> {
    static NVCC: OnceLock<Option<Nvcc>> = OnceLock::new();
    NVCC.get_or_init(|| {
        let on_path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default();
        let path = crate::toolkit_roots()
            .into_iter()
            .map(|root| root.join("bin"))
            .chain(on_path)
            .map(|dir| dir.join("nvcc"))
            .find(|nvcc| nvcc.is_file())?;
        let version = version_of(&path)?;
        Some(Nvcc { path, version })
    })
    .as_ref()
}

/// nvcc's version: the toolkit's `version.json` beside its `bin` (no process started), else
/// what `nvcc --version` prints; `None` where neither says (an nvcc that cannot run).
fn version_of(nvcc: &Path) -> Option<String> {
    let manifest = nvcc.parent()?.parent()?.join("version.json");
    let from_manifest = std::fs::read_to_string(manifest).ok().and_then(|text| {
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(json["cuda_nvcc"]["version"].as_str()?.to_string())
    });
    from_manifest.or_else(|| {
        let out = Command::new(nvcc).arg("--version").output().ok()?;
        release(&String::from_utf8_lossy(&out.stdout))
    })
}

/// The version in `nvcc --version`'s output (`..., release 13.0, V13.0.88`).
fn release(printed: &str) -> Option<String> {
    printed
        .lines()
        .find(|l| l.contains("release"))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix('V'))
        .map(str::to_string)
}

/// Builds kernel `name` of `source` with `options` for `arch` (see [`nvrtc::compile`], whose
/// arguments these are): NVRTC, then nvcc where NVRTC refuses the source. Where both refuse
/// it, the error is NVRTC's with nvcc's log after it; without nvcc, NVRTC's, saying so.
pub fn build(
    device: &str,
    source: &str,
    name: &str,
    options: &str,
    arch: &str,
) -> Result<Compiled, DeviceError> {
    match nvrtc::compile(device, source, name, options, arch) {
        Err(refused @ DeviceError::Build { .. }) => after_nvrtc(refused, find(), |nvcc| {
            nvcc.compile(device, source, name, options, arch)
        }),
        other => other,
    }
}

/// What a build NVRTC `refused` ends as: nvcc's build where there is an nvcc and it succeeds,
/// else the refusal with what nvcc said, or that there was none.
fn after_nvrtc(
    refused: DeviceError,
    nvcc: Option<&Nvcc>,
    with_nvcc: impl FnOnce(&Nvcc) -> Result<Compiled, DeviceError>,
) -> Result<Compiled, DeviceError> {
    let DeviceError::Build {
        device,
        options,
        code,
        name,
        log,
    } = refused
    else {
        return Err(refused);
    };
    let note = match nvcc.map(|n| (n, with_nvcc(n))) {
        Some((_, Ok(compiled))) => return Ok(compiled),
        Some((n, Err(DeviceError::Build { log: nvcc_log, .. }))) => format!(
            "nvcc {} ({}) could not build it either:\n{nvcc_log}",
            n.version,
            n.path.display()
        ),
        Some((n, Err(other))) => format!(
            "nvcc {} ({}) could not build it either: {other}",
            n.version,
            n.path.display()
        ),
        None => "no nvcc was found to try instead (CUDA_HOME/bin, /usr/local/cuda/bin, PATH)"
            .to_string(),
    };
    Err(DeviceError::Build {
        device,
        options,
        code,
        name: format!("{name} (NVRTC)"),
        log: format!("{}\n\n{note}", log.trim_end()),
    })
}

impl Nvcc {
    /// Builds kernel `name` of `source` with nvcc into a cubin for `arch` (an `-arch` among
    /// `options` wins); a compile error is [`DeviceError::Build`] with nvcc's output.
    pub fn compile(
        &self,
        device: &str,
        source: &str,
        name: &str,
        options: &str,
        arch: &str,
    ) -> Result<Compiled, DeviceError> {
        let words = nvrtc::words_for(options, arch);
        let failed = |code: i32, why: String| DeviceError::Build {
            device: device.to_string(),
            options: words.join(" "),
            code,
            name: format!("nvcc {}", self.version),
            log: why,
        };
        let dir = tempfile::tempdir().map_err(|e| failed(-1, format!("a build folder: {e}")))?;
        let (input, output) = (
            dir.path().join("kernel.cu"),
            dir.path().join("kernel.cubin"),
        );
        let mut text = source.to_string();
        if name.contains('<') {
            // A host-side reference instantiates the template for the device too.
            text.push_str(&format!(
                "\nstatic auto *const ndtune_instance_ = &{name};\n"
            ));
        }
        std::fs::write(&input, text)
            .map_err(|e| failed(-1, format!("{}: {e}", input.display())))?;
        let ran = Command::new(&self.path)
            .args(&words)
            .args(quoted_search_of_nvrtc())
            .arg("-cubin")
            .arg("-o")
            .arg(&output)
            .arg(&input)
            .current_dir(dir.path())
            .output()
            .map_err(|e| failed(-1, format!("{} could not be run: {e}", self.path.display())))?;
        if !ran.status.success() {
            let mut log = String::from_utf8_lossy(&ran.stderr).into_owned();
            log.push_str(&String::from_utf8_lossy(&ran.stdout));
            return Err(failed(ran.status.code().unwrap_or(-1), log));
        }
        let cubin =
            std::fs::read(&output).map_err(|e| failed(-1, format!("{}: {e}", output.display())))?;
        let symbols = functions(&cubin).map_err(|e| failed(-1, e))?;
        let lowered = lowered_name(name, &symbols).map_err(|available| DeviceError::NoKernel {
            name: name.to_string(),
            available,
        })?;
        Ok(Compiled {
            name: name.to_string(),
            lowered,
            cubin,
        })
    }
}

/// NVRTC looks for a quoted `#include` in the process's working directory first, before the
/// `-I` folders; nvcc compiles a copy of the source in a folder of its own, so its preprocessor
/// (the host compiler's) is told the same with `-iquote`. None where the folder's name has a
/// comma, which `-Xcompiler` would split.
fn quoted_search_of_nvrtc() -> Vec<String> {
    match std::env::current_dir() {
        Ok(cwd) if !cwd.to_string_lossy().contains(',') => {
            vec!["-Xcompiler".into(), format!("-iquote,{}", cwd.display())]
        }
        _ => Vec::new(),
    }
}

/// The names of the functions an ELF file (a cubin) defines.
fn functions(elf: &[u8]) -> Result<Vec<String>, String> {
    let file =
        object::File::parse(elf).map_err(|e| format!("nvcc's cubin is no ELF file ({e})"))?;
    Ok(file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect())
}

/// The function kernel `name` is among `functions`: one of that very name (`extern "C"`), else
/// the one whose Itanium-mangled name is a function `name` at namespace scope (`_Z3addPfS_i`;
/// for `name<...>`, an instance of template `name`: `_Z3addIfLi4EEvPT_`). Where there is none
/// or more than one, what there is.
fn lowered_name(name: &str, functions: &[String]) -> Result<String, String> {
    if functions.iter().any(|f| f == name) {
        return Ok(name.to_string());
    }
    let (base, instance) = match name.split_once('<') {
        Some((base, _)) => (base.trim(), true),
        None => (name.trim(), false),
    };
    let prefix = format!("_Z{}{base}", base.len());
    let found: Vec<&String> = functions
        .iter()
        .filter(|f| {
            f.strip_prefix(&prefix)
                .and_then(|rest| rest.chars().next())
                .is_some_and(|next| (next == 'I') == instance)
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!(
            "nvcc's cubin has no such function; it has: {}",
            if functions.is_empty() {
                "none".to_string()
            } else {
                functions.join(", ")
            }
        )),
        many => Err(format!(
            "nvcc's cubin has {} functions of that name ({}); nvcc has no name expressions to \
             tell which one is meant",
            many.len(),
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndtune_device::backend::Api;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_kernel_is_found_by_its_own_name_or_its_mangled_one() {
        let cubin = names(&[
            "ExpDist",
            "_Z3addPfS_i",
            "_Z6vectorIfLi4EEvPT_",
            "_Z6vectorPf",
            "_Z4add2v",
        ]);
        assert_eq!(lowered_name("ExpDist", &cubin).unwrap(), "ExpDist");
        assert_eq!(lowered_name("add", &cubin).unwrap(), "_Z3addPfS_i");
        assert_eq!(lowered_name("vector", &cubin).unwrap(), "_Z6vectorPf");
        assert_eq!(
            lowered_name("vector<float, 4>", &cubin).unwrap(),
            "_Z6vectorIfLi4EEvPT_"
        );
        let none = lowered_name("missing", &cubin).unwrap_err();
        assert!(
            none.contains("no such function") && none.contains("ExpDist"),
            "{none}"
        );
        let two = names(&["_Z1kIfEvPT_", "_Z1kIdEvPT_"]);
        let many = lowered_name("k<float>", &two).unwrap_err();
        assert!(many.contains("2 functions"), "{many}");
    }

    #[test]
    fn the_version_is_read_from_the_manifest_or_what_nvcc_prints() {
        let printed =
            "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n\
                       Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n\
                       Cuda compilation tools, release 13.0, V13.0.88\n\
                       Build cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(release(printed).as_deref(), Some("13.0.88"));
        assert_eq!(release("no compiler here"), None);
        // A toolkit's manifest is read without running its nvcc (this one could not run).
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("bin")).unwrap();
        std::fs::write(root.path().join("bin/nvcc"), "not a program").unwrap();
        std::fs::write(
            root.path().join("version.json"),
            r#"{"cuda": {"version": "13.0.1"}, "cuda_nvcc": {"name": "CUDA NVCC", "version": "13.0.88"}}"#,
        )
        .unwrap();
        assert_eq!(
            version_of(&root.path().join("bin/nvcc")).as_deref(),
            Some("13.0.88")
        );
        std::fs::remove_file(root.path().join("version.json")).unwrap();
        assert_eq!(version_of(&root.path().join("bin/nvcc")), None);
    }

    /// The functions of a real ELF object: one `clang` compiles here (a cubin is an ELF file
    /// of the same kind, made on the GPU machine by scripts/test-gpu.sh).
    #[test]
    fn functions_are_read_from_an_elf_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("k.c");
        std::fs::write(
            &c,
            "void ExpDist(void) {}\nint helper(int x) { return x + 1; }\n",
        )
        .unwrap();
        let o = dir.path().join("k.o");
        let built = Command::new("clang")
            .args(["-c", "-o"])
            .arg(&o)
            .arg(&c)
            .status()
            .expect("clang is part of the test set-up");
        assert!(built.success());
        let mut found = functions(&std::fs::read(&o).unwrap()).unwrap();
        found.sort();
        assert_eq!(found, ["ExpDist", "helper"]);
        let e = functions(b"not an ELF file").unwrap_err();
        assert!(e.contains("no ELF file"), "{e}");
    }

    /// A stand-in nvcc (a shell script) that records its arguments and the source it was
    /// given, and writes `object` (an ELF file clang made) where `-o` says, or fails as told.
    fn stand_in(dir: &Path, object: &Path, fail: bool) -> Nvcc {
        let script = dir.join("nvcc");
        let body = if fail {
            "echo 'kernel.cu(2): error: identifier \"x\" is undefined' >&2; exit 2".to_string()
        } else {
            format!(
                "while [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n\
                 cp \"$1\" {dir}/given.cu; cp {obj} \"$out\"",
                dir = dir.display(),
                obj = object.display()
            )
        };
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho \"$@\" > {}/args\n{body}\n", dir.display()),
        )
        .unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .unwrap();
        Nvcc {
            path: script,
            version: "13.0.88".into(),
        }
    }

    /// What ndtune asks of nvcc, the source it hands it and how it reads the result, with an
    /// nvcc stand-in that records its arguments (`tests/compilers.rs` runs NVIDIA's real one).
    #[test]
    fn nvcc_is_asked_for_a_cubin_and_its_kernel_is_read_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("k.c");
        std::fs::write(&c, "void _Z5twiceIfEvPT_PKS0_(void) {}\n").unwrap();
        let object = dir.path().join("k.o");
        assert!(Command::new("clang")
            .args(["-c", "-o"])
            .arg(&object)
            .arg(&c)
            .status()
            .unwrap()
            .success());
        let nvcc = stand_in(dir.path(), &object, false);
        let source = "#include <cub/cub.cuh>\ntemplate <typename T> __global__ void twice(T *y, const T *x) {}\n";
        let built = nvcc
            .compile(
                "H100",
                source,
                "twice<float>",
                "-D WG=64 -use_fast_math",
                "sm_90",
            )
            .unwrap();
        assert_eq!(built.lowered, "_Z5twiceIfEvPT_PKS0_");
        assert_eq!(built.cubin, std::fs::read(&object).unwrap());
        let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert!(
            args.starts_with(&format!(
                "-DWG=64 -use_fast_math --gpu-architecture=sm_90 -Xcompiler -iquote,{} -cubin -o ",
                cwd.display()
            )),
            "{args}"
        );
        let given = std::fs::read_to_string(dir.path().join("given.cu")).unwrap();
        assert!(
            given.starts_with(source)
                && given.ends_with("static auto *const ndtune_instance_ = &twice<float>;\n"),
            "{given}"
        );

        let refusing = stand_in(dir.path(), &object, true);
        let e = refusing
            .compile(
                "H100",
                "__global__ void k() { x; }",
                "k",
                "-arch=sm_80",
                "sm_90",
            )
            .unwrap_err();
        match &e {
            DeviceError::Build {
                options, code, log, ..
            } => {
                assert_eq!((options.as_str(), *code), ("-arch=sm_80", 2));
                assert!(log.contains("identifier \"x\" is undefined"), "{log}");
            }
            other => panic!("{other:?}"),
        }
    }

    fn refusal(log: &str) -> DeviceError {
        DeviceError::Build {
            device: "H100".into(),
            options: "-Dblock_size_x=32".into(),
            code: 6,
            name: "NVRTC_ERROR_COMPILATION".into(),
            log: log.into(),
        }
    }

    fn nvcc() -> Nvcc {
        Nvcc {
            path: "/usr/local/cuda/bin/nvcc".into(),
            version: "13.0.88".into(),
        }
    }

    #[test]
    fn nvcc_builds_what_nvrtc_refuses_and_both_refusals_are_shown() {
        let built = Compiled {
            name: "ExpDist".into(),
            lowered: "ExpDist".into(),
            cubin: vec![0x7f],
        };
        let took = after_nvrtc(refusal("cub.cuh: host code"), Some(&nvcc()), |_| {
            Ok(built.clone())
        })
        .unwrap();
        assert_eq!(took, built);

        let both = after_nvrtc(refusal("kernel.cu(3): error: x"), Some(&nvcc()), |_| {
            Err(refusal("kernel.cu(3): error: x undefined"))
        })
        .unwrap_err();
        let text = both.to_string();
        assert!(text.contains("NVRTC_ERROR_COMPILATION (NVRTC)"), "{text}");
        assert!(
            text.contains("kernel.cu(3): error: x\n\nnvcc 13.0.88"),
            "{text}"
        );
        assert!(text.contains("x undefined"), "{text}");

        let alone = after_nvrtc(refusal("host code"), None, |_| unreachable!()).unwrap_err();
        assert!(alone.to_string().contains("no nvcc was found"), "{alone}");

        // Only a refused build goes to nvcc.
        let missing = DeviceError::Unavailable {
            api: Api::Cuda,
            reason: "NVRTC".into(),
            hint: "",
        };
        assert!(matches!(
            after_nvrtc(missing, Some(&nvcc()), |_| unreachable!()),
            Err(DeviceError::Unavailable { .. })
        ));
    }
}
