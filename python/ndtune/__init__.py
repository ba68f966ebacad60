"""ndtune from Python: Kernel Tuner's `tune_kernel` and `run_kernel` for OpenCL kernels, with
ndtune's engine (pruning, parallel builds, supervised workers, a results store that resumes)
underneath; `space` (the pruned space, unmeasured), `Store` (a store's results), `report`,
`bench_strategies` (search strategies replayed on recorded spaces) and `collect` (stencil data
collection for learning).

    from ndtune import tune_kernel
    results, env = tune_kernel("vector_add", kernel_string, size, args, tune_params)

docs/python.md lists every argument and what ndtune does with it.
"""

import json

from . import _ndtune
from ._ndtune import CampaignError, DeviceError, NdtuneError, SpecError, StoreError

# Imported when first asked for: NumPy takes most of a second to import, and the worker
# processes (`python -m ndtune._worker`), which import this package, need none of it.
_FROM_KT = ("tune_kernel", "ErrorConfig", "InvalidConfig", "CompilationFailedConfig",
            "RuntimeFailedConfig")
_FROM_API = ("run_kernel", "space", "Store", "report", "bench_strategies", "collect")
# Kernel Tuner's submodules that its scripts use, under the same names (`import ndtune as
# kernel_tuner; kernel_tuner.util.get_config_string(...)`).
_SUBMODULES = ("util", "file_utils", "observers", "nvml")


def __getattr__(name):
    if name in _FROM_KT:
        from . import _kt

        return getattr(_kt, name)
    if name in _FROM_API:
        from . import _api

        return getattr(_api, name)
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ndtune' has no attribute {name!r}")


def devices():
    """The OpenCL devices: each a dict with ndtune's `index`, Kernel Tuner's `platform` and
    `device` numbers (tune_kernel's `platform=` and `device=`), its `name` and `profile`."""
    return json.loads(_ndtune.devices())


__all__ = [
    "tune_kernel",
    "run_kernel",
    "space",
    "Store",
    "report",
    "bench_strategies",
    "collect",
    "devices",
    "NdtuneError",
    "SpecError",
    "DeviceError",
    "StoreError",
    "CampaignError",
    "ErrorConfig",
    "InvalidConfig",
    "CompilationFailedConfig",
    "RuntimeFailedConfig",
]
