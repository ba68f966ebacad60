"""Kernel Tuner's `NVMLObserver` under ndtune. Its `nvml_energy` (joules per run), `nvml_power`
(watts), `temperature` (degrees Celsius), `core_freq` and `mem_freq` (MHz) are ndtune's own NVML
measurements, `energy_j`, `power_w`, `temperature_c`, `core_clock_mhz` and `mem_clock_mhz`
(docs/tuning.md, "Energy and power"), read over a window of back-to-back runs of each
configuration (as long as Kernel Tuner's continuous measurement where the energy or the power is
read: `continuous_duration`, at least 1 s) and stored beside its times; they come back in each
result under Kernel Tuner's names (the sensors also as `pwr_temperature` and the like, as Kernel
Tuner's continuous measurement gives them). The quantities ndtune does not read (the graphics voltage, single power readings) are
refused by name, and a device that is no NVIDIA GPU is an error, as NVML cannot read it.
"""

from . import BenchmarkObserver

# Kernel Tuner's observables, and the metric ndtune measures each as, where it does.
SUPPORTED = ["power_readings", "nvml_power", "nvml_energy", "core_freq", "mem_freq",
             "temperature", "gr_voltage"]
MEASURED = {"nvml_energy": "energy_j", "nvml_power": "power_w", "temperature": "temperature_c",
            "core_freq": "core_clock_mhz", "mem_freq": "mem_clock_mhz"}
POWER = ("nvml_energy", "nvml_power")


class NVMLObserver(BenchmarkObserver):
    """Observes `observables` of the tuned NVIDIA GPU: ndtune gives the means over each
    configuration's energy window (`continuous_duration` long where the energy or the power is
    read); Kernel Tuner's other arguments are accepted and have no effect (`save_all`'s lists of
    the readings of each run are not kept)."""

    def __init__(self, observables, device=None, save_all=False, nvidia_smi_fallback=None,
                 use_locked_clocks=False, continuous_duration=1):
        for observable in observables:
            if observable not in SUPPORTED:
                raise ValueError(f"Observable {observable} not in supported: {SUPPORTED}")
        self.observables = list(observables)
        self.device = device
        self.continuous_duration = continuous_duration

    def reads_power(self):
        """Whether it reads the energy or the power: over one window of back-to-back runs of
        each configuration, `continuous_duration` long (at least 1 s), as Kernel Tuner's
        continuous measurement."""
        return any(o in POWER for o in self.observables)

    def metrics(self):
        """The spec's metrics that give this observer's values, by Kernel Tuner's names; a
        ValueError names what ndtune does not measure."""
        missing = [o for o in self.observables if o not in MEASURED]
        if missing:
            raise ValueError(f"NVMLObserver: ndtune measures {', '.join(MEASURED)} through NVML "
                             f"(its {', '.join(MEASURED.values())}), not {', '.join(missing)}")
        names = {o: MEASURED[o] for o in self.observables}
        if self.reads_power():
            # Kernel Tuner gives the sensors once more as read over the continuous measurement
            # (`pwr_temperature`): ndtune reads them over that one window.
            names.update({f"pwr_{o}": MEASURED[o] for o in self.observables if o not in POWER})
        return names

    def get_results(self):
        return {}
