#!/usr/bin/env bash
# Tuning benchmark: builds the release ndtune, makes sure the Kernel Tuner venv
# (bench/kt-venv.sh) has PyOpenCL, then tunes a spec (default examples/conv1d.toml) with ndtune
# and with Kernel Tuner side by side (bench/tune_vs_kt.py). Extra arguments go to tune_vs_kt.py:
#   bench/tune.sh --repeat 3
#   bench/tune.sh --spec examples/sgemm.toml --nd-device nvidia --platform NVIDIA --repeat 3
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ndtune
python=$(bench/kt-venv.sh pyopencl)
exec "$python" bench/tune_vs_kt.py "$@"
