#!/usr/bin/env python3
"""Where a program's time goes on an OpenCL driver: build from source, fetch its binary, load the
binary (clCreateProgramWithBinary + clBuildProgram), create the kernel, first launch — each timed
per configuration of examples/sgemm.toml, with the GPU idle and while it runs kernels, on one
thread and on several.

Usage: PYTHON bench/program_load.py [--platform NVIDIA] [--n 2048] [--limit 40] [--threads 4]
(PYTHON: a Python with pyopencl and numpy.) Prints one line per phase: count, total, median, max.
Clear the driver's caches first (e.g. rm -rf ~/.nv/ComputeCache) for a cold first phase.
"""
import argparse
import itertools
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("PYOPENCL_NO_CACHE", "1")
import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402

SOURCE = (Path(__file__).resolve().parent.parent / "examples/sgemm.cl").read_text()


def configs(n):
    out = []
    for ts, rts, pad, unroll in itertools.product([8, 16, 32, 64], [1, 2, 4, 8, 16, 32], [0, 1], [1, 8, 32]):
        if ts % rts or n % ts or ts * rts > 1024:
            continue
        out.append((ts, rts, pad, unroll))
    return out


def options(c, n):
    ts, rts, pad, unroll = c
    return f"-DN={n} -DTS={ts} -DRTS={rts} -DPAD={pad} -DUNROLL={unroll}"


def build(program, c, n):
    program._build(options=options(c, n).encode(), devices=None)
    return program


def report(name, times):
    if not times:
        print(f"{name:44s} none")
        return
    ms = [t * 1e3 for t in times]
    print(f"{name:44s} n={len(ms):3d} total {sum(ms) / 1e3:7.2f} s  median {statistics.median(ms):7.2f} ms  max {max(ms):7.2f} ms",
          flush=True)


def timed(f):
    t = time.perf_counter()
    r = f()
    return r, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--platform", default="NVIDIA")
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()
    plat = next(p for p in cl.get_platforms() if a.platform.lower() in p.name.lower())
    dev = plat.get_devices()[0]
    print(f"# {dev.name} ({plat.name}, {dev.driver_version})", flush=True)
    cs = configs(a.n)[: a.limit]
    # Largest tiles and unrolls are the heaviest builds: take a spread.
    t0 = time.perf_counter()
    ctx = cl.Context([dev])
    print(f"context: {time.perf_counter() - t0:.3f} s", flush=True)

    built, t_src = {}, []
    for c in cs:
        p, t = timed(lambda: build(cl._cl._Program(ctx, SOURCE), c, a.n))
        t_src.append(t)
    report("1 source build (cold cache), serial", t_src)
    t_bin = []
    for c in cs:
        p = build(cl._cl._Program(ctx, SOURCE), c, a.n)
        b, t = timed(lambda: p.get_info(cl.program_info.BINARIES)[0])
        built[c] = b
        t_bin.append(t)
    report("2 source build again + get binary (binary only timed)", t_bin)
    print(f"   binary sizes: median {statistics.median(len(b) for b in built.values())} bytes; "
          f"starts {built[cs[0]][:40]!r}", flush=True)

    def load(context, c):
        return build(cl._cl._Program(context, [dev], [built[c]]), c, a.n)

    ctx2 = cl.Context([dev])
    loads, kernels, firsts = [], [], []
    n = a.n
    A = cl.Buffer(ctx2, cl.mem_flags.READ_WRITE, n * n * 4)
    B = cl.Buffer(ctx2, cl.mem_flags.READ_WRITE, n * n * 4)
    C = cl.Buffer(ctx2, cl.mem_flags.READ_WRITE, n * n * 4)
    q = cl.CommandQueue(ctx2, dev)
    progs = {}
    for c in cs:
        p, t = timed(lambda: load(ctx2, c))
        loads.append(t)
        progs[c] = p
    report("3 binary load, idle GPU, fresh context", loads)
    for c in cs:
        k, t = timed(lambda: cl._cl.Kernel(progs[c], "sgemm"))
        kernels.append(t)
        ts, rts = c[0], c[1]
        k.set_args(A, B, C)

        def first():
            cl.enqueue_nd_range_kernel(q, k, (n, n // ts * rts), (ts, rts))
            q.finish()
        _, t = timed(first)
        firsts.append(t)
    report("4 create kernel", kernels)
    report("5 first launch + finish", firsts)
    del progs

    # Loads while the GPU runs kernels of an already loaded program (as a measurement worker does).
    ctx3 = cl.Context([dev])
    q3 = cl.CommandQueue(ctx3, dev)
    A3, B3, C3 = (cl.Buffer(ctx3, cl.mem_flags.READ_WRITE, n * n * 4) for _ in range(3))
    slow = cs[0]
    kp = load(ctx3, slow)
    kk = cl._cl.Kernel(kp, "sgemm")
    kk.set_args(A3, B3, C3)
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            for _ in range(4):
                cl.enqueue_nd_range_kernel(q3, kk, (n, n // slow[0] * slow[1]), (slow[0], slow[1]))
            q3.finish()
    th = threading.Thread(target=busy)
    th.start()
    time.sleep(0.2)
    busy_loads = [timed(lambda: load(ctx3, c))[1] for c in cs]
    stop.set()
    th.join()
    report("6 binary load while the GPU runs kernels", busy_loads)

    ctx4 = cl.Context([dev])
    with ThreadPoolExecutor(a.threads) as ex:
        t = time.perf_counter()
        par = list(ex.map(lambda c: timed(lambda: load(ctx4, c))[1], cs))
        wall = time.perf_counter() - t
    report(f"7 binary load on {a.threads} threads (each)", par)
    print(f"   wall {wall:.2f} s", flush=True)

    ctx5 = cl.Context([dev])
    again = [timed(lambda: build(cl._cl._Program(ctx5, SOURCE), c, a.n))[1] for c in cs]
    report("8 source build, warm driver cache", again)


if __name__ == "__main__":
    main()
