"""Kernel Tuner's `tune_kernel` over ndtune's engine.

A call becomes a spec directory (spec.toml and the kernel's files) whose contents depend only
on the call, so the store's identity of its results is the same for the same call and a second
call reuses what the first measured. The directory is tuned by the extension (`_ndtune.tune`)
through the engine the `ndtune` command runs; the evaluated configurations come back shaped as
Kernel Tuner shapes its results. Arguments ndtune cannot honour are refused with `SpecError`
naming them, never ignored.
"""

import hashlib
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

from . import _ndtune
from ._ndtune import SpecError

# NumPy types and the OpenCL types of the kernel parameters they stand for.
OPENCL_TYPES = {
    np.dtype(np.int8): "char",
    np.dtype(np.uint8): "uchar",
    np.dtype(np.int16): "short",
    np.dtype(np.uint16): "ushort",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "uint",
    np.dtype(np.int64): "long",
    np.dtype(np.uint64): "ulong",
    np.dtype(np.float16): "half",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}

# Kernel Tuner's strategies that ndtune has (ndtune's own names are accepted too).
STRATEGIES = {
    "brute_force": "exhaustive",
    "random_sample": "random",
    "simulated_annealing": "anneal",
    "genetic_algorithm": "ga",
    "greedy_ils": "ils",
    "greedy_mls": "mls",
}
NDTUNE_STRATEGIES = (
    "exhaustive", "random", "anneal", "anneal-jump", "ga", "ils", "ils-adjacent", "mls",
    "mls-adjacent", "forest",
)

# Kernel Tuner's defaults where a block size is not a tunable parameter.
DEFAULT_BLOCK_SIZE_NAMES = ["block_size_x", "block_size_y", "block_size_z"]
DEFAULT_BLOCK_SIZES = [256, 1, 1]


class ErrorConfig(str):
    """The `time` of a configuration that has none, as Kernel Tuner marks it."""

    def __str__(self):
        return self.__class__.__name__

    def __repr__(self):
        return self.__class__.__name__


class InvalidConfig(ErrorConfig):
    pass


class CompilationFailedConfig(ErrorConfig):
    pass


class RuntimeFailedConfig(ErrorConfig):
    pass


# Arguments of Kernel Tuner's tune_kernel that ndtune refuses when given, and why.
REFUSED = {
    "verify": "a verification function needs the outputs handed back from the worker, which "
    "ndtune does not do yet",
    "smem_args": "shared memory arguments are CUDA's",
    "cmem_args": "constant memory arguments are CUDA's",
    "texmem_args": "texture memory arguments are CUDA's",
    "compiler": "ndtune tunes OpenCL kernels only; `compiler` selects a C/C++/Fortran compiler",
    "defines": "ndtune passes each parameter the kernel mentions as -D NAME=VALUE; replacing "
    "those defines is not supported yet",
    "log": "ndtune does not write Kernel Tuner's log files",
    "simulation_mode": "replay recorded results with `ndtune tune --replay CACHE` instead",
    "parallel": "ndtune measures on one device per call",
    "observers": "ndtune has no counterpart of Kernel Tuner's observers",
    "objectives": "ndtune optimises one objective (give `objective`)",
}


def _refuse(name, why):
    raise SpecError(f"tune_kernel: {name} is not supported by ndtune: {why}")


def _check_refused(given):
    for name, why in REFUSED.items():
        if given.get(name) not in (None, False):
            _refuse(name, why)


def _check_lang(lang):
    if lang is not None and str(lang).lower() != "opencl":
        _refuse(f"lang={lang!r}", "ndtune tunes OpenCL kernels only")


def _toml(value):
    """A TOML value: integers, reals, strings (JSON's escapes are TOML's) and lists of them."""
    if isinstance(value, (bool, np.bool_)):
        raise SpecError(f"a boolean ({value}) cannot be a value: write 0 and 1")
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise SpecError(f"{value!r} cannot be written in a spec")


