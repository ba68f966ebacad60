#!/usr/bin/env bash
# Held-out sizes (docs/deploy.md): tune a kernel at a few sizes, export its wisdom, then for
# other sizes compare what `ndtune pick` chooses with that size's own tuned best (every
# configuration measured there too). One line per held-out size and a geometric mean.
#   bench/deploy.sh SPEC "NAME=V ..." "TUNED SIZES" "HELD-OUT SIZES" [OUT_DIR]
# NAMES are the constants set to each size (`"H W"`: both to it); sizes are space-separated.
# NDTUNE names the binary (default target/release/ndtune), DEVICE the device (default 0).
# CONFIRM (default 5, 0: none): rounds of timing each size's pick beside its best again, side by
# side (bench/side_by_side.py), free of the winner's curse of a best picked from many noisy times.
#   bench/deploy.sh examples/sgemm.toml N "128 256 512 1024 2048" "192 320 384 640 768 896 1280 1536 1792 2560"
set -euo pipefail
cd "$(dirname "$0")/.."
spec=$1 names=$2 tuned=$3 held=$4
out=${5:-bench/out/deploy-$(basename "$spec" .toml)}
ndtune=${NDTUNE:-target/release/ndtune}
device=${DEVICE:-0}
mkdir -p "$out" && rm -rf "${out:?}"/*
sets() { local s; for n in $names; do s+=" --set $n=$1"; done; echo "$s"; }
tune() { # DB SIZE
    local start=$(date +%s.%N)
    NDTUNE_DB=$1 "$ndtune" tune "$spec" --device "$device" --strategy exhaustive $(sets "$2") --json >"$1.$2.json" 2>>"$out/tune.err"
    awk -v s="$start" -v e="$(date +%s.%N)" -v n="$2" 'BEGIN { printf "%s %.2f\n", n, e - s }' >>"$1.walls"
}
for s in $tuned; do tune "$out/tuned.db" "$s"; done
for s in $held; do tune "$out/held.db" "$s"; done
kernel=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["devices"][0]["kernel"])' "$out/tuned.db.${tuned%% *}.json")
for s in $held; do
    NDTUNE_DB=$out/held.db "$ndtune" show --kernel "$kernel" $(sets "$s") --json >"$out/held.$s.show.json"
done
for s in $tuned; do
    NDTUNE_DB=$out/tuned.db "$ndtune" show --kernel "$kernel" $(sets "$s") --json >"$out/tuned.$s.show.json"
done
NDTUNE_DB=$out/tuned.db "$ndtune" export --format wisdom --spec "$spec" --out "$out/wisdom.json"
for s in $held; do
    "$ndtune" pick --wisdom "$out/wisdom.json" --device "$device" $(sets "$s") --json >"$out/pick.$s.json"
done
if [[ ${CONFIRM:-5} != 0 ]]; then
    python3 bench/side_by_side.py "$out" "$spec" "$names" "$held" "$ndtune" "$device" "${CONFIRM:-5}" 2>>"$out/tune.err"
fi
python3 bench/deploy_summary.py "$out" "$held" | tee "$out/summary.txt"
