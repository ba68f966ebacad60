#!/usr/bin/env bash
# Per-configuration overhead against buffer size: `ndtune tune ${SPEC:-bench/spaces/transpose.toml}` (12
# configurations, every run timed) at each N, on a fresh store each time; prints MiB per buffer,
# the overhead per configuration (besides builds, launches and references) and its parts.
#   bench/overhead.sh [DEVICE] [SIZES]       # e.g. bench/overhead.sh nvidia "1024 2048 4096 8192"
# NDTUNE: the binary (default target/release/ndtune, built if missing); SPEC: another spec.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-0}
sizes=${2:-512 1024 2048 4096}
ndtune=${NDTUNE:-target/release/ndtune}
[ -x "$ndtune" ] || cargo build --release -q -p ndtune
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%6s %8s %12s %12s %12s %10s %8s\n' N MiB "ovh ms/cfg" "prep ms/cfg" "verify ms" "launch s" "data s"
for n in $sizes; do
  "$ndtune" tune ${SPEC:-bench/spaces/transpose.toml} --set "N=$n" --device "$device" --db "$tmp/$n.db" \
    --json > "$tmp/$n.json"
  python3 - "$tmp/$n.json" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
n, t = int(sys.argv[2]), d["time"]
k = d["evaluated"]
print(f"{n:6d} {n * n * 4 / 2**20:8.0f} {t['overhead_ms_per_config']:12.2f} "
      f"{t['prepare_s'] * 1e3 / k:12.2f} {t['verify_s'] * 1e3 / k:12.2f} {t['launch_s']:10.2f} "
      f"{t['data_s']:8.2f}")
PY
done
