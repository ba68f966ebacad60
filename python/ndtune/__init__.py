"""ndtune from Python: Kernel Tuner's `tune_kernel` for OpenCL kernels, with ndtune's engine
(pruning, parallel builds, supervised workers, a results store that resumes) underneath.

    from ndtune import tune_kernel
    results, env = tune_kernel("vector_add", kernel_string, size, args, tune_params)

docs/python.md lists every argument and what ndtune does with it.
"""

import json

from . import _ndtune
from ._kt import (
    CompilationFailedConfig,
    ErrorConfig,
    InvalidConfig,
    RuntimeFailedConfig,
    tune_kernel,
)
from ._ndtune import CampaignError, DeviceError, NdtuneError, SpecError, StoreError


def devices():
    """The OpenCL devices: each a dict with ndtune's `index`, Kernel Tuner's `platform` and
    `device` numbers (tune_kernel's `platform=` and `device=`), its `name` and `profile`."""
    return json.loads(_ndtune.devices())


__all__ = [
    "tune_kernel",
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
