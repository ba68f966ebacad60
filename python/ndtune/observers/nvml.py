"""Kernel Tuner's `NVMLObserver` under ndtune. Its `nvml_energy` (joules per run) and
`nvml_power` (watts) are ndtune's own NVML measurements, `energy_j` and `power_w` (docs/tuning.md,
"Energy and power"), read over a window of back-to-back runs of each configuration and stored
beside its times; they come back in each result under Kernel Tuner's names. The quantities
ndtune does not read (clocks, temperature, voltage, single power readings) are refused by name,
and a device that is no NVIDIA GPU is an error, as NVML cannot read it.
"""

from . import BenchmarkObserver

# Kernel Tuner's observables, and the metric ndtune measures each as, where it does.
SUPPORTED = ["power_readings", "nvml_power", "nvml_energy", "core_freq", "mem_freq",
             "temperature", "gr_voltage"]
MEASURED = {"nvml_energy": "energy_j", "nvml_power": "power_w"}


class NVMLObserver(BenchmarkObserver):
    """Observes `observables` of the tuned NVIDIA GPU: ndtune gives `nvml_energy` and
    `nvml_power`; Kernel Tuner's other arguments are accepted and have no effect."""

    def __init__(self, observables, device=None, save_all=False, nvidia_smi_fallback=None,
                 use_locked_clocks=False, continuous_duration=1):
        for observable in observables:
            if observable not in SUPPORTED:
                raise ValueError(f"Observable {observable} not in supported: {SUPPORTED}")
        self.observables = list(observables)
        self.device = device

    def metrics(self):
        """The spec's metrics that give this observer's values, by Kernel Tuner's names; a
        ValueError names what ndtune does not measure."""
        missing = [o for o in self.observables if o not in MEASURED]
        if missing:
            raise ValueError(f"NVMLObserver: ndtune measures {', '.join(MEASURED)} through NVML "
                             f"(its energy_j and power_w), not {', '.join(missing)}")
        return {o: MEASURED[o] for o in self.observables}

    def get_results(self):
        return {}
