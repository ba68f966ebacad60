#!/usr/bin/env bash
# The driver's advice as a prior (issue 25 item 5), live: the CNN layer (examples/cnn-full.toml)
# tuned on an NVIDIA GPU with a budget of evaluations, once as ndtune runs by default (launches
# beyond a build's queried CL_KERNEL_WORK_GROUP_SIZE or local memory count as likely refused) and
# once with --no-advice-prior, for each strategy and seed; bench/advice_summary.py tabulates the
# refused evaluations, the best configuration and the wall time of each pair.
#
#   OUT=DIR bench/advice.sh            (on the GPU machine; a few minutes on an H100)
#   env: NDTUNE (default .carry/ndtune, a release binary), DEVICE (default NVIDIA), STRATEGIES
#   (default "forest bo"), SEEDS (default "1 2"), BUDGET (default 100), LIMIT (seconds each run
#   may take, default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?OUT: the directory for the outputs}
ndtune=${NDTUNE:-.carry/ndtune}
device=${DEVICE:-NVIDIA}
strategies=${STRATEGIES:-forest bo}
seeds=${SEEDS:-1 2}
budget=${BUDGET:-100}
limit=${LIMIT:-200}
[[ -x $ndtune ]] || { echo "bench/advice.sh: no ndtune binary at $ndtune (set NDTUNE)" >&2; exit 1; }
mkdir -p "$out"
# NVIDIA's OpenCL is registered with the ICD loader on the device machine only by this file.
if [[ ! -e /etc/OpenCL/vendors/nvidia.icd ]] && ldconfig -p | grep -q libnvidia-opencl.so.1; then
    mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
fi
"$ndtune" devices >"$out/devices.txt" 2>&1
for strategy in $strategies; do
    for seed in $seeds; do
        for prior in on off; do
            name=$strategy-seed$seed-prior-$prior
            flag=()
            [[ $prior == off ]] && flag=(--no-advice-prior)
            echo "== $name" >&2
            # Each run its own store: nothing is reused between the two arms.
            timeout "$limit" "$ndtune" tune examples/cnn-full.toml --device "$device" \
                --strategy "$strategy" --budget "$budget" --seed "$seed" "${flag[@]}" \
                --db "$out/$name.db" --json >"$out/$name.json" 2>"$out/$name.log" \
                || echo "bench/advice.sh: $name exited $?" >&2
        done
    done
done
python3 bench/advice_summary.py "$out" | tee "$out/summary.md"
