#!/usr/bin/env bash
# Every check CI makes: formatting, lints, and all tests (real OpenCL on PoCL, real MiniZinc, real
# CUDA compilers without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
scripts/cuda-compilers.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets -q -- -D warnings
cargo test --workspace
scripts/test-python.sh
