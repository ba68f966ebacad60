#!/usr/bin/env bash
# Scale-out benchmark (docs/scale.md): one campaign measured by 1, 2, 4, ... GPUs of this
# machine, one `ndtune tune --worker` per GPU, sharing a PostgreSQL store on a throwaway server
# (crates/ndtune-store/examples/pg_server.rs, server binaries from NDTUNE_PG_BIN or Debian's
# package). Each run starts cold (NVIDIA's compute cache cleared) with a database of its own;
# every worker has BUILD_JOBS build workers (default ndtune's: on a GPU at most 4).
# KEEP_CACHE=1 keeps the compute cache (warm runs).
#   bench/scale.sh [SPEC] ["1 2 4"]
# Binaries: NDTUNE (default target/release/ndtune), PG_SERVER (default
# target/release/examples/pg_server; PG_LIBS: libraries the server alone needs). Results in
# OUT_DIR (default bench/out/scale). DEVICES replaces the GPUs by other selectors
# (`DEVICES="0:0/2 0:1/2"`: PoCL's halves); TUNE_ARGS adds arguments to each worker's
# `ndtune tune` (`TUNE_ARGS="--set N=256"`).
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${1:-bench/scale/sgemm-360.toml}
counts=${2:-"1 2 4"}
ndtune=${NDTUNE:-target/release/ndtune}
pg_server=${PG_SERVER:-target/release/examples/pg_server}
out=${OUT_DIR:-bench/out/scale}
jobs=${BUILD_JOBS:-}
mkdir -p "$out"
rm -f "$out"/*
gpus=(${DEVICES:-$("$ndtune" devices --json | python3 -c 'import json, sys
print(" ".join(str(i) for i, d in enumerate(json.load(sys.stdin)) if d["device_type"].lower() == "gpu"))')})
echo "GPUs: ${gpus[*]}" | tee "$out/summary.txt"

# The server lives while this script holds its standard input open.
mkfifo "$out/pg.in"
names=(); for n in $counts; do names+=("scale$n"); done
LD_LIBRARY_PATH=${PG_LIBS:-${LD_LIBRARY_PATH:-}} "$pg_server" "${names[@]}" <"$out/pg.in" >"$out/pg.urls" 2>"$out/pg.err" &
server=$!
exec 3>"$out/pg.in"
trap 'exec 3>&-; wait $server' EXIT
while [ "$(wc -l <"$out/pg.urls")" -lt "${#names[@]}" ]; do
    kill -0 $server 2>/dev/null || { cat "$out/pg.err"; exit 1; }
    sleep 0.2
done

run=0
for n in $counts; do
    run=$((run + 1))
    url=$(sed -n "${run}p" "$out/pg.urls")
    [ "$n" -le "${#gpus[@]}" ] || { echo "$n GPUs: this machine has ${#gpus[@]}"; continue; }
    [ -n "${KEEP_CACHE:-}" ] || rm -rf "$HOME"/.nv/ComputeCache* "${XDG_CACHE_HOME:-$HOME/.cache}"/{pocl,ndtune}
    start=$(date +%s.%N)
    pids=()
    for ((i = 0; i < n; i++)); do
        # Exhaustive: a scaling figure compares the same work at every count (`auto` may pick
        # another strategy).
        NDTUNE_DB=$url "$ndtune" tune "$spec" --device "${gpus[$i]}" --worker --worker-id "gpu$i" \
            --strategy exhaustive ${jobs:+--build-jobs "$jobs"} ${TUNE_ARGS:-} --json >"$out/w$n-$i.json" 2>"$out/w$n-$i.err" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    end=$(date +%s.%N)
    NDTUNE_DB=$url "$ndtune" status --json >"$out/status$n.json"
    python3 - "$n" "$start" "$end" "$out" <<'PY' | tee -a "$out/summary.txt"
import json, sys
n, start, end, out = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
status = json.load(open(f"{out}/status{n}.json"))["campaigns"][0]
best = json.load(open(f"{out}/w{n}-0.json"))["devices"][0]["best"]
done = ", ".join(f"{w['worker']} {w['done']}" for w in status["workers"])
print(f"{n} GPUs: wall {end - start:7.2f} s, {status['results']} results, "
      f"measured twice {status['measured_twice']}, per worker: {done}; "
      f"best {best['config']} {best['time_ms']:.4f} ms")
for i in range(n):
    r = json.load(open(f"{out}/w{n}-{i}.json"))["devices"][0]
    t = r["time"]
    print(f"  gpu{i}: evaluated {r['evaluated']}, reused {r['reused']}; " + ", ".join(
        f"{k} {t[k]:.2f}" for k in ("total_s", "startup_s", "reference_s", "build_s",
                                    "build_workers_s", "launch_s", "prepare_s", "verify_s",
                                    "lost_s")))
PY
done
