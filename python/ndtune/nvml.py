"""`kernel_tuner.nvml`'s place under ndtune (older Kernel Tuner scripts import `NVMLObserver`
from here): the same `NVMLObserver` as `ndtune.observers.nvml`."""

from .observers.nvml import NVMLObserver  # noqa: F401