def _expr(value, what):
    """A Kernel Tuner size or divisor (an integer or a Python expression of the parameters) as
    an expression of ndtune's language, parenthesised."""
    if callable(value):
        _refuse(what, "a function of the parameters is not supported yet: give a string "
                "expression of them")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"({int(value)})"
    if isinstance(value, str):
        return f"({value})"
    raise SpecError(f"tune_kernel: {what} must be an integer or a string, not {value!r}")


def _divisor(divisor, default_name, tune_params, what):
    """Kernel Tuner's grid divisor of one dimension: the block size by default (1 where it is
    not a parameter), else the product of the listed divisors."""
    if divisor is None:
        return f"({default_name})" if default_name in tune_params else "(1)"
    if isinstance(divisor, (list, tuple)):
        return "(" + " * ".join(_expr(d, what) for d in divisor) + ")" if divisor else "(1)"
    return _expr(divisor, what)


def _problem_size(problem_size):
    if callable(problem_size):
        _refuse("problem_size", "a function of the parameters is not supported yet: give "
                "integers or string expressions of them")
    if isinstance(problem_size, (str, int, np.integer)):
        problem_size = (problem_size,)
    sizes = list(problem_size)
    if not 1 <= len(sizes) <= 3:
        raise SpecError(f"tune_kernel: problem_size has {len(sizes)} dimensions; 1 to 3 are possible")
    return [_expr(s, "problem_size") for s in sizes] + ["(1)"] * (3 - len(sizes))


def _kernel_files(kernel_source):
    """The kernel's files: (name, text) of the kernel and of the files it includes, as Kernel
    Tuner reads them (a file name, a list of file names with the kernel's first, or code)."""
    if callable(kernel_source):
        _refuse("kernel_source", "a function that generates the code per configuration is not "
                "supported yet: give the code, a file name or a list of file names")
    if isinstance(kernel_source, (list, tuple)):
        paths = [Path(p) for p in kernel_source]
    elif isinstance(kernel_source, Path) or (
        isinstance(kernel_source, str) and "\n" not in kernel_source
        and len(kernel_source) < 4096 and os.path.isfile(kernel_source)
    ):
        paths = [Path(kernel_source)]
    elif isinstance(kernel_source, str):
        return [("kernel.cl", kernel_source)]
    else:
        raise SpecError(f"tune_kernel: kernel_source must be code, a file name or a list of file "
                        f"names, not {type(kernel_source).__name__}")
    names = [p.name for p in paths]
    if len(set(names)) != len(names) or "spec.toml" in names:
        raise SpecError(f"tune_kernel: kernel_source files need distinct names other than spec.toml: {names}")
    return [(p.name, p.read_text()) for p in paths]


def _block_size_names(names):
    """Kernel Tuner's block_size_names, completed to three with its defaults."""
    names = list(names or DEFAULT_BLOCK_SIZE_NAMES)
    return names + DEFAULT_BLOCK_SIZE_NAMES[len(names):]


def _args(arguments):
    lines = []
    for i, arg in enumerate(arguments):
        name = f"arg{i}"
        dtype = getattr(arg, "dtype", None)
        cl_type = OPENCL_TYPES.get(np.dtype(dtype)) if dtype is not None else None
        if cl_type is None:
            raise SpecError(
                f"tune_kernel: argument {i} is a {type(arg).__name__}"
                + (f" of {dtype}" if dtype is not None else "")
                + "; ndtune takes NumPy arrays and NumPy scalars of "
                + ", ".join(str(d) for d in OPENCL_TYPES)
            )
        lines.append("[[args]]")
        lines.append(f"name = {_toml(name)}")
        lines.append(f"type = {_toml(cl_type)}")
        if isinstance(arg, np.ndarray):
            lines += ['kind = "buffer"', f"len = {arg.size}",
                      f"init = {{ npy = {_toml(name + '.npy')} }}", 'access = "read_write"']
        elif isinstance(arg, np.generic):
            lines += ['kind = "scalar"', f"value = {_toml(arg.item())}"]
        else:
            raise SpecError(f"tune_kernel: argument {i} must be a NumPy array or scalar")
        lines.append("")
    return lines


