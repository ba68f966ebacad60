#!/usr/bin/env python3
"""A large learning CSV for `ndtune learn eval` (BENCHMARKS.md, issue 22): the shipped stencil
data copied until the file reaches SIZE megabytes, each copy a new set of scenarios whose
features are moved by up to +-2% and whose run times by up to +-5% (deterministic, seed 1), so
that the models have as much to learn as on real data of that size.

    bench/learn_big_csv.py OUT.csv [SIZE_MB=100]
"""
import csv
import gzip
import os
import random
import sys

SOURCE = os.path.join(os.path.dirname(__file__), "..", "data", "stencils-2026-11-21",
                      "stencils-h100-xeon.csv.gz")


def main():
    out = sys.argv[1]
    target = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
    with gzip.open(SOURCE, "rt", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    features = [i for i, name in enumerate(header) if name.startswith("f_")]
    scenario, runtime = header.index("scenario"), header.index("runtime_ms")
    rng = random.Random(1)
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        copy = 0
        while f.tell() < target * 1e6:
            # One factor per scenario and feature: a scenario's rows keep equal features.
            factors = {}
            for row in body:
                key = row[scenario]
                if key not in factors:
                    factors[key] = [1 + rng.uniform(-0.02, 0.02) for _ in features]
                new = list(row)
                new[scenario] = f"{key} #{copy}"
                for factor, i in zip(factors[key], features):
                    new[i] = repr(float(row[i]) * factor)
                if row[runtime]:
                    new[runtime] = repr(float(row[runtime]) * (1 + rng.uniform(-0.05, 0.05)))
                w.writerow(new)
            copy += 1
    print(f"{out}: {copy} copies of {len(body)} rows, {os.path.getsize(out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
