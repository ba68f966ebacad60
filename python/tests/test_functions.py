"""Kernel Tuner's functions of the parameters, on PoCL with real kernels: a kernel source that
generates the code, restriction functions, defines and a problem_size function, each called in
the Python process per configuration the engine evaluates."""

import tomllib

import numpy as np
import pytest

import ndtune
from ndtune import tune_kernel
from kernels import vector_add_args

N = 4096
HEADER = ("__kernel void vadd(__global float *c, __global const float *a, "
          "__global const float *b, int n)")
# Each work-item adds `unroll` elements, so the grid divides the size by block_size_x * unroll.
UNROLLED = HEADER + """ {
    int i0 = get_global_id(0) * unroll;
    for (int k = 0; k < unroll; k++) {
        if (i0 + k < n) c[i0 + k] = a[i0 + k] + b[i0 + k];
    }
}
"""
PARAMS = {"block_size_x": [32, 64], "unroll": [1, 2, 4]}


def generated(p):
    """The unrolled kernel with its loop written out for this configuration."""
    u = p["unroll"]
    body = "\n".join(f"    if (i0 + {k} < n) c[i0 + {k}] = a[i0 + {k}] + b[i0 + {k}];"
                     for k in range(u))
    return HEADER + f" {{\n    int i0 = get_global_id(0) * {u};\n{body}\n}}\n"


def answer(args):
    return [args[1] + args[2], None, None, None]


def outcomes(results):
    return {(r["block_size_x"], r["unroll"]): r["ndtune_outcome"] for r in results}


def test_a_generated_kernel_is_built_per_configuration_and_its_function_is_its_identity(
        own_directory, monkeypatch):
    cache = own_directory / "cache"
    monkeypatch.setenv("NDTUNE_CACHE_DIR", str(cache))
    args = vector_add_args(N)
    call = ("vadd", generated, N, args, PARAMS)
    options = dict(grid_div_x=["block_size_x", "unroll"], answer=answer(args), build_jobs=2,
                   quiet=True)
    results, env = tune_kernel(*call, **options)
    assert outcomes(results) == {(b, u): "measured" for b in (32, 64) for u in (1, 2, 4)}
    # The build workers built each configuration's own code ahead (on a CPU each work-group
    # size is its own build: they prime it), kept in the program cache.
    assert env["ndtune_report"]["time"]["build_workers_s"] > 0
    assert len(list((cache / "programs").iterdir())) == 6
    again, env2 = tune_kernel(*call, **options)
    assert env2["ndtune_report"]["evaluated"] == 0
    assert env2["spec"] == env["spec"]

    def wrong_for_4(p):
        # Right but for unroll=4, where it adds only the first three elements of each four.
        code = generated(p)
        return code.replace("    if (i0 + 3 < n)", "    if (0)") if p["unroll"] == 4 else code

    results, env3 = tune_kernel("vadd", wrong_for_4, N, args, PARAMS, **options)
    # Another function is another campaign: nothing reused, and its own code was built.
    assert env3["ndtune_report"]["evaluated"] == 6
    assert outcomes(results) == {(b, u): "wrong_result" if u == 4 else "measured"
                                 for b in (32, 64) for u in (1, 2, 4)}


def test_restriction_functions_as_kernel_tuner_calls_them():
    args = vector_add_args(N)
    options = dict(grid_div_x=["block_size_x", "unroll"], quiet=True)
    expected = {(b, u) for b in (32, 64) for u in (1, 2, 4) if b * u <= 128}
    for restrictions in (lambda p: p["block_size_x"] * p["unroll"] <= 128,
                         [lambda b, u: b * u <= 128],
                         [(lambda u, b: b * u <= 128, ["unroll", "block_size_x"]), "unroll > 0"]):
        results, _ = tune_kernel("vadd", UNROLLED, N, args, PARAMS, restrictions=restrictions,
                                 **options)
        assert set(outcomes(results)) == expected
    # The budget counts the configurations the restrictions allow, as Kernel Tuner's does.
    results, _ = tune_kernel("vadd", UNROLLED, N, args, PARAMS,
                             restrictions=lambda p: p["unroll"] == 2, strategy="random_sample",
                             strategy_options={"max_fevals": 2}, **options)
    assert set(outcomes(results)) == {(32, 2), (64, 2)}


def test_restriction_functions_leave_the_builds_to_the_build_workers(own_directory, monkeypatch):
    # Functions that only choose configurations (or their grids) leave the code the spec's: the
    # build workers build ahead what they allow, each build kept in the program cache.
    cache = own_directory / "cache"
    monkeypatch.setenv("NDTUNE_CACHE_DIR", str(cache))
    args = vector_add_args(N)
    results, env = tune_kernel("vadd", UNROLLED, N, args, PARAMS,
                               restrictions=lambda p: p["unroll"] < 4,
                               grid_div_x=["block_size_x", "unroll"], answer=answer(args),
                               build_jobs=2, quiet=True)
    assert outcomes(results) == {(b, u): "measured" for b in (32, 64) for u in (1, 2)}
    assert env["ndtune_report"]["time"]["build_workers_s"] > 0
    # One program per configuration the restriction allows (every parameter is a define, as in
    # Kernel Tuner); the two with unroll=4, excluded, were never built.
    assert len(list((cache / "programs").iterdir())) == 4


