#!/usr/bin/env bash
# Two ndtune binaries side by side on one cold campaign, alternating, each run with fresh PoCL and
# ndtune caches and a fresh store: wall time, builds waited for, launches, the overhead per
# configuration and its parts (restores, comparisons), and what racing stopped.
#   bench/overhead_ab.sh OLD NEW [ROUNDS] [DEVICE] [SPEC]
#   e.g. bench/overhead_ab.sh /tmp/ndtune-before target/release/ndtune 2 0 examples/conv2d.toml
# Any further arguments of `ndtune tune` in ARGS (default "--strategy exhaustive").
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 rounds=${3:-2} device=${4:-0} spec=${5:-examples/conv2d.toml}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-4s %5s %9s %8s %8s %12s %12s %12s %6s\n' bin round "wall s" "build s" "launch s" \
  "ovh ms/cfg" "prep ms/cfg" "verify ms/cfg" raced
for round in $(seq 1 "$rounds"); do
  for which in old new; do
    bin=$old
    [ "$which" = new ] && bin=$new
    run=$tmp/$which-$round
    mkdir -p "$run"
    POCL_CACHE_DIR=$run/pocl NDTUNE_CACHE_DIR=$run/cache "$bin" tune "$spec" --device "$device" \
      --db "$run/store.db" --json ${ARGS:---strategy exhaustive} > "$run/out.json" 2> "$run/err.txt"
    python3 - "$run/out.json" "$which" "$round" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
t, k = d["time"], d["evaluated"]
print(f"{sys.argv[2]:<4} {int(sys.argv[3]):5d} {t['campaign_s']:9.2f} {t['build_s']:8.2f} "
      f"{t['launch_s']:8.2f} {t['overhead_ms_per_config']:12.3f} {t['prepare_s'] * 1e3 / k:12.3f} "
      f"{t['verify_s'] * 1e3 / k:12.3f} {t['raced']:6d}")
PY
    rm -rf "$run"
  done
done
