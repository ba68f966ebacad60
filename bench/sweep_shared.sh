#!/usr/bin/env bash
# A sweep's campaigns sharing their worker processes (issue 52), before/after: the warm sweep of
# bench/sweep_warm.sh (the first size alone, then the nine others from their warm starts, in the
# space's order with a patience of 10: the same builds and evaluations in both binaries), with
# empty program caches, alternated ROUNDS times; per campaign its start-up, set-up, build wait and
# shut-down and the worker processes it started (bench/sweep_overhead.py).
#
#   bench/sweep_shared.sh BEFORE AFTER OUT [SPEC] [NAME] [SIZES]
#     e.g. OCL_ICD_VENDORS=DIR_WITH_ONLY_NVIDIA_ICD bench/sweep_shared.sh ndtune-old target/release/ndtune /tmp/ss
#
# Defaults: examples/sgemm.toml, N, 256 384 512 640 768 1024 1280 1536 1792 2048; ROUNDS=2.
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?BEFORE}
after=${2:?AFTER}
out=${3:?OUT}
spec=${4:-examples/sgemm.toml}
name=${5:-N}
read -ra sizes <<<"${6:-256 384 512 640 768 1024 1280 1536 1792 2048}"
mkdir -p "$out"
rest=$(IFS=,; echo "${sizes[*]:1}")
fresh() { rm -rf "$HOME"/.nv/ComputeCache* "${XDG_CACHE_HOME:-$HOME/.cache}"/{pocl,ndtune}; }
sweep() { # BIN TAG
    fresh
    rm -f "$out/$2".db*
    local t0
    t0=$(date +%s.%N)
    "$1" tune "$spec" --set "$name=${sizes[0]}" --db "$out/$2.db" --json >"$out/$2-first.json" 2>"$out/$2.err"
    "$1" tune "$spec" --set "$name=$rest" --db "$out/$2.db" --patience 10 --strategy exhaustive \
        --json >"$out/$2.json" 2>>"$out/$2.err"
    echo "$2: both commands $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
    python3 bench/sweep_overhead.py "$out/$2.json"
}
for round in $(seq "${ROUNDS:-2}"); do
    sweep "$before" "before$round"
    sweep "$after" "after$round"
done
