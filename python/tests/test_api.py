"""run_kernel, space, Store, report and bench_strategies, on PoCL with real kernels."""

import itertools
import subprocess
import sys

import numpy as np
import pytest

import ndtune
from ndtune import Store, report, run_kernel, space, tune_kernel
from kernels import SCALE_2D, SCALE_OPTIONS, SCALE_PARAMS, VECTOR_ADD, scale_args, vector_add_args


def test_run_kernel_returns_the_arguments_after_the_run():
    args = vector_add_args()
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out = run_kernel("vector_add", VECTOR_ADD, 4096, args, {"block_size_x": 64})
    assert len(out) == 4
    np.testing.assert_array_equal(out[0], args[1] + args[2])
    np.testing.assert_array_equal(out[1], args[1])
    assert out[0].dtype == np.float32 and out[0].shape == (4096,)
    # Scalars come back as given; the arrays given are left as they were.
    assert out[3] is args[3]
    for a, b in zip(args[:3], before[:3]):
        np.testing.assert_array_equal(a, b)
    out[0][0] = 1.0  # a writable array of its own


CONJUGATE = """
__kernel void conjugate(__global float2 *z, __global const uchar *flip, const uchar on) {
    int i = get_global_id(0);
    if (on && flip[i]) z[i].y = -z[i].y;
}
"""


def test_complex_and_bool_arguments_are_their_elements():
    # A complex64 array is float pairs to the kernel (OpenCL's float2), a bool array bytes, a
    # bool scalar a byte; they come back in their own types, and `answer` checks them.
    n = 1024
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    flip = rng.random(n) < 0.5
    out = run_kernel("conjugate", CONJUGATE, n, [z, flip, np.bool_(True)], {"block_size_x": 64})
    assert out[0].dtype == np.complex64 and out[1].dtype == np.bool_
    np.testing.assert_array_equal(out[0], np.where(flip, np.conj(z), z))
    np.testing.assert_array_equal(out[1], flip)
    expected = np.where(flip, np.conj(z), z)
    results, _ = tune_kernel("conjugate", CONJUGATE, n, [z, flip, np.bool_(True)],
                             {"block_size_x": [32, 64]}, answer=[expected, None, None],
                             quiet=True)
    assert all(isinstance(r["time"], float) for r in results), results
    # The answer of no conjugation is wrong wherever a flag is set.
    results, _ = tune_kernel("conjugate", CONJUGATE, n, [z, flip, np.bool_(True)],
                             {"block_size_x": [32]}, answer=[z, None, None], quiet=True)
    assert [r["ndtune_outcome"] for r in results] == ["wrong_result"]


def test_run_kernel_2d_with_grid_divisors():
    args = scale_args()
    params = {"block_size_x": 16, "block_size_y": 2, "tile_x": 2}
    out = run_kernel("scale", SCALE_2D, (96, 40), args, params,
                     grid_div_x=SCALE_OPTIONS["grid_div_x"], grid_div_y=SCALE_OPTIONS["grid_div_y"])
    np.testing.assert_array_equal(out[0], 2.0 * args[1])


def test_run_kernel_output_is_tune_kernels_answer():
    args = vector_add_args()
    answer = run_kernel("vector_add", VECTOR_ADD, 4096, args, {"block_size_x": 1})
    params = {"block_size_x": [32, 64]}
    results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, quiet=True,
                             answer=[answer[0], None, None, None])
    assert [r["ndtune_outcome"] for r in results] == ["measured", "measured"]
    # The answer is checked: a wrong one fails every configuration.
    results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, args, params, quiet=True,
                             answer=[answer[0] + 1.0, None, None, None])
    assert [r["ndtune_outcome"] for r in results] == ["wrong_result", "wrong_result"]


def test_run_kernel_says_why_a_configuration_did_not_run():
    broken = VECTOR_ADD.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + undeclared;")
    with pytest.raises(ndtune.NdtuneError, match="build_failed.*undeclared"):
        run_kernel("vector_add", broken, 4096, vector_add_args(), {"block_size_x": 64})
    # An argument ndtune cannot honour is refused by name, as tune_kernel refuses it.
    with pytest.raises(ndtune.SpecError, match="smem_args"):
        run_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), {"block_size_x": 64},
                   smem_args={"size": 16})


