"""What the Python layer adds: one campaign (vector add, 1,000 configurations of which `--fevals`
are measured with the random strategy) run by `ndtune tune` on the spec directory tune_kernel
writes, and by tune_kernel in a fresh Python process, cold both ways (a process of its own, an
empty SQLite store, ndtune's program cache off, a fresh PoCL kernel cache), the two alternating,
`--repeat` times per budget; the added time at two budgets gives the cost per call and per
configuration. Then `ndtune.space` against
`ndtune space --json` on a space of 10 million configurations, and the peak memory of a Python
process that tunes a space of 1,000 and one of 10 million configurations with max_fevals=50.

    python bench/python_overhead.py --ndtune target/release/ndtune [--fevals 10 60] [--repeat 3]

Prints JSON: the wall times, their medians, the added cost, each campaign's time between
evaluations per configuration (where tune_kernel's progress callback runs), and the peak RSS of
each space size.
"""

import argparse
import glob
import json
import os
import statistics
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

SMALL = {"block_size_x": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], "pad": list(range(100))}
# 10 * 1000 * 1000 = 10 million configurations; pad only in a define, unused in none.
LARGE = {"block_size_x": SMALL["block_size_x"], "pad": list(range(1000)),
         "unused": list(range(1000))}
OPTIONS = dict(strategy="random_sample", quiet=True, seed=1)


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


def rss_of(space):
    """Tunes 50 configurations of the SMALL or LARGE space in this process; prints its peak RSS."""
    import ndtune
    with tempfile.TemporaryDirectory() as d:
        os.environ["NDTUNE_PYTHON_DIR"] = d
        cold(d, space)
        ndtune.tune_kernel(*call(SMALL if space == "small" else LARGE),
                           db=os.path.join(d, "n.db"), strategy_options={"max_fevals": 50},
                           **OPTIONS)
    print(peak_rss_kib())


def cold(d, name):
    """A fresh PoCL kernel cache for one run, and ndtune's program cache off: nothing built
    before is loaded."""
    os.environ["POCL_CACHE_DIR"] = os.path.join(d, f"pocl-{name}")
    os.environ["NDTUNE_CACHE_DIR"] = "off"


def tune_call(fevals, db):
    """One tune_kernel call in this fresh process; prints the call's own wall time and the
    campaign's `search_s` (the time between evaluations, where the Python observer runs)."""
    import ndtune
    t = time.perf_counter()
    _, env = ndtune.tune_kernel(*call(SMALL), db=db, strategy_options={"max_fevals": fevals},
                                **OPTIONS)
    print(json.dumps([time.perf_counter() - t, env["ndtune_report"]["time"]["search_s"]]))


def campaign_pair(binary, spec, d, fevals, i):
    """One cold `ndtune tune` and one cold tune_kernel (a fresh Python process) of `fevals`
    configurations, in alternating order: the CLI's wall time and its campaign's search_s, the
    Python process's wall time, the tune_kernel call's inside it and its campaign's search_s."""
    def cli():
        cold(d, f"cli-{fevals}-{i}")
        t = time.perf_counter()
        out = subprocess.run([binary, "tune", spec, "--db", os.path.join(d, f"cli-{fevals}-{i}.db"),
                              "--strategy", "random", "--budget", str(fevals), "--seed", "1",
                              "--json"], check=True, capture_output=True, text=True).stdout
        return time.perf_counter() - t, json.loads(out)["devices"][0]["time"]["search_s"]

    def python():
        cold(d, f"py-{fevals}-{i}")
        t = time.perf_counter()
        inside = subprocess.run([sys.executable, __file__, "--ndtune", binary, "--call",
                                 str(fevals), "--db", os.path.join(d, f"py-{fevals}-{i}.db")],
                                check=True, capture_output=True, text=True).stdout
        call_s, search_s = json.loads(inside)
        return time.perf_counter() - t, call_s, search_s

    if i % 2:
        py = python()
        return (*cli(), *py)
    c = cli()
    return (*c, *python())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ndtune", required=True)
    p.add_argument("--fevals", type=int, nargs=2, default=[10, 60])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rss", choices=["small", "large"], help="only the memory run of one space")
    p.add_argument("--call", type=int, help="only one tune_kernel call of this many configurations")
    p.add_argument("--db")
    a = p.parse_args()
    if a.rss:
        rss_of(a.rss)
        return
    if a.call:
        tune_call(a.call, a.db)
        return
    import ndtune
    out = {"fevals": a.fevals, "repeat": a.repeat, "runs": {}}
    with tempfile.TemporaryDirectory() as d:
        os.environ["NDTUNE_PYTHON_DIR"] = d
        # Writes the spec directory (a budget of one configuration) for the CLI to run.
        cold(d, "first")
        _, env = ndtune.tune_kernel(*call(SMALL), db=os.path.join(d, "first.db"),
                                    strategy_options={"max_fevals": 1}, **OPTIONS)
        added = []
        for fevals in a.fevals:
            runs = [campaign_pair(a.ndtune, env["spec"], d, fevals, i) for i in range(a.repeat)]
            cli, cli_search, py, inside, py_search = (
                statistics.median(r[k] for r in runs) for k in range(5))
            out["runs"][fevals] = {
                "cli_s": [r[0] for r in runs], "python_process_s": [r[2] for r in runs],
                "tune_kernel_call_s": [r[3] for r in runs], "cli_median_s": cli,
                "python_process_median_s": py, "tune_kernel_call_median_s": inside,
                "added_s": py - cli,
                "search_ms_per_config": {"cli": 1000 * cli_search / fevals,
                                         "python": 1000 * py_search / fevals}}
            added.append(py - cli)
        (f1, f2), (a1, a2) = a.fevals, added
        per_config = (a2 - a1) / (f2 - f1)
        out["added_per_config_ms"] = 1000 * per_config
        out["added_per_call_s"] = a1 - f1 * per_config
        # The pruned space of 10 million configurations, in process and by the CLI.
        t = time.perf_counter()
        counted = ndtune.space(*call(LARGE))
        out["space_python_s"] = time.perf_counter() - t
        # The spec directory ndtune.space wrote: the one that declares `unused`.
        large_spec = next(s for s in glob.glob(os.path.join(d, "vector_add-*", "spec.toml"))
                          if "unused = " in open(s).read())
        t = time.perf_counter()
        cli = json.loads(subprocess.run([a.ndtune, "space", large_spec, "--json"], check=True,
                                        capture_output=True, text=True).stdout)
        out["space_cli_s"] = time.perf_counter() - t
        out["space_pruned"] = [counted["pruned"], cli["pruned"]]
    for space in ("small", "large"):
        rss = subprocess.run([sys.executable, __file__, "--ndtune", a.ndtune, "--rss", space],
                             check=True, capture_output=True, text=True).stdout
        out[f"python_rss_kib_{space}"] = int(rss)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
