#!/usr/bin/env bash
# Energy and power on an NVIDIA GPU (issue 25 item 2): examples/sgemm.toml tuned exhaustively with
# the energy of every configuration read through NVML, then ranked by time, by energy and by
# GFLOP/s per watt from the same measurements (metrics are recomputed from the store, nothing is
# measured twice), a budgeted search replayed on the recording for each objective, the HTML report
# and the Kernel Tuner cache; bench/energy_summary.py writes the two best configurations and their
# trade-off, and the time-energy Pareto front, as Markdown for BENCHMARKS.md.
#
#   OUT=DIR bench/energy.sh            (on the GPU machine; about 1-2 minutes on an H100)
#   env: NDTUNE (default .carry/ndtune, a release binary), DEVICE (default NVIDIA: part of the
#   OpenCL device name), N (default 2048), ENERGY_MS (the least energy window per configuration,
#   default 300 ms), LIMIT (seconds each ndtune command may take, default 240)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?OUT: the directory for the outputs}
ndtune=${NDTUNE:-.carry/ndtune}
device=${DEVICE:-NVIDIA}
n=${N:-2048}
energy_ms=${ENERGY_MS:-300}
limit=${LIMIT:-240}
[[ -x $ndtune ]] || { echo "bench/energy.sh: no ndtune binary at $ndtune (set NDTUNE)" >&2; exit 1; }
mkdir -p "$out"
log=$out/energy.log
# NVIDIA's OpenCL is registered with the ICD loader on the device machine only by this file.
if [[ ! -e /etc/OpenCL/vendors/nvidia.icd ]] && ldconfig -p | grep -q libnvidia-opencl.so.1; then
    mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
fi
{ nvidia-smi -q -d POWER,CLOCK,PERFORMANCE || true; } >"$out/nvidia-smi.txt" 2>&1
"$ndtune" --version >"$out/devices.txt" 2>&1 || true
"$ndtune" devices >>"$out/devices.txt" 2>&1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp examples/sgemm.toml examples/sgemm.cl "$work/"
# The energy window: the timed runs, then more runs until it lasts ENERGY_MS, so that NVML's
# energy counter (millijoules, updated every few tens of ms) moves far more than its resolution.
grep -q '^\[measure\]$' "$work/sgemm.toml" || { echo "bench/energy.sh: no [measure] in sgemm.toml" >&2; exit 1; }
sed -i "s/^\[measure\]$/[measure]\nenergy_ms = $energy_ms/" "$work/sgemm.toml"
cp "$work/sgemm.toml" "$out/sgemm.toml"

db=$out/energy.db
rm -f "$db"*
metric='gflops_per_w[GFLOP/s/W]=gflops / power_w'
tune() { # NAME ARGS...: one campaign on the device, its JSON into OUT/NAME.json
    local name=$1 rc=0
    shift
    echo "== $name" | tee -a "$log" >&2
    local started=$(date +%s.%N)
    timeout "$limit" "$ndtune" tune "$work/sgemm.toml" --device "$device" --set "N=$n" --db "$db" \
        --metric "$metric" --json "$@" >"$out/$name.json" 2>>"$log" || rc=$?
    echo "   exit $rc after $(python3 -c "import time; print(f'{time.time() - $started:.1f}')") s" | tee -a "$log" >&2
    return $rc
}
# Measures every configuration with its energy (the metric needs power_w); the later campaigns
# reuse these measurements and only rank them by another objective (the last, energy, is the
# one the report draws).
tune time --objective time
tune gflops_per_w --objective gflops_per_w --maximize
tune energy --objective energy_j
# A budgeted search per objective, replayed on the recording: how close 30 evaluations get.
for objective in time energy_j; do
    "$ndtune" tune --replay "$db" --strategy anneal --budget 30 --seed 1 --objective "$objective" \
        --metric "$metric" --json >"$out/replay-$objective.json" 2>>"$log"
done
"$ndtune" report --db "$db" --out "$out/report.html" 2>>"$log"
"$ndtune" export --db "$db" --format kt --out "$out/sgemm-kt-cache.json" --metric "$metric" \
    --objective energy_j 2>>"$log"
python3 bench/energy_summary.py "$out" | tee "$out/summary.md"
