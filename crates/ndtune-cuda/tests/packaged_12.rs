//! NVRTC from CUDA 12's Python packages (`nvidia-cuda-nvrtc-cu12`, which PyTorch's CUDA 12
//! builds bring, and `nvidia-cuda-runtime-cu12`), as `scripts/cuda-compilers.sh` installs them
//! into `target/cuda-compilers-12`: found as the Python extension names a `sys.path` folder, and
//! building with the headers of its own toolkit. A process of its own, since NVRTC is looked
//! for once per process.

mod cubin;

use cubin::{functions, sm_of};
use ndtune_cuda::nvrtc;
use std::path::Path;

#[test]
fn nvrtc_of_cuda_12s_python_packages_builds_with_its_own_toolkits_headers() {
    for variable in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        std::env::remove_var(variable);
    }
    let site = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/cuda-compilers-12")
        .canonicalize()
        .expect("scripts/cuda-compilers.sh installs CUDA 12's packages (run by scripts/test.sh)");
    let nvidia = site.join("nvidia");
    ndtune_cuda::look_in_python_packages([site.join("not-there"), site.clone()]);
    assert_eq!(
        ndtune_cuda::toolkit_roots(),
        [nvidia.join("cuda_nvrtc"), "/usr/local/cuda".into()]
    );
    assert_eq!(
        nvrtc::library().unwrap(),
        nvidia
            .join("cuda_nvrtc/lib/libnvrtc.so.12")
            .display()
            .to_string()
    );
    assert_eq!(nvrtc::version().unwrap(), "12.9");
    // The runtime's headers are in a package of their own, beside NVRTC's.
    assert_eq!(
        nvrtc::toolkit_headers(),
        [nvidia.join("cuda_runtime/include")]
    );
    // `cuda_fp16.h` is one of them; NVRTC 12 has no copy of its own.
    let half = "#include <cuda_fp16.h>\n\
                extern \"C\" __global__ void twice(__half *x) { x[0] = __hadd(x[0], x[0]); }\n";
    let built = nvrtc::compile("test", half, "twice", "", "sm_90").unwrap();
    assert!(functions(&built.cubin).contains(&"twice".to_string()));
    assert_eq!(sm_of(&built.cubin), 90);
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/gpu/templated.cu"),
    )
    .unwrap();
    let built = nvrtc::compile("test", &source, "scale<float, 2>", "-DWG=64", "sm_90").unwrap();
    assert_eq!(built.lowered, "_Z5scaleIfLi2EEvPT_PKS0_");
    assert!(functions(&built.cubin).contains(&built.lowered));
}
