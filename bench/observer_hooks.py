#!/usr/bin/env python3
"""A user's observer through Kernel Tuner and through ndtune, on the same device in one run: how
often each calls its hooks around the timed runs of Kernel Tuner's vector_add, and what the
observer sees of each run on the host (from `after_start` to `after_finish`) beside the run's
own time. Each tool runs in a fresh process; the script is the same but for its import.

Usage: python3 bench/observer_hooks.py [--size N] [--iterations K] [--platform P]
                                       [--out FILE.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SCRIPT = r'''
import json, sys, time
import numpy as np
from {lib} import tune_kernel
from {lib}.observers import BenchmarkObserver

KERNEL = """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n) {{
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}}
"""


class Hooks(BenchmarkObserver):
    """Counts the hooks of each configuration and times each run as the host sees it."""

    def register_configuration(self, params):
        self.calls = {{"before_start": 0, "after_start": 0, "during": 0, "after_finish": 0}}
        self.seen_ms = []

    def before_start(self):
        self.calls["before_start"] += 1

    def after_start(self):
        self.calls["after_start"] += 1
        self.started = time.perf_counter()

    def during(self):
        self.calls["during"] += 1

    def after_finish(self):
        self.calls["after_finish"] += 1
        self.seen_ms.append((time.perf_counter() - self.started) * 1e3)

    def get_results(self):
        return {{"hooks": dict(self.calls), "host_seen_ms": float(np.median(self.seen_ms))}}


size, iterations, platform = {size}, {iterations}, {platform}
a = np.random.rand(size).astype(np.float32)
b = np.random.rand(size).astype(np.float32)
args = [np.zeros_like(a), a, b, np.int32(size)]
params = {{"block_size_x": [128, 256, 512, 1024]}}
started = time.perf_counter()
results, env = tune_kernel("vector_add", KERNEL, size, args, params, observers=[Hooks()],
                           iterations=iterations, platform=platform, quiet=True)
wall = time.perf_counter() - started
json.dump({{"wall_s": wall, "device": env["device_name"],
           "results": [{{"block_size_x": r["block_size_x"], "time": r["time"],
                        "hooks": r["hooks"], "host_seen_ms": r["host_seen_ms"]}}
                       for r in results]}}, open("out.json", "w"))
'''


def run(lib, args):
    with tempfile.TemporaryDirectory() as where:
        with open(os.path.join(where, "script.py"), "w") as f:
            f.write(SCRIPT.format(lib=lib, size=args.size, iterations=args.iterations,
                                  platform=args.platform))
        done = subprocess.run([sys.executable, "script.py"], cwd=where, capture_output=True,
                              text=True, env=dict(os.environ, NDTUNE_CACHE_DIR=where))
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1]}
        return json.load(open(os.path.join(where, "out.json")))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=10_000_000)
    p.add_argument("--iterations", type=int, default=7)
    p.add_argument("--platform", type=int, default=0)
    p.add_argument("--out")
    args = p.parse_args()
    out = {lib: run(lib, args) for lib in ("kernel_tuner", "ndtune")}
    if args.out:
        json.dump(out, open(args.out, "w"), indent=1)
    for lib, got in out.items():
        if "error" in got:
            print(f"{lib}: {got['error']}")
            continue
        print(f"{lib} on {got['device']}: wall {got['wall_s']:.2f} s")
        print("  block_size_x  time (ms)  host sees (ms)  before/after_start/during/after_finish")
        for r in got["results"]:
            h = r["hooks"]
            print(f"  {r['block_size_x']:>12}  {r['time']:9.4f}  {r['host_seen_ms']:14.4f}  "
                  f"{h['before_start']}/{h['after_start']}/{h['during']}/{h['after_finish']}")


main()