def test_space_counts_what_tune_kernel_evaluates():
    args = scale_args()
    s = space("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS, **SCALE_OPTIONS)
    results, env = tune_kernel("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS, quiet=True,
                               iterations=1, **SCALE_OPTIONS)
    assert s["declared"] == 18
    assert s["pruned"] == len(results) == env["ndtune_report"]["evaluated"]
    assert "configs" not in s
    listed = space("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS, configs=100,
                   **SCALE_OPTIONS)["configs"]
    key = lambda c: tuple(c[k] for k in SCALE_PARAMS)
    assert sorted(map(key, listed)) == sorted(map(key, results))
    assert len(space("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS, configs=3,
                     **SCALE_OPTIONS)["configs"]) == 3


def test_space_says_what_a_restriction_removed():
    args = scale_args()
    options = {k: v for k, v in SCALE_OPTIONS.items() if k != "restrictions"}
    free = space("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS, **options)
    restriction = "block_size_x * block_size_y <= 32"
    s = space("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS, restrictions=restriction,
              **options)
    values = itertools.product(*SCALE_PARAMS.values())
    expected = sum(1 for bx, by, _ in values if bx * by > 32)
    (removal,) = [c for c in s["constraints"] if c["constraint"] == restriction]
    assert removal == {"constraint": restriction, "origin": "application", "removed": expected}
    assert s["pruned"] == free["pruned"] - expected
    assert all(c["block_size_x"] * c["block_size_y"] <= 32
               for c in space("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS,
                              restrictions=restriction, configs=100, **options)["configs"])


def tune_vector_add(**kwargs):
    return tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(),
                       {"block_size_x": [16, 32, 64]}, quiet=True, iterations=3,
                       metrics={"GFLOP/s": "4096 / 1e6 / time"}, **kwargs)


def test_store_results_has_a_row_per_tuned_configuration():
    results, _ = tune_vector_add()
    frame = Store("ndtune.db").results()
    assert len(frame) == 3
    rows = frame.set_index("block_size_x")
    for r in results:
        row = rows.loc[r["block_size_x"]]
        assert row["kernel"] == "vector_add"
        assert row["device"] == ndtune.devices()[0]["name"]
        assert row["outcome"] == "measured"
        assert row["time"] == pytest.approx(r["time"])
        assert list(row["times"]) == r["times"]
        assert row["GFLOP/s"] == pytest.approx(r["GFLOP/s"])


def test_store_results_without_pandas_are_dicts(monkeypatch):
    tune_vector_add()
    monkeypatch.setitem(sys.modules, "pandas", None)
    rows = Store("ndtune.db").results()
    assert isinstance(rows, list)
    assert sorted(r["block_size_x"] for r in rows) == [16, 32, 64]
    assert {r["outcome"] for r in rows} == {"measured"}


def test_a_missing_store_is_a_store_error():
    with pytest.raises(ndtune.StoreError):
        Store("absent.db").results()


def test_report_writes_the_html_report(own_directory):
    tune_vector_add()
    assert report(Store("ndtune.db"), "tuned.html") == "tuned.html"
    html = (own_directory / "tuned.html").read_text()
    assert html.lower().startswith("<!doctype html>")
    assert "vector_add" in html


def test_bench_strategies_replays_the_cache_and_the_store_a_tuning_wrote(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    params = {"block_size_x": [16, 32, 64, 128, 256, 512]}
    tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), params, cache="c.json",
                db="t.db", quiet=True)
    out = ndtune.bench_strategies(["c.json", "t.db"], strategies=["random", "exhaustive"],
                                  budgets=[6, 2], seeds=3)
    assert [d["configurations"] for d in out["datasets"]] == [6, 6]
    assert all(d["optimum_ms"] > 0 and d["warm_points"] == 0 for d in out["datasets"])
    by = {(r["dataset"], r["strategy"]): r for r in out["results"]}
    assert len(by) == 4
    for d in out["datasets"]:
        whole = by[(d["id"], "exhaustive")]
        assert sorted(whole["mean"]) == [2, 6]
        assert whole["mean"][6] == pytest.approx(1.0), "all six include the optimum"
        assert whole["evals_95"] is not None and whole["seeds"] == 3
        assert 0 < by[(d["id"], "random")]["mean"][2] <= 1.0
    with pytest.raises(ndtune.NdtuneError, match="unknown strategy"):
        ndtune.bench_strategies("c.json", strategies=["genetic"], budgets=[2])
    with pytest.raises(ndtune.NdtuneError, match="nothing.json"):
        ndtune.bench_strategies("nothing.json", budgets=[2])


