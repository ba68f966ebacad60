"""Time Kernel Tuner's Searchspace construction for a parameter space.

Usage: python bench/kt_searchspace.py SPACE.json [--repeat N]

SPACE.json: {"params": {"NAME": [int, ...], ...}, "constraints": ["expr", ...]}
Prints one JSON line: {"tool": "kernel_tuner", "version": ..., "valid": N, "seconds": S}
"""
import argparse
import json
import re
import time
from importlib.metadata import version

from kernel_tuner.searchspace import Searchspace


def to_python(expr):
    """Translate a C-like constraint expression to Python.

    Spaces around `and`/`or` matter: python-constraint's parser looks for
    " and " / " or " to split constraints. `!` not followed by `=` is logical
    not; `/` is integer division (all values are positive, so floor == trunc).
    Caveat: Python's `not` binds looser than comparisons and comparisons chain,
    so `!a == b` or `a < b == c` would differ from C; our spaces avoid these.
    """
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    return expr.replace("/", "//")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("space", help="SPACE.json")
    ap.add_argument("--repeat", type=int, default=1, help="report the best of N runs")
    args = ap.parse_args()

    with open(args.space) as f:
        space = json.load(f)
    params = space["params"]
    restrictions = [to_python(c) for c in space["constraints"]]

    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        # framework/solver_method are KT's defaults, spelled out: the string
        # restrictions go to python-constraint2's own parser and its
        # OptimizedBacktrackingSolver. block_size_names=[] stops KT adding its
        # implicit "block_size_x * block_size_y * ... <= max_threads"
        # constraint, so max_threads is unused; no GPU or kernel is needed.
        ss = Searchspace(
            params,
            restrictions,
            max_threads=1024,
            block_size_names=[],
            framework="PythonConstraint",
            solver_method="PC_OptimizedBacktrackingSolver",
        )
        best = min(best, time.perf_counter() - start)

    print(json.dumps({"tool": "kernel_tuner", "version": version("kernel_tuner"),
                      "valid": ss.size, "seconds": round(best, 4)}))


if __name__ == "__main__":
    main()
