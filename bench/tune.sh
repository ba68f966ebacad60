#!/usr/bin/env bash
# Tuning benchmark: builds the release ndtune, makes sure the Kernel Tuner venv (bench/out/kt-venv,
# Kernel Tuner 1.5.0, as bench/space.sh makes it) has PyOpenCL, then tunes examples/conv1d.toml
# with ndtune and with Kernel Tuner side by side (bench/tune_vs_kt.py).
# Extra arguments go to tune_vs_kt.py (e.g. --repeat 5, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ndtune
venv=bench/out/kt-venv
if [ ! -x "$venv/bin/python" ]; then
  echo "making $venv with kernel_tuner==1.5.0" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q kernel_tuner==1.5.0
fi
if ! "$venv/bin/python" -c 'import pyopencl' 2>/dev/null; then
  echo "installing pyopencl into $venv (binary wheel)" >&2
  "$venv/bin/pip" install -q --only-binary=:all: pyopencl
fi
exec "$venv/bin/python" bench/tune_vs_kt.py "$@"
