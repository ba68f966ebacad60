"""tune_kernel as a Kernel Tuner user calls it, on PoCL with real kernels."""

import json
import os
import re
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

import ndtune
from ndtune import tune_kernel
from kernels import SCALE_2D, SCALE_OPTIONS, SCALE_PARAMS, VECTOR_ADD, scale_args, vector_add_args


def test_vector_add_kernel_tuner_style_and_a_rerun_reuses():
    params = {"block_size_x": [16, 32, 64, 128]}
    results, env = tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params,
                               iterations=5, quiet=True)
    assert sorted(r["block_size_x"] for r in results) == [16, 32, 64, 128]
    for r in results:
        assert r["ndtune_outcome"] == "measured"
        assert len(r["times"]) == 5
        assert r["time"] == pytest.approx(np.mean(r["times"]))
        assert r["time"] > 0
    assert env["kernel_name"] == "vector_add"
    assert env["device_name"] == ndtune.devices()[0]["name"]
    assert env["ndtune_report"]["evaluated"] == 4
    assert env["ndtune_pool"] is None
    again, env2 = tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params,
                              iterations=5, quiet=True)
    # Everything came from the store: the same runs, nothing measured again.
    assert env2["ndtune_report"]["evaluated"] == 0
    assert {r["block_size_x"]: r["times"] for r in again} == {
        r["block_size_x"]: r["times"] for r in results}


def test_other_data_is_another_campaign():
    params = {"block_size_x": [32, 64]}
    tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params, quiet=True)
    args = vector_add_args()
    args[1][0] += 1.0
    _, env = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, quiet=True)
    assert env["ndtune_report"]["evaluated"] == 2


# A reduction's last stage, as Kernel Tuner's reduction example tunes it: one work-group
# (`grid_div_x=[]`, the problem size a number of work-groups), fewer than the CPU's compute units.
ONE_GROUP_SUM = """
__kernel void sum_floats(__global float *out, __global const float *in, int n) {
    __local float part[block_size_x];
    float s = 0.0f;
    for (int i = get_local_id(0); i < n; i += block_size_x) s += in[i];
    part[get_local_id(0)] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        float t = 0.0f;
        for (int i = 0; i < block_size_x; i++) t += part[i];
        out[get_group_id(0)] = t;
    }
}
"""


def test_a_single_work_group_is_measured_as_kernel_tuner_measures_it():
    x = np.arange(1000, dtype=np.float32) / 1000
    args = [np.zeros(1, dtype=np.float32), x, np.int32(x.size)]
    params = {"block_size_x": [16, 32, 64], "num_blocks": [1]}
    results, env = tune_kernel("sum_floats", ONE_GROUP_SUM, "num_blocks", args, params,
                               grid_div_x=[], answer=[np.array([x.sum()], dtype=np.float32), None, None],
                               atol=1e-2, quiet=True)
    assert sorted(r["block_size_x"] for r in results) == [16, 32, 64]
    assert all(r["ndtune_outcome"] == "measured" for r in results), results
    assert env["ndtune_report"]["outcomes"]["pruned"] == 0


def test_2d_grid_div_and_restrictions():
    results, env = tune_kernel("scale", SCALE_2D, (96, 40), scale_args(), SCALE_PARAMS,
                               quiet=True, **SCALE_OPTIONS)
    expected = {(x, y, t) for x in SCALE_PARAMS["block_size_x"]
                for y in SCALE_PARAMS["block_size_y"] for t in SCALE_PARAMS["tile_x"]
                if x * y <= 64}
    # In the space's order, as Kernel Tuner's brute force gives them (ndtune measured them in
    # a scattered one).
    in_order = [(r["block_size_x"], r["block_size_y"], r["tile_x"]) for r in results]
    assert in_order == sorted(expected)
    assert all(r["ndtune_outcome"] == "measured" for r in results)
    spec = open(env["spec"]).read()
    # Kernel Tuner's grid: ceil(size / divisor) work-groups of the block size, per dimension.
    assert (
        '"((96) + ((block_size_x) * (tile_x)) - 1) // ((block_size_x) * (tile_x)) * block_size_x"'
        in spec)
    assert '"((40) + ((block_size_y)) - 1) // ((block_size_y)) * block_size_y"'  in spec