# Kernel Tuner's `p["name"]` in a metric: the name itself in ndtune's expressions.
P_NAME = re.compile(r"""\bp\[\s*(["'])([^"'\]]*)\1\s*\]""")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _metric_expr(name, metric, before):
    """A Kernel Tuner metric (a string of the parameters, `time` and the metrics `before` it,
    bare or as `p["name"]`) as an expression of ndtune's language. An earlier metric whose name
    is no identifier (`p["GFLOP/s"]`) is replaced by its expression, parenthesised."""
    if callable(metric):
        _refuse(f"metrics[{name!r}] as a function", "ndtune keeps metrics as expressions beside "
                "the measurements (so a changed formula re-ranks what is stored); give a string "
                "in Python syntax instead, e.g. '2 * n / 1e6 / time' or "
                "'2 * n / 1e6 / p[\"time\"]'")
    if not isinstance(metric, str):
        raise SpecError(f"tune_kernel: metrics[{name!r}] must be a string, not {metric!r}")

    def bare(m):
        named = m.group(2)
        if IDENTIFIER.fullmatch(named):
            return named
        if named in before:
            return f"({before[named]})"
        _refuse(f"metrics[{name!r}]", f"{m.group(0)} is neither a metric defined before it nor "
                "a name of an expression")

    return P_NAME.sub(bare, metric)


def _metrics_lines(metrics, objective, higher_is_better):
    """`[metrics]` and `[objective]`: Kernel Tuner's metrics, in order, and its objective."""
    lines = []
    if metrics:
        if not isinstance(metrics, dict):
            raise SpecError("tune_kernel: metrics must be a dict of name -> expression")
        lines.append("[metrics]")
        before = {}
        for name, metric in metrics.items():
            before[str(name)] = _metric_expr(name, metric, before)
            lines.append(f"{_toml(str(name))} = {_toml(before[str(name)])}")
        lines.append("")
    objective = objective or "time"
    if objective != "time" or higher_is_better:
        lines += ["[objective]", f"metric = {_toml(str(objective))}",
                  f"higher_is_better = {'true' if higher_is_better else 'false'}", ""]
    return lines


def _spec_text(kernel_name, kernel_file, kernel_files, problem_size, arguments, tune_params,
               grid_div, restrictions, iterations, compiler_options, block_size_names,
               metrics_lines, verify_lines):
    lines = ["[kernel]", f"name = {_toml(kernel_name)}", f"source = {_toml(kernel_file)}"]
    if compiler_options:
        lines.append(f"build_options = {_toml([str(o) for o in compiler_options])}")
    lines += ["", "[params]"]
    for name, values in tune_params.items():
        values = list(values)
        if not values:
            raise SpecError(f"tune_kernel: tune_params[{name!r}] has no values")
        lines.append(f"{name} = {_toml(values)}")
    sizes = _problem_size(problem_size)
    blocks = [
        name if name in tune_params else str(default)
        for name, default in zip(block_size_names, DEFAULT_BLOCK_SIZES)
    ]
    divisors = [
        _divisor(d, block_size_names[i], tune_params, f"grid_div_{'xyz'[i]}")
        for i, d in enumerate(grid_div)
    ]
    # Kernel Tuner's grid: ceil(problem size / divisor) work-groups of the block size.
    global_sizes = [
        f"({s} + {d} - 1) // {d} * {b}" for s, d, b in zip(sizes, divisors, blocks)
    ]
    lines += ["", "[launch]", f"global = {_toml(global_sizes)}", f"local = {_toml(blocks)}", ""]
    if restrictions:
        if callable(restrictions) or any(callable(r) for r in restrictions):
            _refuse("restrictions", "a Python function is not supported yet: give strings in "
                    "Python syntax")
        lines += ["[space]", f"restrictions = {_toml([str(r) for r in restrictions])}", ""]
    lines += _args(arguments)
    lines += ["[measure]", "warmup = 1", f"runs = {int(iterations)}", f"best_of = {int(iterations)}", ""]
    lines += metrics_lines
    lines += verify_lines
    return "\n".join(lines)


