#!/usr/bin/env bash
# Strategy benchmark (BENCHMARKS.md, "Search strategies"): Kernel Tuner 1.5's strategies in its
# simulation mode, then ndtune's, cold and warm-started, on the benchmark_hub caches and CLTune's
# SGEMM space in ../shared/data. Extra arguments go to both `ndtune bench-strategies` runs (e.g. --seeds 8).
# Writes bench/out/strategies-{cold,warm}.{txt,json,svg} and bench/out/kt-*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${DATA:-../shared/data/kt-benchmark-hub/cachefiles}
# A6000_original is an older recording over other parameters (no use_shmem): left out.
caches=($(ls "$data"/convolution_milo/*.json.gz "$data"/dedispersion_milo/*.json.gz | grep -v _original))
cargo build --release -q -p ndtune
mkdir -p bench/out
python=$(bench/kt-venv.sh)
# Kernel Tuner's five strongest strategies on these spaces (a first run of ten showed greedy_ils,
# greedy_mls, mls, diff_evo and basinhopping behind them); 16 seeds on convolution, 8 on the
# slower dedispersion spaces. Kept between runs: delete bench/out/kt-*.json to redo them.
kt=random_sample,simulated_annealing,genetic_algorithm,dual_annealing,pso
conv=($(printf '%s\n' "${caches[@]}" | grep convolution))
dedisp=($(printf '%s\n' "${caches[@]}" | grep dedispersion))
[ -s bench/out/kt-conv.json ] ||
  "$python" bench/kt_strategies.py --seeds 16 --strategies $kt --out bench/out/kt-conv.json "${conv[@]}"
[ -s bench/out/kt-dedisp.json ] ||
  "$python" bench/kt_strategies.py --seeds 8 --strategies $kt --out bench/out/kt-dedisp.json "${dedisp[@]}"
# CLTune's SGEMM space on a GTX 680 (241,600 configurations), as a cache Kernel Tuner reads.
cltune=${CLTUNE:-../shared/data/sgemm-cltune-gtx680/sgemm_product.csv.gz}
kt_cltune=bench/out/cltune/cachefiles/cltune/$(basename "$(dirname "$cltune")").json
[ -s "$kt_cltune" ] || python3 bench/cltune_to_kt.py "$cltune" bench/out/cltune
[ -s bench/out/kt-cltune.json ] ||
  "$python" bench/kt_strategies.py --seeds 8 --strategies $kt --out bench/out/kt-cltune.json "$kt_cltune"
python3 -c 'import json, sys; print(json.dumps(sum((json.load(open(f)) for f in sys.argv[1:]), [])))' \
  bench/out/kt-conv.json bench/out/kt-dedisp.json bench/out/kt-cltune.json > bench/out/kt-strategies.json
caches+=("$cltune")
for mode in cold warm; do
  flag=()
  [ "$mode" = warm ] && flag=(--warm-start)
  target/release/ndtune bench-strategies "${caches[@]}" "${flag[@]}" --kt bench/out/kt-strategies.json \
    --json "bench/out/strategies-$mode.json" --svg "bench/out/strategies-$mode.svg" "$@" \
    | tee "bench/out/strategies-$mode.txt"
done