def test_collect_measures_a_stencil_campaign_into_the_store_and_exports_its_csv(tmp_path):
    # One reference stencil at one small size on the default device, a small grid.
    campaign = tmp_path / "campaign.toml"
    campaign.write_text('kernels = ["gol"]\ndatasets = [[32, 32]]\n'
                        "[grid]\nwc = [2, 4, 8]\nwr = [2, 4]\n"
                        "[measure]\nwarmup = 1\nruns = 3\nbest_of = 2\n")
    db, csv = tmp_path / "stencils.db", tmp_path / "stencils.csv"
    done = ndtune.collect(campaign, db=db, quiet=True, export=csv)
    assert [d["label"].split(" @ ")[0] for d in done] == ["gol 32x32"]
    assert done[0]["evaluated"] == 6 and done[0]["outcomes"]["measured"] >= 1
    assert done[0]["best_ms"] > 0
    lines = csv.read_text().splitlines()
    assert lines[0].startswith("scenario,device,kernel,dataset,")
    assert len(lines) == 1 + 6
    # Rerun: everything is in the store.
    again = ndtune.collect(campaign, db=db, quiet=True)
    assert again[0]["evaluated"] == 0 and again[0]["reused"] == 6
    with pytest.raises(ndtune.SpecError, match="unknown kernel `gool`"):
        bad = tmp_path / "bad.toml"
        bad.write_text('kernels = ["gool"]\n')
        ndtune.collect(bad, db=db, quiet=True)


def test_a_worker_process_does_not_import_numpy():
    # A campaign starts its build and measurement workers as `python -m ndtune._worker`, 16 at
    # once on a GPU host; NumPy (and its BLAS threads) in each made their start 0.8 s, not 0.03.
    out = subprocess.run([sys.executable, "-c", "import sys, ndtune._worker; "
                          "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_arrays_file_name_is_the_blake3_of_its_type_shape_and_bytes():
    from ndtune import _kt, _ndtune
    # BLAKE3("abc") from the reference implementation's test vectors, in any split.
    abc = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
    assert _ndtune.digest(b"", np.frombuffer(b"abc", np.uint8)) == abc
    assert _ndtune.digest(b"a", np.frombuffer(b"bc", np.uint8)) == abc
    assert _ndtune.digest(b"abc", np.zeros(0, np.uint8)) == abc
    # Hashed on every core where it is large: the same digest as in pieces.
    big = np.arange(3 << 20, dtype=np.uint32)
    head = b"<u4 (3145728,)"
    as_bytes = big.view(np.uint8)
    assert (_ndtune.digest(head + as_bytes[:1000].tobytes(), as_bytes[1000:])
            == _ndtune.digest(head, big.view(np.uint8)))
    # A strided view is not one piece: refused here, copied by the package first.
    with pytest.raises(ndtune.SpecError, match="C-contiguous"):
        _ndtune.digest(b"", big.view(np.uint8)[::2])
    assert _kt._content_name(big[::2], ".npy") == _kt._content_name(big[::2].copy(), ".npy")
    assert _kt._content_name(big, ".npy") != _kt._content_name(big[::2].copy(), ".npy")
