#!/usr/bin/env python3
"""Summarises bench/energy.sh's outputs as Markdown for BENCHMARKS.md: the best configuration by
time, by energy and by GFLOP/s per watt with each one's time, energy, power and efficiency, the
trade-off between the time's best and the energy's best, the time-energy Pareto front from the
Kernel Tuner cache, and how close a budgeted search got for each objective.

    python3 bench/energy_summary.py OUT
"""
import json
import sys
from pathlib import Path


def load(path):
    with open(path) as f:
        return json.load(f)


def config(c):
    return " ".join(f"{k}={v}" for k, v in c.items())


def main(out):
    out = Path(out)
    runs = {name: load(out / f"{name}.json")["devices"][0] for name in ("time", "energy", "gflops_per_w")}
    first = runs["time"]
    energy = first["energy"]
    print(f"Device: {first['device']}; kernel {first['kernel']}, {first['evaluated']} configurations "
          f"evaluated ({first['outcomes']['measured']} measured), {first['strategy']} search.")
    print(f"Energy: {'measured' if energy['measured'] else 'NOT measured'}: {energy['detail']}")
    print(f"Tuning with energy took {first['time']['total_s']:.1f} s; the two later campaigns reused "
          f"{runs['energy']['reused']} and {runs['gflops_per_w']['reused']} stored results.\n")
    rows = []
    for name in ("time", "energy", "gflops_per_w"):
        o = runs[name]["objective"]
        label = f"{o['metric']}, {'higher' if o['higher_is_better'] else 'lower'} is better"
        best = runs[name]["best"]
        if best is None:
            rows.append(f"| {label} | none measured | | | | | |")
            continue
        m = best["metrics"]
        rows.append(f"| {label} | {config(best['config'])} | {best['time_ms']:.4f} | "
                    f"{m.get('energy_j', float('nan')) * 1e3:.2f} | {m.get('power_w', float('nan')):.1f} | "
                    f"{m.get('gflops', float('nan')):.0f} | {m.get('gflops_per_w', float('nan')):.2f} |")
    print("| objective | best configuration | time (ms) | energy per run (mJ) | power (W) | GFLOP/s | GFLOP/s/W |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    bt, be = runs["time"]["best"], runs["energy"]["best"]
    if bt and be and energy["measured"]:
        if bt["config"] == be["config"]:
            print("\nThe fastest configuration is also the one that uses the least energy.")
        else:
            dt = be["time_ms"] / bt["time_ms"] - 1
            de = be["metrics"]["energy_j"] / bt["metrics"]["energy_j"] - 1
            dp = be["metrics"]["power_w"] / bt["metrics"]["power_w"] - 1
            print(f"\nTrade-off: the least-energy configuration takes {dt:+.1%} time, {de:+.1%} energy "
                  f"and {dp:+.1%} power against the fastest.")

    cache = load(out / "sgemm-kt-cache.json")
    points = sorted(
        (e["time"], e["energy_j"], key) for key, e in cache["cache"].items()
        if isinstance(e.get("time"), (int, float)) and isinstance(e.get("energy_j"), (int, float)))
    front, least = [], float("inf")
    for t, e, key in points:
        if e < least:
            front.append((t, e, key))
            least = e
    print(f"\nTime-energy Pareto front ({len(front)} of {len(points)} measured configurations; "
          f"parameters {', '.join(cache['tune_params_keys'])}):\n")
    print("| configuration | time (ms) | energy per run (mJ) |")
    print("|---|---|---|")
    for t, e, key in front:
        print(f"| {key} | {t:.4f} | {e * 1e3:.2f} |")

    print()
    for objective in ("time", "energy_j"):
        r = load(out / f"replay-{objective}.json")
        rel = r["relative_performance"]
        print(f"Replay, {r['strategy']} with a budget of {r['budget']} on {r['objective']['metric']}: "
              f"{r['evaluations']} evaluations, relative performance "
              f"{'-' if rel is None else f'{rel:.3f}'} (1: the recording's optimum).")


if __name__ == "__main__":
    main(sys.argv[1])
