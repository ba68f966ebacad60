#!/usr/bin/env bash
# Co-execution benchmark (Erdem et al. 2018, §2.2; issue 4): `ndtune split` on the shipped matmul
# and conv1d at GPU sizes across DEVICES (selectors, e.g. `0,1` or `0:0/2,0:1/2`), with a sweep of
# split factors. Each run's JSON and the store land in OUT; bench/split_summary.py tabulates them.
#
#   bench/split.sh DEVICES OUT [MATMUL_SIZES] [CONV_SIZES]     (sizes comma-separated)
#   default sizes: matmul 2048, conv1d 16777216 (2^24, mask 625); SWEEP=0.1 is the sweep's step
#   (SWEEP= for none); SPLIT_ARGS are passed on (e.g. `--schedule auto`); TAG prefixes each
#   JSON's name (runs of several device sets can share OUT and its store)
#
# To spend device time on what is measured, the copies of the examples it runs search the tiles
# 8..64 (matmul; the 1..4 tiles are never best and very slow at these sizes) and work-groups
# 16..1024 (conv1d), and verify tuning against a reference configuration on the device instead
# of the float64 host reference (hours for matmul 8192 on one core). The co-execution itself is
# always verified against the best device alone. NDTUNE overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
devices=${1:?DEVICES, e.g. 0,1}
out=${2:?OUT directory}
matmul_sizes=${3-2048}
conv_sizes=${4-16777216}
ndtune=${NDTUNE:-target/release/ndtune}
SWEEP=${SWEEP-0.1}
SPLIT_ARGS=${SPLIT_ARGS-}
TAG=${TAG-}
[[ -x $ndtune ]] || cargo build --release -q -p ndtune
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp examples/matmul.cl examples/conv1d.cl "$work/"

# Edits one line of an example; fails loudly if the example changed under it.
edit() { # FILE FROM TO
    grep -qF -- "$2" "$1" || { echo "bench/split.sh: '$2' not in $1" >&2; exit 1; }
    python3 -c 'import sys; p, a, b = sys.argv[1:]; s = open(p).read(); open(p, "w").write(s.replace(a, b))' "$1" "$2" "$3"
}
cp examples/matmul.toml examples/conv1d.toml "$work/"
edit "$work/matmul.toml" 'WG_X = { range = [1, 1024] }' 'WG_X = { pow2 = [8, 64] }'
edit "$work/matmul.toml" 'WG_Y = { range = [1, 1024] }' 'WG_Y = { pow2 = [8, 64] }'
edit "$work/matmul.toml" 'reference = "builtin:matmul"' 'reference = { config = { WG_X = 16, WG_Y = 16 } }'
edit "$work/conv1d.toml" 'WG = { range = [1, 65536] }' 'WG = { pow2 = [16, 1024] }'
edit "$work/conv1d.toml" 'reference = "builtin:conv1d"' 'reference = { config = { WG = 64 } }'

run() { # KERNEL N
    echo "== $1 N=$2 on $devices" >&2
    local rc=0
    "$ndtune" split "$work/$1.toml" --set "N=$2" --devices "$devices" --db "$out/split.db" \
        ${SWEEP:+--sweep "$SWEEP"} $SPLIT_ARGS --json >"$out/$TAG$1-$2.json" 2>>"$out/split.log" || rc=$?
    echo "   exit $rc" >&2
}
for n in ${matmul_sizes//,/ }; do run matmul "$n"; done
for n in ${conv_sizes//,/ }; do run conv1d "$n"; done
python3 bench/split_summary.py "$out"/"$TAG"*.json
