"""Kernel Tuner's submodules that its scripts import, under ndtune: `util`, `file_utils`,
`observers` and `nvml`, also through `import ndtune as kernel_tuner`; on PoCL with real kernels."""

import json

import pytest

import ndtune
from kernels import VECTOR_ADD, vector_add_args

PARAMS = {"block_size_x": [32, 64, 128]}


def tune(**options):
    args = vector_add_args()
    answer = [args[1] + args[2], None, None, None]
    return ndtune.tune_kernel("vector_add", VECTOR_ADD, 4096, args, PARAMS, answer=answer,
                              quiet=True, **options)


def test_a_kernel_tuner_script_reaches_the_submodules_under_ndtune(own_directory):
    import ndtune as kernel_tuner
    from ndtune.file_utils import store_metadata_file, store_output_file
    from ndtune.util import get_config_string

    results, _ = kernel_tuner.tune_kernel("vector_add", VECTOR_ADD, 4096, vector_add_args(),
                                          PARAMS, quiet=True)
    best = kernel_tuner.util.get_best_config(results, "time")
    assert best["time"] == min(r["time"] for r in results)
    line = get_config_string(best, keys=["block_size_x", "time"], units={"time": "ms"})
    assert line == f"block_size_x={best['block_size_x']}, time={best['time']:.3f} ms"
    # The T4 files Kernel Tuner's scripts write, with every configuration and its timings.
    store_output_file("out", results, PARAMS)
    t4 = json.load(open("out.json"))
    assert t4["schema_version"] == "1.0.0" and len(t4["results"]) == 3
    for entry, result in zip(t4["results"], results):
        assert entry["configuration"] == {"block_size_x": result["block_size_x"]}
        assert entry["times"]["runtimes"] == result["times"]
        assert entry["times"]["benchmark"] == result["benchmark_time"]
        assert entry["invalidity"] == "correct" and entry["objectives"] == ["time"]
        assert {m["name"] for m in entry["measurements"]} == {"time"}
    store_metadata_file("meta")
    meta = json.load(open("meta.json"))["metadata"]
    assert meta["operating_system"] == "Linux"
    assert meta["environment"]["device_query"]["opencl"] == ndtune.devices()
    assert kernel_tuner.observers.nvml.NVMLObserver is kernel_tuner.nvml.NVMLObserver


def test_observers_as_kernel_tuner_takes_them_and_what_ndtune_cannot_observe():
    from ndtune.observers import BenchmarkObserver
    from ndtune.observers.nvml import NVMLObserver

    # Kernel Tuner's own check of the observables' names.
    with pytest.raises(ValueError, match="Observable energy not in supported"):
        NVMLObserver(["energy"])
    # What ndtune does not measure is named.
    with pytest.raises(ndtune.SpecError, match="not temperature"):
        tune(observers=[NVMLObserver(["nvml_energy", "temperature"])])

    # A user's observer: its hooks would have to run in ndtune's worker process.
    class Counter(BenchmarkObserver):
        def get_results(self):
            return {"count": 1}

    with pytest.raises(ndtune.SpecError, match="observers: Counter"):
        tune(observers=[Counter()])
    # PoCL's CPU has no NVML: the energy cannot be read, and nothing is measured.
    with pytest.raises(ndtune.NdtuneError, match="energy"):
        tune(observers=[NVMLObserver(["nvml_energy", "nvml_power"])])
