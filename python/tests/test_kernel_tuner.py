"""The same call to Kernel Tuner 1.5 (installed in the test's venv, on PoCL through pyopencl)
and to ndtune: the same configurations, the same fields with values of the same kinds."""

from datetime import datetime

import numpy as np
import pytest

from ndtune import tune_kernel
from kernels import SCALE_2D, SCALE_OPTIONS, SCALE_PARAMS, scale_args

kernel_tuner = pytest.importorskip("kernel_tuner")

# Metrics as Kernel Tuner's documentation writes them: functions of the result and strings, in
# order, each seeing those before it.
METRICS = {
    "gbs": lambda p: 2 * 96 * 40 * 4 / 1e6 / p["time"],
    "half": "gbs / 2",
    "pixels/ms": "96 * 40 / time",
}

# Kernel Tuner's timings of each result, in milliseconds.
TIMINGS = ("compile_time", "verification_time", "benchmark_time", "strategy_time",
           "framework_time")


def test_results_match_kernel_tuners_field_by_field():
    call = ("scale", SCALE_2D, (96, 40), scale_args(), SCALE_PARAMS)
    theirs, their_env = kernel_tuner.tune_kernel(*call, lang="OpenCL", iterations=5, quiet=True,
                                                 metrics=METRICS, **SCALE_OPTIONS)
    ours, our_env = tune_kernel(*call, lang="OpenCL", iterations=5, quiet=True, metrics=METRICS,
                                **SCALE_OPTIONS)
    key = lambda r: tuple(r[p] for p in SCALE_PARAMS)  # noqa: E731
    theirs, ours = {key(r): r for r in theirs}, {key(r): r for r in ours}
    assert set(ours) == set(theirs)
    for k, t in theirs.items():
        o = ours[k]
        # Every key of Kernel Tuner's, in Kernel Tuner's order; ndtune's outcome beside them.
        assert [f for f in o if f != "ndtune_outcome"] == list(t)
        for p in SCALE_PARAMS:
            assert o[p] == t[p] and type(o[p]) is type(t[p])
        assert isinstance(t["time"], float) and isinstance(o["time"], float)
        assert len(o["times"]) == len(t["times"]) == 5
        assert o["time"] == pytest.approx(np.mean(o["times"]))
        assert o["time"] > 0 and t["time"] > 0
        assert o["gbs"] == pytest.approx(2 * 96 * 40 * 4 / 1e6 / o["time"])
        assert o["half"] == pytest.approx(o["gbs"] / 2)
        assert o["pixels/ms"] == pytest.approx(96 * 40 / o["time"])
        for field in TIMINGS:
            assert o[field] >= 0, field
        assert o["benchmark_time"] > 0
        assert datetime.fromisoformat(o["timestamp"]).tzinfo is not None
    # Kernel Tuner's totals, as the sums of the results' timings.
    for field in TIMINGS:
        assert our_env[f"total_{field}"] == pytest.approx(sum(r[field] for r in ours.values()))
    assert set(their_env) - set(our_env) == set()
    for field in ("device_name", "device_version", "driver_version", "platform_name",
                  "platform_version", "opencl_c_version", "iterations", "compiler_options"):
        assert our_env[field] == their_env[field], field
    assert set(our_env["best_config"]) == set(their_env["best_config"]) | {"ndtune_outcome"}
    assert our_env["ndtune_metrics"] == {"gbs": "python", "half": "python",
                                         "pixels/ms": "python"}


def test_a_function_objective_picks_the_best_by_it():
    call = ("scale", SCALE_2D, (96, 40), scale_args(), SCALE_PARAMS)
    metrics = {"pixels/ms": "96 * 40 / time", "GB/s": lambda p: 2 * 96 * 40 * 4 / 1e6 / p["time"]}
    ours, env = tune_kernel(*call, quiet=True, metrics=metrics, objective="GB/s",
                            objective_higher_is_better=True, **SCALE_OPTIONS)
    assert env["ndtune_metrics"] == {"pixels/ms": "spec", "GB/s": "python"}
    assert env["best_config"]["GB/s"] == max(r["GB/s"] for r in ours)


def test_verify_gets_what_kernel_tuner_gives_it():
    # With an answer only: Kernel Tuner 1.5 without CuPy fails on a verify without one.
    args = scale_args()
    answer = [2 * args[1], None, None, None]

    def recorder(calls):
        def verify(ref, result_host, atol=None):
            calls.append((
                tuple(None if a is None else (a.dtype.str, a.shape, a.tobytes()) for a in ref),
                tuple(None if r is None else (r.dtype.str, r.shape, r.tobytes())
                      for r in result_host),
                atol))
            return True
        return verify

    theirs, ours = [], []
    call = ("scale", SCALE_2D, (96, 40), args, SCALE_PARAMS)
    options = dict(lang="OpenCL", quiet=True, answer=answer, atol=1e-3, **SCALE_OPTIONS)
    kernel_tuner.tune_kernel(*call, verify=recorder(theirs), **options)
    results, _ = tune_kernel(*call, verify=recorder(ours), **options)
    # Kernel Tuner also verifies its warm-up run of the first configuration.
    assert len(ours) == len(results) > 0
    assert set(ours) == set(theirs)
