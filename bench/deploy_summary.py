#!/usr/bin/env python3
"""The summary of bench/deploy.sh: for each held-out size, the configuration `ndtune pick` chose,
how (exact, nearest, predicted), its measured time at that size, the size's own best, and their
ratio (best / picked: 1.0 is the best); the geometric mean of the ratios; a pick not valid or not
measured at its size counts as invalid.

Usage: python3 bench/deploy_summary.py OUT_DIR "HELD-OUT SIZES"
"""
import json
import math
import sys


def main():
    out, held = sys.argv[1], sys.argv[2].split()
    ratios, invalid = [], 0
    print(f"{'size':>8} {'how':>9} {'picked':40} {'picked ms':>10} {'best ms':>10} {'ratio':>6}")
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
        print(f"{s:>8} {pick['how']:>9} {shown:40} {picked_ms:10.4f} {best['time_ms']:10.4f} {ratio:6.3f}")
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"geometric mean of best / picked over {len(ratios)} sizes: {geo:.3f}; invalid picks: {invalid}")


main()
