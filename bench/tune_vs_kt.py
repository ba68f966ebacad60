#!/usr/bin/env python3
"""Tuning benchmark: ndtune vs Kernel Tuner 1.5 (PyOpenCL backend) on one kernel and space.

Usage: PYTHON bench/tune_vs_kt.py [--repeat R] [--json] [--json-out F] [--keep DIR] [--ndtune BIN] [--spec SPEC]
(PYTHON: a Python with kernel_tuner, pyopencl and numpy, e.g. bench/out/kt-venv/bin/python;
bench/tune.sh sets everything up and runs this.)

Both tools tune the same space of examples/conv1d.toml on OpenCL platform 0, device 0 (the WG
values come from `ndtune space SPEC --list --json`: 13 on PoCL), with the same problem (N outputs,
a MASK-tap mask, N + MASK - 1 random inputs in [-1, 1), as ndtune draws them), every configuration
an `-D WG=..` build (KT prepends `#define WG ..` to the source), local size WG, global size N,
10 timed runs per configuration, and one verification run against a host reference (ndtune: its
built-in reference, rtol 1e-4 + atol 5e-4; KT: a numpy float64 reference, answer=[None, None, ref],
atol 5e-4). Launches per campaign: ndtune 13 x (1 verification + 1 warm-up + 10 timed); KT
13 x (1 verification + 10 timed) plus one extra compile + verification + 10 runs of the first
configuration (its built-in warm-up).

Each run is a fresh child process; its wall time is measured from spawning it to its exit (process
start, Python imports and data set-up included). ndtune: `ndtune tune SPEC --db FRESH --json`.
KT: this script with --kt-child, which also times tune_kernel alone. Cold runs clear PoCL's kernel
cache and PyOpenCL's binary cache first; a warm run follows a run of the same tool with the caches
kept. Per repeat: cold + warm of one tool, then cold + warm of the other, the order alternating.
The table shows medians over repeats. Each run records the CPU time everything else on the machine
used meanwhile (/proc/stat less the run's own rusage); a pair with a disturbed run (others above
--max-other of all cores' time) is discarded and run again, at most --retries times.

Scores are compared like for like: ndtune's score is the mean of the best 5 of 10 runs; for KT the
same statistic is computed from its `times` (KT's own `time` is the mean of all 10).

"Framework ms/config" is given twice: as each tool reports it (ndtune: round trips minus builds,
launches and reference, per configuration; KT: its `framework_time` + `strategy_time`), and under
one definition for both ("same def."): time per configuration in neither builds nor kernel launches,
the host side of verification included; process start, reference and KT's warm-up configuration
excluded. For KT that is framework_time + strategy_time + verification_time minus the verification
launch, which the KT child times to completion by wrapping DeviceInterface.run_kernel (used only by
KT's verification; the wrapper adds a queue.finish that the blocking read-back after it would do
anyway). Builds are clBuildProgram on both sides (ndtune build_s, KT compile_time); on a cold cache
PoCL generates each work-group size's code at the first launch, which both tools count as a launch
(ndtune launch_s; KT verification_time).
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NDTUNE = ROOT / "target/release/ndtune"
SPEC = ROOT / "examples/conv1d.toml"
RUNS = 10  # timed runs per configuration, both tools
BEST_OF = 5  # ndtune's score: mean of the best 5 of the 10 runs
ATOL = 5e-4  # examples/conv1d.toml [verify] atol
SEED = 1


def cache_dirs():
    """PoCL's kernel cache and PyOpenCL's binary cache, as each finds them."""
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    pocl = Path(os.environ["POCL_CACHE_DIR"]) if os.environ.get("POCL_CACHE_DIR") else xdg / "pocl/kcache"
    return [pocl, xdg / "pyopencl"]


def clear_caches():
    for d in cache_dirs():
        shutil.rmtree(d, ignore_errors=True)


def spec_constants(spec):
    """[kernel] source and the integer [constants] of the spec (tomllib: stdlib in 3.11)."""
    import tomllib

    raw = tomllib.loads(Path(spec).read_text())
    source = Path(spec).parent / raw["kernel"]["source"]
    consts = raw.get("constants", {})
    return raw["kernel"]["name"], source, int(consts["N"]), int(consts["MASK"])


def wg_values(ndtune, spec):
    out = subprocess.run([str(ndtune), "space", str(spec), "--list", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return [json.loads(line)["WG"] for line in out.splitlines() if line.strip()]


def best_of(times, k=BEST_OF):
    s = sorted(times)[:k]
    return sum(s) / len(s)


def cpu_busy_s():
    """Busy CPU seconds of the whole machine so far (/proc/stat, every core)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_child(cmd, stdout_path):
    """Runs cmd; returns (wall s, its CPU s, CPU s used by everything else meanwhile, load)."""
    load = os.getloadavg()[0]
    busy0 = cpu_busy_s()
    start = time.perf_counter()
    with open(stdout_path, "w") as out:
        p = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)  # its own rusage, waited-for descendants included
        p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    busy = cpu_busy_s() - busy0
    if p.returncode:
        sys.exit(f"{' '.join(map(str, cmd))}: exit status {p.returncode}\n{err.decode(errors='replace')}")
    cpu = usage.ru_utime + usage.ru_stime
    return dict(wall_s=wall, cpu_s=cpu, other_cpu_s=max(busy - cpu, 0.0), load1=load)


