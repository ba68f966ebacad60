#!/usr/bin/env python3
"""Kernel Tuner's own OpenCL examples (`examples/opencl/` of its Git repository), or its CUDA
examples (`examples/cuda/`, `--lang cuda`), run as written with Kernel Tuner and with only the
import changed to ndtune, each cold in a fresh process and folder: valid configurations, the best
time and configuration, the wall time of the process, and the result keys one has that the other
lacks.

Usage: python3 bench/kt_examples.py --repo KT_GIT_DIR [--rev REV] [--lang opencl|cuda] [--shrink]
                                    [--narrow] [--nvml] [--only a,b] [--repeat N] [--out FILE.json]

The examples are read from the Git repository (`git --git-dir KT_GIT_DIR show REV:PATH`: a
clone or a bare mirror; Kernel Tuner's wheel and sdist do not ship them). `--shrink` divides the
problem sizes of the scripts and of their kernels (4096 -> 512, 2048 -> 256, the vector lengths
by 10, the reduction's by 100), as Kernel Tuner's own tests shrink them to run on a CPU.
`--narrow` gives the parameters of the examples whose spaces take hours (convolution's 1.6 M
configurations, sepconv's) the values of NARROW, in both tools' copies. Examples that need what PoCL lacks (NVML
observers) are left out with why unless `--nvml` (an NVIDIA GPU as platform 0, device 0: run
with `OCL_ICD_VENDORS` naming a folder with NVIDIA's ICD alone); `sepconv` is left out for its
1.2 M-configuration space. Kernel Tuner's `NVMLObserver` finds its GPU by the UUID or PCI bus
its backend's `env` gives, which its OpenCL backend does not: its copy is told `device=0`.
Each run is killed after --timeout seconds (default 1200); each is cold (ndtune's program cache,
spec directories and data files, and PoCL's kernel cache of its own, removed after the run).
`--repeat N` runs each example N times with each tool, in turn, and shows the median walls and
the median of the pairs' ratios beside the first run's figures: a tool's wall varies from run
to run by as much as the targets' margins (Kernel Tuner's CUDA vector_add 4.8-8.2 s).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLES = {
    "opencl": ["vector_add", "vector_add_codegen", "stencil", "matmul", "convolution",
               "convolution_correct", "reduction"],
    "cuda": ["vector_add", "vector_add_metric", "vector_add_codegen", "matmul", "stencil",
             "zeromeanfilter", "expdist", "spmv", "convolution", "reduction", "sepconv"],
}
NVML = {"vector_add_observers": "needs NVML (an NVIDIA GPU): PoCL has no power to read"}
LEFT_OUT = {"sepconv": "1,228,800 declared configurations: hours on a CPU with either tool"}
# Kernel Tuner's copy of an NVML example is told its GPU (see the docstring).
KT_NVML = (r"NVMLObserver\((\[[^\]]*\])\)", r"NVMLObserver(\1, device=0)")
# `--narrow`: examples whose declared spaces take either tool hours, each parameter listed here
# given these values in both tools' copies (the rest of the script as written).
NARROW = {
    "convolution": {"filter_height": [15], "filter_width": [15], "block_size_x": [16, 32, 64],
                    "block_size_y": [2, 4, 8], "tile_size_x": [1, 2], "tile_size_y": [1, 2, 4],
                    "use_padding": [0], "read_only": [0, 1]},
    "sepconv": {"filter_height": [15], "filter_width": [15], "block_size_x": [32, 64, 128],
                "block_size_y": [2, 4, 8], "tile_size_x": [1, 2], "tile_size_y": [1, 2, 4],
                "use_padding": [0], "read_only": [0, 1]},
}
SHRINK = [(r"\b4096\b", "512"), (r"\b2048\b", "256"), (r"\b10000000\b", "1000000"),
          (r"\b80000000\b", "8000000"), (r"\b800000000\b", "8000000")]

# Runs the example as a script (`__main__`), with every tune_kernel call's results kept.
RUNNER = r'''
import importlib, json, runpy, sys, time
begun = time.time()
import {lib} as lib
imported = time.time()
calls = []
# Per call: its wall, the time its arrays took to become files (ndtune's `_Data`: digests and
# writes) and the engine's own account (`env["ndtune_report"]["time"]`), for `--profile`.
profile = []
data_s = [0.0]
if "{lib}" == "ndtune":
    kt = importlib.import_module("ndtune._kt")
    data_init = kt._Data.__init__
    def timed_data(self, *args, **kwargs):
        started = time.perf_counter()
        data_init(self, *args, **kwargs)
        data_s[0] += time.perf_counter() - started
    kt._Data.__init__ = timed_data
tune_kernel = lib.tune_kernel
def recorded(*args, **kwargs):
    started, data_before = time.perf_counter(), data_s[0]
    results, env = tune_kernel(*args, **kwargs)
    profile.append({{"wall_s": time.perf_counter() - started, "results": len(results),
                    "data_s": data_s[0] - data_before,
                    "engine": env.get("ndtune_report", {{}}).get("time"),
                    "request": env.get("ndtune_time")}})
    calls.append(results)
    params = kwargs.get("tune_params", args[4] if len(args) > 4 else {{}})
    json.dump(list(params), open("params.json", "w"))
    return results, env
lib.tune_kernel = recorded
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
json.dump(calls, open("calls.json", "w"), default=str)
json.dump(profile, open("profile.json", "w"))
# The script's span (epoch seconds), for the parent to split its wall (`span` in the results).
json.dump({{"begun": begun, "imported": imported, "ended": time.time()}}, open("span.json", "w"))
'''


def source(repo, rev, path):
    return subprocess.run(["git", "--git-dir", repo, "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def shrunk(text, shrink):
    """The text with the problem sizes divided (--shrink): the scripts' and the kernels' own
    (`#define WIDTH 4096`), or a kernel indexes past the shrunk buffers."""
    if shrink:
        for pattern, by in SHRINK:
            text = re.sub(pattern, by, text)
    return text


def narrowed(text, name, narrow):
    """The script with the parameters of NARROW[name] given their narrow values (--narrow)."""
    for param, values in (NARROW.get(name, {}) if narrow else {}).items():
        # The first assignment: the declaration (sepconv changes some later, for its 2nd call).
        text, n = re.subn(rf'^(\s*tune_params\["{param}"\]\s*=\s*).*$', rf"\g<1>{values}", text,
                          count=1, flags=re.M)
        assert n == 1, f"{name}: tune_params[{param!r}] is not set on a line of its own"
    return text


def prepare(repo, rev, lang, name, lib, shrink, where, narrow=False):
    text = narrowed(source(repo, rev, f"examples/{lang}/{name}.py"), name, narrow)
    if lib == "ndtune":
        text = re.sub(r"\bfrom kernel_tuner\b", "from ndtune", text)
        text = re.sub(r"^import kernel_tuner$", "import ndtune as kernel_tuner", text, flags=re.M)
    elif name in NVML and lang == "opencl":
        text = re.sub(*KT_NVML, text)
    (where / f"{name}.py").write_text(shrunk(text, shrink))
    listing = subprocess.run(["git", "--git-dir", repo, "ls-tree", "--name-only", rev,
                              f"examples/{lang}/"], check=True, capture_output=True, text=True)
    for path in listing.stdout.split():
        if path.endswith((".cl", ".cu", ".h", ".cuh")):
            (where / Path(path).name).write_text(shrunk(source(repo, rev, path), shrink))
    (where / "runner.py").write_text(RUNNER.format(lib=lib))


def run(name, lib, args, root, k=0):
    """The `k`th run of example `name` with `lib`, in a folder of its own, removed after it."""
    where = root / f"{name}-{lib}-{k}"
    where.mkdir()
    try:
        return run_in(name, lib, args, where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def run_in(name, lib, args, where):
    prepare(args.repo, args.rev, args.lang, name, lib, args.shrink, where, args.narrow)
    # Cold: ndtune's program cache, spec directories and data files and PoCL's kernel cache are
    # the run's own.
    env = dict(os.environ, NDTUNE_CACHE_DIR=str(where / "cache"),
               NDTUNE_PYTHON_DIR=str(where / "specs"),
               POCL_CACHE_DIR=str(where / "pocl-cache"), PYTHONHASHSEED="0")
    started, spawned = time.monotonic(), time.time()
    try:
        done = subprocess.run([sys.executable, "runner.py", f"{name}.py"], cwd=where, env=env,
                              capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    wall, returned = time.monotonic() - started, time.time()
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {done.returncode}", "wall_s": wall,
                "stderr": lines[-30:]}
    calls = json.load(open(where / "calls.json"))
    tuned = set(json.load(open(where / "params.json")))
    results = [r for call in calls for r in call]
    valid = [r for r in results if isinstance(r.get("time"), (int, float))]
    best = min(valid, key=lambda r: r["time"]) if valid else None
    keys = sorted({k for r in results for k in r})
    # The NVML examples' readings of every configuration, to compare the tools' energies.
    readings = [{k: v for k, v in r.items() if isinstance(v, (int, float, str))
                 and k != "timestamp" and not k.endswith("_time")}
                for r in valid] if name in NVML else None
    # Why the others are not valid: ndtune's outcome, or the tool's error text.
    invalid = sorted({f"{r.get('ndtune_outcome', '')} {r.get('time')}"[:300]
                      for r in results if r not in valid})
    # Each configuration's time, for a referee to compare (bench/cuda_referee.py): small spaces.
    times = [[{k: v for k, v in r.items() if k in tuned}, r["time"]] for r in valid] \
        if len(results) <= 200 else None
    profile = json.load(open(where / "profile.json"))
    return {"wall_s": wall, "profile": profile, "span": span(where, spawned, returned, profile),
            "readings": readings, "invalid": invalid[:10], "times": times,
            "calls": len(calls), "results": len(results), "valid": len(valid),
            "best_ms": best["time"] if best else None, "keys": keys,
            "best": {k: v for k, v in best.items() if not isinstance(v, (list, dict))
                     and k not in ("time", "times", "timestamp") and not k.endswith("_time")}
            if best else None}


def span(where, spawned, returned, profile):
    """Where the script's wall went (seconds): the interpreter's start (`start_s`), importing
    the tool, the script's own work outside its tune_kernel calls, the calls, and the exit after
    the script's last line (the tool's `atexit` work and the interpreter's end)."""
    s = json.load(open(where / "span.json"))
    calls = sum(c["wall_s"] for c in profile)
    return {"start_s": s["begun"] - spawned, "import_s": s["imported"] - s["begun"],
            "script_s": s["ended"] - s["imported"] - calls, "calls_s": calls,
            "exit_s": returned - s["ended"]}


