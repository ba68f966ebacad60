#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest on PoCL): a venv in target/pyvenv with maturin,
# pytest, numpy, pandas (for Store.results()), and Kernel Tuner 1.5.0 with pyopencl for the
# comparison test (all from PyPI), the package's wheel as users install it (scripts/wheel.sh, in
# the dev profile: unoptimised, quicker to build) installed into it, then pytest. Called by
# scripts/test.sh; expects target/debug/ndtune built.
set -euo pipefail
cd "$(dirname "$0")/.."
# A venv needs python3-venv; building the extension, Python's headers (python3-dev).
if ! python3 -c "import ensurepip, venv" 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y -qq --no-install-recommends python3-venv python3-dev >/dev/null
fi
venv=target/pyvenv
if [ ! -x "$venv/bin/pytest" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q maturin pytest numpy pandas kernel_tuner==1.5.0 pyopencl
fi
# A venv made before pandas was needed gets it.
"$venv/bin/python" -c "import pandas" 2>/dev/null || "$venv/bin/pip" install -q pandas
export PATH="$PWD/$venv/bin:$PATH"
# The wheel users install (scripts/wheel.sh), in the dev profile.
PROFILE=dev scripts/wheel.sh target/wheels >/dev/null
pip install -q --force-reinstall --no-deps target/wheels/ndtune-*.whl
# From the repository root: python/ holds the package's sources, which lack the extension.
NDTUNE_BIN="$PWD/target/debug/ndtune" pytest -q python/tests
