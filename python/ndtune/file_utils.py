"""Kernel Tuner's `kernel_tuner.file_utils` output files, for ndtune's results: the T4 format's
results file (`store_output_file`) and metadata file (`store_metadata_file`), schema 1.0.0, as
Kernel Tuner's scripts write them.

    from ndtune.file_utils import store_output_file, store_metadata_file
"""

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .util import ErrorConfig, CompilationFailedConfig, InvalidConfig, NpEncoder

SCHEMA_VERSION = "1.0.0"

# Kernel Tuner's result keys that are no measurement, with the T4 name of each timing.
TIMINGS = {"compile_time": "compilation", "benchmark_time": "benchmark",
           "framework_time": "framework", "strategy_time": "search_algorithm",
           "verification_time": "validation"}


def _json_path(name):
    path = Path(name if str(name).endswith(".json") else f"{name}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _invalidity(result):
    """T4's reason a configuration has no measurement: `correct` where it has one."""
    error = result.get("__error__")
    if not isinstance(error, ErrorConfig):
        return "correct"
    if isinstance(error, CompilationFailedConfig):
        return "compile"
    if isinstance(error, InvalidConfig):
        return "constraints"
    return "runtime"


def get_t4_results(results, tune_params, objective="time"):
    """`results` of `tune_kernel` as a T4 results document."""
    if not isinstance(objective, str):
        raise ValueError("the T4 format holds one objective")
    skipped = set(tune_params) | set(TIMINGS) | {"timestamp", "times", "ndtune_outcome",
                                                 "__error__"}
    out = []
    for result in results:
        entry = {}
        if "timestamp" in result:
            entry["timestamp"] = result["timestamp"]
        entry["configuration"] = {k: result[k] for k in tune_params if k in result}
        times = {t4: result.get(key, 0) for key, t4 in TIMINGS.items()}
        times["runtimes"] = list(result.get("times", []))
        entry["times"] = times
        entry["invalidity"] = _invalidity(result)
        # ndtune tells a wrong result apart (Kernel Tuner stops on one).
        entry["correctness"] = 0 if result.get("ndtune_outcome") == "wrong_result" else 1
        entry["measurements"] = [
            {"name": k, "value": v, "unit": "ms" if k.startswith("time") else ""}
            for k, v in result.items() if k not in skipped]
        entry["objectives"] = [objective]
        out.append(entry)
    return {"results": out, "schema_version": SCHEMA_VERSION,
            "metadata": {"timeunit": "milliseconds"}}


def store_output_file(output_filename, results, tune_params, objective="time"):
    """Writes `results` as a T4 results file (`.json` added where missing)."""
    with open(_json_path(output_filename), "w") as f:
        json.dump(get_t4_results(results, tune_params, objective), f, cls=NpEncoder)


def _requirements():
    found = []
    for package in ("ndtune", "numpy"):
        try:
            found.append(f"{package}=={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return found


def _hardware():
    """`lshw -json`'s description of this machine, where it is installed."""
    try:
        text = subprocess.run(["lshw", "-json"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
        parsed = json.loads(text)
        return parsed if isinstance(parsed, list) else [parsed]
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return ["no hardware description: lshw is not installed or failed"]


def get_t4_metadata():
    """This machine, its OpenCL devices and the packages at work, as a T4 metadata document."""
    from . import devices

    system = {"Linux": "Linux", "Darwin": "Mac", "Windows": "Windows"}
    return {
        "metadata": {
            "operating_system": system.get(platform.system(), "unidentified OS"),
            "hardware": {"hardware_description": _hardware()},
            "environment": {"device_query": {"opencl": devices()},
                            "requirements": _requirements()},
        },
        "schema_version": SCHEMA_VERSION,
    }


def store_metadata_file(metadata_filename):
    """Writes the T4 metadata of this machine (`.json` added where missing)."""
    with open(_json_path(metadata_filename), "w") as f:
        json.dump(get_t4_metadata(), f, indent="  ", cls=NpEncoder)