def print_span(name, lib, k, run):
    """`--profile`: the `k`th run of `name` with `lib`, its wall split by [`span`]."""
    if "span" in run:
        parts = " ".join(f"{key} {v:.2f}" for key, v in run["span"].items())
        print(f"  {name} {lib} run {k}: wall {run['wall_s']:.2f} s: {parts}", flush=True)


def print_profile(name, k, run):
    """`--profile`: each tune_kernel call of ndtune's `k`th run of `name`, one line each."""
    for i, call in enumerate(run.get("profile") or []):
        engine = call.get("engine") or {}
        parts = " ".join(f"{key} {engine[key]:.2f}" if isinstance(engine[key], float)
                         else f"{key} {engine[key]}" for key in PROFILED if key in engine)
        request = call.get("request") or {}
        around = " ".join(f"{key} {request[key]:.2f}" for key in AROUND if key in request)
        print(f"  {name} run {k} call {i}: wall {call['wall_s']:.2f} s, {call['results']} "
              f"results, arrays as files {call['data_s']:.2f} s; request: {around}; engine: "
              f"{parts}", flush=True)


# The call's account and its campaign's, as `--profile` shows them (seconds; docs/tuning.md,
# "Where every second goes").
AROUND = ["spec_s", "discovery_s", "store_s", "prune_s", "campaigns_s"]
PROFILED = ["campaign_s", "setup_s", "startup_s", "startup_waited_s", "build_s", "launch_s",
            "data_s", "prepare_s", "verify_s", "store_s", "search_s", "shutdown_s", "raced",
            "runs_spared"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", required=True, help="Kernel Tuner's Git directory")
    p.add_argument("--rev", default="HEAD")
    p.add_argument("--lang", choices=["opencl", "cuda"], default="opencl")
    p.add_argument("--shrink", action="store_true")
    p.add_argument("--narrow", action="store_true",
                   help="narrow the spaces of " + ", ".join(NARROW) + " (see NARROW)")
    p.add_argument("--nvml", action="store_true", help="also the NVML examples")
    p.add_argument("--only", help="comma-separated example names")
    p.add_argument("--timeout", type=float, default=1200)
    p.add_argument("--repeat", type=int, default=1, help="runs of each tool, in turn")
    p.add_argument("--ndtune-only", action="store_true",
                   help="run ndtune alone (no comparison): where a run of Kernel Tuner is known")
    p.add_argument("--profile", action="store_true",
                   help="print each tune_kernel call of ndtune's runs: its wall, its arrays "
                        "made files, the engine's account")
    p.add_argument("--out")
    args = p.parse_args()
    names = (args.only.split(",") if args.only
             else EXAMPLES[args.lang] + (list(NVML) if args.nvml else []))
    left_out = LEFT_OUT if args.lang == "opencl" else {}
    for name, why in {**left_out, **({} if args.nvml else NVML)}.items():
        print(f"{name}: left out: {why}")
    rows = {}
    with tempfile.TemporaryDirectory() as root:
        for name in names:
            pairs = [({} if args.ndtune_only else run(name, "kernel_tuner", args, Path(root), k),
                      run(name, "ndtune", args, Path(root), k)) for k in range(args.repeat)]
            kt, nd = pairs[0]
            walls = [[k.get("wall_s"), n.get("wall_s")] for k, n in pairs]
            rows[name] = {"kernel_tuner": kt, "ndtune": nd, "walls": walls}
            # Kept as each example ends: a run cut short still leaves what it measured.
            if args.out:
                json.dump(rows, open(args.out, "w"), indent=1)
            if args.profile:
                for k, (t, n) in enumerate(pairs):
                    print_span(name, "kernel_tuner", k, t)
                    print_span(name, "ndtune", k, n)
                    print_profile(name, k, n)
            if args.ndtune_only:
                print(f"{name}: ndtune " + (nd["error"] if "error" in nd else
                      f"valid {nd['valid']}/{nd['results']}, best {nd['best_ms']:.4f} ms, "
                      f"wall {nd['wall_s']:.1f} s; best {nd['best']}"), flush=True)
                continue
            if "error" in kt or "error" in nd:
                print(f"{name}: kernel_tuner {kt.get('error', 'ok')}; ndtune {nd.get('error', 'ok')}",
                      flush=True)
                continue
            only_kt = sorted(set(kt["keys"]) - set(nd["keys"]))
            only_nd = sorted(set(nd["keys"]) - set(kt["keys"]))
            print(f"{name}: valid {kt['valid']}/{kt['results']} vs {nd['valid']}/{nd['results']}; "
                  f"best {kt['best_ms']:.4f} vs {nd['best_ms']:.4f} ms; wall {kt['wall_s']:.1f} vs "
                  f"{nd['wall_s']:.1f} s ({nd['wall_s'] / kt['wall_s']:.2f}x); "
                  f"keys only in Kernel Tuner's {only_kt}, only in ndtune's {only_nd}")
            print(f"  best: {kt['best']} vs {nd['best']}", flush=True)
            if args.repeat > 1 and all("error" not in k and "error" not in n for k, n in pairs):
                kt_walls, nd_walls = zip(*walls)
                print(f"  {args.repeat} runs each: wall median {statistics.median(kt_walls):.1f} vs "
                      f"{statistics.median(nd_walls):.1f} s (Kernel Tuner {min(kt_walls):.1f}-"
                      f"{max(kt_walls):.1f}, ndtune {min(nd_walls):.1f}-{max(nd_walls):.1f}); "
                      f"median ratio {statistics.median(n / k for k, n in walls):.2f}x",
                      flush=True)


main()