def test_cache_written_in_kernel_tuner_format_and_continued(own_directory):
    params = {"block_size_x": [32, 64, 128]}
    first, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params,
                           cache="vadd", quiet=True)
    with open("vadd.json") as f:
        text = f.read()
    assert text.endswith("}\n}")
    cache = json.loads(text)
    assert cache["kernel_name"] == "vector_add"
    assert cache["tune_params_keys"] == ["block_size_x"]
    assert sorted(cache["cache"]) == ["128", "32", "64"]
    for r in first:
        entry = cache["cache"][str(r["block_size_x"])]
        assert entry["times"] == r["times"]
        assert entry["time"] == pytest.approx(r["time"])
    # A fresh store continues from the cache: nothing is measured again.
    again, env = tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params,
                             cache="vadd.json", db="other.db", quiet=True)
    assert env["ndtune_report"]["evaluated"] == 0
    assert {r["block_size_x"]: r["times"] for r in again} == {
        r["block_size_x"]: r["times"] for r in first}
    ndtune_bin = os.environ.get("NDTUNE_BIN")
    if ndtune_bin:
        replay = subprocess.run([ndtune_bin, "tune", "--replay", "vadd.json", "--json"],
                                capture_output=True, text=True, check=True)
        assert "vector_add" in replay.stdout


def test_a_cache_of_another_kernel_is_refused():
    params = {"block_size_x": [32, 64]}
    tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params, cache="c.json",
                quiet=True)
    with pytest.raises(ndtune.StoreError, match="kernel_name"):
        tune_kernel("vector_add2", VECTOR_ADD.replace("vector_add", "vector_add2"), 4096,
                    vector_add_args(), params, cache="c.json", quiet=True)


@pytest.mark.parametrize("given, named", [
    (dict(lang="HIP"), "lang='HIP'"),
    (dict(answer=[None, None, None, None]), "answer checks no argument"),
    (dict(answer=[np.zeros(3, np.float32), None, None, None]), "answer[0]"),
    (dict(observers=[object()]), "observers"),
    (dict(strategy="pso"), "strategy='pso'"),
    (dict(strategy="random_sample", strategy_options={"fraction": 0.1}), "fraction"),
    (dict(verify=lambda answer, result, atol: True, answer=[None, None, None, None]),
     "verify checks no argument"),
    (dict(verify="allclose"), "verify must be a function"),
    (dict(restrictions=[3]), "restrictions"),
    (dict(defines=["X"]), "defines"),
    (dict(metrics={"GFLOP/s": 3}), "must be a string or a function of the result"),
    (dict(texmem_args={"tex": np.zeros(4, np.float32)}),
     "texmem_args is not supported by ndtune: it binds CUDA texture references, which CUDA 12 removed"),
])
def test_what_ndtune_cannot_honour_is_refused_by_name(given, named):
    with pytest.raises(ndtune.SpecError, match=named.replace("(", r"\(").replace("[", r"\[")):
        tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), {"block_size_x": [32]},
                    quiet=True, **given)


def test_a_spec_the_engine_refuses_names_the_written_spec_file_where_it_is_wrong():
    # The package hands the spec over as a dict; the extension writes spec.toml and validates
    # it there, so the error points into the file (a restriction naming no parameter).
    with pytest.raises(ndtune.SpecError) as raised:
        tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), {"block_size_x": [32]},
                    restrictions=["block_size_x <= nosuch"], quiet=True)
    message = str(raised.value)
    where = re.match(r"(.*spec\.toml):(\d+):(\d+): .*nosuch", message)
    assert where, message
    line = open(where[1]).read().splitlines()[int(where[2]) - 1]
    assert "nosuch" in line[int(where[3]) - 1:], (line, message)


