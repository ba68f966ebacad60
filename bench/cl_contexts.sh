#!/usr/bin/env bash
# What a process pays for a context on NVIDIA's OpenCL, alone and with others starting at once
# (all GPUs visible, or one through CUDA_VISIBLE_DEVICES), and whether builds run in parallel in
# threads of one process or only in processes: the evidence for ndtune's number of build workers
# on a GPU (docs/tuning.md). Medians and maxima per case, from bench/cl_contexts.c.
#   bench/cl_contexts.sh OUT_DIR        (CL_CONTEXTS: a built bench/cl_contexts.c; else cc builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?give a folder for the results}
mkdir -p "$out" /etc/OpenCL/vendors 2>/dev/null || true
[ -w /etc/OpenCL/vendors ] && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
probe=${CL_CONTEXTS:-$out/cl_contexts}
[ -x "$probe" ] || cc -O2 -pthread -o "$probe" bench/cl_contexts.c -lOpenCL
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
"$probe" context 0 warm-up >/dev/null
at_once() { # TAG N VISIBLE: N processes at once, on the GPUs in turn
    local tag=$1 n=$2 visible=$3 i
    for ((i = 0; i < n; i++)); do
        if [ "$visible" = one ]; then
            CUDA_VISIBLE_DEVICES=$((i % gpus)) "$probe" context 0 "$tag" &
        else
            "$probe" context $((i % gpus)) "$tag" &
        fi
    done
    wait
}
for round in 1 2 3; do
    for n in 1 $gpus 8 16; do
        at_once "$n at once, all GPUs visible" "$n" all
        at_once "$n at once, one GPU visible" "$n" one
    done
done >"$out/contexts.jsonl"
python3 - "$out/contexts.jsonl" <<'PY'
import collections, json, statistics, sys
cases = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    cases[r["tag"]].append(r)
print("%-32s %5s  %s" % ("processes", "runs", "median / max seconds: discover, context, release, total"))
for tag, rs in cases.items():
    print("%-32s %5d  " % (tag, len(rs)) + ", ".join(
        "%.3f/%.3f" % (statistics.median(r[k] for r in rs), max(r[k] for r in rs))
        for k in ("discover", "context", "release", "total")))
PY
echo "builds (UNROLL=48, each program distinct):"
"$probe" builds serial 8 48 100
"$probe" builds threads 8 48 200
"$probe" builds threads 16 48 300
start=$(date +%s%N)
for i in $(seq 8); do "$probe" builds serial 1 48 $((500 + i)) >/dev/null & done
wait
echo "{\"mode\":\"8 processes, 1 build each\",\"wall\":$(( ($(date +%s%N) - start) / 1000000 ))e-3}"
