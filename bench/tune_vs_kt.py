#!/usr/bin/env python3
"""Tuning benchmark: ndtune vs Kernel Tuner 1.5 (PyOpenCL backend; for a CUDA spec its default CUDA
backend, cuda-python), same spec, space and device.

Usage: PYTHON bench/tune_vs_kt.py [--spec SPEC] [--nd-device SEL] [--platform NAME] [--repeat R]
                                  [--build-jobs N] [--nd-args ARGS] [--json-out F] [--keep DIR]
                                  [--ndtune BIN] [--max-other F] [--retries N] [--modes cold,warm]
(PYTHON: a Python with kernel_tuner, pyopencl and numpy; bench/tune.sh sets one up here, the GPU
machine gets them as wheels: see BENCHMARKS.md.)

Both tools tune the same configurations: the spec's space as `ndtune space SPEC --device SEL
--list --json` prunes it for the device, given to Kernel Tuner as its tune_params with a
restriction to exactly those. Same problem (the spec's constants as `-D` options, random inputs in
[-1, 1), KT's answer a numpy float64 reference of the spec's `builtin:` reference with the spec's
atol), same launch geometry (PROBLEMS below maps the spec's [launch] to KT's problem_size and
grid_div), 10 timed runs per configuration. ndtune verifies against its built-in reference.

Each run is a fresh child process timed from spawning it to its exit (process start, imports,
data and reference included). Cold runs clear the driver caches first (PoCL's kernel cache,
NVIDIA's compute cache, PyOpenCL's and ndtune's binary caches); a warm run follows a run of the same tool with
the caches kept. Per repeat: cold + warm of one tool, then of the other, the order alternating;
medians over repeats. A run during which other processes used more than --max-other of all cores'
time is repeated (at most --retries times). Scores are compared like for like: ndtune's score is
the mean of the best 5 of 10 runs, and so is the figure computed from KT's `times`. Where the
device is noisy from process to process (PoCL), a score from one process says little about a
configuration measured in another, so at the end a referee (Kernel Tuner, --referee-rounds rounds
in one process) measures every best configuration either tool chose, and judges them side by side.

"Overhead per configuration" is each tool's time per configuration in neither builds nor kernel
launches: ndtune's `overhead_ms_per_config`; for KT its framework_time + strategy_time +
verification_time less the verification launch (timed by wrapping DeviceInterface.run_kernel).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NDTUNE = ROOT / "target/release/ndtune"
RUNS = 10
BEST_OF = 5
SEED = 1


def conv1d(a, c):
    import numpy as np
    return {"out": np.correlate(a["in"].astype(np.float64), a["mask"].astype(np.float64), "valid")}


def conv2d(a, c):
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view
    w, h, fw, fh = c["W"], c["H"], c["FW"], c["FH"]
    image = a["in"].astype(np.float64).reshape(h + fh - 1, w + fw - 1)
    f = a["filter"].astype(np.float64).reshape(fh, fw)
    return {"out": np.einsum("yxij,ij->yx", sliding_window_view(image, (fh, fw)), f).reshape(-1)}


def matmul(a, c):
    import numpy as np
    n = c["N"]
    A = a["A"].astype(np.float64).reshape(n, n)
    B = a["B"].astype(np.float64).reshape(n, n)
    return {"C": (A @ B).reshape(-1)}


# Per built-in reference: the reference itself, and KT's launch geometry for the example specs
# (KT launches global = ceil(problem_size / grid_div) * block).
PROBLEMS = {
    "builtin:conv1d": dict(reference=conv1d, problem_size=lambda c: c["N"],
                           block_size_names=["WG"], grid_div_x=["WG"], grid_div_y=None),
    "builtin:matmul": dict(reference=matmul, problem_size=lambda c: (c["N"], c["N"]),
                           block_size_names=["TS", "RTS"], grid_div_x=["TS"], grid_div_y=["TS"]),
    "builtin:conv2d": dict(reference=conv2d, problem_size=lambda c: (c["W"], c["H"]),
                           block_size_names=["BX", "BY"], grid_div_x=["BX", "TX"], grid_div_y=["BY", "TY"]),
}


def load_spec(path):
    raw = tomllib.loads(Path(path).read_text())
    consts = {k: int(v) for k, v in raw.get("constants", {}).items()}
    return raw, consts


def cache_dirs():
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    pocl = Path(os.environ["POCL_CACHE_DIR"]) if os.environ.get("POCL_CACHE_DIR") else xdg / "pocl/kcache"
    ndtune = Path(os.environ["NDTUNE_CACHE_DIR"]) if os.environ.get("NDTUNE_CACHE_DIR") else xdg / "ndtune"
    return [pocl, xdg / "pyopencl", Path.home() / ".nv/ComputeCache", ndtune / "programs"]


def clear_caches():
    for d in cache_dirs():
        shutil.rmtree(d, ignore_errors=True)


def cpu_busy_s():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def run_child(cmd, stdout_path):
    """Runs cmd; its wall s, its CPU s, and the CPU s everything else used meanwhile."""
    busy0 = cpu_busy_s()
    start = time.perf_counter()
    with open(stdout_path, "w") as out:
        p = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code:
        sys.exit(f"{' '.join(map(str, cmd))}: exit status {code}\n{err.decode(errors='replace')}")
    cpu = usage.ru_utime + usage.ru_stime
    return dict(wall_s=wall, cpu_s=cpu, other_cpu_s=max(cpu_busy_s() - busy0 - cpu, 0.0))


def best_of(times):
    s = sorted(times)[:BEST_OF]
    return sum(s) / len(s)


def key(config, names):
    return ",".join(f"{n}={config[n]}" for n in names)


# ---------------------------------------------------------------- ndtune

def run_ndtune(a, tmp, label):
    db = Path(tmp) / f"{label}.db"
    out = Path(tmp) / f"{label}.json"
    cmd = [a.ndtune, "tune", a.spec, "--device", a.nd_device, "--db", db, "--json", "--seed", SEED]
    if a.build_jobs:
        cmd += ["--build-jobs", a.build_jobs]
    cmd += a.nd_args.split()
    r = run_child(cmd, out)
    report = json.loads(out.read_text())
    d = report["devices"][0]
    t = d["time"]
    measured = subprocess.run([a.ndtune, "export", "--db", db, "--format", "kt", "--out", Path(tmp) / f"{label}.kt.json"],
                              capture_output=True, text=True)
    cache = json.loads((Path(tmp) / f"{label}.kt.json").read_text()) if measured.returncode == 0 else {"cache": {}}
    names = a.names
    scores = {}
    for entry in cache["cache"].values():
        if isinstance(entry.get("time"), (int, float)) and entry.get("times"):
            scores[key(entry, names)] = best_of(entry["times"])
    r.update(tool="ndtune", best_config=key(d["best"]["config"], names), best_ms=d["best"]["time_ms"],
             outcomes={k: v for k, v in d["outcomes"].items() if v and k != "pruned"},
             time=t, build_s=t["build_s"], overhead_ms_per_config=t["overhead_ms_per_config"],
             above_queried_work_group=d.get("above_queried_work_group"), scores=scores,
             wall=report.get("time"), raced=t.get("raced"), runs_spared=t.get("runs_spared"),
             # What ndtune's own account leaves out: process exit (and printing the report).
             unaccounted_s=r["wall_s"] - report["time"]["wall_s"] if "time" in report else None)
    return r


# ---------------------------------------------------------------- Kernel Tuner

def kt_problem(spec):
    """What Kernel Tuner gets for a spec: the spec, its constants, its PROBLEMS entry, the
    arguments (random inputs in [-1, 1) from SEED, zeroed outputs) and the answer (the
    reference's outputs as float32, None for the other arguments)."""
    import numpy as np
    raw, consts = load_spec(spec)
    problem = PROBLEMS[raw["verify"]["reference"]]
    rng = np.random.default_rng(SEED)
    arrays, args = {}, []
    for arg in raw["args"]:
        n = int(eval(str(arg["len"]), {}, dict(consts)))
        x = (rng.random(n) * 2 - 1).astype(np.float32) if arg.get("init") == "random" else np.zeros(n, np.float32)
        arrays[arg["name"]] = x
        args.append(x)
    expected = problem["reference"](arrays, consts)
    answer = [expected[arg["name"]].astype(np.float32) if arg["name"] in expected else None for arg in raw["args"]]
    return raw, consts, problem, args, answer


def kt_child(a):
    """Inside a fresh interpreter: imports, data, reference, tune_kernel; writes JSON."""
    t0 = time.perf_counter()
    import kernel_tuner
    import kernel_tuner.core
    raw, consts, problem, args, answer = kt_problem(a.spec)
    # A CUDA spec (a .cu source, or `language = "cuda"`) through Kernel Tuner's default CUDA
    # backend (cuda-python's NVRTC), on the first CUDA device.
    cuda = (raw["kernel"].get("language", "").lower() == "cuda"
            or str(raw["kernel"]["source"]).endswith((".cu", ".cuh")))
    space = json.loads(Path(a.space).read_text())
    names = list(space[0].keys())
    valid = {tuple(c[n] for n in names) for c in space}
    tune_params = {n: sorted({c[n] for c in space}) for n in names}
    if cuda:
        platform = 0
    else:
        import pyopencl as cl
        platform = next(i for i, p in enumerate(cl.get_platforms())
                        if a.platform.lower() in p.name.lower())

    def restrict(p):  # a def, not a lambda: KT rewrites lambdas into expressions
        # KT passes the configuration as a dict, or the value itself for a single parameter.
        return (tuple(p[n] for n in names) if isinstance(p, dict) else (p,)) in valid

    verif_launch_ms = {}
    original = kernel_tuner.core.DeviceInterface.run_kernel

    def timed_run_kernel(self, func, gpu_args, instance):
        started = time.perf_counter()
        ok = original(self, func, gpu_args, instance)
        self.dev.synchronize()
        verif_launch_ms[key(instance.params, names)] = (time.perf_counter() - started) * 1e3
        return ok

    kernel_tuner.core.DeviceInterface.run_kernel = timed_run_kernel
    t1 = time.perf_counter()
    options = [f"-D{k}={v}" for k, v in consts.items()] + raw["kernel"].get("build_options", [])
    configs = []
    # The referee tunes its few candidates round after round in this one process.
    for round_ in range(a.kt_rounds):
        results, env = kernel_tuner.tune_kernel(
            raw["kernel"]["name"], (Path(a.spec).parent / raw["kernel"]["source"]).read_text(),
            problem_size=problem["problem_size"](consts), arguments=args, tune_params=tune_params,
            restrictions=[restrict],
            block_size_names=problem["block_size_names"], grid_div_x=problem["grid_div_x"],
            grid_div_y=problem["grid_div_y"], lang="CUDA" if cuda else "OpenCL",
            compiler_options=options,
            iterations=RUNS, answer=answer, atol=raw["verify"].get("atol", 1e-6), verbose=False,
            quiet=True, platform=platform, device=0)
        for r in results:
            err = r.get("__error__")
            k = key(r, names)
            configs.append(dict(config=k, round=round_, error=None if err is None else type(err).__name__,
                                times_ms=[float(x) for x in r.get("times", [])],
                                compile_ms=r.get("compile_time"), verification_ms=r.get("verification_time"),
                                benchmark_ms=r.get("benchmark_time"), framework_ms=r.get("framework_time"),
                                strategy_ms=r.get("strategy_time"), verif_launch_ms=verif_launch_ms.get(k)))
    t2 = time.perf_counter()
    json.dump(dict(setup_s=t1 - t0, tune_s=t2 - t1, device=env.get("device_name"), configs=configs),
              open(a.kt_child, "w"))


def run_kt(a, tmp, label):
    out = Path(tmp) / f"{label}.json"
    r = run_child([sys.executable, Path(__file__).resolve(), "--kt-child", out, "--spec", a.spec,
                   "--space", a.space, "--platform", a.platform], Path(tmp) / f"{label}.stdout")
    d = json.loads(out.read_text())
    ok = [c for c in d["configs"] if c["error"] is None and len(c["times_ms"]) == RUNS]
    for c in ok:
        c["best5_ms"] = best_of(c["times_ms"])
    best = min(ok, key=lambda c: c["best5_ms"])
    s = {k: sum(c[k] or 0 for c in ok) / 1e3 for k in
         ("compile_ms", "verification_ms", "benchmark_ms", "framework_ms", "strategy_ms", "verif_launch_ms")}
    errors = {}
    for c in d["configs"]:
        if c["error"]:
            errors[c["error"]] = errors.get(c["error"], 0) + 1
    r.update(tool="kernel_tuner", device=d["device"], best_config=best["config"], best_ms=best["best5_ms"],
             outcomes=dict(measured=len(ok), **errors), build_s=s["compile_ms"], sums_s=s,
             setup_s=d["setup_s"], tune_s=d["tune_s"],
             overhead_ms_per_config=(s["framework_ms"] + s["strategy_ms"] + s["verification_ms"]
                                     - s["verif_launch_ms"]) * 1e3 / len(ok),
             scores={c["config"]: c["best5_ms"] for c in ok})
    return r


def referee(a, tmp, runs):
    """Every best configuration either tool chose, measured again side by side by a neutral
    judge: Kernel Tuner tuning only those, --referee-rounds times in one fresh process (so the
    process-to-process noise of a CPU device, up to 40% on PoCL, cannot decide which is faster).
    Returns each candidate's median score over the rounds."""
    by_key = {key(c, a.names): c for c in json.loads(Path(a.space).read_text())}
    candidates = sorted({r["best_config"] for r in runs})
    space = Path(tmp) / "referee-space.json"
    space.write_text(json.dumps([by_key[k] for k in candidates]))
    out = Path(tmp) / "referee.json"
    run_child([sys.executable, Path(__file__).resolve(), "--kt-child", out, "--spec", a.spec,
               "--space", space, "--platform", a.platform, "--kt-rounds", a.referee_rounds],
              Path(tmp) / "referee.stdout")
    scores = {}
    for c in json.loads(out.read_text())["configs"]:
        if c["error"] is None and len(c["times_ms"]) == RUNS:
            scores.setdefault(c["config"], []).append(best_of(c["times_ms"]))
    return {k: med(v) for k, v in scores.items()}


# ---------------------------------------------------------------- campaign and report

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default=str(ROOT / "examples/conv1d.toml"))
    ap.add_argument("--nd-device", default="0", help="ndtune's device selector (default 0)")
    ap.add_argument("--platform", default="", help="part of the OpenCL platform name for KT (default: the first)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build-jobs", help="ndtune --build-jobs (default: ndtune's)")
    ap.add_argument("--nd-args", default="", help="more arguments of ndtune tune, e.g. '--race off'")
    ap.add_argument("--modes", default="cold,warm")
    ap.add_argument("--max-other", type=float, default=0.05)
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--json-out")
    ap.add_argument("--keep")
    ap.add_argument("--ndtune", default=str(NDTUNE))
    ap.add_argument("--referee-rounds", type=int, default=7,
                    help="rounds of the referee that measures both tools' bests in one process (0: none)")
    ap.add_argument("--kt-child", help=argparse.SUPPRESS)
    ap.add_argument("--kt-rounds", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--space", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.kt_child:
        return kt_child(a)
    tmp = a.keep or tempfile.mkdtemp(prefix="tune_vs_kt.")
    Path(tmp).mkdir(parents=True, exist_ok=True)
    listed = subprocess.run([a.ndtune, "space", a.spec, "--device", a.nd_device, "--list", "--json"],
                            check=True, capture_output=True, text=True).stdout
    space = [json.loads(line) for line in listed.splitlines() if line.strip()]
    a.space = str(Path(tmp) / "space.json")
    Path(a.space).write_text(json.dumps(space))
    a.names = list(space[0].keys())
    modes = a.modes.split(",")
    runs, discarded = [], 0
    cores = os.cpu_count() or 1
    for rep in range(a.repeat):
        for tool in (["ndtune", "kernel_tuner"] if rep % 2 == 0 else ["kernel_tuner", "ndtune"]):
            for attempt in range(a.retries + 1):
                pair = []
                for mode in modes:
                    if mode == "cold":
                        clear_caches()
                    label = f"{tool}-{rep}-{mode}-{attempt}"
                    r = (run_ndtune if tool == "ndtune" else run_kt)(a, tmp, label)
                    r.update(repeat=rep, mode=mode, disturbed=r["other_cpu_s"] > a.max_other * r["wall_s"] * cores)
                    extra = (f", raced {r['raced']} ({r['runs_spared']} runs spared), outside ndtune's account "
                             f"{r['unaccounted_s']:.2f} s" if tool == "ndtune" and r.get("unaccounted_s") is not None else "")
                    print(f"[{rep + 1}/{a.repeat}] {tool:12} {mode}: wall {r['wall_s']:7.2f} s, build {r['build_s']:7.2f} s, "
                          f"overhead {r['overhead_ms_per_config']:6.2f} ms/config, best {r['best_config']} "
                          f"{r['best_ms']:.4f} ms, {r['outcomes']}{extra}{' (disturbed)' if r['disturbed'] else ''}",
                          file=sys.stderr, flush=True)
                    pair.append(r)
                if not any(r["disturbed"] for r in pair) or attempt == a.retries:
                    runs += pair
                    break
                discarded += 1
    summary = {}
    for tool in ("ndtune", "kernel_tuner"):
        mine = [r for r in runs if r["tool"] == tool]
        summary[tool] = {f"{m}_{f}": med([r[f] for r in mine if r["mode"] == m])
                         for m in modes for f in ("wall_s", "build_s", "overhead_ms_per_config")}
        summary[tool]["best_ms"] = med([r["best_ms"] for r in mine])
        summary[tool]["best_configs"] = sorted({r["best_config"] for r in mine})
        summary[tool]["outcomes"] = mine[-1]["outcomes"]
    nd, kt = summary["ndtune"], summary["kernel_tuner"]
    last_nd = [r for r in runs if r["tool"] == "ndtune"][-1]
    last_kt = [r for r in runs if r["tool"] == "kernel_tuner"][-1]
    missing = sorted(set(last_kt["scores"]) - set(last_nd["scores"]))
    # ndtune's best as KT measured it, against KT's best (same runs of KT).
    chosen = [kt_r["scores"].get(nd_r["best_config"], float("nan")) / kt_r["best_ms"] - 1
              for nd_r, kt_r in zip([r for r in runs if r["tool"] == "ndtune"], [r for r in runs if r["tool"] == "kernel_tuner"])]
    res = dict(spec=a.spec, device=last_kt.get("device"), configs=len(space), names=a.names, repeat=a.repeat,
               build_jobs=a.build_jobs, summary=summary, discarded=discarded,
               ratios={m: nd[f"{m}_wall_s"] / kt[f"{m}_wall_s"] for m in modes},
               measured_by_kt_not_ndtune=missing, ndtune_best_as_kt_measured_rel=med(chosen),
               best_rel=nd["best_ms"] / kt["best_ms"] - 1, runs=runs)
    if a.referee_rounds:
        judged = referee(a, tmp, runs)
        nd_bests = sorted(nd["best_configs"], key=lambda k: judged.get(k, float("inf")))
        kt_bests = sorted(kt["best_configs"], key=lambda k: judged.get(k, float("inf")))
        res["referee"] = dict(rounds=a.referee_rounds, scores_ms=judged,
                              # Each tool's choices, median over its runs, as the referee scored them.
                              ndtune_ms=med([judged.get(r["best_config"]) for r in runs if r["tool"] == "ndtune"]),
                              kernel_tuner_ms=med([judged.get(r["best_config"]) for r in runs if r["tool"] == "kernel_tuner"]),
                              ndtune_bests=nd_bests, kernel_tuner_bests=kt_bests)
        res["referee"]["rel"] = res["referee"]["ndtune_ms"] / res["referee"]["kernel_tuner_ms"] - 1
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(f"# {res['device']}: {Path(a.spec).name}, {len(space)} configurations, medians of {a.repeat}")
    print(f"{'tool':12} " + " ".join(f"{m + ' wall s':>12} {m + ' build s':>12} {m + ' ovh ms':>10}" for m in modes)
          + f" {'best ms':>9}  best configuration(s)")
    for tool in ("ndtune", "kernel_tuner"):
        x = summary[tool]
        print(f"{tool:12} " + " ".join(f"{x[f'{m}_wall_s']:12.2f} {x[f'{m}_build_s']:12.2f} "
                                       f"{x[f'{m}_overhead_ms_per_config']:10.2f}" for m in modes)
              + f" {x['best_ms']:9.4f}  {'; '.join(x['best_configs'])}  {x['outcomes']}")
    print("ndtune / KT wall: " + ", ".join(f"{m} {v:.3f}x" for m, v in res["ratios"].items()))
    print(f"best: ndtune {res['best_rel'] * 100:+.1f}% vs KT's best; ndtune's choice as KT measured it "
          f"{res['ndtune_best_as_kt_measured_rel'] * 100:+.1f}%")
    if "referee" in res:
        ref = res["referee"]
        print(f"referee (Kernel Tuner, {ref['rounds']} rounds in one process): ndtune's bests "
              f"{ref['ndtune_ms']:.4f} ms, KT's bests {ref['kernel_tuner_ms']:.4f} ms ({ref['rel'] * 100:+.1f}%); "
              + "; ".join(f"{k} {v:.4f}" for k, v in sorted(ref["scores_ms"].items(), key=lambda kv: kv[1])))
    print(f"measured by KT but not by ndtune: {len(missing)} {missing[:5]}; disturbed runs repeated: {discarded}")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