CUDA_VECTOR_ADD = """
__global__ void vector_add(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


# NVIDIA's compilers as Python packages install them: scripts/cuda-compilers.sh puts CUDA 13's
# in target/cuda-compilers and CUDA 12's NVRTC and runtime in target/cuda-compilers-12 (part of
# the test set-up), each laid out as in site-packages.
PACKAGED_CUDA = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "target",
                                              "cuda-compilers"))
PACKAGED_CUDA_12 = PACKAGED_CUDA + "-12"


def compilers_seen_with(*folders, loader_path=None):
    """`ndtune.cuda_compilers()` of a fresh interpreter with `folders` first on sys.path, in
    order, without CUDA_HOME and its siblings (and with `loader_path` as LD_LIBRARY_PATH)."""
    script = ("import json, sys\n"
              f"sys.path[:0] = {list(folders)!r}\n"
              "import ndtune\nprint(json.dumps(ndtune.cuda_compilers()))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")}
    if loader_path:
        env["LD_LIBRARY_PATH"] = loader_path
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_nvrtc_and_nvcc_installed_as_python_packages_are_found_as_kernel_tuner_finds_them(tmp_path):
    root = os.path.join(PACKAGED_CUDA, "nvidia", "cu13")
    nvidia_12 = os.path.join(PACKAGED_CUDA_12, "nvidia")
    assert os.path.isdir(root) and os.path.isdir(nvidia_12), \
        "scripts/cuda-compilers.sh installs them (run by scripts/test.sh)"
    if os.path.isdir("/usr/local/cuda"):
        pytest.skip("a system toolkit is here: scripts/test-gpu.sh builds with it")
    found = compilers_seen_with(PACKAGED_CUDA)
    assert found["nvrtc"]["version"] == "13.5", found
    assert found["nvrtc"]["library"] == os.path.join(root, "lib", "libnvrtc.so.13"), found
    assert found["nvcc"] == {"version": "13.5.37", "path": os.path.join(root, "bin", "nvcc")}
    assert found["headers"] == [os.path.join(root, "include"),
                                os.path.join(root, "include", "cccl")], found
    assert found["toolkit_roots"] == [root, "/usr/local/cuda"], found
    # CUDA 12's packages, as PyTorch's CUDA 12 builds bring them: NVRTC 12 with its own
    # runtime's headers (builds with them: crates/ndtune-cuda/tests/packaged_12.rs); no nvcc.
    found_12 = compilers_seen_with(PACKAGED_CUDA_12)
    assert found_12["nvrtc"]["version"] == "12.9", found_12
    assert found_12["nvrtc"]["library"] == os.path.join(nvidia_12, "cuda_nvrtc", "lib",
                                                        "libnvrtc.so.12"), found_12
    assert found_12["headers"] == [os.path.join(nvidia_12, "cuda_runtime", "include")], found_12
    assert found_12["nvcc"] is None, found_12
    # Both, CUDA 12's first on sys.path: CUDA 13's NVRTC, and its headers, not CUDA 12's.
    both = compilers_seen_with(PACKAGED_CUDA_12, PACKAGED_CUDA)
    assert both["toolkit_roots"] == [root, os.path.join(nvidia_12, "cuda_nvrtc"),
                                     "/usr/local/cuda"], both
    assert (both["nvrtc"], both["headers"]) == (found["nvrtc"], found["headers"]), both
    # NVRTC that the loader finds by its name alone (LD_LIBRARY_PATH), in a toolkit laid out as
    # NVIDIA's installer lays out /usr/local/cuda-13.x: the file it chose, and that toolkit's
    # headers, though no root names it.
    installed = tmp_path / "cuda-13" / "targets" / "x86_64-linux"
    installed.mkdir(parents=True)
    (installed / "lib").symlink_to(os.path.join(root, "lib"))
    (installed / "include").symlink_to(os.path.join(root, "include"))
    by_name = compilers_seen_with(loader_path=str(installed / "lib"))
    assert by_name["nvrtc"] == {"version": "13.5",
                                "library": str(installed / "lib" / "libnvrtc.so.13")}, by_name
    assert by_name["headers"] == [str(installed / "include"),
                                  str(installed / "include" / "cccl")], by_name
    assert by_name["toolkit_roots"] == ["/usr/local/cuda"], by_name
    # Without them on sys.path: none, and why, with where to get it.
    absent = compilers_seen_with()
    assert absent["nvcc"] is None and absent["toolkit_roots"] == ["/usr/local/cuda"], absent
    assert absent["headers"] == [], absent
    assert "libnvrtc could not be loaded" in absent["nvrtc"]["error"], absent
    assert "CUDA_HOME" in absent["nvrtc"]["error"], absent


def test_a_cuda_kernel_is_known_as_kernel_tuner_knows_it_and_tuned_on_cuda_devices_only():
    # As Kernel Tuner detects the language: `__global__` in the code (or lang="CUDA").
    if any(d["api"] == "cuda" for d in ndtune.devices()):
        pytest.skip("a CUDA device is here: scripts/test-gpu.sh tunes on it")
    for lang in (None, "CUDA", "cupy"):
        with pytest.raises(ndtune.DeviceError, match="no CUDA device"):
            tune_kernel("vector_add", CUDA_VECTOR_ADD, 4096, vector_add_args(),
                        {"block_size_x": [32]}, lang=lang, quiet=True)
    # Kernel Tuner's smem_args: the launch's dynamic shared memory, an expression of the
    # parameters; the spec takes it (the device is what is missing here), an OpenCL kernel not.
    with pytest.raises(ndtune.DeviceError, match="no CUDA device"):
        tune_kernel("vector_add", CUDA_VECTOR_ADD, 4096, vector_add_args(),
                    {"block_size_x": [32]}, smem_args={"size": "block_size_x * 4"}, quiet=True)
    with pytest.raises(ndtune.SpecError, match="smem_args is {'size': bytes}"):
        tune_kernel("vector_add", CUDA_VECTOR_ADD, 4096, vector_add_args(),
                    {"block_size_x": [32]}, smem_args={"bytes": 16}, quiet=True)
    with pytest.raises(ndtune.SpecError, match="smem_args is not supported by ndtune: it is CUDA's"):
        tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), {"block_size_x": [32]},
                    smem_args={"size": 16}, quiet=True)
    # cmem_args: the spec's constant arguments, written beside it; an OpenCL kernel's refused.
    taps = np.arange(5, dtype=np.float32)
    with pytest.raises(ndtune.DeviceError, match="no CUDA device"):
        tune_kernel("vector_add", CUDA_VECTOR_ADD, 4096, vector_add_args(),
                    {"block_size_x": [32]}, cmem_args={"taps": taps, "k": np.int32(3)},
                    quiet=True)
    written = [f for f in (ndtune._kt.spec_dir() / "data").glob("*.npy")
               if np.array_equal(np.load(f), taps)]
    assert len(written) == 1
    assert any(written[0].name in spec.read_text()
               for spec in ndtune._kt.spec_dir().glob("vector_add-*/spec.toml"))
    with pytest.raises(ndtune.SpecError, match="cmem_args\\['taps'\\] is a list"):
        tune_kernel("vector_add", CUDA_VECTOR_ADD, 4096, vector_add_args(),
                    {"block_size_x": [32]}, cmem_args={"taps": [1.0]}, quiet=True)
    with pytest.raises(ndtune.SpecError, match="cmem_args is not supported by ndtune: it is CUDA's"):
        tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), {"block_size_x": [32]},
                    cmem_args={"taps": taps}, quiet=True)


def test_answer_verifies_each_configuration_and_a_wrong_one_flags_them_all():
    args = vector_add_args()
    params = {"block_size_x": [32, 64, 128]}
    right = [args[1] + args[2], None, None, None]
    results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, answer=right,
                             quiet=True)
    assert [r["ndtune_outcome"] for r in results] == ["measured"] * 3
    # Another answer is another reference: nothing stored is reused for it.
    wrong = [args[1] - args[2], None, None, None]
    results, env = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, answer=wrong,
                               quiet=True)
    assert env["ndtune_report"]["evaluated"] == 3
    assert [r["ndtune_outcome"] for r in results] == ["wrong_result"] * 3
    assert all(isinstance(r["time"], ndtune.RuntimeFailedConfig) for r in results)
    assert env["best_config"] is None


def test_a_kernel_that_does_not_build_is_marked_as_kernel_tuner_marks_it():
    broken = VECTOR_ADD.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + b[i] + UNDEFINED_NAME;")
    results, _ = tune_kernel("vector_add", broken, 4096, vector_add_args(),
                             {"block_size_x": [32]}, quiet=True)
    assert [str(r["time"]) for r in results] == ["CompilationFailedConfig"]
    assert isinstance(results[0]["time"], ndtune.CompilationFailedConfig)


def test_max_fevals_counts_distinct_configurations():
    params = {"block_size_x": [1, 2, 4, 8, 16, 32, 64, 128], "unused": [0, 1, 2, 3]}
    results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params,
                             strategy="random_sample", strategy_options={"max_fevals": 5},
                             quiet=True)
    assert len(results) == 5
    assert len({(r["block_size_x"], r["unused"]) for r in results}) == 5


def test_a_gflops_metric_as_the_objective_picks_the_fastest_and_is_in_each_result():
    params = {"block_size_x": [1, 4, 16, 64, 256]}
    n = 4096
    # Kernel Tuner's forms: a bare name, and p["name"], also of a metric defined before.
    metrics = {"GFLOP/s": f"{n} / 1e6 / time", "MFLOP/s": 'p["GFLOP/s"] * 1000'}
    results, env = tune_kernel("vector_add", VECTOR_ADD, n, vector_add_args(n), params,
                               metrics=metrics, objective="GFLOP/s",
                               objective_higher_is_better=True, quiet=True)
    assert len(results) == 5
    for r in results:
        assert r["ndtune_outcome"] == "measured"
        assert r["GFLOP/s"] == pytest.approx(n / 1e6 / r["time"])
        assert r["MFLOP/s"] == pytest.approx(1000 * r["GFLOP/s"])
    fastest = min(results, key=lambda r: r["time"])
    assert env["best_config"] == fastest
    assert env["objective"] == "GFLOP/s" and env["objective_higher_is_better"]
    spec = open(env["spec"]).read()
    assert '"GFLOP/s" = "4096 / 1e6 / time"' in spec
    # A metric of a metric whose name is no identifier: its expression, parenthesised.
    assert '"MFLOP/s" = "(4096 / 1e6 / time) * 1000"' in spec


def test_several_objectives_give_the_front_as_kernel_tuner_14_does():
    params = {"block_size_x": [1, 4, 16, 64, 256]}
    metrics = {"threads": "block_size_x"}
    # Kernel Tuner 1.4+'s `objectives` dict, and its front strategy.
    results, env = tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params,
                               metrics=metrics, objectives={"time": False, "threads": True},
                               strategy="nsga2", quiet=True)
    assert env["objective"] == ["time", "threads"]
    assert env["objective_higher_is_better"] == [False, True]
    assert env["strategy"] == "nsga2"
    front = env["best_config"]
    assert isinstance(front, list) and front
    assert all(r["optimal"] for r in front)
    assert not any(r.get("optimal") for r in results if r not in front)
    # Nothing has more threads than 256 a work-group: it is on the front; the front is fastest
    # first, as the engine's report lists it.
    assert 256 in [r["block_size_x"] for r in front]
    members = env["ndtune_report"]["front"]["members"]
    assert [m["config"]["block_size_x"] for m in members] == [r["block_size_x"] for r in front]
    assert 'metric = ["time", "threads"]' in open(env["spec"]).read()
    # The same as lists, and a budget for the front strategy.
    few, env2 = tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params,
                            metrics=metrics, objective=["time", "threads"],
                            objective_higher_is_better=[False, True], strategy="nsga2",
                            strategy_options={"max_fevals": 3}, quiet=True)
    assert len(few) == 3
    with pytest.raises(ndtune.SpecError, match="2 objectives but 1 values"):
        tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params, metrics=metrics,
                    objective=["time", "threads"], objective_higher_is_better=[False],
                    quiet=True)


def test_an_objective_that_is_no_metric_is_refused():
    with pytest.raises(ndtune.SpecError, match="GFLOPS"):
        tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), {"block_size_x": [32]},
                    metrics={"GFLOP/s": "4096 / 1e6 / time"}, objective="GFLOPS",
                    objective_higher_is_better=True, quiet=True)


CAMPAIGN = """
import sys
import numpy as np
from ndtune import tune_kernel
sys.path.insert(0, sys.argv[1])
from kernels import VECTOR_ADD, vector_add_args
tune_kernel("vector_add", VECTOR_ADD, 1 << 16, vector_add_args(1 << 16),
            {"block_size_x": [1, 2, 4, 8, 16, 32, 64, 128, 256], "unused": list(range(20))},
            iterations=5, quiet=True, pool=eval(sys.argv[2]))
