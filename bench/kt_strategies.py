#!/usr/bin/env python3
"""Kernel Tuner 1.5's own strategies in its simulation mode, on recorded caches, for
`ndtune bench-strategies --kt`.

Usage: PYTHON bench/kt_strategies.py [--strategies a,b] [--budgets 25,50,..] [--seeds N]
           [--objective time,power_w] [--out FILE] CACHE...
(PYTHON: bench/kt-venv.sh's Python; bench/strategies.sh runs everything.)

Each cache (benchmark_hub, Kernel Tuner's cache format) is tuned in simulation mode with the
space it was recorded over: its `tune_params` restricted by the benchmark's conditions (the
`Conditions` of kernels/<kernel>.json beside cachefiles/, the same as the cache's valid
configurations). Per strategy and seed (Python's and NumPy's generators seeded with it), one run
with max_fevals = the largest budget; at each budget the best time among the first `budget`
distinct configurations evaluated is read from the run's results, in order. The output uses the
JSON of ndtune's results: per dataset and strategy (named `kt:<strategy>`), the mean fraction
of the optimum per budget and the median evaluations to reach 90% and 95% of it.

With several objectives (`--objective time,power_w`, Kernel Tuner 1.4+'s `objective=[...]`, all
minimised; a front strategy such as `nsga2`), each run's distinct configurations are written in
the order evaluated (`"orders"`, per seed) and `ndtune bench-strategies --kt` scores them as it
scores its own runs, by the hypervolume of the front found. A cache without benchmark
conditions (one ndtune recorded) is searched over its recorded configurations, the space ndtune
searches too. A run that has not ended after --run-limit seconds is stopped and run again with
half the evaluations (pymoo's NSGA-II can stop finding new offspring where the front is one
configuration): its shorter order is scored, and stderr says so.
"""
import argparse
import contextlib
import signal
import gzip
import io
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from kernel_tuner import tune_kernel

STRATEGIES = "random_sample,simulated_annealing,genetic_algorithm,greedy_ils,greedy_mls,mls,pso,diff_evo,dual_annealing,bayes_opt"


