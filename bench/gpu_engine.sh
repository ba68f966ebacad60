#!/usr/bin/env bash
# Every GPU measurement of the engine (issue 24) in one go on the device machine, in under 9
# minutes; logs and JSON under $OUT:
#   devices.txt             what OpenCL sees (NVIDIA registered first)
#   sgemm.{txt,log,json}    examples/sgemm.toml cold and warm against Kernel Tuner, 2 repeats
#   sgemm/                  each run's store and report (bench/tune_vs_kt.py --keep)
#   bound.txt               each cold run against its physical bound (bench/physical_bound.py)
#   overhead.txt            overhead per configuration against buffer size, up to 256 MiB
#   accounting.txt          one cold and one warm campaign's summary: where every second went
# Usage, from the repository root with target/release/ndtune built (or NDTUNE=path):
#   OUT=/some/dir bench/gpu_engine.sh
# PYTHON: a Python with kernel_tuner 1.5.0, pyopencl and numpy (default python3); WHEELS: a
# folder of wheels to install them from first (pip --no-index).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?set OUT to the folder for the logs}
mkdir -p "$out"
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
python=${PYTHON:-python3}
if [ -n "${WHEELS:-}" ]; then
  "$python" -m pip install -q --no-index --find-links "$WHEELS" kernel_tuner pyopencl numpy
fi
ndtune=$(realpath "${NDTUNE:-target/release/ndtune}")
export NDTUNE_CACHE_DIR="$out/cache"
"$ndtune" devices > "$out/devices.txt"
cat "$out/devices.txt"

echo "== SGEMM against Kernel Tuner (cold, warm; 2 repeats)"
timeout 400 "$python" bench/tune_vs_kt.py --spec examples/sgemm.toml --nd-device NVIDIA \
  --platform NVIDIA --repeat 2 --retries 0 --ndtune "$ndtune" --keep "$out/sgemm" \
  --json-out "$out/sgemm.json" > "$out/sgemm.txt" 2> "$out/sgemm.log" || echo "(sgemm: $?)"
cat "$out/sgemm.txt"
python3 bench/physical_bound.py "$out/sgemm" | tee "$out/bound.txt" || true

echo "== overhead per configuration against buffer size"
NDTUNE="$ndtune" timeout 90 bench/overhead.sh NVIDIA "1024 2048 4096 8192" | tee "$out/overhead.txt" || true

echo "== where every second goes: one cold and one warm campaign's summary"
rm -rf "$NDTUNE_CACHE_DIR" ~/.nv/ComputeCache
db="$out/accounting.db"
{
  /usr/bin/time -f "cold: %e s wall (measured outside)" "$ndtune" tune examples/sgemm.toml --device NVIDIA --db "$db"
  rm -f "$db"
  /usr/bin/time -f "warm: %e s wall (measured outside)" "$ndtune" tune examples/sgemm.toml --device NVIDIA --db "$db"
} > "$out/accounting.txt" 2>&1 || true
cat "$out/accounting.txt"