# ---------------------------------------------------------------- ndtune

def run_ndtune(ndtune, spec, tmp, label):
    db = Path(tmp) / f"{label}.db"
    out = Path(tmp) / f"{label}.json"
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    r = run_child([ndtune, "tune", spec, "--db", db, "--json", "--seed", SEED], out)
    d = json.loads(out.read_text())["devices"][0]
    t = d["time"]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT config, outcome_kind, times_ms, score_ms, started_at, finished_at "
                       "FROM results ORDER BY id").fetchall()
    con.close()
    configs = []
    for config, kind, times, score, t0, t1 in rows:
        times = json.loads(times) if times else []
        configs.append(dict(config=config, outcome=kind, score_ms=score, times_ms=times,
                            mean_ms=sum(times) / len(times) if times else None,
                            store_span_ms=t1 - t0))
    n = d["evaluated"]
    # The timed runs are recorded; the verification and warm-up launches are estimated by the mean.
    kernel_s = sum(sum(c["times_ms"]) + 2 * c["mean_ms"] for c in configs if c["times_ms"]) / 1e3
    launches = sum(len(c["times_ms"]) + 2 for c in configs if c["times_ms"])
    accounted = t["reference_s"] + t["build_s"] + t["launch_s"]
    r.update(
        tool="ndtune",
        best_config=d["best"]["config"], best_ms=d["best"]["time_ms"],
        best_min_ms=d["best"]["min_ms"], best_median_ms=d["best"]["median_ms"],
        outcomes={k: v for k, v in d["outcomes"].items() if v and k != "pruned"},
        configs=configs, evaluated=n,
        time=t,
        build_s=t["build_s"],
        framework_ms_per_config=t["overhead_ms_per_config"],
        framework_same_ms_per_config=t["overhead_ms_per_config"],
        # The process's wall time less builds, launches and reference, per configuration: process
        # start, device discovery (with its probe build), worker start, store, round trips, exit.
        whole_overhead_ms_per_config=(r["wall_s"] - accounted) * 1e3 / n,
        # Before the first round trip and after the last: parent start, discovery, pruning, store
        # set-up, worker start, report.
        outside_s=r["wall_s"] - t["total_s"],
        launch_overhead_ms_per_launch=(t["launch_s"] - kernel_s) * 1e3 / launches,
        scores={json.loads(c["config"])["WG"]: c["score_ms"] for c in configs if c["score_ms"] is not None},
    )
    return r


# ---------------------------------------------------------------- Kernel Tuner

