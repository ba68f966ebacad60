#!/usr/bin/env python3
"""The summary of bench/deploy.sh: for each held-out size, the configuration `ndtune pick` chose,
how (exact, nearest, predicted), its measured time at that size, the size's own best, and their
ratio (best / picked: 1.0 is the best); the geometric mean of the ratios; a pick not valid or not
measured at its size counts as invalid. Where bench/side_by_side.py timed the pick and the best
again side by side (OUT_DIR/confirm.json), a second column and mean: per size, the median over
its rounds of each round's best / picked.

Usage: python3 bench/deploy_summary.py OUT_DIR "HELD-OUT SIZES"
"""
import json
import math
import os
import sys

import side_by_side


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    out, held = sys.argv[1], sys.argv[2].split()
    path = f"{out}/confirm.json"
    confirm = json.load(open(path)) if os.path.exists(path) else None
    ratios, again, invalid = [], [], 0
    print(f"{'size':>8} {'how':>9} {'picked':40} {'picked ms':>10} {'best ms':>10} {'ratio':>6}"
          + (f" {'side by side':>12}" if confirm is not None else ""))
    for s in held:
        best = json.load(open(f"{out}/held.db.{s}.json"))["devices"][0]["best"]
        pick = json.load(open(f"{out}/pick.{s}.json"))["pick"]
        measured = {json.dumps(r["config"], sort_keys=True): r.get("score_ms")
                    for r in json.load(open(f"{out}/held.{s}.show.json"))}
        picked_ms = measured.get(json.dumps(pick["config"], sort_keys=True))
        shown = " ".join(f"{k}={v}" for k, v in sorted(pick["config"].items()))
        if picked_ms is None:
            invalid += 1
            print(f"{s:>8} {pick['how']:>9} {shown:40} {'invalid':>10} {best['time_ms']:10.4f}")
            continue
        ratio = best["time_ms"] / picked_ms
        ratios.append(ratio)
        line = f"{s:>8} {pick['how']:>9} {shown:40} {picked_ms:10.4f} {best['time_ms']:10.4f} {ratio:6.3f}"
        if confirm is not None:
            rounds = confirm.get(s)
            side = 1.0 if rounds is None else side_by_side.ratio((rounds["pick_ms"], rounds["best_ms"]))
            again.append(side)
            line += f" {side:12.3f}"
        print(line)
    print(f"geometric mean of best / picked over {len(ratios)} sizes: {geomean(ratios):.3f}; "
          f"invalid picks: {invalid}")
    if confirm is not None:
        print(f"the same, the pick and the best timed again side by side: {geomean(again):.3f}")


main()
