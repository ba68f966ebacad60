#!/usr/bin/env bash
# Held-out devices (issue 36): from the Kernel Tuner caches of six GPUs in
# shared/data/kt-benchmark-hub, each GPU in turn is held out and its configuration picked from
# the wisdom of the other five (crates/ndtune-wisdom/examples/heldout_devices.rs says how); the
# pick's fraction of the held-out GPU's optimum beside the other GPUs' bests used as is.
#
#   bench/heldout_devices.sh OUT      writes OUT/heldout.txt (the tables) and OUT/heldout.json
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?OUT}
mkdir -p "$out"
cargo run -q --release -p ndtune-wisdom --example heldout_devices -- \
    ../shared/data/kt-benchmark-hub bench/heldout --json "$out/heldout.json" | tee "$out/heldout.txt"
