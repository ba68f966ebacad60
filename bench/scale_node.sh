#!/usr/bin/env bash
# The node benchmark of docs/scale.md: bench/scale.sh on this machine's GPUs with SQLite stores
# (no server), as a pool and as separate workers, cold and warm, and with the node's build
# service at twice its default size; one summary.
#   bench/scale_node.sh [SPEC] [OUT_DIR]
# NDTUNE names the binary (default target/release/ndtune); COUNTS the GPU counts (default
# "1 2 4").
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${1:-bench/scale/sgemm-360.toml}
out=${2:-bench/out/scale-node}
counts=${COUNTS:-"1 2 4"}
last=${counts##* }
mkdir -p "$out"
: >"$out/summary.txt"
run() { # NAME COUNTS ENV...
    local name=$1 n=$2
    shift 2
    echo "== $name: $*" | tee -a "$out/summary.txt"
    env STORE=sqlite OUT_DIR="$out/$name" "$@" bash bench/scale.sh "$spec" "$n" | tail -n +2 | tee -a "$out/summary.txt"
}
run pool-cold "$counts" POOL=1
run pool-warm "1 $last" POOL=1 KEEP_CACHE=1
run workers-cold "1 $last"
run pool-cold-8jobs "$last" POOL=1 BUILD_JOBS=8
