"""The Python package on a CUDA GPU (scripts/test-gpu.sh, where the `ndtune` wheel is installed):
Kernel Tuner's `tune_kernel` with a CUDA kernel that reads constant memory (`cmem_args`) and
dynamic shared memory (`smem_args`, a size per configuration), every configuration checked
against `answer`; a second call reuses every result; `run_kernel` and `space` for the same call.
Prints what it saw and exits non-zero with why where something is wrong."""

import os
import sys
import tempfile

import numpy as np

import ndtune

KERNEL = r"""
__constant__ float scale[4];

__global__ void scaled_add(float *c, const float *a, const float *b, int n) {
    extern __shared__ float staged[];
    int i = blockIdx.x * block_size_x + threadIdx.x;
    staged[threadIdx.x] = i < n ? a[i] : 0.0f;
    __syncthreads();
    if (i < n) c[i] = staged[threadIdx.x] * scale[i % 4] + b[i];
}
"""


def main():
    work = tempfile.mkdtemp(prefix="ndtune-python-cuda-")
    os.environ["NDTUNE_PYTHON_DIR"] = work
    n = 1 << 20
    rng = np.random.default_rng(7)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    scale = np.array([1, 2, 3, 4], dtype=np.float32)
    args = [np.zeros_like(a), a, b, np.int32(n)]
    expected = a * np.tile(scale, n // 4) + b
    params = {"block_size_x": [64, 128, 256, 512, 1024]}
    call = dict(smem_args={"size": "block_size_x * 4"}, cmem_args={"scale": scale},
                answer=[expected, None, None, None], db=f"{work}/t.db", quiet=True)

    results, env = ndtune.tune_kernel("scaled_add", KERNEL, n, args, params, **call)
    outcomes = {r["block_size_x"]: r["ndtune_outcome"] for r in results}
    print("first call:", outcomes, "best", min(results, key=lambda r: r["time"])["block_size_x"])
    if set(outcomes.values()) != {"measured"} or len(outcomes) != 5:
        sys.exit(f"every configuration should be measured and right: {outcomes}")
    if env["device_name"] is None or "cuda" not in open(env["spec"]).read():
        sys.exit(f"not tuned as a CUDA kernel: {env['spec']}")

    again, _ = ndtune.tune_kernel("scaled_add", KERNEL, n, args, params, **call)
    built = [r["block_size_x"] for r in again if r["compile_time"] != 0]
    print("second call: compiled again", built)
    if built or len(again) != 5:
        sys.exit(f"a second call should reuse every result: built {built}")

    out = ndtune.run_kernel("scaled_add", KERNEL, n, args, {"block_size_x": 256},
                            smem_args={"size": 1024}, cmem_args={"scale": scale})
    if not np.allclose(out[0], expected):
        sys.exit("run_kernel's output differs from the answer")
    print("run_kernel: right")

    space = ndtune.space("scaled_add", KERNEL, n, args, params, lang="CUDA")
    print("space: pruned", space["pruned"], "of", space["declared"])
    if space["pruned"] != 5:
        sys.exit(f"every block size fits a CUDA GPU: {space}")


if __name__ == "__main__":
    main()
