#!/bin/sh
# Two ndtune binaries in turn, each tuning SPEC on a cold store N times: the command's wall time
# and the overhead per configuration (`tune --json`), one line per run, then the medians.
#   bench/tune_ab.sh OLD_NDTUNE NEW_NDTUNE [SPEC] [N]
set -eu
old=$1 new=$2 spec=${3:-examples/conv1d.toml} n=${4:-10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for i in $(seq "$n"); do
  for v in old new; do
    eval bin=\$$v
    rm -f "$dir"/$v.db*
    "$bin" tune "$spec" --db "$dir/$v.db" --json > "$dir/$v.json" 2>/dev/null
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d['time']['wall_s'], d['devices'][0]['time']['overhead_ms_per_config'])" "$dir/$v.json" $v
  done
done | tee "$dir/runs" | cat
python3 - "$dir/runs" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for v in ("old", "new"):
    wall = [float(r[1]) for r in rows if r[0] == v]
    over = [float(r[2]) for r in rows if r[0] == v]
    print(f"{v}: wall median {statistics.median(wall):.3f} s (min {min(wall):.3f}), "
          f"overhead median {statistics.median(over):.3f} ms per configuration")
PY
