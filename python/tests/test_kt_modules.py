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
    from ndtune.observers.nvml import NVMLObserver

    # Kernel Tuner's own check of the observables' names.
    with pytest.raises(ValueError, match="Observable energy not in supported"):
        NVMLObserver(["energy"])
    # What ndtune does not measure is named.
    with pytest.raises(ndtune.SpecError, match="not gr_voltage"):
        tune(observers=[NVMLObserver(["nvml_energy", "gr_voltage"])])

    # Observers ndtune gives nothing to call with are named.
    from ndtune.observers import OutputObserver

    class Outputs(OutputObserver):
        def get_results(self):
            return {}

    with pytest.raises(ndtune.SpecError, match="observers: Outputs"):
        tune(observers=[Outputs()])
    # Kernel Tuner's names of ndtune's readings, and its continuous measurement's window.
    from ndtune._kt import _energy_window_ms

    both = NVMLObserver(["nvml_energy", "temperature"], continuous_duration=2.5)
    assert both.metrics() == {"nvml_energy": "energy_j", "temperature": "temperature_c",
                              "pwr_temperature": "temperature_c"}
    sensors = NVMLObserver(["core_freq", "mem_freq"])
    assert sensors.metrics() == {"core_freq": "core_clock_mhz", "mem_freq": "mem_clock_mhz"}
    assert _energy_window_ms([both]) == 2500.0
    assert _energy_window_ms([NVMLObserver(["nvml_power"], continuous_duration=0.2)]) == 1000.0
    assert _energy_window_ms([sensors]) is None
    # PoCL's CPU has no NVML: the energy cannot be read, and nothing is measured.
    for observables in (["nvml_energy", "nvml_power"], ["temperature", "core_freq"]):
        with pytest.raises(ndtune.NdtuneError, match="energy and power are not available"):
            tune(observers=[NVMLObserver(observables)])


def recorder():
    """A user's observer as Kernel Tuner's documentation writes one: it logs every hook, counts
    the runs and the `during` calls of each configuration and names the device."""
    from ndtune.observers import BenchmarkObserver

    class Recorder(BenchmarkObserver):
        def __init__(self):
            self.log = []

        def register_configuration(self, params):
            self.log.append(("configuration", params["block_size_x"]))
            self.runs, self.during_calls = 0, 0

        def before_start(self):
            self.log.append("before_start")

        def after_start(self):
            self.log.append("after_start")

        def during(self):
            self.during_calls += 1

        def after_finish(self):
            self.log.append("after_finish")
            self.runs += 1

        def get_results(self):
            return {"runs": self.runs, "during_calls": self.during_calls,
                    "device": self.dev.name}

    return Recorder()


def test_a_users_observer_is_called_around_each_timed_run_and_its_results_are_kept(own_directory):
    watcher = recorder()
    results, env = tune(observers=[watcher], iterations=4, cache="watched.json",
                        metrics={"runs_per_ms": lambda p: p["runs"] / p["time"]})
    assert len(results) == 3
    for r in results:
        assert r["runs"] == len(r["times"]) == 4
        assert r["during_calls"] >= r["runs"]
        assert r["device"] == env["device_name"]
        # A metric function sees the observer's values, as Kernel Tuner's.
        assert r["runs_per_ms"] == r["runs"] / r["time"]
    # Each configuration once (in the order measured, which is not the results' order), and
    # each timed run, as Kernel Tuner's iterations: before, launched, during, finished.
    told = [entry[1] for entry in watcher.log if isinstance(entry, tuple)]
    assert sorted(told) == sorted(r["block_size_x"] for r in results)
    runs = " ".join(e for e in watcher.log if isinstance(e, str))
    assert runs == " ".join(["before_start after_start after_finish"] * 12)
    per_configuration = [i for i, e in enumerate(watcher.log) if isinstance(e, tuple)]
    assert per_configuration == [0, 13, 26]
    assert env["ndtune_observers"] == [f"{__name__}.recorder.<locals>.Recorder"]
    # The cache carries the observers' values in each entry, as Kernel Tuner's does.
    entries = json.load(open("watched.json"))["cache"].values()
    assert sorted((e["block_size_x"], e["runs"], e["device"]) for e in entries) == sorted(
        (r["block_size_x"], 4, env["device_name"]) for r in results)

    # The values are kept with the measurements: the same observers again reuse them and call
    # no hook; another observer has not watched those runs, so they are measured again.
    again = recorder()
    reused, _ = tune(observers=[again], iterations=4)
    assert again.log == []
    assert [(r["runs"], r["time"]) for r in reused] == [(r["runs"], r["time"]) for r in results]

    # So does a campaign in another store that continues from the cache.
    cached = recorder()
    from_cache, _ = tune(observers=[cached], iterations=4, cache="watched.json", db="other.db")
    assert cached.log == []
    assert [r["runs"] for r in from_cache] == [4, 4, 4]

    class Other(type(again)):
        pass

    other = Other()
    measured, _ = tune(observers=[other], iterations=4)
    assert len([e for e in other.log if e == "after_finish"]) == 12


def test_an_observer_that_fails_stops_the_campaign_with_its_error(own_directory):
    from ndtune.observers import BenchmarkObserver

    class Broken(BenchmarkObserver):
        def during(self):
            raise RuntimeError("the sensor is gone")

        def get_results(self):
            return {}

    with pytest.raises(RuntimeError, match="the sensor is gone"):
        tune(observers=[Broken()])

    class Opaque(BenchmarkObserver):
        def get_results(self):
            return {"handle": object()}

    with pytest.raises(ndtune.SpecError, match=r"Opaque.get_results\(\): a value of type object is not one the store"):
        tune(observers=[Opaque()])
