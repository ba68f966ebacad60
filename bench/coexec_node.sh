#!/usr/bin/env bash
# Co-execution on a whole node (issue 37): every scheduler (`--schedule auto`) on the node's GPUs,
# on the GPUs and the CPU (`--devices all`), and on the GPUs while one of them runs a competing
# kernel, planned from the quiet run's times (`--plan-ms`), as a plan made once would be.
#
#   bench/coexec_node.sh OUT
#
# STEPS picks the steps (default "gpus all slowed"); MATMUL / CONV are the sizes of each (matmul
# 4096,8192 and conv1d 2^24 x 625 on the GPUs; ALL_MATMUL / ALL_CONV for `all`). NDTUNE and BUSY
# override the binaries (target/release/ndtune, target/release/examples/busy); BUSY_COPIES
# competing processes slow the last GPU (default 1). EXTRA is passed on to every `ndtune split`
# (e.g. `--slices 1`).
# bench/coexec_summary.py tabulates OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?OUT directory}
export NDTUNE=${NDTUNE:-target/release/ndtune}
busy=${BUSY:-target/release/examples/busy}
STEPS=${STEPS:-gpus all slowed}
MATMUL=${MATMUL:-4096,8192}
CONV=${CONV:-16777216}
ALL_MATMUL=${ALL_MATMUL:-4096}
ALL_CONV=${ALL_CONV:-16777216}
mkdir -p "$out"
"$NDTUNE" devices >"$out/devices.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpus.txt" 2>/dev/null || true
gpus=$("$NDTUNE" devices --json | python3 -c 'import json, sys
print(",".join(str(i) for i, d in enumerate(json.load(sys.stdin)) if d["device_type"] == "gpu"))')
[[ $gpus == *,* ]] || { echo "bench/coexec_node.sh: fewer than two GPUs ($gpus)" >&2; exit 1; }
export SWEEP= SPLIT_ARGS="--schedule auto ${EXTRA-}"
for step in $STEPS; do
    case $step in
    gpus) TAG=gpus- bench/split.sh "$gpus" "$out" "$MATMUL" "$CONV" >/dev/null ;;
    all) TAG=all- bench/split.sh all "$out" "$ALL_MATMUL" "$ALL_CONV" >/dev/null ;;
    slowed)
        # The last GPU runs a competing kernel for the whole study; the plan keeps the quiet times.
        n=${MATMUL##*,}
        times=$(python3 -c 'import json, sys; print(",".join(f"{t:.6f}" for t in json.load(open(sys.argv[1]))["single_ms"]))' "$out/gpus-matmul-$n.json")
        hogs=()
        for _ in $(seq "${BUSY_COPIES:-1}"); do
            "$busy" "${gpus##*,}" 600 2>>"$out/busy.log" &
            hogs+=($!)
        done
        sleep 2
        SPLIT_ARGS="--schedule auto --plan-ms $times ${EXTRA-}" TAG=slowed- bench/split.sh "$gpus" "$out" "$n" "" >/dev/null || true
        kill "${hogs[@]}" 2>/dev/null || true
        wait "${hogs[@]}" 2>/dev/null || true
        ;;
    *) echo "bench/coexec_node.sh: unknown step $step" >&2; exit 1 ;;
    esac
done
python3 bench/coexec_summary.py "$out" | tee "$out/summary.md"
