"""Scripts of the three shapes of Kernel Tuner's own OpenCL examples that Kernel Tuner runs on
PoCL (a vector add from a kernel string, the same from a function that generates each
configuration's code, a 2D stencil tuned in x and y), written here, each run in a fresh process
as written for Kernel Tuner 1.5 and with only its import changed to ndtune: the same
configurations, valid in both, the same keys in every result and Kernel Tuner's keys in `env`.
(bench/kt_examples.py runs Kernel Tuner's examples themselves, from its repository.)"""

import json
import subprocess
import sys

import pytest

pytest.importorskip("kernel_tuner")

HEAD = '''
import json
import numpy as np
import {lib} as kernel_tuner
'''

# The vectors both vector adds take.
VECTORS = '''
n = np.int32(50000)
a, b = (np.random.randn(n).astype(np.float32) for _ in range(2))
c = np.zeros_like(b)
'''

TAIL = '''
json.dump({{"results": results, "env": sorted(env)}}, open("run.json", "w"),
          default=lambda o: str(o))
'''

VECTOR_ADD = '''
kernel = """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b,
                         int n) {{
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}}
"""
tune_params = {{"block_size_x": [32 * i for i in range(1, 9)]}}
results, env = kernel_tuner.tune_kernel("vector_add", kernel, int(n), [c, a, b, n], tune_params,
                                        lang="OpenCL", **{options})
'''

CODEGEN = '''
def generate(params):
    return """
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b,
                         int n) {{
    int i = get_local_id(0) + get_group_id(0) * %d;
    if (i < n) c[i] = a[i] + b[i];
}}
""" % params["block_size_x"]

tune_params = {{"block_size_x": [64 * i for i in range(1, 7)]}}
results, env = kernel_tuner.tune_kernel("vector_add", generate, int(n), [c, a, b, n],
                                        tune_params, lang="OpenCL", **{options})
'''

STENCIL = '''
kernel = """
__kernel void stencil(__global float *out, __global const float *in) {{
    int x = get_global_id(0), y = get_global_id(1);
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1)
        out[y * W + x] = 0.25f * (in[y * W + x - 1] + in[y * W + x + 1]
                                  + in[(y - 1) * W + x] + in[(y + 1) * W + x]);
}}
"""
w, h = 256, 128
src = np.random.randn(h, w).astype(np.float32)
dst = np.zeros_like(src)
tune_params = {{"block_size_x": [16, 32, 64], "block_size_y": [1, 2, 4, 8]}}
results, env = kernel_tuner.tune_kernel("stencil", kernel, (w, h), [dst, src], tune_params,
                                        compiler_options=["-DW=%d" % w, "-DH=%d" % h],
                                        restrictions=["block_size_x * block_size_y <= 256"],
                                        lang="OpenCL", **{options})
'''

EXAMPLES = {
    "vector_add": (VECTORS + VECTOR_ADD, ("block_size_x",), 8),
    "vector_add_codegen": (VECTORS + CODEGEN, ("block_size_x",), 6),
    "stencil": (STENCIL, ("block_size_x", "block_size_y"), 11),
}


def run(lib, name, tmp_path, options="{}"):
    where = tmp_path / f"{name}-{lib}"
    where.mkdir()
    body, _, _ = EXAMPLES[name]
    script = where / f"{name}.py"
    script.write_text((HEAD + body + TAIL).format(lib=lib, options=options))
    out = subprocess.run([sys.executable, str(script)], cwd=where, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads((where / "run.json").read_text())


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_an_example_of_kernel_tuner_runs_with_only_its_import_changed(name, tmp_path):
    theirs = run("kernel_tuner", name, tmp_path)
    ours = run("ndtune", name, tmp_path, options='{"db": "ndtune.db"}')
    _, params, count = EXAMPLES[name]
    key = lambda r: tuple(r[p] for p in params)  # noqa: E731
    valid = lambda run: {key(r) for r in run["results"]  # noqa: E731
                         if isinstance(r["time"], (int, float))}
    theirs_by = {key(r): r for r in theirs["results"]}
    ours_by = {key(r): r for r in ours["results"]}
    assert set(ours_by) == set(theirs_by) and len(ours_by) == count
    # Every configuration measured by both (none refused, crashed or wrong).
    assert valid(ours) == valid(theirs) == set(theirs_by)
    for k, t in theirs_by.items():
        assert [f for f in ours_by[k] if f != "ndtune_outcome"] == list(t), k
    assert set(theirs["env"]) <= set(ours["env"])
