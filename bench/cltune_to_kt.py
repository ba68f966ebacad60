#!/usr/bin/env python3
"""The CLTune SGEMM space (../shared/data/sgemm-cltune-gtx680/sgemm_product.csv.gz) as a Kernel
Tuner cache with benchmark_hub's layout, so that bench/kt_strategies.py runs Kernel Tuner's
strategies on it in simulation mode beside `ndtune bench-strategies` on the CSV itself.

Usage: python3 bench/cltune_to_kt.py CSV OUT_DIR
Writes OUT_DIR/cachefiles/cltune/<the CSV's folder>.json (time = the mean of the four runs, as
ndtune scores it; the dataset `cltune/sgemm-cltune-gtx680`, as ndtune names the CSV) and
OUT_DIR/kernels/cltune.json (CLTune's xgemm constraints, under which exactly the recorded
configurations are valid).
"""
import csv
import gzip
import json
import sys
from pathlib import Path

CONDITIONS = [
    "KWG % KWI == 0",
    "MWG % (MDIMC * VWM) == 0",
    "NWG % (NDIMC * VWN) == 0",
    "MWG % (MDIMA * VWM) == 0",
    "NWG % (NDIMB * VWN) == 0",
    "KWG % ((MDIMC * NDIMC) // MDIMA) == 0",
    "KWG % ((MDIMC * NDIMC) // NDIMB) == 0",
]


def main():
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    with gzip.open(src, "rt") if src.suffix == ".gz" else open(src) as f:
        rows = list(csv.reader(f))
    header = [h.strip() for h in rows[0]]
    params = [h for h in header if not h.endswith("(ms)")]
    cache, values = {}, {p: set() for p in params}
    for row in rows[1:]:
        config = {p: int(v) for p, v in zip(params, row)}
        runs = [float(v) for v in row[len(params):]]
        for p, v in config.items():
            values[p].add(v)
        key = ",".join(str(config[p]) for p in params)
        cache[key] = {**config, "time": sum(runs) / len(runs), "times": runs}
    kt = {
        "device_name": "NVIDIA GeForce GTX 680",
        "kernel_name": "gemm_fast",
        "problem_size": [2048, 2048],
        "tune_params_keys": params,
        "tune_params": {p: sorted(values[p]) for p in params},
        "objective": "time",
        "cache": cache,
    }
    (out / "cachefiles/cltune").mkdir(parents=True, exist_ok=True)
    (out / "kernels").mkdir(parents=True, exist_ok=True)
    (out / "cachefiles/cltune" / f"{src.parent.name}.json").write_text(json.dumps(kt))
    spec = {"ConfigurationSpace": {"Conditions": [{"Expression": c} for c in CONDITIONS]}}
    (out / "kernels/cltune.json").write_text(json.dumps(spec))
    print(f"{len(cache)} configurations over {params}")


if __name__ == "__main__":
    main()