def read_cache(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        # Kernel Tuner writes caches as it goes; an unfinished one lacks the closing braces.
        return json.loads(text.rstrip().rstrip(",") + "}\n}")


def conditions(cache_path):
    kernel = cache_path.parent.name
    spec = cache_path.parent.parent.parent / "kernels" / f"{kernel}.json"
    if not spec.exists():
        return None
    conds = json.loads(spec.read_text())["ConfigurationSpace"].get("Conditions", [])
    return [c["Expression"] for c in conds] or None


def score(entry):
    t = entry.get("time")
    return t if isinstance(t, (int, float)) and t > 0 else None


def run_one(cache, path, restrictions, strategy, seed, budget, objectives=None):
    random.seed(seed)
    np.random.seed(seed)
    several = {}
    if objectives:
        several = {"objective": objectives, "objective_higher_is_better": [False] * len(objectives)}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        results, _ = tune_kernel(
            cache["kernel_name"],
            "__global__ void dummy() {}",
            cache["problem_size"],
            [],
            cache["tune_params"],
            restrictions=restrictions,
            cache=str(path),
            simulation_mode=True,
            strategy=strategy,
            strategy_options={"max_fevals": budget},
            verbose=False,
            quiet=True,
            **several,
        )
    keys = cache["tune_params_keys"]
    seen, order = set(), []
    for r in results:
        k = tuple(r[p] for p in keys)
        if k not in seen:
            seen.add(k)
            order.append(list(k) if objectives else score(r))
    return order


class RunLimit(Exception):
    pass


def run_limited(limit, cache, path, restrictions, strategy, seed, budget, objectives):
    """`run_one`, run again with half the budget each time it takes more than `limit` seconds;
    the order of the first that ends, and its budget."""
    def stop(_signal, _frame):
        raise RunLimit()

    while True:
        signal.signal(signal.SIGALRM, stop)
        signal.alarm(limit)
        try:
            return run_one(cache, path, restrictions, strategy, seed, budget, objectives), budget
        except RunLimit:
            budget //= 2
            if budget == 0:
                return [], 0
        finally:
            signal.alarm(0)


def recorded_only(cache):
    """A restriction to the configurations the cache records (Kernel Tuner's simulation mode
    otherwise proposes every combination of the parameters' values)."""
    from kernel_tuner.util import infer_restrictions_from_cache
    with_failures = dict(cache, cache={k: {n: v for n, v in e.items() if n != "__error__"}
                                       for k, e in cache["cache"].items()})
    return infer_restrictions_from_cache(with_failures)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("caches", nargs="+", type=Path)
    ap.add_argument("--strategies", default=STRATEGIES)
    ap.add_argument("--budgets", default="25,50,100,200,400")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--objective", help="several objectives, comma-separated, all minimised")
    ap.add_argument("--run-limit", type=int, default=120, help="seconds a run with several "
                    "objectives may take before it is run again with half the evaluations")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    objectives = args.objective.split(",") if args.objective else None
    budgets = sorted({int(b) for b in args.budgets.split(",")})
    out = []
    for path in args.caches:
        # Kernel Tuner reads the cache plain; give it a decompressed copy.
        cache = read_cache(path)
        plain = Path("/tmp") / f"kt-{path.parent.name}-{path.name.removesuffix('.gz')}"
        plain.write_text(json.dumps(cache))
        dataset = f"{path.parent.name}/{path.name.removesuffix('.gz').removesuffix('.json')}"
        optimum = min(s for s in map(score, cache["cache"].values()) if s is not None)
        restrictions = conditions(path)
        if objectives:
            restrictions = restrictions or [recorded_only(cache)]
            for strategy in args.strategies.split(","):
                t0 = time.time()
                orders = []
                for seed in range(args.seeds):
                    order, ran = run_limited(args.run_limit, cache, plain, restrictions, strategy,
                                             seed, budgets[-1], objectives)
                    if ran < budgets[-1]:
                        print(f"{dataset} kt:{strategy} seed {seed}: did not end within "
                              f"{args.run_limit} s with {budgets[-1]} evaluations; scored with "
                              f"{ran} ({len(order)} distinct configurations)", file=sys.stderr)
                    orders.append(order)
                out.append({"dataset": dataset, "strategy": f"kt:{strategy}", "orders": orders})
                print(f"{dataset} kt:{strategy}: {args.seeds} runs of {statistics.fmean(map(len, orders)):.0f} "
                      f"configurations ({time.time() - t0:.0f} s)", file=sys.stderr)
                if args.out:
                    args.out.write_text(json.dumps(out) + "\n")
            plain.unlink()
            continue
        for strategy in args.strategies.split(","):
            t0 = time.time()
            fractions = {b: [] for b in budgets}
            reach = {0.90: [], 0.95: []}
            for seed in range(args.seeds):
                try:
                    order = run_one(cache, plain, restrictions, strategy, seed, budgets[-1])
                except Exception as e:  # a strategy that fails on a space is reported, not fatal
                    print(f"{dataset} {strategy} seed {seed}: {type(e).__name__}: {e}", file=sys.stderr)
                    order = []
                for b in budgets:
                    found = [s for s in order[:b] if s is not None]
                    fractions[b].append(optimum / min(found) if found else 0.0)
                for target in reach:
                    best, at = float("inf"), None
                    for i, s in enumerate(order):
                        if s is not None:
                            best = min(best, s)
                        if optimum / best >= target:
                            at = i + 1
                            break
                    reach[target].append(at if at is not None else float("inf"))
            med = lambda v: (lambda m: None if m == float("inf") else int(m))(sorted(v)[len(v) // 2])
            out.append({
                "dataset": dataset,
                "strategy": f"kt:{strategy}",
                "mean": {str(b): statistics.fmean(fractions[b]) for b in budgets},
                "evals_90": med(reach[0.90]),
                "evals_95": med(reach[0.95]),
                "seeds": args.seeds,
            })
            print(f"{dataset} kt:{strategy}: " + " ".join(f"{b}:{statistics.fmean(fractions[b]):.3f}" for b in budgets)
                  + f" e90 {out[-1]['evals_90']} e95 {out[-1]['evals_95']} ({time.time() - t0:.0f} s)", file=sys.stderr)
            if args.out:  # written as it goes, so that a long run can be stopped
                args.out.write_text(json.dumps(out, indent=1) + "\n")
        plain.unlink()
    text = json.dumps(out, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
