#!/usr/bin/env bash
# Pruning benchmark: build the release ndtune, then time counting and listing the bench spaces,
# against Kernel Tuner 1.5.0 where its venv exists. Extra arguments go to space_bench.py.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p ndtune
KT=/tmp/kt-venv/bin/python
if [ -x "$KT" ]; then
  exec python3 bench/space_bench.py --kernel-tuner "$KT" "$@"
fi
echo "Kernel Tuner venv not found at /tmp/kt-venv; running without it. To compare, make it with:" >&2
echo "  python3 -m venv /tmp/kt-venv && /tmp/kt-venv/bin/pip install kernel_tuner==1.5.0" >&2
exec python3 bench/space_bench.py "$@"