def kt_child(args):
    """Runs inside a fresh interpreter: imports, data, reference, tune_kernel; writes JSON."""
    t_start = time.perf_counter()
    import numpy as np
    import kernel_tuner
    import kernel_tuner.core
    t_import = time.perf_counter()
    name, source, n, mask_len = spec_constants(args.spec)
    wgs = [int(x) for x in args.wg.split(",")]
    rng = np.random.default_rng(SEED)
    inp = (rng.random(n + mask_len - 1) * 2 - 1).astype(np.float32)
    mask = (rng.random(mask_len) * 2 - 1).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    ref = np.correlate(inp.astype(np.float64), mask.astype(np.float64), "valid").astype(np.float32)
    assert ref.shape == (n,)
    kernel_string = source.read_text()
    # DeviceInterface.run_kernel is called only by the verification (benchmarks call the backend
    # directly). Timing it to completion (a queue.finish that the blocking read-back that follows
    # would do anyway) separates the verification launch, with PoCL's per-work-group-size code
    # generation on a cold cache, from the host side of verification. The last call per WG wins,
    # so KT's warm-up configuration (the first, evaluated twice) does not count.
    verif_launch_ms = {}
    original = kernel_tuner.core.DeviceInterface.run_kernel

    def timed_run_kernel(self, func, gpu_args, instance):
        started = time.perf_counter()
        ok = original(self, func, gpu_args, instance)
        self.dev.synchronize()
        verif_launch_ms[instance.params["WG"]] = (time.perf_counter() - started) * 1e3
        return ok

    kernel_tuner.core.DeviceInterface.run_kernel = timed_run_kernel
    t_setup = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        name, kernel_string, problem_size=n, arguments=[inp, mask, out],
        tune_params={"WG": wgs}, block_size_names=["WG"], lang="OpenCL",
        compiler_options=[f"-D N={n}", f"-D MASK={mask_len}"], iterations=RUNS,
        answer=[None, None, ref], atol=ATOL, verbose=False, quiet=True, device=0, platform=0)
    t_tune = time.perf_counter()
    configs = []
    for r in results:
        err = r.get("__error__")
        configs.append(dict(
            WG=r["WG"], error=None if err is None else type(err).__name__,
            time_ms=None if err is not None else float(r["time"]),
            times_ms=[float(x) for x in r.get("times", [])],
            compile_ms=r.get("compile_time"), verification_ms=r.get("verification_time"),
            benchmark_ms=r.get("benchmark_time"), framework_ms=r.get("framework_time"),
            strategy_ms=r.get("strategy_time"), verif_launch_ms=verif_launch_ms.get(r["WG"])))
    json.dump(dict(import_s=t_import - t_start, setup_s=t_setup - t_import,
                   tune_s=t_tune - t_setup, after_s=time.perf_counter() - t_tune,
                   device=env.get("device_name"), iterations=env.get("iterations"),
                   configs=configs), open(args.kt_child, "w"))


def run_kt(python, spec, wgs, tmp, label):
    out = Path(tmp) / f"{label}.json"
    stdout = Path(tmp) / f"{label}.stdout"
    r = run_child([python, Path(__file__).resolve(), "--kt-child", out, "--spec", spec,
                   "--wg", ",".join(map(str, wgs))], stdout)
    d = json.loads(out.read_text())
    ok = [c for c in d["configs"] if c["error"] is None]
    for c in ok:
        c["best5_ms"] = best_of(c["times_ms"])
        assert len(c["times_ms"]) == RUNS, c
    n = len(ok)
    best = min(ok, key=lambda c: c["best5_ms"])
    best_mean = min(ok, key=lambda c: c["time_ms"])
    s = {k: sum(c[k] for c in ok) / 1e3 for k in
         ("compile_ms", "verification_ms", "benchmark_ms", "framework_ms", "strategy_ms")}
    kernel_s = sum(sum(c["times_ms"]) for c in ok) / 1e3
    verif_launch_s = sum(c["verif_launch_ms"] for c in ok) / 1e3
    # What tune_kernel spent beyond the per-configuration figures: its set-up and the warm-up
    # configuration (compiled, verified and benchmarked once more, recorded nowhere).
    residual = d["tune_s"] - sum(s.values())
    r.update(
        tool="kernel_tuner", import_s=d["import_s"], setup_s=d["setup_s"], tune_s=d["tune_s"],
        sums_s=s, kernel_s=kernel_s, tune_residual_s=residual, configs=d["configs"], evaluated=n,
        errors=len(d["configs"]) - n,
        best_config={"WG": best["WG"]}, best_ms=best["best5_ms"], best_mean_ms=best["time_ms"],
        best_by_mean_config={"WG": best_mean["WG"]},
        build_s=s["compile_ms"],
        framework_ms_per_config=(s["framework_ms"] + s["strategy_ms"]) * 1e3 / n,
        verif_launch_s=verif_launch_s,
        framework_same_ms_per_config=(s["framework_ms"] + s["strategy_ms"] + s["verification_ms"] - verif_launch_s) * 1e3 / n,
        # The process's wall time less builds, launches (verification launches included) and the
        # data + reference set-up, per configuration: interpreter start, imports, context, the
        # warm-up configuration, framework, host side of verification, exit.
        whole_overhead_ms_per_config=(r["wall_s"] - s["compile_ms"] - s["benchmark_ms"] - verif_launch_s
                                      - d["setup_s"]) * 1e3 / n,
        launch_overhead_ms_per_launch=(s["benchmark_ms"] - kernel_s) * 1e3 / (RUNS * n),
        scores={c["WG"]: c["best5_ms"] for c in ok},
    )
    return r


