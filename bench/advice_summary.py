"""Tabulates bench/advice.sh's runs: per strategy and seed, with the prior (ndtune's default) and
without it, the refused evaluations, the best configuration's time and the campaign's wall time.

    python3 bench/advice_summary.py DIR
"""
import json
import pathlib
import re
import sys


def main(folder: pathlib.Path) -> None:
    runs = {}
    for path in sorted(folder.glob("*-seed*-prior-*.json")):
        m = re.fullmatch(r"(.+)-seed(\d+)-prior-(on|off)\.json", path.name)
        try:
            report = json.loads(path.read_text())
        except json.JSONDecodeError:
            print(f"{path.name}: no JSON (see its .log)", file=sys.stderr)
            continue
        dev = report["devices"][0]
        runs[(m[1], int(m[2]), m[3])] = {
            "evaluated": dev["evaluated"],
            "refused": dev["outcomes"]["refused"],
            "above": dev["above_queried_work_group"],
            "best_ms": dev["best"]["time_ms"] if dev.get("best") else None,
            "best": dev["best"]["config"] if dev.get("best") else None,
            "wall_s": report["time"].get("wall_s", dev["time"]["total_s"]),
        }
    print("| strategy | seed | prior | evaluated | refused | measured above the advice | best (ms) | wall (s) |")
    print("|---|---|---|---|---|---|---|---|")
    totals = {}
    for (strategy, seed, prior), r in sorted(runs.items()):
        best = f"{r['best_ms']:.3f}" if r["best_ms"] is not None else "—"
        print(f"| {strategy} | {seed} | {prior} | {r['evaluated']} | {r['refused']} | {r['above']} | {best} | {r['wall_s']:.1f} |")
        t = totals.setdefault((strategy, prior), [0, 0, []])
        t[0] += r["evaluated"]
        t[1] += r["refused"]
        if r["best_ms"] is not None:
            t[2].append(r["best_ms"])
    print()
    print("| strategy | prior | evaluated | refused | mean best (ms) |")
    print("|---|---|---|---|---|")
    for (strategy, prior), (ev, refused, bests) in sorted(totals.items()):
        mean = f"{sum(bests) / len(bests):.3f}" if bests else "—"
        print(f"| {strategy} | {prior} | {ev} | {refused} | {mean} |")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
