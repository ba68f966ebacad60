//! NVIDIA's real CUDA compilers, with no GPU and no driver: NVRTC and nvcc as NVIDIA publishes
//! them on PyPI, which `scripts/cuda-compilers.sh` installs into `target/cuda-compilers` (part
//! of the test set-up, as clang is). Builds need no context, so everything short of loading
//! and launching a cubin is checked here; scripts/test-gpu.sh launches them on the GPU machine.

mod cubin;

use cubin::{functions, sm_of};
use ndtune_cuda::{nvcc, nvrtc};
use ndtune_device::backend::DeviceError;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const ARCH: &str = "sm_90";

/// The toolkit's root, made this process's `CUDA_HOME` before the crate first looks for NVRTC
/// or nvcc (every test calls this first). The working directory becomes a folder of the tests'
/// own, where one test puts a header.
fn toolkit() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::var_os("NDTUNE_TEST_CUDA_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../target/cuda-compilers/nvidia/cu13")
            });
        assert!(
            root.join("bin/nvcc").is_file(),
            "no CUDA compilers at {}: scripts/cuda-compilers.sh installs them (part of the test \
             set-up, run by scripts/test.sh)",
            root.display()
        );
        std::env::set_var("CUDA_HOME", &root);
        let cwd = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compilers-cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        std::env::set_current_dir(&cwd).unwrap();
        root
    })
}

fn gpu_source(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/gpu")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_compilers_are_found_under_cuda_home_with_their_versions() {
    let root = toolkit();
    assert_eq!(nvrtc::version().unwrap(), "13.5");
    let found = nvcc::find().expect("nvcc under CUDA_HOME/bin");
    assert_eq!(found.path, root.join("bin/nvcc"));
    // The PyPI toolkit has no version.json: the version is what `nvcc --version` prints.
    assert_eq!(found.version, "13.5.37");
}

/// A template instance by its name expression (Kernel Tuner 1.4's `name<float, 2>`), built by
/// NVRTC into a cubin whose function is the lowered name NVRTC gave.
#[test]
fn nvrtc_builds_a_template_instance_by_its_name_expression() {
    toolkit();
    let source = gpu_source("templated.cu");
    let built = nvcc::build("test", &source, "scale<float, 2>", "-DWG=64", ARCH).unwrap();
    assert_eq!(built.name, "scale<float, 2>");
    assert_eq!(built.lowered, "_Z5scaleIfLi2EEvPT_PKS0_");
    assert!(functions(&built.cubin).contains(&built.lowered));
    // An instance the source cannot make is NVRTC's refusal, not some other kernel.
    let missing = nvcc::build("test", &source, "scale<float>", "", ARCH).unwrap_err();
    assert!(matches!(missing, DeviceError::Build { .. }), "{missing:?}");
}

/// CUB's umbrella header is host code NVRTC refuses; nvcc builds it, and the template instance
/// is found among the cubin's symbols.
#[test]
fn nvcc_builds_what_nvrtc_refuses() {
    toolkit();
    let source = gpu_source("cub.cu");
    let refused = nvrtc::compile("test", &source, "twice<float>", "-DWG=64", ARCH).unwrap_err();
    let DeviceError::Build { log, .. } = &refused else {
        panic!("NVRTC should refuse cub/cub.cuh: {refused:?}");
    };
    assert!(log.contains("error"), "{log}");
    let built = nvcc::build("test", &source, "twice<float>", "-DWG=64", ARCH).unwrap();
    assert_eq!(built.lowered, "_Z5twiceIfEvPT_PKS0_");
    assert!(functions(&built.cubin).contains(&built.lowered));
    // An `extern "C"` kernel of such a source is found by its own name.
    let plain = "#include <cub/cub.cuh>\n\
        extern \"C\" __global__ void block_sum(float *y, const float *x) {\n\
            typedef cub::BlockReduce<float, 128> Reduce;\n\
            __shared__ Reduce::TempStorage temp;\n\
            float sum = Reduce(temp).Sum(x[threadIdx.x]);\n\
            if (threadIdx.x == 0) y[blockIdx.x] = sum;\n\
        }\n";
    let built = nvcc::build("test", plain, "block_sum", "", ARCH).unwrap();
    assert_eq!(built.lowered, "block_sum");
    assert!(functions(&built.cubin).contains(&built.lowered));
}

