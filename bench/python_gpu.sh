#!/usr/bin/env bash
# bench/python_vs_kt.py on the GPU machine: the same Kernel Tuner script through Kernel Tuner 1.5
# and through ndtune's tune_kernel, wall time and best configuration of each, into
# $OUT/python_vs_kt.json. The machine has no network: the wheels come in .carry/wheels/, made here
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
cd "$(mktemp -d)"   # the store and the spec directories of this run only
NDTUNE_PYTHON_DIR=$PWD/specs "$python" "$OLDPWD/bench/python_vs_kt.py" --size 1024 \
  --out "$OUT/python_vs_kt.json"
