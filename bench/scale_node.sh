#!/usr/bin/env bash
# The node benchmark of docs/scale.md: bench/scale.sh on this machine's GPUs with SQLite stores
# (no server), as a pool and as separate workers, cold and warm (`matrix`): the node's build
# service at its default size (8 build jobs on a GPU node), at 2x it, and without it (each worker
# with build workers of its own); `python`: Kernel Tuner's `parallel=` through the Python package (bench/python_vs_kt.py --wide,
# cold, parallel 1 and the last GPU count); `kill`: separate workers on every GPU of which one is
# killed (SIGKILL) 5 s in, the others finishing (lease 10 s). One summary, written as it goes.
#   bench/scale_node.sh [SPEC] [OUT_DIR]
# NDTUNE names the binary (default target/release/ndtune); COUNTS the GPU counts (default
# "1 2 4"); STEPS what runs (default "matrix kill python").
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${1:-bench/scale/sgemm-360.toml}
out=${2:-bench/out/scale-node}
counts=${COUNTS:-"1 2 4"}
steps=" ${STEPS:-matrix kill python} "
last=${counts##* }
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/summary.txt"
run() { # NAME COUNTS ENV...
    local name=$1 n=$2
    shift 2
    echo "== $name: $*" | tee -a "$out/summary.txt"
    env STORE=sqlite OUT_DIR="$out/$name" "$@" bash bench/scale.sh "$spec" "$n" | tail -n +2 | tee -a "$out/summary.txt"
}
if [[ $steps == *" matrix "* ]]; then
    run pool-cold "$counts" POOL=1
    run pool-cold-2x "1 $last" POOL=1 BUILD_JOBS=16
    run pool-cold-own "$last" POOL=1 NDTUNE_NODE_BUILDS=0
    run workers-cold "$last"
    run pool-warm "1 $last" POOL=1 KEEP_CACHE=1
fi
if [[ $steps == *" kill "* ]]; then
    # The last GPU's worker dies mid-campaign: the store keeps what it finished, the others
    # take over its claims when its lease ends; nothing is lost or measured twice.
    ndtune=${NDTUNE:-target/release/ndtune}
    k=$out/kill && mkdir -p "$k" && rm -rf "$k"/*
    rm -rf "$HOME"/.nv/ComputeCache* "${XDG_CACHE_HOME:-$HOME/.cache}"/{pocl,ndtune}
    pids=()
    for ((i = 0; i < last; i++)); do
        NDTUNE_DB=$k/kill.db "$ndtune" tune "$spec" --device "$i" --worker --worker-id "gpu$i" \
            --strategy exhaustive --lease 10s --json >"$k/w$i.json" 2>"$k/w$i.err" &
        pids+=($!)
    done
    sleep 5
    kill -9 "${pids[$((last - 1))]}"
    for p in "${pids[@]}"; do wait "$p" || true; done
    echo "== kill: gpu$((last - 1)) killed 5 s in" | tee -a "$out/summary.txt"
    NDTUNE_DB=$k/kill.db "$ndtune" status --json | python3 -c 'import json, sys
c = json.load(sys.stdin)["campaigns"][0]
print("%d results, measured twice %d; " % (c["results"], c["measured_twice"]) + ", ".join(
    "%s done %d expired %d" % (w["worker"], w["done"], w["expired"]) for w in c["workers"]))' \
        | tee -a "$out/summary.txt"
fi
if [[ $steps == *" python "* ]]; then
    for n in 1 "$last"; do
        rm -rf "$HOME"/.nv/ComputeCache* "${XDG_CACHE_HOME:-$HOME/.cache}"/{pocl,ndtune}
        echo "== python parallel=$n" | tee -a "$out/summary.txt"
        (cd "$(mktemp -d)" && python3 "$OLDPWD/bench/python_vs_kt.py" --no-kt --wide --size 1024 \
            --parallel "$n" --out "$out/python-parallel$n.json" >/dev/null)
        python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["ndtune"]
print("wall %.2f s, measured %d, best %s %.4f ms" % (r["wall_s"], r["measured"], r["best"], r["best_ms"]))' \
            "$out/python-parallel$n.json" | tee -a "$out/summary.txt"
    done
fi
