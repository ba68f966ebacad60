#!/usr/bin/env python3
"""Pruning benchmark: time `ndtune space` counting (--json) and listing (--list) parameter spaces.

Usage: python3 bench/space_bench.py [--repeat N] [--json] [--kernel-tuner PYTHON]

Each case runs the release binary (build it first: cargo build --release -p ndtune) as a child
process; times are the best wall time of N runs, memory is the child's own peak RSS. Every count
is checked against the case's expected valid count, which was verified once, while writing the
case, by an independent brute-force (or, for huge-ranges, closed-form) count in Python.
With --kernel-tuner, Kernel Tuner's Searchspace construction (bench/kt_searchspace.py) is timed
once on each case with a JSON twin, for comparison.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NDTUNE = ROOT / "target/release/ndtune"
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>

# count_max: target for the count time (s). A case has a JSON twin for Kernel Tuner only where
# KT can build it: KT materialises every domain and every valid configuration in memory. The
# twins spell out what KT lacks: wg3d.json the gt550m platform constraints, many-small.json
# `max(G, M) <= min(N / 4, 12)` as four comparisons (KT's parser has no min/max).
CASES = [
    dict(name="xgemm", spec="examples/xgemm-space.toml", valid=6_685_184,
         kt="bench/spaces/xgemm.json", count_max=0.25, list_max=1.0, kt_ratio_min=100),
    dict(name="wg3d", spec="bench/spaces/wg3d.toml", args=["--profile", "gt550m"], valid=266,
         kt="bench/spaces/wg3d.json"),
    dict(name="many-small", spec="bench/spaces/many-small.toml", valid=1_445_248,
         kt="bench/spaces/many-small.json"),
    # No twin: KT would build lists of 10^9 values.
    dict(name="huge-ranges", spec="bench/spaces/huge-ranges.toml", valid=3_468_065),
]


def run(cmd, read=None):
    """Run cmd once. Returns (wall seconds, its peak RSS in MiB, read(its stdout)).

    Without `read`, stdout goes to /dev/null.
    A process's ru_maxrss keeps the peak of the image it exec'ed from, and a child of this
    interpreter starts with its pages (~15 MiB), which would hide a smaller peak. So a fresh
    /bin/sh starts cmd in the background and exits; as child subreaper (see main) we inherit cmd
    and wait4 gives cmd's own rusage. (RUSAGE_CHILDREN would be the maximum over all children
    reaped so far: Kernel Tuner's ~5 GB would mask every later run.)"""
    start = time.perf_counter()
    sh = subprocess.Popen(["/bin/sh", "-c", '"$@" &', "sh", *map(str, cmd)],
                          stdout=subprocess.PIPE if read else subprocess.DEVNULL)
    sh.wait()
    out = read(sh.stdout) if read else None
    _, status, usage = os.wait4(-1, 0)  # cmd: the only child left
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"{' '.join(map(str, cmd))}: exit status {os.waitstatus_to_exitcode(status)}")
    return seconds, usage.ru_maxrss / 1024, out  # ru_maxrss is in KiB on Linux


def count_lines(f):
    return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def check(case, what, got):
    if got != case["valid"]:
        sys.exit(f"{case['name']}: {what} gave {got} valid, expected {case['valid']}")


def bench(case, repeat):
    base = [NDTUNE, "space", ROOT / case["spec"], *case.get("args", [])]
    r = dict(case=case["name"])
    for _ in range(repeat):
        s, rss, out = run(base + ["--json"], json.load)
        check(case, "count", out["pruned"])
        r["declared"], r["valid"] = out["declared"], out["pruned"]
        r["count_s"] = min(s, r.get("count_s", s))
        r["count_rss_mib"] = max(rss, r.get("count_rss_mib", rss))
    for _ in range(repeat):
        s, rss, _ = run(base + ["--list"])
        r["list_s"] = min(s, r.get("list_s", s))
        r["list_rss_mib"] = max(rss, r.get("list_rss_mib", rss))
    lines = run(base + ["--list"], count_lines)[2]
    check(case, "--list", lines - 1)  # minus the header
    return r


def kernel_tuner(case, python, r):
    print(f"Kernel Tuner on {case['name']} ...", file=sys.stderr, flush=True)
    cmd = [python, ROOT / "bench/kt_searchspace.py", ROOT / case["kt"]]
    s, rss, out = run(cmd, lambda f: json.loads(f.read().splitlines()[-1]))
    check(case, "Kernel Tuner", out["valid"])
    # kt_s is the Searchspace construction alone; kt_process_s adds interpreter start and imports.
    r.update(kt_s=out["seconds"], kt_process_s=s, kt_rss_mib=rss,
             kt_ratio=out["seconds"] / r["count_s"])


def misses(case, r):
    """The targets this case missed, as text."""
    out = []
    if r["count_s"] >= case.get("count_max", 1.0):
        out.append(f"count {r['count_s']:.3f} s >= {case.get('count_max', 1.0)} s")
    if "list_max" in case and r["list_s"] >= case["list_max"]:
        out.append(f"list {r['list_s']:.3f} s >= {case['list_max']} s")
    if "kt_ratio_min" in case and r.get("kt_ratio", float("inf")) < case["kt_ratio_min"]:
        out.append(f"KT/count {r['kt_ratio']:.0f}x < {case['kt_ratio_min']}x")
    return [f"{case['name']}: {m}" for m in out]


def table(results):
    big = lambda n: f"{n:,}" if n < 10**12 else f"{n:.0e}"
    rows = [("case", "declared", "valid", "count s", "list s", "count RSS MiB")]
    rows += [(r["case"], big(r["declared"]), f"{r['valid']:,}", f"{r['count_s']:.4f}",
              f"{r['list_s']:.3f}", f"{r['count_rss_mib']:.1f}") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))))
    for r in results:
        if "kt_s" in r:
            print(f"Kernel Tuner {r['case']}: Searchspace {r['kt_s']:.4g} s (process "
                  f"{r['kt_process_s']:.3g} s, peak RSS {r['kt_rss_mib']:.0f} MiB), "
                  f"{r['kt_ratio']:,.{0 if r['kt_ratio'] >= 10 else 2}f}x the ndtune count time")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs (default 5)")
    ap.add_argument("--json", action="store_true", help="print one JSON object, not a table")
    ap.add_argument("--kernel-tuner", metavar="PYTHON",
                    help="a python with kernel_tuner 1.5.0: also time its Searchspace")
    args = ap.parse_args()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        sys.exit(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    if not NDTUNE.exists():
        sys.exit(f"{NDTUNE} missing: cargo build --release -p ndtune")

    results, missed = [], []
    for case in CASES:
        print(f"ndtune on {case['name']} ...", file=sys.stderr, flush=True)
        r = bench(case, args.repeat)
        if args.kernel_tuner and "kt" in case:
            kernel_tuner(case, args.kernel_tuner, r)
        results.append(r)
        missed += misses(case, r)

    if args.json:
        print(json.dumps({"repeat": args.repeat, "cases": results, "missed": missed}))
    else:
        table(results)
        print("targets: " + ("all met" if not missed else "MISSED " + "; ".join(missed)))


if __name__ == "__main__":
    main()
