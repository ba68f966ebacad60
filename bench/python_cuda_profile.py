#!/usr/bin/env python3
"""Where a Python campaign's time goes: Kernel Tuner's vector_add (3 x 10 M floats, 15 block
sizes) through `ndtune.tune_kernel`, the seconds of importing, making the data and tuning, and
the engine's own account (`env["ndtune_report"]["time"]`).

Usage: python3 bench/python_cuda_profile.py STORE.db [--lang cuda|opencl]
(cuda, the default: on a machine with a CUDA GPU; opencl: the same kernel in OpenCL C, on the
first OpenCL device, PoCL here)
"""
import argparse
import time

import numpy as np

t0 = time.perf_counter()
import ndtune as kernel_tuner  # noqa: E402

t_import = time.perf_counter()
KERNELS = {
    "cuda": """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i<n) { c[i] = a[i] + b[i]; }
}
""",
    "opencl": """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n) {
    int i = get_global_id(0);
    if (i<n) { c[i] = a[i] + b[i]; }
}
""",
}
p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("db")
p.add_argument("--lang", choices=sorted(KERNELS), default="cuda")
args = p.parse_args()
size = 10000000
a = np.random.randn(size).astype(np.float32)
b = np.random.randn(size).astype(np.float32)
c = np.zeros_like(b)
n = np.int32(size)
tune_params = {"block_size_x": [128 + 64 * i for i in range(15)]}
t1 = time.perf_counter()
res, env = kernel_tuner.tune_kernel("vector_add", KERNELS[args.lang], size, [c, a, b, n],
                                    tune_params, lang=args.lang, quiet=True, db=args.db)
t2 = time.perf_counter()
print(f"import ndtune {t_import-t0:.2f} s, data {t1-t_import:.2f} s, tune_kernel {t2-t1:.2f} s")
t = env["ndtune_report"]["time"]
print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in t.items()})