/// Options reach both compilers as the same words: a define, `-use_fast_math`, `-std=c++17`,
/// and an `-I` folder holding a quoted include.
#[test]
fn both_compilers_take_the_options_and_include_folders() {
    toolkit();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("factor.cuh"),
        "__device__ constexpr float factor() { return FACTOR; }\n",
    )
    .unwrap();
    let kernel = "#include \"factor.cuh\"\n\
        extern \"C\" __global__ void scaled(float *y) {\n\
            y[threadIdx.x] = __expf(factor());\n\
        }\n";
    let options = format!(
        "-D FACTOR=2.0f -use_fast_math -std=c++17 -I {}",
        dir.path().display()
    );
    let by_nvrtc = nvrtc::compile("test", kernel, "scaled", &options, ARCH).unwrap();
    assert_eq!(by_nvrtc.lowered, "scaled");
    let nvcc = nvcc::find().unwrap();
    let by_nvcc = nvcc
        .compile("test", kernel, "scaled", &options, ARCH)
        .unwrap();
    assert_eq!(by_nvcc.lowered, "scaled");
    // Without the define, both refuse, each naming what is missing.
    let without = format!("-I {}", dir.path().display());
    for refused in [
        nvrtc::compile("test", kernel, "scaled", &without, ARCH).unwrap_err(),
        nvcc.compile("test", kernel, "scaled", &without, ARCH)
            .unwrap_err(),
    ] {
        let DeviceError::Build { log, .. } = &refused else {
            panic!("{refused:?}");
        };
        assert!(log.contains("FACTOR"), "{log}");
    }
}

/// Where both refuse a source, the configuration's error carries NVRTC's log, then nvcc's,
/// named by its version and path.
#[test]
fn where_both_refuse_both_logs_are_shown() {
    let root = toolkit();
    let source = "#include <cub/cub.cuh>\n\
        extern \"C\" __global__ void broken(float *y) { y[0] = undeclared_value; }\n";
    let refused = nvcc::build("test", source, "broken", "", ARCH).unwrap_err();
    let DeviceError::Build { name, log, .. } = &refused else {
        panic!("{refused:?}");
    };
    assert_eq!(name, "NVRTC_ERROR_COMPILATION (NVRTC)");
    let (nvrtc_log, nvcc_log) = log
        .split_once("nvcc 13.5.37 (")
        .unwrap_or_else(|| panic!("nvcc's part missing: {log}"));
    assert!(nvrtc_log.contains("error"), "{nvrtc_log}");
    assert!(
        nvcc_log.starts_with(&format!(
            "{}) could not build it either",
            root.join("bin/nvcc").display()
        )),
        "{nvcc_log}"
    );
    assert!(nvcc_log.contains("undeclared_value"), "{nvcc_log}");
}

/// Both compilers build for the device's architecture, and an `-arch` among the spec's options
/// wins over it.
#[test]
fn cubins_are_for_the_device_architecture_unless_the_options_name_one() {
    toolkit();
    let kernel = "extern \"C\" __global__ void one(float *y) { y[threadIdx.x] = 1.0f; }\n";
    let nvcc = nvcc::find().unwrap();
    for (options, sm) in [
        ("", 90),
        ("-arch=sm_80", 80),
        ("--gpu-architecture=sm_100", 100),
    ] {
        let by_nvrtc = nvrtc::compile("test", kernel, "one", options, ARCH).unwrap();
        let by_nvcc = nvcc.compile("test", kernel, "one", options, ARCH).unwrap();
        assert_eq!(
            (sm_of(&by_nvrtc.cubin), sm_of(&by_nvcc.cubin)),
            (sm, sm),
            "{options}"
        );
    }
}

/// Why `texmem_args` is refused by name (docs/cuda.md): CUDA 12 removed texture references,
/// and neither of CUDA 13's compilers knows `texture<...>` any more.
#[test]
fn texture_references_compile_with_neither_compiler() {
    toolkit();
    let source = "texture<float, 2> tex;\n\
        extern \"C\" __global__ void fetch(float *y) { y[0] = tex2D(tex, 0.5f, 0.5f); }\n";
    let refused = nvcc::build("test", source, "fetch", "", ARCH).unwrap_err();
    let DeviceError::Build { log, .. } = &refused else {
        panic!("{refused:?}");
    };
    let (nvrtc_log, nvcc_log) = log.split_once("could not build it either").unwrap();
    for log in [nvrtc_log, nvcc_log] {
        assert!(log.contains("texture is not a template"), "{log}");
    }
}

/// NVRTC looks for a quoted include in the working directory before the `-I` folders; nvcc,
/// which builds where NVRTC refuses, finds the same header.
#[test]
fn a_quoted_include_is_found_in_the_working_directory_first_by_both() {
    toolkit();
    let cwd = std::env::current_dir().unwrap();
    std::fs::write(cwd.join("which.cuh"), "#define KERNEL from_cwd\n").unwrap();
    let inc = tempfile::tempdir().unwrap();
    std::fs::write(inc.path().join("which.cuh"), "#define KERNEL from_inc\n").unwrap();
    let source = "#include \"which.cuh\"\n\
        extern \"C\" __global__ void KERNEL(float *y) { y[0] = 1.0f; }\n";
    let options = format!("-I {}", inc.path().display());
    let by_nvrtc = nvrtc::compile("test", source, "from_cwd", &options, ARCH).unwrap();
    let by_nvcc = nvcc::find()
        .unwrap()
        .compile("test", source, "from_cwd", &options, ARCH)
        .unwrap();
    assert_eq!(
        (by_nvrtc.lowered.as_str(), by_nvcc.lowered.as_str()),
        ("from_cwd", "from_cwd")
    );
}
