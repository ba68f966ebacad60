#!/usr/bin/env bash
# bench/python_vs_kt.py on the GPU machine: the same Kernel Tuner script through Kernel Tuner 1.5
# and through ndtune's tune_kernel, wall time and best configuration of each, into
# $OUT/python_vs_kt.json, $OUT/restriction_function.json (restrictions as a Python function) and
# $OUT/restriction_function_serial.json (ndtune only, build_jobs=1). The machine has no network: the wheels come in .carry/wheels/, made here
# with
#   (cd python && maturin build --release -o ../.carry/wheels)       # ndtune's abi3 wheel
#   and Kernel Tuner 1.5.0, PyOpenCL and their pure dependencies (see bench/gpu_engine.sh)
# Runs in about 2-4 minutes there (Kernel Tuner's part is most of it).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p "${OUT:=bench/out}"
OUT=$(cd "$OUT" && pwd)
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# Into the machine's Python, which has numpy, scipy and pandas: every carried wheel without
# resolving dependencies (kernel_tuner's pymoo is for strategies it imports when they are used).
python=${PYTHON:-python3}
"$python" -m pip install -q --no-index --no-deps .carry/wheels/*.whl
nvidia-smi -L > "$OUT/gpu.txt" 2>&1 || true
# Each run cold: its own store, spec directories and ndtune binary cache, NVIDIA's and PyOpenCL's
# compiler caches emptied first.
run() {
  local name=$1; shift
  rm -rf ~/.nv/ComputeCache ~/.cache/pyopencl
  (cd "$(mktemp -d)" && NDTUNE_PYTHON_DIR=$PWD/specs NDTUNE_CACHE_DIR=$PWD/cache \
    "$python" "$OLDPWD/bench/python_vs_kt.py" --size 1024 --out "$OUT/$name.json" "$@")
}
# Restrictions as strings, then as one Python function (ndtune calls it per configuration; its
# build workers build ahead what it allows), then that function with builds in the measurement
# worker (build_jobs=1: how every campaign with functions built before 8eac82a).
run python_vs_kt
run restriction_function --restriction-function
run restriction_function_serial --restriction-function --build-jobs 1 --no-kt
