"""A Kernel Tuner script as its documentation and examples write it — metrics as functions,
restrictions as strings, grid divisors, an answer, verbose output, the T4 output and metadata
files, `get_config_string` — run twice in a fresh process: as written for Kernel Tuner 1.5 and
with only its import changed to ndtune. Both must give the same configurations, the same keys in
every result and in `env`, and files of the same shape."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("kernel_tuner")

SCRIPT = '''
import json, sys
import numpy as np
import {lib} as kernel_tuner
from {lib}.file_utils import store_output_file, store_metadata_file
from {lib}.util import get_config_string

KERNEL = """
__kernel void matmul(__global float *C, __global const float *A, __global const float *B) {{
    int x = get_global_id(0) * tile_size_x, y = get_global_id(1);
    for (int t = 0; t < tile_size_x; t++) {{
        float sum = 0.0f;
        for (int k = 0; k < N; k++) sum += A[y * N + k] * B[k * N + x + t];
        C[y * N + x + t] = sum;
    }}
}}
"""
n = 64
rng = np.random.default_rng(7)
A = rng.standard_normal((n, n)).astype(np.float32)
B = rng.standard_normal((n, n)).astype(np.float32)
tune_params = dict(block_size_x=[8, 16, 32], block_size_y=[1, 2, 4], tile_size_x=[1, 2, 4])
metrics = dict()
metrics["GFLOP/s"] = lambda p: (2 * n ** 3 / 1e9) / (p["time"] / 1e3)
metrics["us"] = "time * 1000"
results, env = kernel_tuner.tune_kernel(
    "matmul", KERNEL, (n, n), [np.zeros_like(A), A, B], tune_params,
    grid_div_x=["block_size_x", "tile_size_x"], restrictions=["block_size_x * tile_size_x <= 64"],
    answer=[A @ B, None, None], atol=1e-3, metrics=metrics, compiler_options=["-DN=64"],
    iterations=3, verbose=True, lang="OpenCL", **{options})
best = min((r for r in results if "__error__" not in r), key=lambda r: r["time"])
print("best:", get_config_string(best, keys=list(tune_params)))
store_output_file("out.json", results, tune_params)
store_metadata_file("meta.json")
json.dump({{"results": results, "env": sorted(env)}}, open("run.json", "w"),
          default=lambda o: str(o))
'''


def run(lib, tmp_path, options="{}"):
    where = tmp_path / lib
    where.mkdir()
    script = where / "script.py"
    script.write_text(SCRIPT.format(lib=lib, options=options))
    out = subprocess.run([sys.executable, str(script)], cwd=where, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return where, out.stdout


def test_a_kernel_tuner_script_runs_with_only_its_import_changed(tmp_path):
    theirs, their_out = run("kernel_tuner", tmp_path)
    ours, our_out = run("ndtune", tmp_path, options='{"db": "ndtune.db"}')
    their_run = json.loads((theirs / "run.json").read_text())
    our_run = json.loads((ours / "run.json").read_text())
    params = ("block_size_x", "block_size_y", "tile_size_x")
    key = lambda r: tuple(r[p] for p in params)  # noqa: E731
    theirs_by = {key(r): r for r in their_run["results"]}
    ours_by = {key(r): r for r in our_run["results"]}
    assert set(ours_by) == set(theirs_by) and len(ours_by) == 24
    for k, t in theirs_by.items():
        assert [f for f in ours_by[k] if f != "ndtune_outcome"] == list(t)
    assert set(their_run["env"]) <= set(our_run["env"])
    # Both print a line per configuration (verbose) and the best, as the script asks.
    assert our_out.count("block_size_x=") >= 24 and "best: block_size_x=" in our_out
    for name in ("out.json", "meta.json"):
        t4_theirs = json.loads((theirs / name).read_text())
        t4_ours = json.loads((ours / name).read_text())
        assert set(t4_ours) == set(t4_theirs) and t4_ours["schema_version"] == "1.0.0"
    out_theirs = json.loads((theirs / "out.json").read_text())["results"]
    out_ours = json.loads((ours / "out.json").read_text())["results"]
    assert len(out_ours) == len(out_theirs)
    assert set(out_ours[0]) == set(out_theirs[0])
    assert {m["name"] for m in out_ours[0]["measurements"]} == {
        m["name"] for m in out_theirs[0]["measurements"]}
