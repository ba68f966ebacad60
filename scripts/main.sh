#!/usr/bin/env bash
# The main job on the default device (PoCL CPU): what OpenCL sees, the paper's pruning tables on
# the built-in profiles of its four devices, the pruned space of an example on this machine, and
# that example tuned (results kept in ndtune.db: a second run reuses them); then a small stencil
# campaign, a co-execution on the two halves of the device and a learning evaluation of the
# shipped data, kept in ndtune.db too, and the report of it all (report.html).
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

echo
echo "== ndtune collect examples/campaign-small.toml (every work-group size of 10 stencil scenarios)"
$ndtune collect examples/campaign-small.toml --db ndtune.db 2>/dev/null | tail -n 6

echo
echo "== ndtune split examples/matmul.toml on the two halves of the default device (Erdem Fig. 5-7)"
if ! $ndtune split examples/matmul.toml --set N=512 --devices 0:0/2,0:1/2 --sweep 0.25 --db ndtune.db; then
  echo "(device 0 cannot be split into two sub-devices here: the report has no co-execution)"
fi

echo
echo "== ndtune learn eval on data/stencils-2026-11-21 (Cummins Fig. 4-6; four of the models, for time)"
$ndtune learn eval --data data/stencils-2026-11-21/stencils-h100-xeon.csv.gz --protocol cv10 \
  --models tree,forest,logistic,baseline --db ndtune.db

echo
echo "== ndtune report --db ndtune.db (the papers' tables and figures for what the store holds)"
$ndtune report --db ndtune.db --out report.html >/dev/null
echo "report: $(pwd)/report.html"
