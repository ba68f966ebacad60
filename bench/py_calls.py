"""A Python session that calls tune_kernel again and again over one large input, as Kernel
Tuner's reduction example does (its second kernel once per size): each call's wall, and whether
it started its measurement and build workers or took up those the call before kept.

    python3 bench/py_calls.py [--calls 8] [--floats 67108864]

Prints one line per call and, last, the calls after the first in total (JSON with --json)."""

import argparse
import json
import time

import numpy as np

import ndtune

SUM = """
__kernel void sum_floats(__global float *out, __global const float *in, int n) {
    float s = 0.0f;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) s += in[i];
    out[get_global_id(0)] = s;
}
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=8)
    p.add_argument("--floats", type=int, default=1 << 26)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    x = np.random.default_rng(1).random(args.floats, dtype=np.float32)
    out = np.zeros(1 << 16, dtype=np.float32)
    params = {"block_size_x": [32, 64, 128, 256], "num_blocks": [64, 256]}
    calls = []
    for k in range(args.calls):
        # Each call sums a short prefix of the same large array (the reduction's second kernel
        # sums the first kernel's partial sums, in the same buffer).
        n = 1024 << k
        started = time.perf_counter()
        _, env = ndtune.tune_kernel("sum_floats", SUM, "num_blocks", [out, x, np.int32(n)],
                                    params, grid_div_x=[], quiet=True)
        t = env["ndtune_report"]["time"]
        calls.append({"n": n, "wall_s": time.perf_counter() - started,
                      "workers_started": t["workers_started"],
                      "builders_started": t["builders_started"]})
        if not args.json:
            c = calls[-1]
            print(f"call {k}: n={n} wall {c['wall_s']:.3f} s, workers started "
                  f"{c['workers_started']}, builders started {c['builders_started']}")
    later = sum(c["wall_s"] for c in calls[1:])
    if args.json:
        print(json.dumps({"calls": calls, "later_s": later}))
    else:
        print(f"calls after the first: {later:.3f} s")


if __name__ == "__main__":
    main()
