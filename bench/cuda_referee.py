#!/usr/bin/env python3
"""A referee for the CUDA examples' times: Kernel Tuner's CUDA `vector_add` (3 x 10 M floats)
timed by neither tool, through cuda-python alone (NVRTC, the driver API, a CUDA event pair around
each launch), for every block size the example tunes; beside each, the time Kernel Tuner and
ndtune reported for it in a run of `bench/kt_examples.py --lang cuda --only vector_add`.

Usage: python3 bench/cuda_referee.py KT_EXAMPLES_OUT.json [--runs 100] [--rounds 5]

Each round times every block size once (`--runs` launches after 10 warm-up ones, each between
its own two events, as both tools time them); the figure of a block size is the median of its
rounds' medians. Needs an NVIDIA GPU and cuda-python (`cuda.bindings`).
"""
import argparse
import ctypes
import json
import statistics

import numpy as np
from cuda.bindings import driver, nvrtc

KERNEL = b"""
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i<n) {
        c[i] = a[i] + b[i];
    }
}
"""
SIZE = 10_000_000
BLOCKS = [128 + 64 * i for i in range(15)]


def ok(result):
    """The values of a cuda-python call after its status, which must be success."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if status not in (driver.CUresult.CUDA_SUCCESS, nvrtc.nvrtcResult.NVRTC_SUCCESS):
        raise RuntimeError(f"cuda-python: {status}")
    return values[0] if len(values) == 1 else values


def compile_kernel(block, arch):
    program = ok(nvrtc.nvrtcCreateProgram(KERNEL, b"vector_add.cu", 0, [], []))
    ok(nvrtc.nvrtcAddNameExpression(program, b"vector_add"))
    options = [f"--gpu-architecture=sm_{arch}".encode(), f"-Dblock_size_x={block}".encode()]
    ok(nvrtc.nvrtcCompileProgram(program, len(options), options))
    cubin = b" " * ok(nvrtc.nvrtcGetCUBINSize(program))
    ok(nvrtc.nvrtcGetCUBIN(program, cubin))
    lowered = ok(nvrtc.nvrtcGetLoweredName(program, b"vector_add"))
    module = ok(driver.cuModuleLoadData(cubin))
    return ok(driver.cuModuleGetFunction(module, lowered))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("examples", help="the JSON bench/kt_examples.py --out wrote")
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
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
    host = [np.zeros(SIZE, np.float32)] + [np.random.randn(SIZE).astype(np.float32)
                                           for _ in range(2)]
    buffers = []
    for array in host:
        buffer = ok(driver.cuMemAlloc(array.nbytes))
        ok(driver.cuMemcpyHtoD(buffer, array, array.nbytes))
        buffers.append(buffer)
    params = (tuple(buffers) + (np.int32(SIZE),), (None, None, None, ctypes.c_int))
    functions = {block: compile_kernel(block, f"{major}{minor}") for block in BLOCKS}

    def launch(block):
        grid = (SIZE + block - 1) // block
        ok(driver.cuLaunchKernel(functions[block], grid, 1, 1, block, 1, 1, 0, stream, params, 0))

    rounds = {block: [] for block in BLOCKS}
    for _ in range(args.rounds):
        for block in BLOCKS:
            for _ in range(10):
                launch(block)
            times = []
            for _ in range(args.runs):
                ok(driver.cuEventRecord(start, stream))
                launch(block)
                ok(driver.cuEventRecord(end, stream))
                ok(driver.cuEventSynchronize(end))
                times.append(ok(elapsed(start, end)))
            rounds[block].append(statistics.median(times))
    ok(driver.cuStreamSynchronize(stream))
    got = json.load(open(args.examples))["vector_add"]
    reported = {tool: {r[0]["block_size_x"]: r[1] for r in got[tool].get("times") or []}
                for tool in ("kernel_tuner", "ndtune")}
    referee = {block: statistics.median(ms) for block, ms in rounds.items()}
    print(f"{name} (sm_{major}{minor}): vector_add of {SIZE} floats, ms per launch")
    print(f"{'block':>6} {'referee':>9} {'ndtune':>9} {'Kernel Tuner':>13}")
    for block in BLOCKS:
        nd, kt = reported["ndtune"].get(block), reported["kernel_tuner"].get(block)
        print(f"{block:>6} {referee[block]:>9.4f} {nd if nd is None else round(nd, 4)!s:>9} "
              f"{kt if kt is None else round(kt, 4)!s:>13}")
    best = min(referee, key=referee.get)
    picks = {tool: min(times, key=times.get) for tool, times in reported.items() if times}
    print(f"referee's best: {best} ({referee[best]:.4f} ms); " + "; ".join(
        f"{tool}'s best {b}: {referee[b]:.4f} ms by the referee ({referee[b] / referee[best]:.3f}x)"
        for tool, b in picks.items()))
    for tool, times in reported.items():
        if times:
            ratio = statistics.median(times[b] / referee[b] for b in times if b in referee)
            print(f"{tool}: its times / the referee's, median over block sizes: {ratio:.3f}")


main()