# ---------------------------------------------------------------- campaign and report

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(runs, tool):
    cold = [r for r in runs if r["tool"] == tool and r["mode"] == "cold"]
    warm = [r for r in runs if r["tool"] == tool and r["mode"] == "warm"]
    every = cold + warm
    configs = [json.dumps(r["best_config"], sort_keys=True) for r in every]
    return dict(
        cold_wall_s=med([r["wall_s"] for r in cold]), warm_wall_s=med([r["wall_s"] for r in warm]),
        cold_build_s=med([r["build_s"] for r in cold]), warm_build_s=med([r["build_s"] for r in warm]),
        framework_ms_per_config=med([r["framework_ms_per_config"] for r in every]),
        framework_same_ms_per_config=med([r["framework_same_ms_per_config"] for r in every]),
        framework_same_ms_per_config_cold=med([r["framework_same_ms_per_config"] for r in cold]),
        framework_same_ms_per_config_warm=med([r["framework_same_ms_per_config"] for r in warm]),
        whole_overhead_ms_per_config_cold=med([r["whole_overhead_ms_per_config"] for r in cold]),
        whole_overhead_ms_per_config_warm=med([r["whole_overhead_ms_per_config"] for r in warm]),
        whole_overhead_ms_per_config=med([r["whole_overhead_ms_per_config"] for r in every]),
        # Warm runs only: on a cold cache the first launch of each configuration includes PoCL's
        # code generation for its work-group size.
        launch_overhead_ms_per_launch=med([r["launch_overhead_ms_per_launch"] for r in warm]),
        best_configs={c: configs.count(c) for c in sorted(set(configs))},
        best_ms=med([r["best_ms"] for r in every]),
        cold_cpu_s=med([r["cpu_s"] for r in cold]), warm_cpu_s=med([r["cpu_s"] for r in warm]),
        other_cpu_s_max=max(r["other_cpu_s"] for r in every),
    )


