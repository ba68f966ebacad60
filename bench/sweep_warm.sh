#!/usr/bin/env bash
# A sweep over problem sizes with warm starts (issue 36): the same sizes tuned as independent
# campaigns (each measures its whole space) and as a sweep whose campaigns warm-start each other
# (the nearest tuned size's best first; `auto` then climbs from there, `ils-adjacent`) and stop
# after PATIENCE evaluations found nothing better;
# the first size of the warm sweep is measured whole, as it has nothing to start from. Both start
# with empty program caches; each compares, per size, the best it found, and the warm sweep's
# choice as the independent campaign measured it (the same run as the independent best: no drift
# between two runs in that ratio).
#
#   bench/sweep_warm.sh SPEC NAME "SIZES" OUT      e.g. examples/sgemm.toml N "32 48 64" /tmp/sw
#
# NDTUNE names the binary (default target/release/ndtune), PATIENCE the patience (default 10);
# WARM_ARGS more options of the warm sweep's later sizes (e.g. `--strategy exhaustive`: the
# space's order after the warm start);
# CONFIRM (default 5, 0: none) rounds of timing each size's warm choice beside the independent
# best again, side by side (bench/side_by_side.py), where they differ;
# STEPS (default "cold warm") what runs: `STEPS=warm` keeps OUT's independent campaigns of an
# earlier run (their results and cold.wall) and runs the warm sweep again.
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${1:?SPEC}
name=${2:?NAME}
read -ra sizes <<<"${3:?SIZES}"
out=${4:?OUT}
ndtune=${NDTUNE:-target/release/ndtune}
patience=${PATIENCE:-10}
steps=" ${STEPS:-cold warm} "
mkdir -p "$out"
list() { local IFS=,; echo "$*"; }
fresh() { rm -rf "$HOME"/.nv/ComputeCache* "${XDG_CACHE_HOME:-$HOME/.cache}"/{pocl,ndtune}; }
stamp() { date +%s.%N; }

if [[ $steps == *" cold "* ]]; then
    rm -f "$out"/cold.db*
    fresh
    t0=$(stamp)
    "$ndtune" tune "$spec" --set "$name=$(list "${sizes[@]}")" --db "$out/cold.db" --json >"$out/cold.json" 2>"$out/cold.err"
    python3 -c "print($(stamp) - $t0)" >"$out/cold.wall"
fi
if [[ $steps == *" warm "* ]]; then
    rm -f "$out"/warm.db*
    fresh
    t0=$(stamp)
    "$ndtune" tune "$spec" --set "$name=${sizes[0]}" --db "$out/warm.db" --json >"$out/warm-first.json" 2>"$out/warm.err"
    "$ndtune" tune "$spec" --set "$name=$(list "${sizes[@]:1}")" --db "$out/warm.db" --patience "$patience" \
        ${WARM_ARGS-} --json >"$out/warm.json" 2>>"$out/warm.err"
    python3 -c "print($(stamp) - $t0)" >"$out/warm.wall"
fi
python3 - "$out" "$name" "$ndtune" "$spec" "${CONFIRM:-5}" <<'PY'
import json, math, subprocess, sys
sys.path.insert(0, "bench")
from side_by_side import ratio, side_by_side
out, name, ndtune, spec = sys.argv[1:5]
rounds = int(sys.argv[5])


def as_independent(size, config):
    """The independent campaign's score of `config` at `size`: the warm sweep's choice measured
    in the same run as the independent best, free of the drift between two runs."""
    shown = subprocess.run([ndtune, "show", spec, "--set", f"{name}={size}", "--db",
                            f"{out}/cold.db", "--json", "--config",
                            ",".join(f"{k}={v}" for k, v in config.items())],
                           capture_output=True, text=True, check=True).stdout
    return min(r["score_ms"] for r in json.loads(shown) if r.get("score_ms"))
def bests(*files):
    found = {}
    for f in files:
        for d in json.load(open(f"{out}/{f}"))["devices"]:
            found[d["constants"][name]] = (d["best"]["config"], d["best"]["time_ms"], d["evaluated"])
    return found
cold = bests("cold.json")
warm = bests("warm-first.json", "warm.json")
rows, ratios, chosen, side = [], [], [], []
for size in sorted(cold):
    (cc, ct, ce), (wc, wt, we) = cold[size], warm[size]
    ratios.append(ct / wt)
    choice = ct / as_independent(size, wc)
    chosen.append(choice)
    # The warm choice and the independent best timed again side by side (bench/side_by_side.py).
    again = 1.0 if cc == wc or rounds == 0 else ratio(
        side_by_side(ndtune, spec, [f"{name}={size}"], None, wc, cc, rounds))
    side.append(again)
    rows.append(f"| {size} | {ce} | {we} | {ct:.4f} | {wt:.4f} | {ct / wt:.3f} | {choice:.3f} | {again:.3f} | {'same' if cc == wc else 'other'} |")
cold_s, warm_s = (float(open(f"{out}/{f}.wall").read()) for f in ("cold", "warm"))
geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
text = "\n".join([
    f"| {name} | evaluated, independent | evaluated, warm sweep | best ms, independent | best ms, warm | independent / warm | independent best / warm choice as the independent run measured it | the same, side by side | configuration |",
    "|---|---|---|---|---|---|---|---|---|", *rows, "",
    f"independent campaigns {cold_s:.1f} s, warm sweep {warm_s:.1f} s: {warm_s / cold_s:.2f}x; "
    f"the warm sweep's bests at {geo:.3f} of the independent ones' speed, each as its own run "
    f"measured it, and its choices at "
    f"{math.exp(sum(map(math.log, chosen)) / len(chosen)):.3f} as the independent run measured "
    f"them, {math.exp(sum(map(math.log, side)) / len(side)):.3f} timed side by side with the "
    "independent bests (geometric means; 1 = as fast)"])
print(text)
open(f"{out}/summary.md", "w").write(text + "\n")
PY
