#!/usr/bin/env bash
# NVIDIA's CUDA compilers, without a GPU or a driver, for the tests of ndtune-cuda
# (crates/ndtune-cuda/tests/compilers.rs): NVRTC, and nvcc with cicc, ptxas and its headers,
# CUB/Thrust/libcu++ and the runtime's headers, as NVIDIA publishes them on PyPI (under NVIDIA's
# CUDA EULA; downloaded, never committed), pinned, into target/cuda-compilers, where the tests
# find them (root nvidia/cu13). Installs only where the pins changed. Called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/cuda-compilers
pins=(nvidia-cuda-nvrtc==13.5.37 nvidia-cuda-nvcc==13.5.37 nvidia-nvvm==13.5.37
  nvidia-cuda-crt==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cuda-cccl==13.3.5.0.6)
if [ "$(cat "$dir/.pins" 2>/dev/null)" != "${pins[*]}" ]; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
  fi
  echo "cuda-compilers: installing ${pins[*]} into $dir" >&2
  rm -rf "$dir"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps \
    --target "$dir" "${pins[@]}"
  echo "${pins[*]}" >"$dir/.pins"
fi
