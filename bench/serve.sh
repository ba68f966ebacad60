#!/usr/bin/env bash
# Prediction service benchmark (issue 7): `ndtune serve` with the random forest trained on the
# shipped stencil data, on loopback TCP, loaded by the `loadgen` example: CLIENTS kept-alive
# connections for SECONDS at RATE requests per second in all, then as fast as answers come.
# Three request bodies: all 117 features (what a client with its own features sends); a device
# name, a kernel hash and a dataset (the service computes the features; the kernel's were
# cached by a first request with its source); and a `POST /v1/config` of examples/saxpy.toml's
# wisdom (tuned on this machine's first device at two sizes) for a size between them. JSON
# summaries land in OUT.
#
#   bench/serve.sh OUT [CLIENTS=16] [SECONDS=60] [RATE=1000]
#
# NDTUNE and LOADGEN override the binaries. SERVER_CPUS and LOADGEN_CPUS pin the service and the
# load generator to cores (`taskset -c` lists: SERVER_CPUS=0,1 LOADGEN_CPUS=2-9 gives the service
# two cores of its own); BODIES picks the bodies (default "features by-hash config").
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?OUT directory}
clients=${2:-16}
seconds=${3:-60}
rate=${4:-1000}
ndtune=${NDTUNE:-target/release/ndtune}
loadgen=${LOADGEN:-target/release/examples/loadgen}
[[ -x $ndtune ]] || cargo build --release -q -p ndtune
[[ -x $loadgen ]] || cargo build --release -q -p ndtune-serve --example loadgen
mkdir -p "$out"
work=$(mktemp -d)
server=
cleanup() { [[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

$ndtune learn train --data data/stencils-2026-11-21/stencils-h100-xeon.csv.gz --model forest \
  --out "$work/forest.json"
$ndtune stencil gen --seed 1 --count 1 --out "$work/stencil" >/dev/null
stencil=$(ls "$work"/stencil/*.stencil.toml)
features=$($ndtune learn features "$stencil" --size 1024x1024 --profile gtx-titan --json)
echo "{\"features\": $features}" > "$work/features.json"

# The wisdom /v1/config answers from: saxpy tuned at two sizes.
$ndtune tune examples/saxpy.toml --set N=65536,1048576 --db "$work/saxpy.db" >/dev/null 2>&1
$ndtune export --db "$work/saxpy.db" --format wisdom --spec examples/saxpy.toml \
  --out "$work/saxpy.wisdom.json"
device=$($ndtune devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["name"])')
python3 -c 'import json,sys; print(json.dumps({"kernel": "saxpy", "device": sys.argv[1], "constants": {"N": 262144}}))' \
  "$device" > "$work/config.json"

server_pin=() loadgen_pin=()
[[ -n ${SERVER_CPUS:-} ]] && server_pin=(taskset -c "$SERVER_CPUS")
[[ -n ${LOADGEN_CPUS:-} ]] && loadgen_pin=(taskset -c "$LOADGEN_CPUS")
"${server_pin[@]}" $ndtune serve --model "$work/forest.json" --wisdom "$work/saxpy.wisdom.json" --listen 127.0.0.1:0 > "$work/address" 2> "$out/serve.log" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/address" && break; sleep 0.1; done
address=$(sed -n 's/^listening on //p' "$work/address")
[[ -n $address ]] || { cat "$out/serve.log"; exit 1; }

# The first request sends the kernel's source; later ones its hash.
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
print(json.dumps({"device": "gtx-titan", "kernel": {"source": open(
    sorted(__import__("glob").glob(work + "/stencil/*.cl"))[0]).read()},
    "dataset": {"rows": 1024, "cols": 1024, "border": [1, 1, 1, 1]}}),
    file=open(work + "/first.json", "w"))
PY
hash=$(curl -sf -XPOST "$address/v1/predict" --data-binary @"$work/first.json" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel_hash"])')
echo "{\"device\": \"gtx-titan\", \"kernel\": {\"hash\": \"$hash\"}, \"dataset\": {\"rows\": 1024, \"cols\": 1024, \"border\": [1, 1, 1, 1]}}" \
  > "$work/by-hash.json"

curl -sf -XPOST "$address/v1/config" --data-binary @"$work/config.json" > "$out/config-answer.json"
for body in ${BODIES:-features by-hash config}; do
  path=/v1/predict
  [[ $body == config ]] && path=/v1/config
  echo "== $body: $clients clients, ${seconds} s at $rate requests/s" >&2
  "${loadgen_pin[@]}" $loadgen --address "$address" --path "$path" --body "$work/$body.json" --clients "$clients" \
    --seconds "$seconds" --rate "$rate" | tee "$out/$body-paced.json"
  echo "== $body: $clients clients, 10 s as fast as answers come" >&2
  "${loadgen_pin[@]}" $loadgen --address "$address" --path "$path" --body "$work/$body.json" --clients "$clients" \
    --seconds 10 --rate 0 | tee "$out/$body-max.json"
done
curl -sf "$address/metrics" > "$out/metrics.txt"
nproc > "$out/cpus.txt"
