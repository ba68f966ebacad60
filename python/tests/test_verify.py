"""Kernel Tuner's `verify` function, on PoCL with real kernels: called in the Python process
with the outputs of each configuration's verification run, as Kernel Tuner 1.5 calls it."""

import numpy as np
import pytest

import ndtune
from ndtune import tune_kernel
from kernels import VECTOR_ADD, vector_add_args

PARAMS = {"block_size_x": [32, 64, 128]}
# Adds one to every element where the work-group has 64 work-items.
WRONG_FOR_64 = VECTOR_ADD.replace("c[i] = a[i] + b[i];",
                                  "c[i] = a[i] + b[i] + (get_local_size(0) == 64 ? 1.0f : 0.0f);")


def outcomes(results):
    return {r["block_size_x"]: r["ndtune_outcome"] for r in results}


def test_a_configuration_verify_rejects_is_wrong_result_and_the_others_are_measured():
    args = vector_add_args()
    answer = [args[1] + args[2], None, None, None]
    calls = []

    def verify(ref, result_host, atol=None):
        calls.append((ref, result_host, atol))
        return np.allclose(result_host[0], ref[0], atol=atol)

    results, env = tune_kernel("vector_add", WRONG_FOR_64, 4096, args, PARAMS, answer=answer,
                               atol=1e-5, verify=verify, iterations=4, quiet=True)
    assert outcomes(results) == {32: "measured", 64: "wrong_result", 128: "measured"}
    for r in results:
        if r["block_size_x"] == 64:
            assert isinstance(r["time"], ndtune.RuntimeFailedConfig)
        else:
            assert len(r["times"]) == 4
    assert env["best_config"]["block_size_x"] in (32, 128)
    # As Kernel Tuner: the answer, the outputs (None where the answer is), atol as keyword.
    assert len(calls) == 3
    for ref, result_host, atol in calls:
        assert ref[1:] == [None, None, None] and np.array_equal(ref[0], answer[0])
        assert result_host[1:] == [None, None, None]
        assert result_host[0].dtype == np.float32 and result_host[0].shape == (4096,)
        assert atol == 1e-5
    wrong = [np.abs(out[0] - ref[0]).max() for ref, out, _ in calls]
    assert sorted(wrong) == pytest.approx([0.0, 0.0, 1.0], abs=1e-5)


def test_verify_replaces_the_answers_rule_and_without_answer_gets_every_array():
    args = vector_add_args()
    seen = []

    def accept(ref, result_host):  # no atol: Kernel Tuner calls it without
        seen.append((ref, result_host))
        return True

    results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, args, PARAMS, verify=accept,
                             quiet=True)
    assert outcomes(results) == {b: "measured" for b in PARAMS["block_size_x"]}
    assert len(seen) == 3
    for ref, (c, a, b, n) in seen:
        assert ref is None and n is None
        np.testing.assert_array_equal(c, args[1] + args[2])
        np.testing.assert_array_equal(a, args[1])
        np.testing.assert_array_equal(b, args[2])
    # A wrong answer that verify accepts: verify decides, not the answer's allclose rule.
    wrong = [args[1] - args[2], None, None, None]
    results, _ = tune_kernel("vector_add", VECTOR_ADD, 4096, args, PARAMS, answer=wrong,
                             verify=accept, quiet=True)
    assert outcomes(results) == {b: "measured" for b in PARAMS["block_size_x"]}


def test_a_changed_verify_is_another_campaign_and_the_same_one_is_reused():
    args = vector_add_args()
    answer = [args[1] + args[2], None, None, None]

    def strict(ref, out, atol):
        return np.allclose(out[0], ref[0], atol=atol)

    call = ("vector_add", WRONG_FOR_64, 4096, args, PARAMS)
    results, env = tune_kernel(*call, answer=answer, verify=strict, quiet=True)
    assert outcomes(results) == {32: "measured", 64: "wrong_result", 128: "measured"}
    again, env2 = tune_kernel(*call, answer=answer, verify=strict, quiet=True)
    assert env2["ndtune_report"]["evaluated"] == 0
    assert outcomes(again) == outcomes(results)

    def lenient(ref, out, atol):
        return np.allclose(out[0], ref[0], atol=2.0)

    results, env3 = tune_kernel(*call, answer=answer, verify=lenient, quiet=True)
    assert env3["ndtune_report"]["evaluated"] == 3
    assert env3["spec"] != env["spec"]
    assert outcomes(results) == {b: "measured" for b in PARAMS["block_size_x"]}
    # Another atol is passed to verify: another campaign too.
    results, env4 = tune_kernel(*call, answer=answer, atol=2.0, verify=strict, quiet=True)
    assert env4["ndtune_report"]["evaluated"] == 3
    assert outcomes(results) == {b: "measured" for b in PARAMS["block_size_x"]}


def test_an_exception_in_verify_is_raised_from_tune_kernel():
    def broken(ref, out):
        raise ValueError("verify broke")

    with pytest.raises(ValueError, match="verify broke"):
        tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(), PARAMS, verify=broken,
                    quiet=True)
