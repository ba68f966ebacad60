#!/usr/bin/env bash
# Two-objective recordings for issue 54 (Pareto fronts): every configuration of the spaces in
# bench/pareto/*.toml measured on an NVIDIA GPU with its time and its energy (NVML), into one
# store. The strategies' benchmark (bench/pareto/fronts.sh) replays them; the Kernel Tuner caches
# kept in bench/pareto/recordings/ are exported from this store (`ndtune export --format kt`).
#
#   OUT=DIR bench/pareto/record.sh [SPEC...]     (on the GPU machine; default: all three specs)
#   env: NDTUNE (default .carry/ndtune, a release binary), DEVICE (default H100: part of the
#   device's name; each spec's language picks OpenCL or CUDA), ENERGY_MS (the least energy window
#   per configuration, default 200 ms), LIMIT (seconds per spec, default 560)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:?OUT: the directory for the outputs}
ndtune=${NDTUNE:-.carry/ndtune}
device=${DEVICE:-H100}
energy_ms=${ENERGY_MS:-200}
limit=${LIMIT:-560}
[[ -x $ndtune ]] || { echo "record.sh: no ndtune binary at $ndtune (set NDTUNE)" >&2; exit 1; }
mkdir -p "$out"
if [[ ! -e /etc/OpenCL/vendors/nvidia.icd ]] && ldconfig -p | grep -q libnvidia-opencl.so.1; then
    mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
fi
specs=("$@")
[[ ${#specs[@]} -gt 0 ]] || specs=(bench/pareto/conv2d.toml bench/pareto/cnn.toml bench/pareto/sgemm-cuda.toml)
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv || true; } \
    >"$out/gpu.txt" 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for spec in "${specs[@]}"; do
    name=$(basename "$spec" .toml)
    # The energy window: the timed runs, then more runs until it lasts ENERGY_MS.
    sed "s/^\[measure\]$/[measure]\nenergy_ms = $energy_ms/" "$spec" >"$work/$name.toml"
    sed -i "s#^source = \"\.\./\.\./#source = \"$PWD/#" "$work/$name.toml"
    started=$(date +%s.%N)
    rc=0
    timeout "$limit" "$ndtune" tune "$work/$name.toml" --device "$device" --db "$out/pareto.db" \
        --strategy exhaustive --race off --objective energy_j --json >"$out/$name.json" \
        2>"$out/$name.log" || rc=$?
    echo "$name: exit $rc after $(python3 -c "import time; print(f'{time.time() - $started:.1f}')") s"
    tail -3 "$out/$name.log"
done
