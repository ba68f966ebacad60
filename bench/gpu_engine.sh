#!/usr/bin/env bash
# Every GPU measurement of the engine (issue 24) in one go on the device machine, in under 8
# minutes on an H100 with 16 cores (each part has a time limit); logs and JSON under $OUT:
#   devices.txt             what OpenCL sees (NVIDIA registered first)
#   sgemm.{txt,log,json}    examples/sgemm.toml cold and warm against Kernel Tuner, 2 repeats
#   sgemm.tgz               each run's store and report (bench/tune_vs_kt.py --keep)
#   bound.txt               each cold run against its physical bound (bench/physical_bound.py)
#   overhead.txt            overhead per configuration against buffer size, 4 to 256 MiB
#   accounting.txt          one cold and one warm campaign's summary: where every second went
# Usage, from the repository root:
#   OUT=/some/dir bench/gpu_engine.sh
# NDTUNE: the release binary (default .carry/ndtune where it exists, else target/release/ndtune);
# WHEELS: a folder of wheels of kernel_tuner 1.5.0, pyopencl and their pure dependencies,
# installed first with pip --no-index --no-deps (default .carry/wheels, or .carry itself, where
# they hold wheels); PYTHON: the Python to use (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?set OUT to the folder for the logs}
mkdir -p "$out"
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
python=${PYTHON:-python3}
if [ -z "${WHEELS:-}" ]; then
  for dir in .carry/wheels .carry; do
    if compgen -G "$dir/*.whl" > /dev/null; then WHEELS=$dir; break; fi
  done
fi
if [ -n "${WHEELS:-}" ]; then
  # Every wheel there, without resolving dependencies: kernel_tuner 1.5.0 requires pymoo (and
  # through it matplotlib) for its NSGA strategies only, which it imports when they are used;
  # numpy, scipy, pandas and scikit-learn are taken from the machine.
  "$python" -m pip install -q --no-index --no-deps "$WHEELS"/*.whl 2>&1 | tail -3
fi
default_ndtune=target/release/ndtune
[ -x .carry/ndtune ] && default_ndtune=.carry/ndtune
ndtune=$(realpath "${NDTUNE:-$default_ndtune}")
"$ndtune" --version
export NDTUNE_CACHE_DIR="$out/cache"
"$ndtune" devices > "$out/devices.txt"
cat "$out/devices.txt"
# One GPU by its index: a selector such as `NVIDIA` matches every GPU of a multi-GPU host.
gpu=$(sed -n 's/^ *\[\([0-9]*\)\] .*NVIDIA.*GPU).*/\1/p' "$out/devices.txt" | head -1)

echo "== SGEMM against Kernel Tuner (cold, warm; 2 repeats)"
timeout 300 "$python" bench/tune_vs_kt.py --spec examples/sgemm.toml --nd-device "$gpu" \
  --platform NVIDIA --repeat 2 --retries 0 --ndtune "$ndtune" --keep "$out/sgemm" \
  --json-out "$out/sgemm.json" > "$out/sgemm.txt" 2> "$out/sgemm.log" || echo "(sgemm: $?)"
cat "$out/sgemm.txt"
tail -n 8 "$out/sgemm.log"
python3 bench/physical_bound.py "$out/sgemm" | tee "$out/bound.txt" || true

echo "== overhead per configuration against buffer size"
NDTUNE="$ndtune" timeout 60 bench/overhead.sh "$gpu" "1024 2048 4096 8192" | tee "$out/overhead.txt" || true

echo "== where every second goes: one cold and one warm campaign's summary"
rm -rf "$NDTUNE_CACHE_DIR" ~/.nv/ComputeCache
db="$out/accounting.db"
TIMEFORMAT='%R s wall (measured outside)'
{
  echo "-- cold"
  time timeout 45 "$ndtune" tune examples/sgemm.toml --device "$gpu" --db "$db"
  rm -f "$db"
  echo "-- warm (programs kept, a fresh store)"
  time timeout 20 "$ndtune" tune examples/sgemm.toml --device "$gpu" --db "$db"
} > "$out/accounting.txt" 2>&1 || true
cat "$out/accounting.txt"
# At most 8 files come back from the device machine: the kept runs go as one archive.
tar czf "$out/sgemm.tgz" -C "$out" sgemm && rm -rf "$out/sgemm" "$out/cache" "$out/accounting.db"
