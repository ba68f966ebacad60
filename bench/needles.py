#!/usr/bin/env python3
"""How rare the near-optimal configurations of the recorded spaces are: for each dataset of
`ndtune bench-strategies` (the Kernel Tuner caches of ../shared/data/kt-benchmark-hub and
CLTune's SGEMM CSV, time = the mean of its four runs, as ndtune scores it), the valid
configurations, how many lie within 0.97 and 0.95 of the optimum, the chance that 50 distinct
random configurations include one within 0.97, and the mean best ratio of 50 random ones.

Usage: python3 bench/needles.py [DATA_DIR]   (default ../shared/data)
"""
import csv
import gzip
import json
import random
import sys
from pathlib import Path

EVALUATIONS = 50
DRAWS = 2000


def kt_times(path):
    cache = json.load(gzip.open(path))["cache"]
    return [v["time"] for v in cache.values() if isinstance(v.get("time"), (int, float)) and v["time"] > 0]


def cltune_times(path):
    with gzip.open(path, "rt") as f:
        rows = list(csv.reader(f))
    runs_from = sum(1 for h in rows[0] if not h.strip().endswith("(ms)"))
    return [sum(map(float, r[runs_from:])) / len(r[runs_from:]) for r in rows[1:]]


def main():
    data = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
    sets = [
        (f"{p.parent.name}/{p.name[:-len('.json.gz')]}", kt_times(p))
        for p in sorted((data / "kt-benchmark-hub/cachefiles").glob("*/*.json.gz"))
        if "_original" not in p.name
    ]
    sets.append(("cltune/sgemm-cltune-gtx680", cltune_times(data / "sgemm-cltune-gtx680/sgemm_product.csv.gz")))
    rng = random.Random(1)
    print(f"{'dataset':30s} {'valid':>7s} {'>=0.97':>7s} {'>=0.95':>7s} {'P(50 random hit 0.97)':>22s} {'mean best of 50 random':>23s}")
    means = []
    for name, times in sets:
        best = min(times)
        ratios = [best / t for t in times]
        n97 = sum(r >= 0.97 for r in ratios)
        n95 = sum(r >= 0.95 for r in ratios)
        hit = 1 - (1 - n97 / len(ratios)) ** EVALUATIONS
        mean_best = sum(max(rng.sample(ratios, EVALUATIONS)) for _ in range(DRAWS)) / DRAWS
        means.append(mean_best)
        print(f"{name:30s} {len(ratios):7d} {n97:7d} {n95:7d} {hit:22.3f} {mean_best:23.3f}")
    print(f"{'mean':30s} {'':7s} {'':7s} {'':7s} {'':22s} {sum(means) / len(means):23.3f}")


if __name__ == "__main__":
    main()
