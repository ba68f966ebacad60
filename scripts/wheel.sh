#!/usr/bin/env bash
# ndtune's Python package as one wheel: `scripts/wheel.sh OUTDIR` writes OUTDIR/ndtune-*.whl, an
# abi3 wheel (CPython 3.8 and later) for manylinux2014 x86-64 (glibc 2.17 and later), which
# `pip install OUTDIR/ndtune-*.whl` installs in seconds: nothing is compiled there. The extension
# finds libOpenCL at run time, as ndtune does; the machine needs an OpenCL driver (PoCL, NVIDIA's).
# maturin builds it, with zig as the linker so that it links against glibc 2.17's symbols
# whatever this machine's glibc; both come into a venv of their own (target/wheel-venv).
# PROFILE=dev builds it unoptimised, reusing what `cargo test` compiled (what the CI tests).
set -euo pipefail
out=${1:?usage: scripts/wheel.sh OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)
venv=target/wheel-venv
if [ ! -x "$venv/bin/maturin" ] || ! "$venv/bin/python" -c "import ziglang" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "maturin>=1.5,<2" "ziglang==0.17.1"
fi
rm -f "$out"/ndtune-*.whl
(cd python && PATH="$PWD/../$venv/bin:$PATH" maturin build --profile "${PROFILE:-release}" \
  --zig --compatibility manylinux2014 --out "$out")
ls "$out"/ndtune-*.whl
