#!/usr/bin/env bash
# Prints the Python of a venv holding Kernel Tuner 1.5.0 (and the packages named as arguments),
# making it in bench/out/kt-venv the first time (used by bench/space.sh and bench/tune.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=bench/out/kt-venv
if [ ! -x "$venv/bin/python" ]; then
  echo "making $venv with kernel_tuner==1.5.0" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q kernel_tuner==1.5.0
fi
for pkg in "$@"; do
  "$venv/bin/python" -c "import $pkg" 2>/dev/null || "$venv/bin/pip" install -q "$pkg" >&2
done
echo "$venv/bin/python"