"""


# Ctrl-C signals this process alone, as a notebook's interrupt does: with a pool, the workers are
# stopped by the campaign, not by the signal.
@pytest.mark.parametrize("pool", [None, [0, 0]])
def test_ctrl_c_keeps_what_was_measured_and_a_rerun_resumes(own_directory, pool):
    import signal
    import time
    here = os.path.dirname(os.path.abspath(__file__))
    child = subprocess.Popen([sys.executable, "-c", CAMPAIGN, here, repr(pool)], stderr=subprocess.PIPE,
                             text=True)
    count = 0
    deadline = time.time() + 120
    while count < 3 and time.time() < deadline and child.poll() is None:
        time.sleep(0.2)
        try:
            with sqlite3.connect("file:ndtune.db?mode=ro", uri=True) as db:
                count = db.execute("SELECT count(*) FROM results").fetchone()[0]
        except sqlite3.OperationalError:
            pass  # not made yet
    assert count >= 3, "the campaign measured nothing before the deadline"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0
    assert "KeyboardInterrupt" in err
    with sqlite3.connect("ndtune.db") as db:
        kept = db.execute("SELECT count(*) FROM results").fetchone()[0]
        incomplete = db.execute("SELECT count(*) FROM claims WHERE done_at IS NULL").fetchone()[0]
    assert 3 <= kept < 180
    assert incomplete == 0
    # The rerun reuses all that was kept and measures the rest (its first measurements were
    # scouts spread over the space, so what was kept is not the space's first configurations).
    results, env = tune_kernel(
        "vector_add", VECTOR_ADD, 1 << 16, vector_add_args(1 << 16),
        {"block_size_x": [1, 2, 4, 8, 16, 32, 64, 128, 256], "unused": list(range(20))},
        iterations=5, quiet=True)
    assert env["ndtune_report"]["reused"] == kept
    assert env["ndtune_report"]["evaluated"] == 180 - kept
    assert len(results) == 180


def test_a_pool_of_devices_tunes_one_campaign_together(own_directory):
    # Two workers on the one PoCL device here: the pool's plumbing (worker processes served
    # by this package, claims in the store, the last pass) is what is tested.
    params = {"block_size_x": [16, 32, 64, 128], "unused": [0, 1, 2]}
    args = vector_add_args()
    answer = [args[1] + args[2], None, None, None]
    results, env = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, answer=answer,
                               quiet=True, pool=[0, 0])
    assert len(results) == 12
    assert {r["ndtune_outcome"] for r in results} == {"measured"}
    with sqlite3.connect("ndtune.db") as db:
        workers = {w for (w,) in db.execute("SELECT DISTINCT worker FROM claims")}
        assert db.execute("SELECT count(*) FROM results").fetchone()[0] == 12
    assert any(w.endswith(":pool0") for w in workers), workers
    # Each worker's own account comes back; the report counts what they evaluated as evaluated now.
    accounts = env["ndtune_pool"]["workers"]
    assert sorted(w.rsplit(":", 1)[1] for w in accounts) == ["pool0", "pool1"]
    assert sum(a["evaluated"] for a in accounts.values()) == 12
    assert all(a["time"]["campaign_s"] > 0 for a in accounts.values())
    assert (env["ndtune_report"]["evaluated"], env["ndtune_report"]["reused"]) == (12, 0)
    assert [e["status"] for e in env["ndtune_pool"]["ends"]] == ["exit status 0"] * 2
    # Functions of the parameters stay in this process: a pool cannot call them.
    with pytest.raises(ndtune.SpecError, match="pool"):
        tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, quiet=True, pool=[0, 0],
                    restrictions=lambda p: p["block_size_x"] > 16)


def test_parallel_is_true_or_a_number_of_devices():
    # Which devices are identical is decided in Rust, as for a pool
    # (ndtune_engine::devices::parallel, with its own table test).
    from ndtune._kt import _parallel_devices
    assert _parallel_devices(True, 0, 0, "opencl")[0] == 0
    assert _parallel_devices(1, 0, 0, "opencl") == [0]
    for wrong in (0, -1, 1.5, "2"):
        with pytest.raises(ndtune.SpecError, match="give True or a number of devices"):
            _parallel_devices(wrong, 0, 0, "opencl")
    with pytest.raises(ndtune.SpecError, match="parallel=99: platform 0 has"):
        _parallel_devices(99, 0, 0, "opencl")
    with pytest.raises(ndtune.DeviceError, match="device=99"):
        _parallel_devices(True, 0, 99, "opencl")
    # Among CUDA's devices for a CUDA kernel: none on a machine without them.
    if not any(d["api"] == "cuda" for d in ndtune.devices()):
        with pytest.raises(ndtune.DeviceError, match="platform 0 has 0 devices"):
            _parallel_devices(True, 0, 0, "cuda")


def test_kernel_tuners_parallel_switch_tunes_on_the_identical_devices_there_are(own_directory,
                                                                               monkeypatch):
    params = {"block_size_x": [32, 64]}
    args = vector_add_args()
    answer = [args[1] + args[2], None, None, None]
    # One PoCL device here: parallel tuning asks for two identical ones.
    with pytest.raises(ndtune.SpecError, match="parallel=2: platform 0 has 1 device"):
        tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, answer=answer, quiet=True,
                    parallel=2)
    # Kernel Tuner's environment variable asks for all of them: the one there is.
    monkeypatch.setenv("KERNEL_TUNER_PARALLEL", "1")
    results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, answer=answer,
                             quiet=True)
    assert {r["ndtune_outcome"] for r in results} == {"measured"}
    assert len(results) == 2
    # Functions of the parameters stay in this process: tuned on one device, with a warning.
    with pytest.warns(UserWarning, match="parallel=True tunes on device 0 alone"):
        results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, answer=answer,
                                 quiet=True, restrictions=lambda block_size_x: block_size_x > 32)
    assert len(results) == 1


def test_calls_with_the_same_array_read_one_file_of_it():
    # Kernel Tuner's reduction example tunes its second kernel once per size over the same 3 GB
    # input: each call is a spec directory of its own, the input one file.
    c, a, b, _ = vector_add_args()
    for n in (4096, 2048):
        results, _ = tune_kernel("vector_add", VECTOR_ADD, n, [c, a, b, np.int32(n)],
                                 {"block_size_x": [32, 64]}, quiet=True)
        assert len(results) == 2
    folder = ndtune._kt.spec_dir()
    specs = [spec.read_text() for spec in folder.glob("vector_add-*/spec.toml")]
    data = sorted((folder / "data").iterdir())
    assert (len(specs), len(data)) == (2, 3)
    assert [np.array_equal(np.load(f), x) for x in (a, b, c) for f in data].count(True) == 3
    assert all(f"../data/{f.name}" in spec for spec in specs for f in data)


def _worker_processes():
    """This process's children that are ndtune's workers (`python -m ndtune._worker`)."""
    me = str(os.getpid())
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except (OSError, IndexError):
            continue
        if ppid == me and b"ndtune._worker" in cmdline:
            found.append(int(pid))
    return found


def test_the_next_call_takes_up_the_workers_the_call_before_kept():
    # Kernel Tuner's reduction example calls tune_kernel once per size over one input: the
    # measurement and build workers of a call wait for the next, which takes them up (with the
    # input already on the device) instead of starting its own.
    ndtune.release_workers()
    assert _worker_processes() == []
    c, a, b, _ = vector_add_args()
    times = []
    for n in (1024, 512):
        results, env = tune_kernel("vector_add", VECTOR_ADD, n, [c, a, b, np.int32(n)],
                                   {"block_size_x": [16, 32]}, quiet=True)
        assert [r["ndtune_outcome"] for r in results] == ["measured"] * 2
        times.append(env["ndtune_report"]["time"])
    assert times[0]["workers_started"] == 1, times[0]
    assert (times[1]["workers_started"], times[1]["builders_started"]) == (0, 0), times[1]
    assert _worker_processes(), "no worker kept for the next call"
    ndtune.release_workers()
    assert _worker_processes() == []
