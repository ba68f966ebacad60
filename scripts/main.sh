#!/usr/bin/env bash
# The main job on the default device (PoCL CPU): what OpenCL sees, the paper's pruning tables on
# the built-in profiles of its four devices, the pruned space of an example on this machine, and
# that example tuned (results kept in ndtune.db: a second run reuses them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release -q -p ndtune
ndtune=target/release/ndtune

echo "== OpenCL devices"
$ndtune devices

echo
echo "== Erdem et al. 2018, Tables 1-2 (bounded / pruned) on built-in profiles"
printf '%-8s' ""
devices=(i7-4770 hd4600 i7-2630qm gt550m)
for d in "${devices[@]}"; do printf '%20s' "$d"; done
echo
for kernel in matmul conv1d; do
  printf '%-8s' "$kernel"
  for d in "${devices[@]}"; do
    row=$($ndtune space "examples/$kernel.toml" --profile "$d" | awk '$1 == "bounded" {b = $2} $1 == "pruned" {p = $2} END {print b " / " p}')
    printf '%20s' "$row"
  done
  echo
done
echo "(paper: matmul 2^20/7, 2^18/5, 2^20/7, 2^20/6; conv 8192/24, 512/17, 8192/24, 1024/19 — see docs/pruning.md)"

echo
echo "== examples/conv1d.toml on the default device"
$ndtune space examples/conv1d.toml

echo
echo "== ndtune tune examples/conv1d.toml on the default device (store: ndtune.db)"
$ndtune tune examples/conv1d.toml --db ndtune.db