# The host reference of `answer`: copies each expected output's bytes, kept beside the spec, into
# the buffer ndtune compares the kernel's output with (docs/spec.md, "Host functions").
ANSWER_C = """#include <stdio.h>
#include <stdlib.h>

void ndtune_answer(const ndtune_args *args) {
    static const struct { const char *buffer; const char *file; size_t bytes; } answers[] = {
%s
    };
    for (size_t k = 0; k < sizeof answers / sizeof answers[0]; k++) {
        const ndtune_buffer *b = ndtune_buffer_named(args, answers[k].buffer);
        FILE *f = fopen(answers[k].file, "rb");
        if (b == NULL || f == NULL || fread(b->data, 1, answers[k].bytes, f) != answers[k].bytes) {
            fprintf(stderr, "answer: cannot read %%s for %%s\\n", answers[k].file, answers[k].buffer);
            exit(1);
        }
        fclose(f);
    }
}
"""


def _answers(answer, arguments):
    """Kernel Tuner's `answer` (None for an argument not checked): (argument index, array) of
    each checked one, of the argument's type and size."""
    if answer is None:
        return []
    if len(answer) != len(arguments):
        raise SpecError(f"tune_kernel: answer has {len(answer)} entries, arguments "
                        f"{len(arguments)}: give None for each argument not checked")
    checked = []
    for i, (a, arg) in enumerate(zip(answer, arguments)):
        if a is None:
            continue
        if not isinstance(arg, np.ndarray) or not isinstance(a, np.ndarray):
            raise SpecError(f"tune_kernel: answer[{i}] checks argument {i}: both must be NumPy "
                            "arrays (None for an argument not checked)")
        if a.dtype != arg.dtype or a.size != arg.size:
            raise SpecError(f"tune_kernel: answer[{i}] is {a.size} of {a.dtype}, argument {i} "
                            f"{arg.size} of {arg.dtype}: they must match")
        checked.append((i, np.ascontiguousarray(a)))
    if not checked:
        raise SpecError("tune_kernel: answer checks no argument (every entry is None)")
    return checked


def _verify_lines(checked, atol):
    """`[verify]`: the checked arguments against the host reference of the answers, within
    NumPy's allclose rule (rtol 1e-5) and `atol`, as Kernel Tuner checks them."""
    if not checked:
        return []
    return ["[verify]", f"outputs = {_toml([f'arg{i}' for i, _ in checked])}",
            'reference = { host = "answer.c", function = "ndtune_answer" }',
            "tolerance = 1e-5", f"atol = {_toml(float(atol))}", ""]


def spec_dir():
    """Where the spec directories of Python calls are written: $NDTUNE_PYTHON_DIR, else
    ~/.cache/ndtune/python."""
    base = os.environ.get("NDTUNE_PYTHON_DIR")
    return Path(base) if base else Path.home() / ".cache" / "ndtune" / "python"


def _save(path, array):
    with open(path, "wb") as f:
        np.save(f, array)


