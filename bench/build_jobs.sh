#!/usr/bin/env bash
# How the number of build workers sets a cold campaign's wall time on one GPU of the device
# machine: examples/sgemm.toml, every compiler cache emptied before each run, ndtune's default
# and each `--build-jobs` value of JOBS, then Kernel Tuner once in the same call
# (bench/tune_vs_kt.py, cold). One GPU is picked by its index even where the host has several.
# Results in $OUT/build_jobs.txt (one line a run: jobs, wall s, the summary's build line) and
# $OUT/kt.txt. Run from the repository root on the device machine:
#   OUT=/some/dir JOBS="63 31 15 7 4" bench/build_jobs.sh
# SKIP_KT=1 leaves Kernel Tuner out. NDTUNE: the release binary (default .carry/ndtune); wheels of Kernel Tuner and PyOpenCL in
# .carry/wheels (see bench/gpu_engine.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?set OUT to the folder for the logs}
mkdir -p "$out"
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
python=${PYTHON:-python3}
if compgen -G ".carry/wheels/*.whl" > /dev/null; then
  "$python" -m pip install -q --no-index --no-deps .carry/wheels/*.whl 2>&1 | tail -3
fi
ndtune=$(realpath "${NDTUNE:-.carry/ndtune}")
"$ndtune" devices > "$out/devices.txt"
# The first NVIDIA device's index (`ndtune devices` numbers every device of every platform).
gpu=$(sed -n 's/^ *\[\([0-9]*\)\] .*NVIDIA.*GPU).*/\1/p' "$out/devices.txt" | head -1)
echo "GPU index $gpu of $(nproc) cores; $(nvidia-smi -L | wc -l) GPUs"
nvidia-smi -L | head -1
nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
export NDTUNE_CACHE_DIR="$out/cache"
# Each run's summary goes under $out/runs (one file back instead of one a run).
mkdir -p "$out/runs"
cold() {
  rm -rf "$NDTUNE_CACHE_DIR" ~/.nv/ComputeCache ~/.cache/pyopencl "$out/run.db"
}
: > "$out/build_jobs.txt"
for jobs in default ${JOBS:-}; do
  cold
  args=()
  [ "$jobs" = default ] || args=(--build-jobs "$jobs")
  start=$(date +%s%N)
  timeout 120 "$ndtune" tune examples/sgemm.toml --device "$gpu" --db "$out/run.db" "${args[@]}" \
    > "$out/run-$jobs.txt" 2>&1 || echo "(exit $?)" >> "$out/run-$jobs.txt"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  line=$(grep -m1 "builds ahead" "$out/run-$jobs.txt" | sed 's/^ *//' || true)
  printf '%-8s %4d.%03d s  %s\n' "$jobs" $((ms / 1000)) $((ms % 1000)) "$line" | tee -a "$out/build_jobs.txt"
  mv "$out/run-$jobs.txt" "$out/runs/"
done
cold
[ -n "${SKIP_KT:-}" ] || timeout 300 "$python" bench/tune_vs_kt.py --spec examples/sgemm.toml --nd-device "$gpu" \
  --platform NVIDIA --repeat 1 --retries 0 --modes cold --ndtune "$ndtune" \
  --json-out "$out/kt.json" > "$out/kt.txt" 2> "$out/kt.log" || echo "(kt: $?)"
[ -n "${SKIP_KT:-}" ] || cat "$out/kt.txt"
tar czf "$out/runs.tgz" -C "$out" runs && rm -rf "$out/runs" "$out/cache" "$out/run.db"
