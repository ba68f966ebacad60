#!/usr/bin/env bash
# `ndtune tune` on the 6.7 M-configuration xgemm space (bench/spaces/xgemm-tune.toml, a stand-in
# kernel): how long until the first configuration is being measured, and the peak memory of the
# ndtune process (VmHWM, read from /proc while it runs), beside `ndtune devices` (the OpenCL
# runtime alone) and the same campaign on a space of 35,648 configurations.
#   bench/xgemm_start.sh [DEVICE]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ndtune
nd=$PWD/target/release/ndtune
device=${1:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=$work/xgemm-small.toml
sed 's/^MWG = .*/MWG = [16]/; s/^NWG = .*/NWG = [16]/; s|^source = "|source = "'"$PWD"'/bench/spaces/|' \
    bench/spaces/xgemm-tune.toml >"$small"
# Peak resident memory of the command's own process, in MiB.
peak() {
    "$@" >/dev/null 2>&1 &
    local p=$! last=0 v
    while kill -0 $p 2>/dev/null; do
        v=$(awk '/VmHWM/{print $2}' /proc/$p/status 2>/dev/null || true)
        [ -n "$v" ] && last=$v
        sleep 0.02
    done
    wait $p
    python3 -c "print(f'{$last / 1024:.1f} MiB')"
}
for spec in bench/spaces/xgemm-tune.toml "$small"; do
    valid=$("$nd" space "$spec" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["pruned"])')
    db=$work/start.db
    rm -f "$db"*
    start=$(date +%s%3N)
    "$nd" tune "$spec" --device "$device" --strategy random --budget 3 --build-jobs 1 --db "$db" --json >/dev/null
    first=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select min(started_at) from results").fetchone()[0])' "$db")
    rm -f "$db"*
    mib=$(peak "$nd" tune "$spec" --device "$device" --strategy random --budget 3 --build-jobs 1 --db "$db" --json)
    echo "$valid valid configurations: first measurement began $((first - start)) ms after the command; ndtune's peak memory $mib"
done
echo "ndtune devices (the OpenCL runtime alone): $(peak "$nd" devices) "
