#!/usr/bin/env bash
# Tuning benchmark: builds the release ndtune, makes sure the Kernel Tuner venv
# (bench/kt-venv.sh) has PyOpenCL, then tunes examples/conv1d.toml with ndtune and with Kernel
# Tuner side by side (bench/tune_vs_kt.py). Extra arguments go to tune_vs_kt.py (--repeat 5, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ndtune
python=$(bench/kt-venv.sh pyopencl)
exec "$python" bench/tune_vs_kt.py "$@"