def test_defines_replace_the_parameters_defines():
    args = vector_add_args(N)
    kernel = HEADER + """ {
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + FACTOR * b[i];
}
"""
    params = {"block_size_x": [32, 64]}
    twice = [args[1] + 2 * args[2], None, None, None]
    results, env = tune_kernel("vadd", kernel, N, args, params, answer=twice, quiet=True,
                               defines={"FACTOR": lambda p: p["block_size_x"] // 16 - 2 * (
                                   p["block_size_x"] // 64)})
    # FACTOR is 2 for both block sizes: 32 // 16 and 64 // 16 - 2.
    assert [r["ndtune_outcome"] for r in results] == ["measured", "measured"]
    results, _ = tune_kernel("vadd", kernel, N, args, params, answer=twice, quiet=True,
                             defines={"FACTOR": "block_size_x / 16"})
    assert {r["block_size_x"]: r["ndtune_outcome"] for r in results} == {
        32: "measured", 64: "wrong_result"}


def test_a_problem_size_function_gives_each_configuration_its_grid():
    args = vector_add_args(N)
    results, env = tune_kernel("vadd", UNROLLED, lambda p: N // p["unroll"], args, PARAMS,
                               answer=answer(args), quiet=True)
    assert set(outcomes(results).values()) == {"measured"}
    # The spec's global size stands for the one the function gives each configuration.
    with open(env["spec"], "rb") as f:
        assert tomllib.load(f)["launch"]["global"] == ["block_size_x", "1", "1"]
    # Too small a grid for unroll 1 and 2 leaves elements unwritten.
    results, _ = tune_kernel("vadd", UNROLLED, lambda p: N // 4, args, PARAMS,
                             answer=answer(args), quiet=True)
    assert outcomes(results) == {(b, u): "measured" if u == 4 else "wrong_result"
                                 for b in (32, 64) for u in (1, 2, 4)}


def test_a_grid_divisor_function_gives_the_grid_its_list_gives():
    args = vector_add_args(N)
    by_list, _ = tune_kernel("vadd", UNROLLED, N, args, PARAMS, answer=answer(args), quiet=True,
                             grid_div_x=["block_size_x", "unroll"])
    by_function, env = tune_kernel("vadd", UNROLLED, N, args, PARAMS, answer=answer(args),
                                   quiet=True,
                                   grid_div_x=lambda p: p["block_size_x"] * p["unroll"])
    assert set(outcomes(by_function).values()) == {"measured"}
    assert set(outcomes(by_function)) == set(outcomes(by_list))
    # Its own campaign (the function is part of the results' identity), with its grid per
    # configuration.
    assert env["ndtune_report"]["evaluated"] == 6
    # Dividing by the block size alone launches unroll times too many work-items: right
    # results (the kernel checks n), so each configuration is measured, but one that divides
    # by too much leaves elements unwritten.
    too_few, _ = tune_kernel("vadd", UNROLLED, N, args, PARAMS, answer=answer(args), quiet=True,
                             grid_div_x=lambda p: p["block_size_x"] * 4)
    assert outcomes(too_few) == {(b, u): "measured" if u == 4 else "wrong_result"
                                 for b in (32, 64) for u in (1, 2, 4)}


def test_run_kernel_calls_the_functions_of_the_parameters_for_its_configuration():
    args = vector_add_args(N)
    params = {"block_size_x": 32, "unroll": 4}
    out = ndtune.run_kernel("vadd", generated, lambda p: N // p["unroll"], args, params,
                            grid_div_x=lambda p: p["block_size_x"])
    np.testing.assert_array_equal(out[0], args[1] + args[2])
    kernel = HEADER + """ {
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + FACTOR * b[i];
}
"""
    out = ndtune.run_kernel("vadd", kernel, N, args, {"block_size_x": 64},
                            defines={"FACTOR": lambda p: p["block_size_x"] // 32})
    np.testing.assert_array_equal(out[0], args[1] + 2 * args[2])
    with pytest.raises(ndtune.SpecError, match="grid divisor function gave 0"):
        ndtune.run_kernel("vadd", UNROLLED, N, args, params, grid_div_x=lambda p: 0)


def test_an_exception_in_a_function_of_the_parameters_is_raised():
    def broken(p):
        raise ValueError("no code for you")

    try:
        tune_kernel("vadd", broken, N, vector_add_args(N), PARAMS, quiet=True)
    except ValueError as e:
        assert "no code for you" in str(e)
    else:
        raise AssertionError("the function's exception was not raised")