def write_spec(kernel_name, files, spec_text, arguments, checked=()):
    """Writes the spec directory of a call: its kernel files, spec.toml, each array argument as
    `argN.npy` and each answer as `answerN.bin` with `answer.c`, the host reference that reads
    them. The directory is named by the digest of all of it, so the same call writes the same
    directory, and a call with other data another (`answer.c` names the directory, so the
    answers are part of the reference's identity). Returns the spec's path."""
    digest = hashlib.sha256(json.dumps([spec_text, files]).encode())
    arrays = [(f"arg{i}.npy", np.ascontiguousarray(a)) for i, a in enumerate(arguments)
              if isinstance(a, np.ndarray)]
    answers = [(f"answer{i}.bin", a) for i, a in checked]
    for name, a in arrays + answers:
        digest.update(f"{name} {a.dtype.str} {a.shape}".encode())
        digest.update(a.tobytes())
    directory = (spec_dir() / f"{kernel_name}-{digest.hexdigest()[:16]}").absolute()
    directory.mkdir(parents=True, exist_ok=True)
    if checked:
        entries = ",\n".join(
            f"        {{ {json.dumps(f'arg{i}')}, {json.dumps(str(directory / f'answer{i}.bin'))}, "
            f"{a.nbytes} }}" for i, a in checked)
        files = files + [("answer.c", ANSWER_C % entries)]

    # Written once: a campaign's workers check that the files they read are unchanged.
    def put(name, write):
        path = directory / name
        if not path.exists():
            tmp = directory / f".{name}.{os.getpid()}"
            write(tmp)
            os.replace(tmp, path)

    for name, a in arrays:
        put(name, lambda tmp, a=a: _save(tmp, a))
    for name, a in answers:
        put(name, lambda tmp, a=a: tmp.write_bytes(a.tobytes()))
    for name, text in files + [("spec.toml", spec_text)]:
        put(name, lambda tmp, text=text: tmp.write_text(text))
    return directory / "spec.toml"


def _strategy(strategy, strategy_options):
    name = strategy or "brute_force"
    if name in STRATEGIES:
        name = STRATEGIES[name]
    elif name not in NDTUNE_STRATEGIES:
        _refuse(f"strategy={strategy!r}", "Kernel Tuner's strategies ndtune has are "
                + ", ".join(STRATEGIES) + "; ndtune's own: " + ", ".join(NDTUNE_STRATEGIES))
    options = dict(strategy_options or {})
    budget = options.pop("max_fevals", None)
    time_limit = options.pop("time_limit", None)
    if options:
        _refuse(f"strategy_options {sorted(options)}", "ndtune's strategies take max_fevals "
                "and time_limit only")
    return name, (int(budget) if budget is not None else None), time_limit


