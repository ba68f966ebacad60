#!/usr/bin/env bash
# Pruning benchmark: builds the release ndtune, makes the Kernel Tuner venv (bench/kt-venv.sh),
# then times counting and listing the bench spaces with both, side by side.
# Extra arguments go to space_bench.py (e.g. --repeat 3, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ndtune
python=$(bench/kt-venv.sh)
exec python3 bench/space_bench.py --kernel-tuner "$python" "$@"
