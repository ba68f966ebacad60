#!/usr/bin/env bash
# Strategy benchmark (BENCHMARKS.md, "Search strategies"): Kernel Tuner 1.5's strategies in its
# simulation mode, then ndtune's, cold and warm-started, on the benchmark_hub caches in
# ../shared/data. Extra arguments go to both `ndtune bench-strategies` runs (e.g. --seeds 8).
# Writes bench/out/strategies-{cold,warm}.{txt,json,svg} and bench/out/kt-strategies.json.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${DATA:-../shared/data/kt-benchmark-hub/cachefiles}
# A6000_original is an older recording over other parameters (no use_shmem): left out.
caches=($(ls "$data"/convolution_milo/*.json.gz "$data"/dedispersion_milo/*.json.gz | grep -v _original))
cargo build --release -q -p ndtune
mkdir -p bench/out
python=$(bench/kt-venv.sh)
if [ ! -s bench/out/kt-strategies.json ]; then
  "$python" bench/kt_strategies.py --seeds 16 \
    --strategies random_sample,simulated_annealing,genetic_algorithm,greedy_ils,greedy_mls,mls,pso,diff_evo,dual_annealing,basinhopping \
    --out bench/out/kt-strategies.json "${caches[@]}"
fi
for mode in cold warm; do
  flag=()
  [ "$mode" = warm ] && flag=(--warm-start)
  target/release/ndtune bench-strategies "${caches[@]}" "${flag[@]}" --kt bench/out/kt-strategies.json \
    --json "bench/out/strategies-$mode.json" --svg "bench/out/strategies-$mode.svg" "$@" \
    | tee "bench/out/strategies-$mode.txt"
done