def _time_of(outcome):
    kind = outcome["outcome"]
    if kind == "measured":
        times = outcome["times_ms"]
        return float(np.mean(times)), list(times)
    if kind == "build_failed":
        return CompilationFailedConfig(), None
    if kind == "pruned":
        return InvalidConfig(), None
    return RuntimeFailedConfig(), None


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params,
                grid_div_x=None, grid_div_y=None, grid_div_z=None, restrictions=None,
                answer=None, atol=1e-6, verify=None, verbose=False, lang=None, device=0,
                platform=0, smem_args=None, cmem_args=None, texmem_args=None, compiler=None,
                compiler_options=None, defines=None, log=None, iterations=7,
                block_size_names=None, quiet=False, strategy=None, strategy_options=None,
                cache=None, metrics=None, simulation_mode=None, parallel=None, observers=None,
                objective=None, objective_higher_is_better=None, objectives=None, seed=None,
                *, db="ndtune.db", build_jobs=None, warm_start=False, timeout=None):
    """Tunes an OpenCL kernel as Kernel Tuner's `tune_kernel` does, with ndtune's engine:
    returns `(results, env)` shaped as Kernel Tuner's. Beside Kernel Tuner's arguments: `db`
    (the store: an SQLite file or a PostgreSQL URL), `build_jobs`, `warm_start`, `timeout`
    (seconds per evaluation). docs/python.md says what ndtune does with each argument."""
    _check_refused(locals())
    _check_lang(lang)
    objective = objective or "time"
    higher_is_better = bool(objective_higher_is_better)
    metrics_lines = _metrics_lines(metrics, objective, higher_is_better)
    block_size_names = _block_size_names(block_size_names)
    name, budget, time_limit = _strategy(strategy, strategy_options)
    files = _kernel_files(kernel_source)
    checked = _answers(answer, arguments)
    if isinstance(restrictions, str):
        restrictions = [restrictions]
    spec_text = _spec_text(kernel_name, files[0][0], files, problem_size, arguments, tune_params,
                           (grid_div_x, grid_div_y, grid_div_z), restrictions, iterations,
                           compiler_options, block_size_names, metrics_lines,
                           _verify_lines(checked, atol))
    spec = write_spec(kernel_name, files, spec_text, arguments, checked)
    if cache is not None:
        cache = str(cache) if str(cache).endswith(".json") else f"{cache}.json"
        cache = [cache, {
            "kernel_name": kernel_name,
            "problem_size": _json_problem_size(problem_size),
            "tune_params_keys": list(tune_params),
            "tune_params": {k: [_plain(v) for v in vs] for k, vs in tune_params.items()},
        }]
    out = json.loads(_ndtune.tune(json.dumps({
        "spec": str(spec), "db": str(db), "worker": _worker_command(), "platform": platform,
        "device": device, "strategy": name, "budget": budget, "time_limit": time_limit,
        "seed": int(seed or 0), "build_jobs": build_jobs, "warm_start": warm_start,
        "timeout": timeout, "quiet": quiet, "cache": cache,
    })))
    results = []
    for r in out["results"]:
        result = {k: r["config"][k] for k in tune_params}
        result["time"], times = _time_of(r["outcome"])
        if times is not None:
            result["times"] = times
            # Kernel Tuner's results carry each metric of a measured configuration.
            result.update({k: v for k, v in r["metrics"].items() if v is not None})
        result["ndtune_outcome"] = r["outcome"]["outcome"]
        results.append(result)
        if verbose and not quiet:
            print(_line(result, tune_params, metrics))
    device = out["device"]
    measured = [r for r in results if not isinstance(r["time"], ErrorConfig)]
    ranked = [r for r in measured if isinstance(r.get(objective), float)]
    pick = max if higher_is_better else min
    best = pick(ranked, key=lambda r: r[objective]) if ranked else None
    env = {
        # As Kernel Tuner's env names them.
        "device_name": device["name"],
        "device_version": device["version"],
        "driver_version": device["driver_version"],
        "platform_name": device["platform_name"],
        "iterations": iterations,
        "compiler_options": compiler_options,
        "best_config": best,
        # ndtune's.
        "kernel_name": kernel_name,
        "problem_size": _json_problem_size(problem_size),
        "block_size_names": block_size_names,
        "objective": objective,
        "objective_higher_is_better": higher_is_better,
        "strategy": name,
        "db": str(db),
        "spec": str(spec),
        "ndtune_report": out["report"],
    }
    if not quiet:
        if best is not None:
            print("best performing configuration:")
            print(_line(best, tune_params, metrics))
        else:
            print("no configuration was measured")
    return results, env


def _worker_command():
    """How the engine starts this package's workers: this Python, without the current directory
    on its path where the Python can say so (-P), so a directory named ndtune there is not taken
    for the package."""
    safe = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *safe, "-m", "ndtune._worker"]


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _json_problem_size(problem_size):
    if isinstance(problem_size, (list, tuple)):
        return [_plain(p) for p in problem_size]
    return _plain(problem_size)


def _line(result, tune_params, metrics):
    params = ", ".join(f"{k}={result[k]}" for k in tune_params)
    time = result["time"]
    shown = f"{time:.3f}ms" if isinstance(time, float) else str(time)
    values = "".join(f", {k}={result[k]:.3f}" for k in metrics or {} if k in result)
    return f"{params}, time={shown}{values}"
