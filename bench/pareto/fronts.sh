#!/usr/bin/env bash
# The front strategies' benchmark (issue 54, BENCHMARKS.md "Pareto fronts"): the recordings of
# bench/pareto/recordings (every configuration of three spaces measured with its time, energy
# and power on an NVIDIA H100 by bench/pareto/record.sh) replayed by ndtune's strategies and by
# Kernel Tuner 1.5's nsga2 and random sampling in its simulation mode, for two pairs of
# objectives; every run of either tool scored alike, by the fraction of the true front's
# hypervolume its evaluations cover (ndtune bench-strategies scores Kernel Tuner's runs from the
# configurations they evaluated).
#
#   bench/pareto/fronts.sh [SEEDS]      (default 10; about 25 minutes on 2 cores, most of it Kernel
#   Tuner's nsga2 runs that stall at 200 evaluations of time and energy and are run again at 100)
#   env: NDTUNE (default target/release/ndtune)
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=${1:-10}
ndtune=${NDTUNE:-target/release/ndtune}
[[ -x $ndtune ]] || cargo build --release -q -p ndtune
python=$(bench/kt-venv.sh pymoo)
out=bench/out
mkdir -p "$out"
recordings=(bench/pareto/recordings/*.json.gz)
for objectives in time,power_w time,energy_j; do
    name=${objectives/,/-}
    "$python" bench/kt_strategies.py --strategies nsga2,random_sample --budgets 25,50,100,200 \
        --seeds "$seeds" --objective "$objectives" --run-limit 60 --out "$out/kt-front-$name.json" \
        "${recordings[@]}"
    "$ndtune" bench-strategies "${recordings[@]}" --objective "$objectives" \
        --strategies random,nsga2,parego,bo,auto --budgets 25,50,100,200 --seeds "$seeds" \
        --kt "$out/kt-front-$name.json" --json "$out/fronts-$name.json"
done
