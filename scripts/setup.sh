#!/usr/bin/env bash
# Installs what ndtune needs on Debian/Ubuntu, only where missing: an OpenCL CPU device (PoCL) and
# the libOpenCL loader, clang (LLVM IR features), MiniZinc with Gecode (the seed's solver),
# Chromium (headless, to check the figures of `ndtune report` in tests), the PostgreSQL server
# (tests start their own, see ndtune_store::testing; nothing is configured system-wide).
# Sourced by scripts/main.sh and scripts/test.sh; uses sudo when not root.
set -euo pipefail

packages=(pocl-opencl-icd ocl-icd-opencl-dev clinfo clang minizinc chromium gcc libc6-dev make postgresql)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] || {
    echo "setup: no Rust toolchain; installing rustup (https://rustup.rs)" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy -c rustfmt
  }
  export PATH="$HOME/.cargo/bin:$PATH"
fi
