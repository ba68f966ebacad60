#!/usr/bin/env python3
"""Kernel Tuner 1.5's energy figures for a spec, beside ndtune's (bench/energy.sh): the same
problem as bench/tune_vs_kt.py gives Kernel Tuner (the spec's space pruned by ndtune for the device,
the spec's constants as -D options, random inputs, 10 timed runs), tuned once with Kernel Tuner's
NVMLObserver reading power and energy through pynvml, then ranked by time, by energy per run and
by GFLOP/s per watt from the same measurements.

Usage: PYTHON bench/kt_energy.py --spec examples/sgemm.toml --nd-device NVIDIA --platform NVIDIA \
           --ndtune BIN --out DIR
(PYTHON: a Python with kernel_tuner, pyopencl, numpy and pynvml, the package nvidia-ml-py.)
Writes DIR/kt-energy.json (every configuration's time, energy and power) and prints the table.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tune_vs_kt as tv  # noqa: E402  the problem definitions Kernel Tuner gets there


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default="examples/sgemm.toml")
    ap.add_argument("--nd-device", default="NVIDIA")
    ap.add_argument("--platform", default="NVIDIA")
    ap.add_argument("--ndtune", default=str(tv.NDTUNE))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    import pyopencl as cl
    import kernel_tuner
    from kernel_tuner.observers.nvml import NVMLObserver

    listed = subprocess.run([a.ndtune, "space", a.spec, "--device", a.nd_device, "--list", "--json"],
                            check=True, capture_output=True, text=True).stdout
    space = [json.loads(line) for line in listed.splitlines() if line.strip()]
    names = list(space[0].keys())
    valid = {tuple(c[n] for n in names) for c in space}
    raw, consts, problem, args, answer = tv.kt_problem(a.spec)
    platform = next(i for i, p in enumerate(cl.get_platforms()) if a.platform.lower() in p.name.lower())

    def restrict(p):  # a def, not a lambda: KT rewrites lambdas into expressions
        return (tuple(p[n] for n in names) if isinstance(p, dict) else (p,)) in valid

    flops = 2 * consts["N"] ** 3
    metrics = {"GFLOP/s": lambda p: flops / 1e9 / (p["time"] / 1e3),
               "GFLOP/s/W": lambda p: flops / 1e9 / (p["time"] / 1e3) / p["nvml_power"]}
    observer = NVMLObserver(["nvml_energy", "nvml_power"], device=0)
    tuning = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        raw["kernel"]["name"], (Path(a.spec).parent / raw["kernel"]["source"]).read_text(),
        problem_size=problem["problem_size"](consts), arguments=args,
        tune_params={n: sorted({c[n] for c in space}) for n in names}, restrictions=[restrict],
        block_size_names=problem["block_size_names"], grid_div_x=problem["grid_div_x"],
        grid_div_y=problem["grid_div_y"], lang="OpenCL",
        compiler_options=[f"-D{k}={v}" for k, v in consts.items()] + raw["kernel"].get("build_options", []),
        iterations=tv.RUNS, answer=answer, atol=raw["verify"].get("atol", 1e-6), observers=[observer],
        metrics=metrics, quiet=True, platform=platform, device=0)
    ended = time.perf_counter()
    rows = [dict(config=tv.key(r, names), time_ms=r["time"], energy_mj=r["nvml_energy"] * 1e3,
                 power_w=r["nvml_power"], gflops=r["GFLOP/s"], gflops_per_w=r["GFLOP/s/W"])
            for r in results if "__error__" not in r and isinstance(r.get("time"), float)]
    best = {"time": min(rows, key=lambda r: r["time_ms"]),
            "energy": min(rows, key=lambda r: r["energy_mj"]),
            "gflops_per_w": max(rows, key=lambda r: r["gflops_per_w"])}
    summary = dict(device=env.get("device_name"), configs=len(space), measured=len(rows),
                   wall_s=ended - started, tune_s=ended - tuning, best=best, rows=rows)
    (out / "kt-energy.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"Kernel Tuner 1.5 with NVMLObserver on {summary['device']}: {len(rows)} of {len(space)} "
          f"configurations measured, tune_kernel {summary['tune_s']:.1f} s ({summary['wall_s']:.1f} s with set-up)")
    print("| objective | best configuration | time (ms) | energy per run (mJ) | power (W) | GFLOP/s | GFLOP/s/W |")
    print("|---|---|---|---|---|---|---|")
    for objective, r in best.items():
        print(f"| {objective} | {r['config']} | {r['time_ms']:.4f} | {r['energy_mj']:.2f} | {r['power_w']:.1f} "
              f"| {r['gflops']:.0f} | {r['gflops_per_w']:.2f} |")


if __name__ == "__main__":
    main()
