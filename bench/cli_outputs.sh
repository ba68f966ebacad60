#!/usr/bin/env bash
# What the command line prints, captured for two binaries and compared with the numbers masked:
# for a change that should move no output (a refactoring). Each binary gets its own stores.
#   bench/cli_outputs.sh OLD_NDTUNE NEW_NDTUNE [OUT]      (OUT default bench/out/cli_outputs)
# Prints each command whose masked stdout or stderr differs, with the first lines of the diff;
# the store's folder is masked too. Measured values differ run to run: a row of the fastest few
# or of a front may change places or membership within noise, and a column may widen by a
# digit (a worker's name holds its process id). About 2 minutes on 2 cores (PoCL).
set -uo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 out=${3:-bench/out/cli_outputs}
kt=../shared/data/kt-benchmark-hub/cachefiles/convolution_milo/A100.json.gz
capture() { # BIN DIR
  local bin=$1 dir=$2 db=$2/n.db db2=$2/c.db
  rm -rf "$dir" && mkdir -p "$dir"
  r() { local name=$1; shift; "$bin" "$@" >"$dir/$name.out" 2>"$dir/$name.err"; echo "exit $?" >>"$dir/$name.out"; }
  r devices devices
  r devices-builtin devices --builtin
  r space space examples/conv1d.toml
  r space-profile space examples/matmul.toml --profile i7-4770
  r tune tune examples/conv1d.toml --db "$db"
  r tune-again tune examples/conv1d.toml --db "$db"
  r tune-json tune examples/saxpy.toml --db "$db" --json
  r front tune examples/saxpy.toml --db "$db" --metric 'w=WG*ITEMS' --objective time,w:max
  r status status --db "$db"
  r show show --db "$db" --kernel saxpy --config WG=64,ITEMS=2
  r split split examples/matmul.toml --set N=512 --devices 0:0/2,0:1/2 --sweep 0.25 --db "$db"
  r plan split --plan-only --global 1200 --wg 24,40 --time 2.0,2.5
  r collect collect examples/campaign-small.toml --db "$db2"
  r summary collect --summary --db "$db2"
  r eval learn eval --data data/stencils-2026-11-21/stencils-h100-xeon.csv.gz --protocol cv10 \
    --models tree,baseline
  r replay tune --replay "$kt" --budget 20 --seed 3
  r replay-metric tune --replay "$kt" --budget 20 --seed 3 --metric 'x=time*2' --objective x --minimize
  r bench-strategies bench-strategies "$kt" --strategies random,ga --budgets 10,30 --seeds 3
  r wisdom export --format wisdom --spec examples/saxpy.toml --db "$db" --out "$dir/w.json"
  r pick pick --wisdom "$dir/w.json"
  r pick-other pick --wisdom "$dir/w.json" --set N=4096
  r bad-set tune examples/saxpy.toml --set N --db "$db"
  r bad-metric tune examples/saxpy.toml --metric x --db "$db"
  r bad-config tune examples/saxpy.toml --config WG=1,WG=2 --db "$db"
  for f in "$dir"/*.out "$dir"/*.err; do
    sed -E "s#$dir#DIR#g; s/[0-9]+(\.[0-9]+)?/#/g" "$f" >"$f.masked"
  done
}
capture "$old" "$out/old"
capture "$new" "$out/new"
for f in "$out"/old/*.masked; do
  name=$(basename "$f")
  if ! cmp -s "$f" "$out/new/$name"; then
    echo "== ${name%.masked}"
    diff "$f" "$out/new/$name" | head -12
  fi
done
