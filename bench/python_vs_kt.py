"""One Kernel Tuner style script run both ways: Kernel Tuner 1.5's tune_kernel and ndtune's, on
the same device; prints the wall time and the best configuration of each as JSON.

    python bench/python_vs_kt.py [--size N] [--out FILE] [--restriction-function]
                                 [--build-jobs N] [--no-kt] [--wide] [--parallel N]

A matrix multiply with local-memory tiles (block sizes, work per thread, tiles): 2D grid_div and
restrictions as Kernel Tuner scripts write them (`--restriction-function`: as one Python
function, which ndtune calls per configuration). ndtune starts from an empty store each time;
`--build-jobs` is its `build_jobs` (default: its own); `--no-kt` runs ndtune only. `--wide` adds a
padding of the local tiles (4 values: four times the builds); `--parallel N` is Kernel Tuner's
`parallel=N` for ndtune (N identical GPUs; Kernel Tuner's own needs Ray, so with `--no-kt`).
"""

import argparse
import json
import os
import tempfile
import time

import numpy as np

KERNEL = """
#ifndef pad
#define pad 0
#endif
__kernel void matmul(__global float *C, __global const float *A, __global const float *B, int n) {
    __local float As[block_size_y * tile_y][block_size_x + pad];
    __local float Bs[block_size_x][block_size_x * tile_x + pad];
    int tx = get_local_id(0), ty = get_local_id(1);
    int bx = get_group_id(0) * block_size_x * tile_x, by = get_group_id(1) * block_size_y * tile_y;
    float sum[tile_y][tile_x];
    for (int i = 0; i < tile_y; i++) for (int j = 0; j < tile_x; j++) sum[i][j] = 0.0f;
    for (int k = 0; k < n; k += block_size_x) {
        for (int i = 0; i < tile_y; i++)
            As[ty + i * block_size_y][tx] = A[(by + ty + i * block_size_y) * n + k + tx];
        for (int r = ty; r < block_size_x; r += block_size_y)
            for (int j = 0; j < tile_x; j++)
                Bs[r][tx + j * block_size_x] = B[(k + r) * n + bx + tx + j * block_size_x];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < block_size_x; kk++)
            for (int i = 0; i < tile_y; i++)
                for (int j = 0; j < tile_x; j++)
                    sum[i][j] += As[ty + i * block_size_y][kk] * Bs[kk][tx + j * block_size_x];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < tile_y; i++)
        for (int j = 0; j < tile_x; j++)
            C[(by + ty + i * block_size_y) * n + bx + tx + j * block_size_x] = sum[i][j];
}
"""


def call(n, restriction_function=False, wide=False):
    if restriction_function and n % 128:
        raise SystemExit("--restriction-function needs a size divisible by 128")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    args = [np.zeros_like(a), a, b, np.int32(n)]
    tune_params = {
        "block_size_x": [8, 16, 32],
        "block_size_y": [1, 2, 4, 8, 16, 32],
        "tile_x": [1, 2, 4],
        "tile_y": [1, 2, 4],
    }
    if wide:
        tune_params["pad"] = [0, 1, 2, 4]
    options = dict(
        grid_div_x=["block_size_x", "tile_x"],
        grid_div_y=["block_size_y", "tile_y"],
        # Kernel Tuner 1.5 recompiles a restriction function from its source, without its
        # closure: the function cannot name `n`, and needs no term for it where the largest
        # block_size_x * tile_x, 128, divides n.
        restrictions=(
            (lambda p: p["block_size_x"] == p["block_size_y"] * p["tile_y"])
            if restriction_function else
            ["block_size_x == block_size_y * tile_y", f"{n} % (block_size_x * tile_x) == 0"]),
        iterations=7,
        quiet=True,
    )
    return ("matmul", KERNEL, (n, n), args, tune_params), options


def best(results):
    ok = [r for r in results if isinstance(r["time"], float)]
    r = min(ok, key=lambda r: r["time"])
    return {k: r[k] for k in ("block_size_x", "block_size_y", "tile_x", "tile_y")}, r["time"], len(ok)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--out")
    parser.add_argument("--restriction-function", action="store_true")
    parser.add_argument("--build-jobs", type=int)
    parser.add_argument("--no-kt", action="store_true")
    parser.add_argument("--wide", action="store_true")
    parser.add_argument("--parallel", type=int)
    a = parser.parse_args()
    if a.parallel and not a.no_kt:
        parser.error("--parallel needs --no-kt (Kernel Tuner's parallel tuning needs Ray)")
    report = {"size": a.size, "restriction_function": a.restriction_function,
              "build_jobs": a.build_jobs, "wide": a.wide, "parallel": a.parallel}
    positional, options = call(a.size, a.restriction_function, a.wide)
    if not a.no_kt:
        import kernel_tuner
        t = time.perf_counter()
        results, _ = kernel_tuner.tune_kernel(*positional, lang="OpenCL", **options)
        wall = time.perf_counter() - t
        config, ms, n = best(results)
        report["kernel_tuner"] = {"wall_s": wall, "best": config, "best_ms": ms, "measured": n}
    if a.build_jobs is not None:
        options["build_jobs"] = a.build_jobs
    if a.parallel:
        options["parallel"] = a.parallel
    import ndtune
    with tempfile.TemporaryDirectory() as d:
        os.environ["NDTUNE_PYTHON_DIR"] = os.path.join(d, "specs")
        t = time.perf_counter()
        results, env = ndtune.tune_kernel(*positional, db=os.path.join(d, "ndtune.db"), **options)
        wall = time.perf_counter() - t
    config, ms, n = best(results)
    report["ndtune"] = {"wall_s": wall, "best": config, "best_ms": ms, "measured": n,
                        "time": env["ndtune_report"]["time"], "pool": env["ndtune_pool"]}
    report["device"] = env["device_name"]
    text = json.dumps(report, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
