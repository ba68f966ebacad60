#!/usr/bin/env bash
# NVIDIA's CUDA compilers, without a GPU or a driver, for the tests of ndtune-cuda
# (crates/ndtune-cuda/tests/compilers.rs, packaged_12.rs) and of the Python package: NVRTC, and
# nvcc with cicc, ptxas and its headers, CUB/Thrust/libcu++ and the runtime's headers, as NVIDIA
# publishes them on PyPI (under NVIDIA's CUDA EULA; downloaded, never committed), pinned, into
# target/cuda-compilers (CUDA 13's layout, root nvidia/cu13); and CUDA 12's NVRTC and runtime
# headers, as PyTorch's CUDA 12 builds bring them, into target/cuda-compilers-12 (nvidia/cuda_nvrtc,
# nvidia/cuda_runtime). Installs only where the pins changed. Called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# install DIR PIN...: the pinned packages into DIR, unless DIR already has exactly them.
install() {
  local dir=$1
  shift
  [ "$(cat "$dir/.pins" 2>/dev/null)" != "$*" ] || return 0
  if ! python3 -m pip --version >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
  fi
  echo "cuda-compilers: installing $* into $dir" >&2
  rm -rf "$dir"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps \
    --target "$dir" "$@"
  echo "$*" >"$dir/.pins"
}

install target/cuda-compilers nvidia-cuda-nvrtc==13.5.37 nvidia-cuda-nvcc==13.5.37 \
  nvidia-nvvm==13.5.37 nvidia-cuda-crt==13.5.37 nvidia-cuda-runtime==13.5.37 \
  nvidia-cuda-cccl==13.3.5.0.6
install target/cuda-compilers-12 nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79