def targets(runs, s):
    nd, kt = s["ndtune"], s["kernel_tuner"]
    # Best within 3%: per repeat, ndtune's best score against KT's best score of the same repeat
    # and mode; and ndtune's chosen configuration as KT itself measured it in that run.
    rel, chosen = [], []
    for a in runs:
        if a["tool"] != "ndtune":
            continue
        b = next((r for r in runs if r["tool"] == "kernel_tuner" and r["repeat"] == a["repeat"]
                  and r["mode"] == a["mode"]), None)
        if b:
            rel.append(a["best_ms"] / b["best_ms"] - 1)
            chosen.append(b["scores"][a["best_config"]["WG"]] / b["best_ms"] - 1)
    t = dict(
        wall_ratio_cold=nd["cold_wall_s"] / kt["cold_wall_s"],
        wall_ratio_warm=nd["warm_wall_s"] / kt["warm_wall_s"],
        overhead_ms=nd["framework_ms_per_config"],
        best_rel=med(rel), best_rel_all=rel,
        chosen_by_kt_rel=med(chosen), chosen_by_kt_rel_all=chosen,
    )
    t["wall_cold_met"] = t["wall_ratio_cold"] <= 0.5
    t["wall_warm_met"] = t["wall_ratio_warm"] <= 0.5
    t["overhead_met"] = t["overhead_ms"] < 1.0
    t["best_met"] = t["best_rel"] <= 0.03
    return t


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def print_report(res):
    s, t = res["summary"], res["targets"]
    print(f"# {res['device']}: {res['kernel']}, {len(res['wg'])} WG values {res['wg'][0]}..{res['wg'][-1]}, "
          f"N={res['N']}, MASK={res['MASK']}, {RUNS} runs/config, medians of {res['repeat']} repeat(s)")
    head = ("tool", "cold wall s", "warm wall s", "build s cold/warm", "fw ms/cfg own",
            "fw ms/cfg same def.", "best WG", f"best ms (mean best {BEST_OF}/{RUNS})")
    rows = []
    for tool in ("ndtune", "kernel_tuner"):
        x = s[tool]
        wgs = ", ".join(f"{json.loads(c)['WG']}" + (f" x{k}" if len(x["best_configs"]) > 1 else "")
                        for c, k in x["best_configs"].items())
        rows.append((tool, fmt(x["cold_wall_s"], ".2f"), fmt(x["warm_wall_s"], ".2f"),
                     f"{fmt(x['cold_build_s'], '.2f')} / {fmt(x['warm_build_s'], '.2f')}",
                     fmt(x["framework_ms_per_config"], ".2f"),
                     fmt(x["framework_same_ms_per_config"], ".2f"), wgs, fmt(x["best_ms"], ".3f")))
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(r)))
    ok = lambda b: "met" if b else "MISSED"
    print(f"target wall <= 0.5 x KT: cold {t['wall_ratio_cold']:.2f} x ({ok(t['wall_cold_met'])}), "
          f"warm {t['wall_ratio_warm']:.2f} x ({ok(t['wall_warm_met'])})")
    print(f"target overhead < 1 ms/config: {t['overhead_ms']:.2f} ms ({ok(t['overhead_met'])})")
    print(f"target best within 3% of KT's best: {t['best_rel'] * 100:+.1f}% ({ok(t['best_met'])}; "
          f"per run {', '.join(f'{x * 100:+.1f}%' for x in t['best_rel_all'])}); ndtune's choice as KT "
          f"measured it: {t['chosen_by_kt_rel'] * 100:+.1f}% from KT's best")
    print()
    gone = ", ".join(f"{r['tool']} {r['mode']} (other {r['other_cpu_s']:.2f} s)" for r in res["discarded"])
    print("runs (wall s, CPU s of the tool, CPU s of everything else meanwhile, 1-min load before; "
          f"! = disturbed); {len(res['discarded'])} disturbed run(s) discarded and repeated"
          + (f": {gone}" if gone else ""))
    for r in res["runs"]:
        extra = ""
        if r["tool"] == "ndtune":
            tm = r["time"]
            extra = (f"outside round trips {r['outside_s']:.2f} (worker start {tm['startup_s']:.2f}) | round trips "
                     f"{tm['total_s']:.2f} [ref {tm['reference_s']:.3f} build {tm['build_s']:.2f} launch {tm['launch_s']:.2f} "
                     f"rest {tm['overhead_ms_per_config']:.2f} ms/cfg]")
        else:
            sm = r["sums_s"]
            extra = (f"import {r['import_s']:.2f} setup {r['setup_s']:.2f} tune_kernel {r['tune_s']:.2f} "
                     f"[compile {sm['compile_ms']:.2f} verif {sm['verification_ms']:.2f} "
                     f"(launch {r['verif_launch_s']:.2f}) bench {sm['benchmark_ms']:.2f} fw {sm['framework_ms']:.3f} "
                     f"strat {sm['strategy_ms']:.3f} rest {r['tune_residual_s']:.2f}]")
        print(f"  #{r['repeat']}{'!' if r['disturbed'] else ' '}{r['mode']:4} {r['tool']:12} wall {r['wall_s']:6.2f}  cpu {r['cpu_s']:5.2f}  "
              f"other {r['other_cpu_s']:4.2f}  load {r['load1']:4.2f}  best {r['best_config']['WG']:>4} "
              f"{r['best_ms']:.3f} ms  {extra}")
    print()
    for tool in ("ndtune", "kernel_tuner"):
        x = s[tool]
        print(f"{tool}: framework (same def.) cold {x['framework_same_ms_per_config_cold']:.2f} / warm "
              f"{x['framework_same_ms_per_config_warm']:.2f} ms/config; whole process less builds, launches, "
              f"reference: cold {x['whole_overhead_ms_per_config_cold']:.1f} / warm {x['whole_overhead_ms_per_config_warm']:.1f} "
              f"ms/config; launch wall - kernel time (warm) {x['launch_overhead_ms_per_launch']:.3f} ms/launch; "
              f"CPU s cold {x['cold_cpu_s']:.2f} / warm {x['warm_cpu_s']:.2f}")
    # Per-configuration detail of the last cold and warm run of each tool.
    for mode in ("cold", "warm"):
        nd = [r for r in res["runs"] if r["tool"] == "ndtune" and r["mode"] == mode][-1]
        kt = [r for r in res["runs"] if r["tool"] == "kernel_tuner" and r["mode"] == mode][-1]
        print(f"\nper configuration, last {mode} runs (ms): KT compile / verification / benchmark / framework, "
              f"(its verification launch), KT mean-of-10 and best {BEST_OF}/{RUNS}; ndtune score and store span per config")
        nds = {json.loads(c["config"])["WG"]: c for c in nd["configs"]}
        print(f"  {'WG':>5} {'compile':>8} {'verif':>8} {'(launch)':>8} {'bench':>8} {'fw':>6} {'KT mean':>8} "
              f"{'KT best5':>8} {'nd score':>8} {'nd span':>8}")
        for c in kt["configs"]:
            n = nds.get(c["WG"], {})
            print(f"  {c['WG']:>5} {fmt(c['compile_ms'], '8.1f')} {fmt(c['verification_ms'], '8.1f')} "
                  f"{fmt(c['verif_launch_ms'], '8.1f')} {fmt(c['benchmark_ms'], '8.1f')} {fmt(c['framework_ms'], '6.2f')} {fmt(c['time_ms'], '8.3f')} "
                  f"{fmt(c.get('best5_ms'), '8.3f')} {fmt(n.get('score_ms'), '8.3f')} {fmt(n.get('store_span_ms'), '8.0f')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="cold+warm pairs per tool (default 3)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--json-out", help="also write that JSON object to this file")
    ap.add_argument("--ndtune", default=str(NDTUNE))
    ap.add_argument("--spec", default=str(SPEC))
    ap.add_argument("--max-other", type=float, default=0.05,
                    help="a run is disturbed when other processes used more than this share of all "
                         "cores' time during it (default 0.05); its cold+warm pair is repeated")
    ap.add_argument("--retries", type=int, default=3, help="repeats of a disturbed pair (default 3)")
    ap.add_argument("--keep", help="keep the runs' stores and outputs in this directory")
    ap.add_argument("--kt-child", help=argparse.SUPPRESS)
    ap.add_argument("--wg", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.kt_child:
        return kt_child(args)

    name, _, n, mask_len = spec_constants(args.spec)
    wgs = wg_values(args.ndtune, args.spec)
    if len(wgs) != 13:
        print(f"note: {len(wgs)} WG values on this device (the issue's PoCL device has 13)", file=sys.stderr)
    tmp = args.keep or tempfile.mkdtemp(prefix="tune_vs_kt.")
    Path(tmp).mkdir(parents=True, exist_ok=True)
    runs, discarded = [], []
    cores = os.cpu_count() or 1
    for rep in range(args.repeat):
        order = ["ndtune", "kernel_tuner"] if rep % 2 == 0 else ["kernel_tuner", "ndtune"]
        for tool in order:
            for attempt in range(args.retries + 1):
                pair = []
                for mode in ("cold", "warm"):
                    if mode == "cold":
                        clear_caches()
                    label = f"{tool}-{rep}-{mode}-{attempt}"
                    print(f"[{rep + 1}/{args.repeat}] {tool} {mode} ...", file=sys.stderr, flush=True)
                    if tool == "ndtune":
                        r = run_ndtune(args.ndtune, args.spec, tmp, label)
                    else:
                        r = run_kt(sys.executable, args.spec, wgs, tmp, label)
                    r.update(repeat=rep, mode=mode, attempt=attempt,
                             disturbed=r["other_cpu_s"] > args.max_other * r["wall_s"] * cores)
                    print(f"    wall {r['wall_s']:.2f} s, best WG={r['best_config']['WG']} {r['best_ms']:.3f} ms, "
                          f"other CPU {r['other_cpu_s']:.2f} s{' (disturbed)' if r['disturbed'] else ''}",
                          file=sys.stderr, flush=True)
                    pair.append(r)
                if not any(r["disturbed"] for r in pair) or attempt == args.retries:
                    runs += pair
                    break
                discarded += pair
                print("    repeating this pair: other processes used the CPU meanwhile", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {tool: summarize(runs, tool) for tool in ("ndtune", "kernel_tuner")}
    device = subprocess.run(["clinfo", "-l"], capture_output=True, text=True).stdout.strip().splitlines()
    res = dict(kernel=name, N=n, MASK=mask_len, wg=wgs, runs_per_config=RUNS, best_of=BEST_OF,
               repeat=args.repeat, device=device[1].split(":", 1)[-1].strip() if len(device) > 1 else "?",
               nproc=os.cpu_count(), max_other=args.max_other, summary=summary,
               targets=targets(runs, summary), runs=runs, discarded=discarded)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(res, indent=1, default=str) + "\n")
    if args.json:
        json.dump(res, sys.stdout, indent=1, default=str)
        print()
    else:
        print_report(res)


if __name__ == "__main__":
    main()
