#!/usr/bin/env bash
# Scale-out benchmark (docs/scale.md): one campaign measured by 1, 2, 4, ... GPUs of this
# machine, one `ndtune tune --worker` per GPU sharing a store, or one `ndtune tune --pool` of
# them (POOL=1). The store is a PostgreSQL database on a throwaway server
# (crates/ndtune-store/examples/pg_server.rs, server binaries from NDTUNE_PG_BIN or Debian's
# package), or an SQLite file per run (STORE=sqlite; no server). Each run starts cold (NVIDIA's
# compute cache and ndtune's program cache cleared) with a store of its own; the workers of the
# node share one build service with ndtune's default number of build workers (BUILD_JOBS
# overrides it). KEEP_CACHE=1 keeps the caches (warm runs).
#   bench/scale.sh [SPEC] ["1 2 4"]
# Binaries: NDTUNE (default target/release/ndtune), PG_SERVER (default
# target/release/examples/pg_server; PG_LIBS: libraries the server alone needs). Results in
# OUT_DIR (default bench/out/scale). DEVICES replaces the GPUs by other selectors
# (`DEVICES="0:0/2 0:1/2"`: PoCL's halves); TUNE_ARGS adds arguments to each `ndtune tune`
# (`TUNE_ARGS="--set N=256"`).
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${1:-bench/scale/sgemm-360.toml}
counts=${2:-"1 2 4"}
ndtune=${NDTUNE:-target/release/ndtune}
pg_server=${PG_SERVER:-target/release/examples/pg_server}
out=${OUT_DIR:-bench/out/scale}
jobs=${BUILD_JOBS:-}
mkdir -p "$out"
rm -rf "$out"/*
gpus=(${DEVICES:-$("$ndtune" devices --json | python3 -c 'import json, sys
print(" ".join(str(i) for i, d in enumerate(json.load(sys.stdin)) if d["device_type"].lower() == "gpu"))')})
echo "GPUs: ${gpus[*]}; ${POOL:+pool, }store ${STORE:-postgres}, build jobs ${jobs:-default}" | tee "$out/summary.txt"

names=(); for n in $counts; do names+=("scale$n"); done
if [ "${STORE:-postgres}" = sqlite ]; then
    for n in $counts; do echo "$(cd "$out" && pwd)/scale$n.db"; done >"$out/pg.urls"
else
    # The server lives while this script holds its standard input open.
    mkfifo "$out/pg.in"
    LD_LIBRARY_PATH=${PG_LIBS:-${LD_LIBRARY_PATH:-}} "$pg_server" "${names[@]}" <"$out/pg.in" >"$out/pg.urls" 2>"$out/pg.err" &
    server=$!
    exec 3>"$out/pg.in"
    trap 'exec 3>&-; wait $server' EXIT
    while [ "$(wc -l <"$out/pg.urls")" -lt "${#names[@]}" ]; do
        kill -0 $server 2>/dev/null || { cat "$out/pg.err"; exit 1; }
        sleep 0.2
    done
fi

run=0
for n in $counts; do
    run=$((run + 1))
    url=$(sed -n "${run}p" "$out/pg.urls")
    [ "$n" -le "${#gpus[@]}" ] || { echo "$n GPUs: this machine has ${#gpus[@]}"; continue; }
    [ -n "${KEEP_CACHE:-}" ] || rm -rf "$HOME"/.nv/ComputeCache* "${XDG_CACHE_HOME:-$HOME/.cache}"/{pocl,ndtune}
    start=$(date +%s.%N)
    # Exhaustive: a scaling figure compares the same work at every count (`auto` may pick
    # another strategy).
    if [ -n "${POOL:-}" ]; then
        pool=$(IFS=,; echo "${gpus[*]:0:$n}")
        NDTUNE_DB=$url "$ndtune" tune "$spec" --device "$pool" --pool --strategy exhaustive \
            ${jobs:+--build-jobs "$jobs"} ${TUNE_ARGS:-} --json >"$out/pool$n.json" 2>"$out/pool$n.err"
        # Each worker's own report, as the worker files below.
        python3 - "$out" "$n" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
pool = json.load(open(f"{out}/pool{n}.json"))
for i, w in enumerate(sorted(pool["pool"]["workers"], key=lambda w: w["worker"])):
    report = {"devices": [dict(pool["devices"][0], evaluated=w.get("evaluated", 0), reused=0,
                               time=w.get("time", {}))]}
    json.dump(report, open(f"{out}/w{n}-{i}.json", "w"))
PY
    else
        pids=()
        for ((i = 0; i < n; i++)); do
            NDTUNE_DB=$url "$ndtune" tune "$spec" --device "${gpus[$i]}" --worker --worker-id "gpu$i" \
                --strategy exhaustive ${jobs:+--build-jobs "$jobs"} ${TUNE_ARGS:-} --json >"$out/w$n-$i.json" 2>"$out/w$n-$i.err" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p"; done
    fi
    end=$(date +%s.%N)
    NDTUNE_DB=$url "$ndtune" status --json >"$out/status$n.json"
    python3 - "$n" "$start" "$end" "$out" <<'PY' | tee -a "$out/summary.txt"
import json, os, sqlite3, sys
n, start, end, out = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
status = json.load(open(f"{out}/status{n}.json"))["campaigns"][0]
best = json.load(open(f"{out}/w{n}-0.json"))["devices"][0]["best"]
done = ", ".join(f"{w['worker']} {w['done']}" for w in status["workers"])
print(f"{n} GPUs: wall {end - start:7.2f} s, {status['results']} results, "
      f"measured twice {status['measured_twice']}, per worker: {done}; "
      f"best {best['config']} {best['time_ms']:.4f} ms")
for i in range(n):
    try:
        r = json.load(open(f"{out}/w{n}-{i}.json"))["devices"][0]
    except (OSError, ValueError) as e:
        print(f"  gpu{i}: no report ({e})")  # a pool's worker that claimed nothing
        continue
    t = r["time"]
    print(f"  gpu{i}: evaluated {r['evaluated']}, reused {r['reused']}; " + ", ".join(
        f"{k} {t.get(k, 0):.2f}" for k in ("campaign_s", "total_s", "startup_s",
                                           "startup_waited_s", "build_s", "build_workers_s",
                                           "launch_s", "shutdown_s", "lost_s"))
          + f"; builds {t.get('node_builds') or 'own'} ({t.get('build_jobs')} jobs)")
# The floor no number of GPUs beats: the earliest start-up, then the longest build or all builds
# over the build jobs (SQLite stores keep each build's seconds in their `builds` study).
db = f"{out}/scale{n}.db"
if os.path.exists(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        rows = c.execute("SELECT body FROM studies WHERE kind = 'builds'").fetchall()
    builds = [s for (body,) in rows for _, s in json.loads(body)["builds"]]
    times = [json.load(open(f"{out}/w{n}-{i}.json"))["devices"][0]["time"]
             for i in range(n) if os.path.exists(f"{out}/w{n}-{i}.json")]
    if builds and times:
        jobs = max(t.get("build_jobs", 1) for t in times)
        startup = min(t.get("startup_s", 0) for t in times)
        floor = startup + max(max(builds), sum(builds) / jobs)
        print(f"  floor {floor:.2f} s (wall / floor {(end - start) / floor:.2f}): start-up {startup:.2f} s, "
              f"longest build {max(builds):.2f} s, {len(builds)} builds {sum(builds):.1f} s / {jobs} jobs")
PY
done
