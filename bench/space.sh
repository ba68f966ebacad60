#!/usr/bin/env bash
# Pruning benchmark: builds the release ndtune, makes a venv with Kernel Tuner 1.5.0 (once, in
# bench/out/kt-venv), then times counting and listing the bench spaces with both, side by side.
# Extra arguments go to space_bench.py (e.g. --repeat 3, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ndtune
venv=bench/out/kt-venv
if [ ! -x "$venv/bin/python" ]; then
  echo "making $venv with kernel_tuner==1.5.0" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q kernel_tuner==1.5.0
fi
exec python3 bench/space_bench.py --kernel-tuner "$venv/bin/python" "$@"
