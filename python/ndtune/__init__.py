"""ndtune from Python: Kernel Tuner's `tune_kernel` and `run_kernel` for OpenCL and CUDA kernels,
with ndtune's engine (pruning, parallel builds, supervised workers, a results store that
resumes) underneath; `space` (the pruned space, unmeasured), `Store` (a store's results),
`report`, `bench_strategies` (search strategies replayed on recorded spaces), `collect` (stencil
data collection for learning), `best` (a tuned configuration at run time, from a wisdom file)
and `Schedule` (the co-execution schedulers of `ndtune split --schedule`, for a program that
drives its own devices).

    from ndtune import tune_kernel
    results, env = tune_kernel("vector_add", kernel_string, size, args, tune_params)

docs/python.md lists every argument and what ndtune does with it.
"""

import atexit
import sys

from . import _ndtune
from ._lang import language_of
from ._ndtune import (CampaignError, DeviceError, NdtuneError, Schedule, SpecError,
                      StoreError, WisdomError)

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


def release_workers():
    """Ends the measurement and build workers that the last `tune_kernel` call left waiting for
    the next one (on its device, with its inputs in the device's memory). They end by themselves
    after 30 s without a call and when Python exits; call this to free the device at once."""
    _ndtune.release_workers()


# Kept workers end with the interpreter, their temporary files removed.
atexit.register(_ndtune.release_workers)


def devices():
    """The OpenCL and CUDA devices: each a dict with ndtune's `index`, its `api` (`opencl` or
    `cuda`), Kernel Tuner's `platform` and `device` numbers (tune_kernel's `platform=` and
    `device=`: per OpenCL platform, or CUDA's ordinal on platform 0), its `name` and `profile`."""
    return _ndtune.devices()


def cuda_compilers():
    """What CUDA kernels are built with, found without a GPU or a driver: a dict of `nvrtc` (its
    `version` and the `library` file loaded, or the `error` why none loads), `nvcc` (`version`
    and `path`, or None: nvcc builds what NVRTC refuses), the `headers` folders of NVRTC's own
    toolkit that builds search, and the `toolkit_roots` looked in, in order: `CUDA_HOME`,
    `CUDA_PATH`, `CUDA_ROOT`, NVIDIA's Python packages in `sys.path` folders (CUDA 13's
    `nvidia/cu13`, as `pip install nvidia-cuda-nvrtc nvidia-cuda-nvcc` puts it, then CUDA 12's
    `nvidia/cuda_nvrtc`, from `nvidia-cuda-nvrtc-cu12`, which PyTorch's CUDA 12 builds bring;
    where Kernel Tuner's cuda-python finds NVRTC too), then `/usr/local/cuda`."""
    return _ndtune.cuda_compilers()


def best(wisdom, kernel, constants=None, *, device=0, platform=0, prefer=None, lang="OpenCL",
         **more):
    """The configuration of `kernel` to build and launch with on device `device` of OpenCL
    platform `platform` (Kernel Tuner's numbers; `lang="CUDA"`: CUDA device `device` by ordinal,
    the configuration tuned for the kernel's CUDA source) for the problem's constants (`constants` and
    keyword arguments: `best("app.wisdom.json", "saxpy", N=768)`), from a wisdom file written by
    `ndtune export --format wisdom` (docs/deploy.md). A dict: `how` ("exact", "nearest" or
    "predicted"), `config`, `build_options`, `global`, `local`, `reason`, and for the first two
    the entry's `tuned_objective` and `tuned_constants`. For a kernel tuned for several
    objectives, `prefer` picks from its tuned Pareto front: `"time,power_w<=200"` (the fastest
    under 200 W), `"energy_j,time<=1.05x"` (the least energy within 5% of the fastest), as
    `ndtune pick --prefer`. Raises `WisdomError` where the file cannot be used or nothing in it
    fits: keep your own configuration then. Each question is recorded while NDTUNE_CAPTURE names
    a folder (`ndtune tune SPEC --captured DIR`)."""
    given = dict(constants or {}, **more)
    if language_of(lang) is None:
        raise SpecError(f"best: lang={lang!r}: ndtune builds OpenCL and CUDA kernels")
    cuda = language_of(lang) == "cuda"
    # A NumPy scalar exists only where NumPy was imported: this module does not import it.
    np = sys.modules.get("numpy")
    given = {str(k): v.item() if np is not None and isinstance(v, np.generic) else v
             for k, v in given.items()}
    return _ndtune.best(str(wisdom), kernel, given, platform, device, prefer, cuda)


__all__ = [
    "best",
    "release_workers",
    "Schedule",
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
    "WisdomError",
    "ErrorConfig",
    "InvalidConfig",
    "CompilationFailedConfig",
    "RuntimeFailedConfig",
]
