#!/usr/bin/env python3
"""A referee for the CUDA examples' times: a Kernel Tuner CUDA example's kernel timed by neither
tool, through cuda-python alone (NVRTC, the driver API, a CUDA event pair around each launch), for
every configuration the example tunes; beside each, the time Kernel Tuner and ndtune reported for
it in a run of `bench/kt_examples.py --lang cuda`.

Usage: python3 bench/cuda_referee.py KT_EXAMPLES_OUT.json [--example vector_add] [--repo KT_GIT]
                                     [--runs 100] [--rounds 5]

Examples: `vector_add` (3 x 10 M floats), `vector_add_codegen` (the same kernel, its block size
written into the code: the referee gives it as a define, which compiles to the same code) and
`stencil` (4096 x 2048, its `stencil.cu` read from Kernel Tuner's repository, `--repo`). Each
round times every configuration once (`--runs` launches after 10 warm-up ones, each between its
own two events, as both tools time them); the figure of a configuration is the median of its
rounds' medians. Needs an NVIDIA GPU and cuda-python (`cuda.bindings`).
"""
import argparse
import ctypes
import json
import statistics
import subprocess

import numpy as np
from cuda.bindings import driver, nvrtc

VECTOR_ADD = b"""
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i<n) {
        c[i] = a[i] + b[i];
    }
}
"""
SIZE = 10_000_000
VECTOR_ADD_EXAMPLE = {
    "kernel": "vector_add",
    "params": {"block_size_x": [128 + 64 * i for i in range(15)]},
    "problem": (SIZE, 1),
    "arguments": lambda: [np.zeros(SIZE, np.float32)] + [
        np.random.randn(SIZE).astype(np.float32) for _ in range(2)] + [np.int32(SIZE)],
}
EXAMPLES = {
    "vector_add": VECTOR_ADD_EXAMPLE,
    "vector_add_codegen": VECTOR_ADD_EXAMPLE,
    "stencil": {
        "kernel": "stencil_kernel",
        "file": "examples/cuda/stencil.cu",
        "params": {"block_size_x": [32 * i for i in range(1, 9)],
                   "block_size_y": [2 ** i for i in range(6)]},
        "problem": (4096, 2048),
        "arguments": lambda: [np.random.randn(4096 * 2048).astype(np.float32)] * 2,
    },
}


