"""Kernel Tuner's observers under ndtune: `NVMLObserver` (`ndtune.observers.nvml`), whose
readings are ndtune's own NVML measurements, and the base classes Kernel Tuner scripts derive
their observers from. `tune_kernel` calls a user's `BenchmarkObserver` in the calling process
around each timed run of a configuration, as Kernel Tuner does, and keeps what its
`get_results()` gives with the measurement (docs/python.md, "Observers"); `OutputObserver` and
`PrologueObserver` are refused by name.
"""

from abc import ABC, abstractmethod


class BenchmarkObserver(ABC):
    """Kernel Tuner's base class of an observer: hooks around each benchmark iteration and the
    results it adds to a configuration's."""

    def register_device(self, dev):
        self.dev = dev

    def register_configuration(self, params):
        pass

    def before_start(self):
        pass

    def after_start(self):
        pass

    def during(self):
        pass

    def after_finish(self):
        pass

    @abstractmethod
    def get_results(self):
        """The values this observer adds to a configuration's result."""


class IterationObserver(BenchmarkObserver):
    pass


class PrologueObserver(BenchmarkObserver):
    def before_start(self):
        pass


class OutputObserver(BenchmarkObserver):
    def process_output(self, answer, output):
        pass


from .nvml import NVMLObserver  # noqa: E402,F401
