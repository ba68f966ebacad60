"""What the Python layer adds: one campaign (vector add, 1,000 configurations of which
`--fevals` are measured with the random strategy) run by `ndtune tune` on the spec directory
tune_kernel writes, and by tune_kernel itself, each in an empty store; and the peak memory of
the Python process for a space of millions of configurations with max_fevals=50.

    python bench/python_overhead.py --ndtune target/release/ndtune [--fevals 100]

Prints JSON: wall time of each, per configuration and per call, and the peak RSS of a
small-space and a large-space call.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

VECTOR_ADD = """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n) {
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i] + (float)(pad - pad);
}
"""


def call(params):
    n = 1 << 12
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n).astype(np.float32)
    return ("vector_add", VECTOR_ADD, n, [np.zeros_like(a), a, a.copy(), np.int32(n)], params)


def peak_rss_kib():
    """VmHWM: this process's peak resident memory since its exec (getrusage's maxrss carries a
    parent's peak across fork and exec)."""
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ndtune", required=True)
    p.add_argument("--fevals", type=int, default=100)
    p.add_argument("--large", action="store_true", help="only the large-space memory run")
    a = p.parse_args()
    import ndtune
    small = {"block_size_x": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], "pad": list(range(100))}
    # 10 * 1000 * 1000 = 10 million configurations; pad only in a define, unused[] in none.
    large = {"block_size_x": small["block_size_x"], "pad": list(range(1000)),
             "unused": list(range(1000))}
    options = dict(strategy="random_sample", quiet=True, seed=1)
    if a.large:
        with tempfile.TemporaryDirectory() as d:
            os.environ["NDTUNE_PYTHON_DIR"] = d
            ndtune.tune_kernel(*call(large), db=os.path.join(d, "n.db"),
                               strategy_options={"max_fevals": 50}, **options)
        print(peak_rss_kib())
        return
    out = {"fevals": a.fevals}
    # Neither run may load the program binaries the other built.
    os.environ["NDTUNE_CACHE_DIR"] = "off"
    with tempfile.TemporaryDirectory() as d:
        os.environ["NDTUNE_PYTHON_DIR"] = d
        # Writes the spec directory only (a budget of one configuration), for the CLI to run.
        _, env = ndtune.tune_kernel(*call(small), db=os.path.join(d, "first.db"),
                                    strategy_options={"max_fevals": 1}, **options)
        t = time.perf_counter()
        subprocess.run([a.ndtune, "tune", env["spec"], "--db", os.path.join(d, "cli.db"),
                        "--strategy", "random", "--budget", str(a.fevals), "--seed", "1",
                        "--json"], check=True, capture_output=True)
        out["cli_s"] = time.perf_counter() - t
        t = time.perf_counter()
        ndtune.tune_kernel(*call(small), db=os.path.join(d, "py.db"),
                           strategy_options={"max_fevals": a.fevals}, **options)
        out["python_s"] = time.perf_counter() - t
    out["python_rss_kib_small"] = peak_rss_kib()
    large_rss = subprocess.run([sys.executable, __file__, "--ndtune", a.ndtune, "--large"],
                               check=True, capture_output=True, text=True).stdout
    out["python_rss_kib_large"] = int(large_rss)
    out["added_per_call_s"] = out["python_s"] - out["cli_s"]
    out["added_per_config_ms"] = 1000 * out["added_per_call_s"] / a.fevals
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