def ok(result):
    """The values of a cuda-python call after its status, which must be success."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if status not in (driver.CUresult.CUDA_SUCCESS, nvrtc.nvrtcResult.NVRTC_SUCCESS):
        raise RuntimeError(f"cuda-python: {status}")
    return values[0] if len(values) == 1 else values


def compile_kernel(source, name, config, arch):
    program = ok(nvrtc.nvrtcCreateProgram(source, b"kernel.cu", 0, [], []))
    ok(nvrtc.nvrtcAddNameExpression(program, name.encode()))
    options = [f"--gpu-architecture=sm_{arch}".encode()] + [
        f"-D{k}={v}".encode() for k, v in config.items()]
    ok(nvrtc.nvrtcCompileProgram(program, len(options), options))
    cubin = b" " * ok(nvrtc.nvrtcGetCUBINSize(program))
    ok(nvrtc.nvrtcGetCUBIN(program, cubin))
    lowered = ok(nvrtc.nvrtcGetLoweredName(program, name.encode()))
    module = ok(driver.cuModuleLoadData(cubin))
    return ok(driver.cuModuleGetFunction(module, lowered))


def configurations(params):
    """Every configuration of `params` (name -> values), in Kernel Tuner's order."""
    configs = [{}]
    for name, values in params.items():
        configs = [{**c, name: v} for c in configs for v in values]
    return configs


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("examples", help="the JSON bench/kt_examples.py --out wrote")
    p.add_argument("--example", default="vector_add", choices=sorted(EXAMPLES))
    p.add_argument("--repo", help="Kernel Tuner's Git repository (for stencil's kernel file)")
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    example = EXAMPLES[args.example]
    if "file" in example:
        source = subprocess.run(["git", "--git-dir", args.repo, "show", f"HEAD:{example['file']}"],
                                check=True, capture_output=True).stdout
    else:
        source = VECTOR_ADD
    ok(driver.cuInit(0))
    device = ok(driver.cuDeviceGet(0))
    ok(driver.cuCtxSetCurrent(ok(driver.cuDevicePrimaryCtxRetain(device))))
    try:
        name = ok(driver.cuDeviceGetName(64, device)).split(b"\0")[0].decode()
    except Exception:  # the binding's signature differs between cuda-python versions
        name = "CUDA device 0"
    major = ok(driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    minor = ok(driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))
    stream = ok(driver.cuStreamCreate(0))
    elapsed = getattr(driver, "cuEventElapsedTime", None) or driver.cuEventElapsedTime_v2
    start, end = ok(driver.cuEventCreate(0)), ok(driver.cuEventCreate(0))
    values, types = [], []
    for arg in example["arguments"]():
        if isinstance(arg, np.ndarray):
            buffer = ok(driver.cuMemAlloc(arg.nbytes))
            ok(driver.cuMemcpyHtoD(buffer, arg, arg.nbytes))
            values.append(buffer)
            types.append(None)
        else:
            values.append(arg)
            types.append(ctypes.c_int)
    params = (tuple(values), tuple(types))
    names = list(example["params"])
    # What launches: no more threads in a block than the device takes (both tools leave the
    # others out, as Kernel Tuner does).
    most = ok(driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device))
    configs = [c for c in configurations(example["params"])
               if c.get("block_size_x", 1) * c.get("block_size_y", 1) <= most]
    key = lambda config: tuple(config[k] for k in names)  # noqa: E731
    functions = {key(c): compile_kernel(source, example["kernel"], c, f"{major}{minor}")
                 for c in configs}

    def launch(config):
        block = [config.get(n, 1) for n in ("block_size_x", "block_size_y")]
        grid = [(size + b - 1) // b for size, b in zip(example["problem"], block)]
        ok(driver.cuLaunchKernel(functions[key(config)], *grid, 1, *block, 1, 0, stream,
                                 params, 0))

    rounds = {key(c): [] for c in configs}
    for _ in range(args.rounds):
        for config in configs:
            for _ in range(10):
                launch(config)
            times = []
            for _ in range(args.runs):
                ok(driver.cuEventRecord(start, stream))
                launch(config)
                ok(driver.cuEventRecord(end, stream))
                ok(driver.cuEventSynchronize(end))
                times.append(ok(elapsed(start, end)))
            rounds[key(config)].append(statistics.median(times))
    ok(driver.cuStreamSynchronize(stream))
    got = json.load(open(args.examples))[args.example]
    reported = {tool: {key(r[0]): r[1] for r in got[tool].get("times") or []}
                for tool in ("kernel_tuner", "ndtune")}
    referee = {c: statistics.median(ms) for c, ms in rounds.items()}
    print(f"{name} (sm_{major}{minor}): {args.example}, ms per launch")
    print(f"{' '.join(names):>26} {'referee':>9} {'ndtune':>9} {'Kernel Tuner':>13}")
    for c in referee:
        nd, kt = reported["ndtune"].get(c), reported["kernel_tuner"].get(c)
        print(f"{str(c):>26} {referee[c]:>9.4f} {nd if nd is None else round(nd, 4)!s:>9} "
              f"{kt if kt is None else round(kt, 4)!s:>13}")
    best = min(referee, key=referee.get)
    picks = {tool: min(times, key=times.get) for tool, times in reported.items() if times}
    print(f"referee's best: {best} ({referee[best]:.4f} ms); " + "; ".join(
        f"{tool}'s best {b}: {referee[b]:.4f} ms by the referee ({referee[b] / referee[best]:.3f}x)"
        for tool, b in picks.items()))
    for tool, times in reported.items():
        if times:
            ratio = statistics.median(times[c] / referee[c] for c in times if c in referee)
            print(f"{tool}: its times / the referee's, median over configurations: {ratio:.3f}")


main()
