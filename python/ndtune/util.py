"""The parts of Kernel Tuner's `kernel_tuner.util` that its scripts use, for ndtune's results:
the markers of configurations without a time, and the helpers that pick and print results.

    from ndtune.util import get_best_config, get_config_string
"""

import json

import numpy as np

from ._kt import (CompilationFailedConfig, ErrorConfig, InvalidConfig,  # noqa: F401
                  RuntimeFailedConfig, _is_number)


def get_best_config(results, objective, objective_higher_is_better=False):
    """The result with the best value of `objective` among those without an error (its value a
    number); `None` where there is none."""
    ranked = [r for r in results if "__error__" not in r and _is_number(r.get(objective))]
    if not ranked:
        return None
    pick = max if objective_higher_is_better else min
    return pick(ranked, key=lambda r: r[objective])


def get_config_string(params, keys=None, units=None):
    """A result or configuration as one line, `name=value, ...` (numbers to three decimals),
    only `keys` where given, each value followed by its unit from `units` where it has one."""
    units = units or {}
    shown = []
    for key, value in params.items():
        if keys is not None and key not in keys:
            continue
        if isinstance(value, (float, np.floating)):
            text = f"{value:.3f}"
        else:
            text = str(value)
        unit = units.get(key)
        shown.append(f"{key}={text}{unit and ' ' + unit or ''}")
    return ", ".join(shown)


class NpEncoder(json.JSONEncoder):
    """JSON for NumPy's numbers and arrays (`json.dump(results, f, cls=NpEncoder)`)."""

    def default(self, o):
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
        return super().default(o)
