"""The same call to Kernel Tuner 1.5 (installed in the test's venv, on PoCL through pyopencl)
and to ndtune: the same configurations, the same fields with values of the same kinds."""

import numpy as np
import pytest

from ndtune import tune_kernel
from kernels import SCALE_2D, SCALE_OPTIONS, SCALE_PARAMS, scale_args

kernel_tuner = pytest.importorskip("kernel_tuner")

# Kernel Tuner's overhead timings of each configuration, which ndtune does not record per
# configuration (docs/python.md).
KT_ONLY = {"compile_time", "verification_time", "benchmark_time", "strategy_time",
           "framework_time", "timestamp"}


def test_results_match_kernel_tuners_field_by_field():
    call = ("scale", SCALE_2D, (96, 40), scale_args(), SCALE_PARAMS)
    theirs, their_env = kernel_tuner.tune_kernel(*call, lang="OpenCL", iterations=5, quiet=True,
                                                 **SCALE_OPTIONS)
    ours, our_env = tune_kernel(*call, lang="OpenCL", iterations=5, quiet=True, **SCALE_OPTIONS)
    key = lambda r: tuple(r[p] for p in SCALE_PARAMS)  # noqa: E731
    theirs, ours = {key(r): r for r in theirs}, {key(r): r for r in ours}
    assert set(ours) == set(theirs)
    for k, t in theirs.items():
        o = ours[k]
        assert set(t) - set(o) == KT_ONLY
        assert set(o) - set(t) == {"ndtune_outcome"}
        for p in SCALE_PARAMS:
            assert o[p] == t[p] and type(o[p]) is type(t[p])
        assert isinstance(t["time"], float) and isinstance(o["time"], float)
        assert len(o["times"]) == len(t["times"]) == 5
        assert o["time"] == pytest.approx(np.mean(o["times"]))
        assert o["time"] > 0 and t["time"] > 0
    for field in ("device_name", "device_version", "driver_version", "platform_name",
                  "iterations", "compiler_options"):
        assert our_env[field] == their_env[field]
    assert set(our_env["best_config"]) == set(their_env["best_config"]) - KT_ONLY | {"ndtune_outcome"}



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
