#!/usr/bin/env python3
"""Markdown tables for BENCHMARKS.md from `ndtune bench-strategies --json` reports.

Usage: python3 bench/strategies_summary.py COLD.json WARM.json [KT.json...]
COLD and WARM: ndtune's reports without and with --warm-start (Kernel Tuner's results inside them
where they were run with --kt; extra Kernel Tuner JSON files from bench/kt_strategies.py may be
given after them). Prints, per dataset and budget, the best ndtune strategy cold, Kernel Tuner's
best, and the best ndtune strategy warm-started; then the evaluations each needs to reach 90% and
95% of the optimum.
"""
import json
import sys


def load(path):
    d = json.load(open(path))
    return d if isinstance(d, list) else d["results"]


def best(rows, dataset, budget, kt):
    cands = [r for r in rows if r["dataset"] == dataset and r["strategy"].startswith("kt:") == kt
             and str(budget) in {str(k) for k in r["mean"]}]
    if not cands:
        return None
    r = max(cands, key=lambda r: r["mean"][str(budget)])
    return r["mean"][str(budget)], r["strategy"]


def fastest(rows, dataset, kt, key):
    cands = [r for r in rows if r["dataset"] == dataset and r["strategy"].startswith("kt:") == kt
             and r.get(key) is not None]
    if not cands:
        return "not reached"
    r = min(cands, key=lambda r: r[key])
    return f"{r[key]} ({r['strategy']})"


def main():
    cold_report = json.load(open(sys.argv[1]))
    warm_report = json.load(open(sys.argv[2]))
    cold, warm = load(sys.argv[1]), load(sys.argv[2])
    for extra in sys.argv[3:]:
        cold += load(extra)
    budgets = cold_report["budgets"]
    datasets = [d["id"] for d in cold_report["datasets"]]
    kt_sets = {r["dataset"] for r in cold if r["strategy"].startswith("kt:")}
    print("| dataset | budget | ndtune, cold | Kernel Tuner 1.5 | ndtune, warm start |")
    print("|---|---|---|---|---|")
    for d in datasets:
        if d not in kt_sets:
            continue
        for b in budgets:
            cells = []
            for rows, kt in ((cold, False), (cold, True), (warm, False)):
                got = best(rows, d, b, kt)
                cells.append("-" if got is None else f"{got[0]:.3f} {got[1]}")
            ours, theirs = best(cold, d, b, False), best(cold, d, b, True)
            if ours and theirs and ours[0] > theirs[0]:
                cells[0] = f"**{cells[0]}**"
            print(f"| {d} | {b} | " + " | ".join(cells) + " |")
    print()
    print("| dataset | to 90%: cold | Kernel Tuner | warm | to 95%: cold | Kernel Tuner | warm |")
    print("|---|---|---|---|---|---|---|")
    for d in datasets:
        if d not in kt_sets:
            continue
        cells = []
        for key in ("evals_90", "evals_95"):
            cells += [fastest(cold, d, False, key), fastest(cold, d, True, key), fastest(warm, d, False, key)]
        print(f"| {d} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
