"""Kernel Tuner's `tune_kernel` over ndtune's engine.

A call becomes a spec directory (the kernel's files, its arrays, and spec.toml, which the
extension writes from the spec as a dict of its sections: `_spec_document`) whose contents depend
only on the call, so the store's identity of its results is the same for the same call and a second
call reuses what the first measured. The directory is tuned by the extension (`_ndtune.tune`)
through the engine the `ndtune` command runs; the evaluated configurations come back shaped as
Kernel Tuner shapes its results. Arguments ndtune cannot honour are refused with `SpecError`
naming them, never ignored.

Kernel Tuner's functions of the parameters (a `kernel_source` that generates the code,
`restrictions` functions, `defines`, a `problem_size` function) are called here, in this
process, once per configuration the engine is about to evaluate (`_PerConfig`, which the
engine asks through `_ndtune.tune`): nothing is enumerated, and lambdas and closures need no
pickling. So is a `verify` function, with the outputs of each configuration's verification run
that the measurement worker wrote into files (`_Verify`). Their identity (`_identity`: code,
constants, defaults, closure and global values) is written into the spec directory's kernel
file, so a changed function is another campaign.
"""

import hashlib
import inspect
import json
import os
import re
import sys
import tempfile
import threading
import time
import warnings
from datetime import datetime, timezone
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from . import _ndtune
from ._lang import language_of
from ._ndtune import DeviceError, SpecError

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

# NumPy types a kernel's buffer holds as elements of another: a bool is a byte, a complex number
# two reals (as OpenCL's float2 and CUDA's cuComplex lay them out).
AS_ELEMENTS = {np.dtype(np.bool_): np.uint8, np.dtype(np.complex64): np.float32,
               np.dtype(np.complex128): np.float64}


def _elements(arg):
    """An argument as the kernel gets it: an array of a type of AS_ELEMENTS as a view of its
    elements (contiguous), a bool scalar as a byte; anything else as it is."""
    if isinstance(arg, np.ndarray) and arg.dtype in AS_ELEMENTS:
        return np.ascontiguousarray(arg).view(AS_ELEMENTS[arg.dtype])
    if isinstance(arg, np.bool_):
        return np.uint8(arg)
    return arg


# Kernel Tuner's strategies that ndtune has (ndtune's own names are accepted too).
STRATEGIES = {
    "brute_force": "exhaustive",
    "random_sample": "random",
    "simulated_annealing": "anneal",
    "genetic_algorithm": "ga",
    "greedy_ils": "ils",
    "greedy_mls": "mls",
    # Kernel Tuner 1.4+'s front strategy (through pymoo); ndtune's own.
    "nsga2": "nsga2",
}
NDTUNE_STRATEGIES = (
    "exhaustive", "random", "anneal", "anneal-jump", "ga", "ils", "ils-adjacent", "mls",
    "mls-adjacent", "forest", "bo", "parego",
)

# Kernel Tuner's directions of objectives it knows (`objective_default_map`); any other is lower
# is better unless said, as Kernel Tuner's single objective is.
KNOWN_DIRECTIONS = {
    "time": False, "energy": False, "fitness": True, "cost": False, "loss": False,
    "GFLOP/s": True, "TFLOP/s": True, "GB/s": True, "TB/s": True, "GFLOPS/W": True,
    "TFLOPS/W": True, "GFLOP/J": True, "TFLOP/J": True,
}

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
    "texmem_args": "it binds CUDA texture references, which CUDA 12 removed (Kernel Tuner binds "
                   "them through PyCUDA only); read the array through a `const float *__restrict__` "
                   "argument, which uses the same read-only cache",
    "compiler": "ndtune tunes OpenCL and CUDA kernels; `compiler` selects a C/C++/Fortran compiler",
    "log": "ndtune does not write Kernel Tuner's log files",
    "simulation_mode": "replay recorded results with `ndtune tune --replay CACHE` instead",
}


def _refuse(name, why):
    raise SpecError(f"tune_kernel: {name} is not supported by ndtune: {why}")


def _check_refused(given):
    for name, why in REFUSED.items():
        if given.get(name) not in (None, False):
            _refuse(name, why)


def _language(lang, files):
    """The kernel's language, `opencl` or `cuda`: `lang` as Kernel Tuner names it, else as Kernel
    Tuner detects it (a `.cu` kernel file, `__global__` in the code: CUDA; otherwise OpenCL)."""
    if lang is not None:
        language = language_of(lang)
        if language is None:
            _refuse(f"lang={lang!r}", "ndtune tunes OpenCL and CUDA kernels")
        return language
    name, text = files[0]
    if name.endswith((".cu", ".cuh")) or ("__global__" in text and "__kernel" not in text):
        return "cuda"
    return "opencl"


def _value(value):
    """A value of the spec document: an integer, a real, a string or a list of them (NumPy's
    scalars as Python's)."""
    if isinstance(value, (bool, np.bool_)):
        raise SpecError(f"a boolean ({value}) cannot be a value: write 0 and 1")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    raise SpecError(f"{value!r} cannot be written in a spec")


def _expr(value, what):
    """A Kernel Tuner size or divisor (an integer or a Python expression of the parameters) as
    an expression of ndtune's language, parenthesised."""
    if callable(value):
        _refuse(what, "a function of the parameters is not supported (a problem_size function "
                "is): give a string expression of them")
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


def _grid_per_config(problem_size, grid_div):
    """Whether each configuration's grid comes from a function of the parameters (a
    problem_size or a grid divisor that is one), worked out per configuration in this process."""
    return callable(problem_size) or any(callable(d) for d in grid_div)


def _problem_size(problem_size):
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
        return [("kernel.cl", "")]  # generated per configuration; its language is `lang`
    if isinstance(kernel_source, (list, tuple)):
        if any(callable(k) for k in kernel_source):
            _refuse("kernel_source", "a list with a function in it is not supported: give the "
                    "function alone (the code it returns may not #include files)")
        paths = [Path(p) for p in kernel_source]
    elif isinstance(kernel_source, Path) or (
        isinstance(kernel_source, str) and "\n" not in kernel_source
        and len(kernel_source) < 4096 and os.path.isfile(kernel_source)
    ):
        paths = [Path(kernel_source)]
    elif isinstance(kernel_source, str):
        cuda = "__global__" in kernel_source and "__kernel" not in kernel_source
        return [("kernel.cu" if cuda else "kernel.cl", kernel_source)]
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


def _args(arguments, data):
    """The spec's `args` of Kernel Tuner's arguments: `argN`, a buffer read from its file in
    `data` ([`_Data`]) or a scalar."""
    args = []
    for i, arg in enumerate(arguments):
        name = f"arg{i}"
        arg = _elements(arg)
        dtype = getattr(arg, "dtype", None)
        cl_type = OPENCL_TYPES.get(np.dtype(dtype)) if dtype is not None else None
        if cl_type is None:
            raise SpecError(
                f"tune_kernel: argument {i} is a {type(arg).__name__}"
                + (f" of {dtype}" if dtype is not None else "")
                + "; ndtune takes NumPy arrays and NumPy scalars of "
                + ", ".join(str(d) for d in [*OPENCL_TYPES, *AS_ELEMENTS])
            )
        if isinstance(arg, np.ndarray):
            args.append({"name": name, "type": cl_type, "kind": "buffer", "len": int(arg.size),
                         "init": {"npy": data.args[i]}, "access": "read_write"})
        elif isinstance(arg, np.generic):
            args.append({"name": name, "type": cl_type, "kind": "scalar",
                         "value": _value(arg.item())})
        else:
            raise SpecError(f"tune_kernel: argument {i} must be a NumPy array or scalar")
    return args


# Kernel Tuner's `p["name"]` in a metric: the name itself in ndtune's expressions.
P_NAME = re.compile(r"""\bp\[\s*(["'])([^"'\]]*)\1\s*\]""")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _metric_expr(name, metric, before):
    """A Kernel Tuner metric (a string of the parameters, `time` and the metrics `before` it,
    bare or as `p["name"]`) as an expression of ndtune's language. An earlier metric whose name
    is no identifier (`p["GFLOP/s"]`) is replaced by its expression, parenthesised."""

    def bare(m):
        named = m.group(2)
        if IDENTIFIER.fullmatch(named):
            return named
        if named in before:
            return f"({before[named]})"
        _refuse(f"metrics[{name!r}]", f"{m.group(0)} is neither a metric defined before it nor "
                "a name of an expression")

    return P_NAME.sub(bare, metric)


def _objectives(objective, objective_higher_is_better, objectives):
    """Kernel Tuner 1.4+'s objectives as two lists, names and directions: `objectives` (a dict
    of name -> higher_is_better), or `objective` (a name or a list) with
    `objective_higher_is_better` (a bool or a list; for a list left out, each known direction,
    else lower is better)."""
    if objectives:
        if not isinstance(objectives, dict):
            raise SpecError("tune_kernel: objectives must be a dict of name -> higher_is_better")
        return [str(k) for k in objectives], [bool(v) for v in objectives.values()]
    objective = objective or "time"
    if isinstance(objective, str):
        return [objective], [bool(objective_higher_is_better)]
    names = [str(o) for o in objective]
    if not names:
        raise SpecError("tune_kernel: objective is an empty list")
    said = objective_higher_is_better
    if said is None:
        said = [KNOWN_DIRECTIONS.get(n, False) for n in names]
    elif isinstance(said, bool):
        said = [said] * len(names)
    said = [bool(b) for b in said]
    if len(said) != len(names):
        raise SpecError(f"tune_kernel: {len(names)} objectives but {len(said)} values of "
                        "objective_higher_is_better")
    return names, said


def _front_results(results, front, tune_params):
    """The results of the configurations on the engine's front (its report's `front`), each
    marked `optimal` as Kernel Tuner 1.4+ marks its Pareto results, in the front's order
    (best by the first objective first)."""
    by_config = {tuple(r[k] for k in tune_params): r for r in results}
    out = []
    for member in (front or {}).get("members", []):
        r = by_config.get(tuple(member["config"][k] for k in tune_params))
        if r is not None:
            r["optimal"] = True
            out.append(r)
    return out


def _metrics_sections(metrics, objectives, higher):
    """`metrics` and `objective`: Kernel Tuner's metrics, in order, and its objectives."""
    sections = {}
    if metrics:
        if not isinstance(metrics, dict):
            raise SpecError("tune_kernel: metrics must be a dict of name -> expression")
        before = {}
        for name, metric in metrics.items():
            before[str(name)] = _metric_expr(name, metric, before)
        sections["metrics"] = before
    if objectives != ["time"] or higher != [False]:
        sections["objective"] = {"metric": [str(o) for o in objectives],
                                 "higher_is_better": [bool(h) for h in higher]}
    return sections


def _smem_args(smem_args, language):
    """Kernel Tuner's `smem_args` (`{"size": bytes}`): a CUDA launch's dynamic shared memory, as
    a `local` argument of the spec, which a CUDA launch gives as its dynamic shared memory (no
    kernel parameter)."""
    if smem_args is None:
        return []
    if language != "cuda":
        _refuse("smem_args", "it is CUDA's dynamic shared memory; an OpenCL kernel takes "
                "__local memory as an argument")
    if not isinstance(smem_args, dict) or set(smem_args) != {"size"}:
        raise SpecError(f"tune_kernel: smem_args is {{'size': bytes}}, not {smem_args!r}")
    size = _expr(smem_args["size"], "smem_args['size']")
    return [{"name": "smem_args", "kind": "local", "bytes": size}]


def constant_memory(cmem_args, language):
    """Kernel Tuner's `cmem_args` (`{"name": array}`: CUDA's `__constant__` arrays, filled before
    each launch) as (name, array) pairs, a NumPy scalar as an array of one element."""
    if not cmem_args:
        return []
    if language != "cuda":
        _refuse("cmem_args", "it is CUDA's constant memory; an OpenCL kernel takes a __constant "
                "pointer as an argument")
    if not isinstance(cmem_args, dict):
        raise SpecError(f"tune_kernel: cmem_args is {{'name': array}}, not {cmem_args!r}")
    constants = []
    for name, value in cmem_args.items():
        if not (isinstance(name, str) and IDENTIFIER.fullmatch(name)):
            raise SpecError(f"tune_kernel: cmem_args: {name!r} is not the name of a __constant__ "
                            "array")
        if isinstance(value, (np.ndarray, np.generic)):
            value = _elements(np.atleast_1d(value))
        if not isinstance(value, np.ndarray) or value.dtype not in OPENCL_TYPES:
            raise SpecError(f"tune_kernel: cmem_args[{name!r}] is a {type(value).__name__}; "
                            "give a NumPy array or scalar of "
                            + ", ".join(map(str, [*OPENCL_TYPES, *AS_ELEMENTS])))
        constants.append((name, np.ascontiguousarray(value)))
    return constants


def _constant_args(constants, data):
    """The spec's `constant` arguments of `cmem_args`, each read from its file in `data`."""
    return [{"name": name, "type": OPENCL_TYPES[array.dtype], "kind": "constant",
             "len": int(array.size), "init": {"npy": data.constants[name]}}
            for name, array in constants]


def _spec_document(kernel_name, kernel_file, problem_size, arguments, data, tune_params,
                   grid_div, restrictions, iterations, compiler_options, block_size_names,
                   metrics, verify, energy_ms=None, language="opencl", smem_args=None,
                   constants=()):
    """The spec of a call as a dict of the spec file's sections (docs/spec.md), which the
    extension writes as spec.toml and validates (`write_spec`); its arrays are read from their
    files in `data` ([`_Data`]). `metrics` holds the `metrics` and `objective` sections,
    `verify` the `verify` section, where the call has them."""
    kernel = {"name": str(kernel_name), "source": kernel_file, "language": language}
    if compiler_options:
        kernel["build_options"] = [str(o) for o in compiler_options]
    params = {}
    for name, values in tune_params.items():
        values = list(values)
        if not values:
            raise SpecError(f"tune_kernel: tune_params[{name!r}] has no values")
        params[str(name)] = _value(values)
    blocks = [
        name if name in tune_params else str(default)
        for name, default in zip(block_size_names, DEFAULT_BLOCK_SIZES)
    ]
    if _grid_per_config(problem_size, grid_div):
        # The global size of each configuration comes from the functions of the parameters
        # (`_PerConfig`); this one stands for it.
        grid = blocks
    else:
        divisors = [
            _divisor(d, block_size_names[i], tune_params, f"grid_div_{'xyz'[i]}")
            for i, d in enumerate(grid_div)
        ]
        # Kernel Tuner's grid: ceil(problem size / divisor) work-groups of the block size.
        grid = [f"({s} + {d} - 1) // {d} * {b}"
                for s, d, b in zip(_problem_size(problem_size), divisors, blocks)]
    # Only what the device enforces prunes, as Kernel Tuner measures every configuration that
    # launches: the seed's eq. 3 (at least as many work-groups as compute units) is a performance
    # heuristic that would empty a reduction's one-work-group stage. (Where the grid comes from
    # functions, the pruner knows none anyway.)
    space = {"restrictions": [str(r) for r in restrictions]} if restrictions else {}
    space["platform"] = "legal"
    measure = {"warmup": 1, "runs": int(iterations), "best_of": int(iterations)}
    if energy_ms is not None:
        measure["energy_ms"] = float(energy_ms)
    return {
        "kernel": kernel,
        "params": params,
        "launch": {"global": grid, "local": blocks},
        "space": space,
        "args": (_args(arguments, data) + _smem_args(smem_args, language)
                 + _constant_args(constants, data)),
        "measure": measure,
        **metrics,
        **verify,
    }


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


def _verify_section(checked, atol):
    """`verify`: the checked arguments against the host reference of the answers, within
    NumPy's allclose rule (rtol 1e-5) and `atol`, as Kernel Tuner checks them."""
    if not checked:
        return {}
    return {"verify": {"outputs": [f"arg{i}" for i, _ in checked],
                       "reference": {"host": "answer.c", "function": "ndtune_answer"},
                       "tolerance": 1e-5, "atol": float(atol)}}


def spec_dir():
    """Where the spec directories of Python calls are written: $NDTUNE_PYTHON_DIR, else
    ~/.cache/ndtune/python."""
    base = os.environ.get("NDTUNE_PYTHON_DIR")
    return Path(base) if base else Path.home() / ".cache" / "ndtune" / "python"


def _save(path, array):
    with open(path, "wb") as f:
        np.save(f, array)


def _each(function, items):
    """`function` of each item, in threads where there are several: hashing and writing large
    arrays release the GIL, so three 40 MB inputs take the time of one."""
    items = list(items)
    if len(items) < 2:
        return [function(item) for item in items]
    with ThreadPoolExecutor(min(len(items), os.cpu_count() or 1)) as pool:
        return list(pool.map(function, items))


def _put(path, write):
    """Writes `path` once, by `write(tmp)` and a rename: what is there is whole, and the
    campaign's workers check that the files they read are unchanged."""
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        write(tmp)
        os.replace(tmp, path)


def _content_name(array, suffix):
    # The bytes as they lie (no copy), hashed on every core outside the GIL.
    data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return _ndtune.digest(f"{array.dtype.str} {array.shape}".encode(), data)[:32] + suffix


class _Data:
    """A call's arrays (array arguments, `cmem_args`, `answer`s) as files under
    `spec_dir()/data`, each named by the digest of its type, shape and bytes: every call with
    the same array reads one file, written once (a loop of calls over a 3 GB input writes it
    once, not once a call). `args` and `constants` give each its path as a spec names it,
    relative to the spec's directory; `answers` (argument index, absolute path) feed the host
    reference of `answer`."""

    def __init__(self, arguments, checked=(), constants=()):
        folder = (spec_dir() / "data").absolute()
        folder.mkdir(parents=True, exist_ok=True)
        arrays = [(("arg", i), np.ascontiguousarray(_elements(a)), ".npy")
                  for i, a in enumerate(arguments) if isinstance(a, np.ndarray)]
        arrays += [(("cmem", n), a, ".npy") for n, a in constants]
        arrays += [(("answer", i), a, ".bin") for i, a in checked]

        def store(item):
            _, array, suffix = item
            path = folder / _content_name(array, suffix)
            _put(path, (lambda tmp: _save(tmp, array)) if suffix == ".npy" else array.tofile)
            return path

        paths = dict(zip((key for key, _, _ in arrays), _each(store, arrays)))
        named = {key: f"../data/{path.name}" for key, path in paths.items()}
        self.args = {i: p for (kind, i), p in named.items() if kind == "arg"}
        self.constants = {n: p for (kind, n), p in named.items() if kind == "cmem"}
        self.answers = [(i, paths[("answer", i)], a.nbytes) for i, a in checked]


def write_spec(kernel_name, files, document, data):
    """Writes the spec directory of a call: its kernel files, spec.toml (the extension writes
    `document` and validates it) and, where `data` ([`_Data`]) has answers, `answer.c`, the
    host reference that reads them. The directory is named by the digest of all of it (the
    arrays by their files' names, which digest their contents), so the same call writes the
    same directory, and a call with other data another. Returns the spec's path."""
    if data.answers:
        entries = ",\n".join(
            f"        {{ {json.dumps(f'arg{i}')}, {json.dumps(str(path))}, {nbytes} }}"
            for i, path, nbytes in data.answers)
        files = files + [("answer.c", ANSWER_C % entries)]
    digest = hashlib.sha256(json.dumps([document, files]).encode())
    directory = (spec_dir() / f"{kernel_name}-{digest.hexdigest()[:16]}").absolute()
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files:
        _put(directory / name, lambda tmp, text=text: tmp.write_text(text))
    return Path(_ndtune.write_spec(str(directory), document))


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


# Kernel Tuner's environment variable that asks for parallel tuning (`parallel=True`).
PARALLEL_ENV = "KERNEL_TUNER_PARALLEL"


def _ndtune_devices():
    # Unprobed profiles: comparing the devices makes no context on any of them.
    return _ndtune.devices(False)


def _parallel_devices(parallel, platform, device, language):
    """The device numbers of `platform` that Kernel Tuner's `parallel` asks for: `device` and the
    devices of the platform identical to it after it, then before it (the rule a pool holds its
    devices to, in Rust); all of them for `True`, the first N for an integer N."""
    if parallel is True:
        return _ndtune.parallel_devices(platform, device, None, language)
    if isinstance(parallel, bool) or not isinstance(parallel, (int, np.integer)) or parallel < 1:
        raise SpecError(f"tune_kernel: parallel={parallel!r}: give True or a number of devices")
    return _ndtune.parallel_devices(platform, device, int(parallel), language)


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params,
                grid_div_x=None, grid_div_y=None, grid_div_z=None, restrictions=None,
                answer=None, atol=1e-6, verify=None, verbose=False, lang=None, device=0,
                platform=0, smem_args=None, cmem_args=None, texmem_args=None, compiler=None,
                compiler_options=None, defines=None, log=None, iterations=7,
                block_size_names=None, quiet=False, strategy=None, strategy_options=None,
                cache=None, metrics=None, simulation_mode=None, parallel=None, observers=None,
                objective=None, objective_higher_is_better=None, objectives=None, seed=None,
                *, db="ndtune.db", build_jobs=None, warm_start=False, timeout=None, pool=None):
    """Tunes an OpenCL or CUDA kernel as Kernel Tuner's `tune_kernel` does, with ndtune's engine:
    returns `(results, env)` shaped as Kernel Tuner's. Beside Kernel Tuner's arguments: `db`
    (the store: an SQLite file or a PostgreSQL URL), `build_jobs`, `warm_start`, `timeout`
    (seconds per evaluation), `pool` (device numbers of `platform`, identical devices tuning one
    campaign together, a worker process each). docs/python.md says what ndtune does with each
    argument."""
    _check_refused(locals())
    started = time.perf_counter()
    objectives, higher = _objectives(objective, objective_higher_is_better, objectives)
    objective, higher_is_better = objectives[0], higher[0]
    several = len(objectives) > 1
    observed, watching = _observed(observers)
    energy_ms = _energy_window_ms(observers)
    spec_metrics, here_metrics = _split_metrics(metrics)
    # The observers' values come first, so that the metrics may use them, as Kernel Tuner's.
    spec_metrics = {**observed, **spec_metrics}
    name, budget, time_limit = _strategy(strategy, strategy_options)
    if several and any(o in here_metrics for o in objectives):
        raise SpecError("tune_kernel: several objectives need each to be a metric ndtune computes "
                        "(an expression string); "
                        + ", ".join(o for o in objectives if o in here_metrics)
                        + " is a function")
    if objective in here_metrics:
        # The engine ranks by what it computes; the best is chosen here by the objective.
        if name != "exhaustive":
            warnings.warn(f"tune_kernel: the objective {objective!r} is a function computed in "
                          "this process: the search follows the time, and the best is chosen "
                          f"by {objective!r}", stacklevel=2)
        metrics_sections = _metrics_sections(spec_metrics, ["time"], [False])
    else:
        metrics_sections = _metrics_sections(spec_metrics, objectives, higher)
    block_size_names = _block_size_names(block_size_names)
    files = _kernel_files(kernel_source)
    language = _language(lang, files)
    constants = constant_memory(cmem_args, language)
    # A verify function checks the outputs in place of the host reference of `answer`.
    own_check = _Verify(verify, answer, atol, arguments) if verify is not None else None
    checked = _answers(answer, arguments) if own_check is None else []
    grid_div = (grid_div_x, grid_div_y, grid_div_z)
    strings, functions = _restrictions(restrictions, tune_params)
    if watching:
        found = [d for d in _ndtune_devices() if d["api"] == language
                 and d["platform"] == platform and d["device"] == device]
        if not found:
            raise DeviceError(f"device={device}: platform {platform} has no such device")
        watching = _Watching(watching, _ObservedDevice(found[0]))
    per_config = _PerConfig(kernel_source, files, problem_size, tune_params, grid_div,
                            block_size_names, defines, functions, own_check, watching or None)
    if parallel is None:
        parallel = bool(os.environ.get(PARALLEL_ENV))
    if parallel and pool is None:
        if per_config.active:
            warnings.warn(f"tune_kernel: parallel={parallel!r} tunes on device {device} alone: "
                          "functions of the parameters, verify and observers stay in this "
                          "process, which a pool's workers cannot call", stacklevel=2)
        else:
            pool = _parallel_devices(parallel, platform, device, language)
            pool = pool if len(pool) > 1 else None
    if pool is not None:
        pool = [int(d) for d in pool]
        if not pool:
            raise SpecError("tune_kernel: pool names no device")
        if per_config.active:
            _refuse("pool with functions of the parameters, verify or observers",
                    "the pool's workers are processes of their own, which cannot call this "
                    "process's functions; tune on one device")
        device = pool[0]
    if per_config.identity:
        # The functions' identity is part of the kernel file's text, so of the results' setup.
        files = [(files[0][0], per_config.stub(files[0][1]))] + files[1:]
    data = _Data(arguments, checked, constants)
    document = _spec_document(kernel_name, files[0][0], problem_size, arguments, data,
                              tune_params, grid_div, strings, iterations, compiler_options,
                              block_size_names, metrics_sections, _verify_section(checked, atol),
                              energy_ms, language, smem_args, constants)
    spec = write_spec(kernel_name, files, document, data)
    if cache is not None:
        cache = str(cache) if str(cache).endswith(".json") else f"{cache}.json"
        cache = {
            "path": cache,
            "kernel_name": kernel_name,
            "problem_size": _json_problem_size(problem_size),
            "tune_params_keys": list(tune_params),
            "tune_params": {k: [_plain(v) for v in vs] for k, vs in tune_params.items()},
        }
    # The measurement worker writes the outputs verify checks here, per configuration.
    outputs = tempfile.TemporaryDirectory(prefix="ndtune-verify-") if own_check else nullcontext()
    with outputs as outputs_dir:
        check = {"dir": outputs_dir, "outputs": own_check.outputs} if own_check else None
        out = _ndtune.tune({
            "spec": str(spec), "db": str(db), "worker": _worker_command(), "platform": platform,
            "device": device, "strategy": name, "budget": budget, "time_limit": time_limit,
            "seed": int(seed or 0), "build_jobs": build_jobs, "warm_start": warm_start,
            "timeout": timeout, "quiet": quiet, "cache": cache, "check": check, "pool": pool,
        }, per_config if per_config.active else None)
    results = []
    for r in out["results"]:
        result = {k: r["config"][k] for k in tune_params}
        result["time"], times = _time_of(r["outcome"])
        if times is not None:
            result["times"] = times
            result.update({k: r["metrics"][k] for k in observed
                           if r["metrics"].get(k) is not None})
            for values in (r["outcome"].get("observed") or {}).values():
                result.update(values)
        else:
            result["__error__"] = result["time"]
        # In milliseconds, as Kernel Tuner's; 0 for a result read back from the store, as
        # Kernel Tuner's for one read from its cache.
        phases = r.get("phases") or {}
        result["compile_time"] = phases.get("compile_ms", 0.0)
        result["verification_time"] = phases.get("verification_ms", 0.0)
        result["benchmark_time"] = phases.get("benchmark_ms", 0.0)
        if times is not None:
            # Kernel Tuner's results carry each metric of a measured configuration, in order.
            result.update({k: v for k, v in r["metrics"].items()
                           if v is not None and k not in observed})
            _compute_metrics(result, here_metrics)
        result["timestamp"] = str(datetime.fromtimestamp(r["at_ms"] / 1000, timezone.utc))
        result["ndtune_outcome"] = r["outcome"]["outcome"]
        results.append(result)
    if name == "exhaustive":
        # Kernel Tuner's brute force gives its results in the space's order; ndtune measures
        # them in a scattered one (a fast configuration found early lets racing stop the slow).
        rank = {k: {_plain(v): i for i, v in enumerate(vs)} for k, vs in tune_params.items()}
        results.sort(key=lambda r: [rank[k].get(r[k], -1) for k in tune_params])
    _amortise(results, out["report"]["time"])
    if verbose and not quiet:
        for result in results:
            print(_line(result, tune_params, metrics))
    device = out["device"]
    measured = [r for r in results if not isinstance(r["time"], ErrorConfig)]
    ranked = [r for r in measured if _is_number(r.get(objective))]
    pick = max if higher_is_better else min
    best = pick(ranked, key=lambda r: r[objective]) if ranked else None
    # Several objectives: the best configurations are the front, as Kernel Tuner 1.4+ gives them.
    front = _front_results(results, out["report"].get("front"), tune_params) if several else None
    env = {
        # As Kernel Tuner's env names them.
        "device_name": device["name"],
        "device_version": device["version"],
        "driver_version": device["driver_version"],
        "platform_name": device["platform_name"],
        "platform_version": out["platform_version"],
        "opencl_c_version": out["opencl_c_version"],
        "iterations": iterations,
        "compiler_options": compiler_options,
        "best_config": front if several else best,
        # ndtune's.
        "kernel_name": kernel_name,
        "problem_size": _json_problem_size(problem_size),
        "block_size_names": block_size_names,
        "objective": objectives if several else objective,
        "objective_higher_is_better": higher if several else higher_is_better,
        "strategy": name,
        "db": str(db),
        "spec": str(spec),
        "ndtune_report": out["report"],
        # The call's account, as `ndtune tune --json` gives it (docs/tuning.md): reading the
        # spec, finding the devices, the store, pruning, the campaigns; its `wall_s`, `start_s`
        # and `other_s` count from this Python process's start.
        "ndtune_time": out["time"],
        # A parallel campaign's wall and each worker's own account (its report's `time` is the
        # last pass over the store's results); None on one device.
        "ndtune_pool": out["pool"],
        # Where each metric was computed: by the engine from the spec (kept beside the
        # measurements, so that a changed formula re-ranks what is stored), or here.
        "ndtune_metrics": {**{k: "spec" for k in spec_metrics if k not in observed},
                           **{k: "python" for k in here_metrics}},
        # The user's observers whose values each measured result carries.
        "ndtune_observers": per_config.observers,
    }
    _totals(env, results, 1000 * (time.perf_counter() - started))
    if not quiet:
        if several and front:
            print(f"best performing configurations for objectives {objectives}:")
            for r in front:
                print(_line(r, tune_params, metrics))
        elif best is not None:
            print("best performing configuration:")
            print(_line(best, tune_params, metrics))
        else:
            print("no configuration was measured")
    return results, env


def _observed(observers):
    """The call's observers, split: the spec's metrics that give the `NVMLObserver`s' values (by
    Kernel Tuner's names; ndtune's own measurements), and the user's observers of the timed
    runs, whose hooks this process calls (`_Watching`)."""
    from .observers import OutputObserver, PrologueObserver
    from .observers.nvml import NVMLObserver

    observed, watching = {}, []
    for observer in observers or []:
        if isinstance(observer, (OutputObserver, PrologueObserver)):
            _refuse(f"observers: {type(observer).__name__}", "ndtune calls an observer's hooks "
                    "around the timed runs; it hands no outputs to an OutputObserver and runs "
                    "no prologue")
        if not isinstance(observer, NVMLObserver):
            if not callable(getattr(observer, "get_results", None)):
                raise SpecError(f"tune_kernel: observers: {type(observer).__name__} has no "
                                "get_results(); an observer derives from "
                                "ndtune.observers.BenchmarkObserver")
            watching.append(observer)
            continue
        try:
            observed.update(observer.metrics())
        except ValueError as e:
            raise SpecError(f"tune_kernel: {e}") from None
    return observed, watching


def _energy_window_ms(observers):
    """The energy window of the `NVMLObserver`s that read the energy or the power: Kernel
    Tuner's continuous measurement lasts the longest `continuous_duration`, and at least 1 s;
    `None` where none reads them (the spec's default window)."""
    from .observers.nvml import NVMLObserver

    durations = [o.continuous_duration for o in observers or []
                 if isinstance(o, NVMLObserver) and o.reads_power()]
    return 1000.0 * max(1.0, *durations) if durations else None


class _ObservedDevice:
    """What an observer's `register_device` gets, as Kernel Tuner's OpenCL backend gives it:
    the device's `name`, `max_threads` and `env`."""

    def __init__(self, found):
        profile = found["profile"]
        self.name = found["name"]
        self.max_threads = profile["max_work_group_size"]
        self.env = {"device_name": found["name"],
                    "driver_version": profile["driver_version"],
                    "platform": found["platform"], "device": found["device"]}


class _Watching:
    """The user's observers of the timed runs (Kernel Tuner's `BenchmarkObserver`s), in this
    process. The engine tells each moment of a configuration's timed runs (docs/python.md):
    `start` (`register_configuration`), then around each run `before_start`, `after_start`,
    `during` while it runs and `after_finish`, and `end`, after which `observed` gives each
    observer's `get_results()` as JSON; the engine stores them with the measurement."""

    HOOKS = ("before_start", "after_start", "during", "after_finish")

    def __init__(self, observers, device):
        self.observers = observers
        counts = {}
        self.names = []
        for observer in observers:
            name = f"{type(observer).__module__}.{type(observer).__qualname__}"
            counts[name] = counts.get(name, 0) + 1
            self.names.append(name if counts[name] == 1 else f"{name}#{counts[name]}")
            register = getattr(observer, "register_device", None)
            if register is not None:
                register(device)

    def observe(self, moment, config, names):
        if moment == "start":
            params = {k: config[k] for k in names}
            for observer in self.observers:
                register = getattr(observer, "register_configuration", None)
                if register is not None:
                    register(params)
        elif moment in self.HOOKS:
            for observer in self.observers:
                getattr(observer, moment)()

    def observed(self):
        values = {}
        for name, observer in zip(self.names, self.observers):
            got = observer.get_results()
            if not isinstance(got, dict):
                raise SpecError(f"tune_kernel: observers: {name}.get_results() gave "
                                f"{type(got).__name__}, not a dict")
            try:
                values[name] = _plain_tree(got)
            except TypeError as e:
                raise SpecError(f"tune_kernel: observers: {name}.get_results(): {e}; its "
                                "values are kept with the measurement") from None
        return values


def _plain_tree(value):
    """`value` with NumPy's scalars and arrays as Python's numbers and lists: what the store
    keeps (numbers, strings, lists and dicts of them)."""
    if isinstance(value, dict):
        return {str(k): _plain_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_tree(v) for v in value]
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a value of type {type(value).__name__} is not one the store can keep")


def _split_metrics(metrics):
    """Kernel Tuner's metrics, in order, split in two: those before the first function go to
    the spec (the engine computes them); from the first function on, each is computed in this
    process on every measured result, as Kernel Tuner computes them."""
    if not metrics:
        return {}, {}
    if not isinstance(metrics, dict):
        raise SpecError("tune_kernel: metrics must be a dict of name -> expression or function")
    spec, here = {}, {}
    for name, metric in metrics.items():
        if not callable(metric) and not isinstance(metric, str):
            raise SpecError(f"tune_kernel: metrics[{name!r}] must be a string or a function of "
                            f"the result, not {metric!r}")
        (here if here or callable(metric) else spec)[name] = metric
    return spec, here


def _compute_metrics(result, metrics):
    """Kernel Tuner's way: each metric in order on the result so far (the parameters, the time,
    the metrics before it), a function called with it, a string evaluated with its names."""
    for name, metric in metrics.items():
        try:
            if callable(metric):
                result[name] = metric(result)
            else:
                names = {k: v for k, v in result.items() if IDENTIFIER.fullmatch(str(k))}
                result[name] = eval(metric, {"np": np}, {**names, "p": result})
        except Exception as e:
            raise SpecError(f"tune_kernel: metrics[{name!r}] failed on {result}: {e!r}") from e


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _amortise(results, spent):
    """Kernel Tuner's `strategy_time` and `framework_time` of each result (ms): the strategy's
    time and the rest of the campaign's time beside compile, verification and benchmark,
    divided evenly over the results."""
    if not results:
        return
    worker_ms = sum(r["compile_time"] + r["verification_time"] + r["benchmark_time"]
                    for r in results)
    strategy_ms = 1000 * spent.get("search_s", 0.0)
    framework_ms = max(1000 * spent.get("campaign_s", 0.0) - strategy_ms - worker_ms, 0.0)
    for r in results:
        r["strategy_time"] = strategy_ms / len(results)
        r["framework_time"] = framework_ms / len(results)


def _totals(env, results, overhead_ms):
    """Kernel Tuner's totals in `env` (ms), and the call's time beside them as `overhead_time`."""
    keys = ("framework_time", "strategy_time", "compile_time", "verification_time",
            "benchmark_time")
    for key in keys:
        env[f"total_{key}"] = sum(r[key] for r in results)
    env["overhead_time"] = overhead_ms - sum(env[f"total_{key}"] for key in keys)


def _restrictions(restrictions, tune_params):
    """Kernel Tuner's restrictions split into strings (the spec's) and functions, each a
    predicate of the parameters called as Kernel Tuner 1.5 calls it: a lone function of one
    argument (with more than one parameter) gets the dict of the parameters, a function in the
    list the values of every parameter in order, a `(function, names)` tuple those named."""
    if restrictions is None:
        return [], []
    if not isinstance(restrictions, (list, tuple)) or (
            isinstance(restrictions, tuple) and len(restrictions) in (2, 3)
            and callable(restrictions[0])):
        restrictions = [restrictions]
    names = list(tune_params)
    if (len(restrictions) == 1 and callable(restrictions[0])
            and len(inspect.signature(restrictions[0]).parameters) == 1 and len(names) > 1):
        whole = restrictions[0]
        return [], [(whole, lambda p: whole(p))]
    strings, functions = [], []
    for r in restrictions:
        if isinstance(r, str):
            strings.append(r)
        elif callable(r):
            functions.append((r, lambda p, r=r: r(*(p[n] for n in names))))
        elif isinstance(r, tuple) and len(r) in (2, 3) and callable(r[0]):
            f, selected = r[0], list(r[1])
            functions.append((f, lambda p, f=f, sel=selected: f(*(p[n] for n in sel))))
        else:
            raise SpecError(f"tune_kernel: restrictions: {r!r} is neither a string in Python "
                            "syntax nor a function of the parameters")
    return strings, functions


def _identity(value, seen=None):
    """What a function of the parameters (or a value it reads) is, as text to digest: a
    function's module, name, bytecode, constants, defaults, closure values and the plain
    values of the globals it names; any other value's repr."""
    seen = set() if seen is None else seen
    code = getattr(value, "__code__", None)
    if code is None and not callable(value) and not isinstance(value, (list, tuple, dict)):
        return repr(value)
    if id(value) in seen:
        return "<recursion>"
    seen.add(id(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_identity(v, seen) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_identity(v, seen)}" for k, v in value.items()) + "}"
    if code is None:  # a callable object: its class's __call__
        call = getattr(type(value), "__call__", None)
        inner = _identity(call, seen) if hasattr(call, "__code__") else ""
        return f"{type(value).__module__}.{type(value).__qualname__}:{inner}:{value!r}"
    parts = [getattr(value, "__module__", ""), getattr(value, "__qualname__", "")]
    parts += _code_identity(code)
    parts += [_identity(d, seen) for d in (getattr(value, "__defaults__", None) or ())]
    for cell in getattr(value, "__closure__", None) or ():
        try:
            parts.append(_identity(cell.cell_contents, seen))
        except ValueError:  # an empty cell
            parts.append("<empty>")
    globals_ = getattr(value, "__globals__", {})
    for name in _code_names(code):
        if name in globals_:
            g = globals_[name]
            if isinstance(g, (int, float, str, bytes, tuple, list, dict, np.generic)) \
                    or callable(g) and getattr(g, "__module__", None) == value.__module__:
                parts.append(f"{name}={_identity(g, seen)}")
    return "\n".join(str(p) for p in parts)


def _code_identity(code):
    parts = [code.co_code.hex(), repr(code.co_names)]
    for c in code.co_consts:
        parts += _code_identity(c) if inspect.iscode(c) else [repr(c)]
    return parts


def _code_names(code):
    names = list(code.co_names)
    for c in code.co_consts:
        if inspect.iscode(c):
            names += _code_names(c)
    return names


class _Verify:
    """Kernel Tuner's `verify` function and what it is called with: `answer` (as Kernel Tuner
    holds it: each entry a NumPy array or None, or None itself), `atol`, and the outputs it
    checks (`outputs`, the arguments' names): the arrays whose answer is not None, every array
    without an answer, as Kernel Tuner reads them back."""

    def __init__(self, verify, answer, atol, arguments):
        if not callable(verify):
            raise SpecError(f"tune_kernel: verify must be a function, not {verify!r}")
        if answer:
            answer = [None if a is None else np.array(a) for a in answer]
            if len(answer) != len(arguments):
                raise SpecError(f"tune_kernel: answer has {len(answer)} entries, arguments "
                                f"{len(arguments)}: give None for each argument not checked")
        else:
            answer = None
        self.function = verify
        # Kernel Tuner's normalize_verify_function: atol is passed where the function takes it.
        takes_atol = "atol" in inspect.signature(verify).parameters
        self.call = verify if takes_atol else (lambda a, r, atol: verify(a, r))
        self.answer = answer
        self.atol = atol
        self.arguments = arguments
        self.outputs = [f"arg{i}" for i, arg in enumerate(arguments)
                        if isinstance(arg, np.ndarray) and (answer is None or answer[i] is not None)]
        if not self.outputs:
            raise SpecError("tune_kernel: verify checks no argument (no array argument has an "
                            "answer that is not None)")

    def identity(self):
        """What the outcomes of verify depend on besides the outputs, as text to digest."""
        answers = hashlib.sha256()
        for a in self.answer or []:
            answers.update(b"None" if a is None else
                           f"{a.dtype.str} {a.shape}".encode() + a.tobytes())
        return [self.function, repr(self.atol), answers.hexdigest()]

    def check(self, outputs):
        """Kernel Tuner's check_kernel_output: verify(answer, result_host, atol=atol), where
        `result_host` is the list of outputs, None for each argument not checked. Why the
        outputs are wrong, or None."""
        result_host = [None] * len(self.arguments)
        for name, path in outputs.items():
            i = int(name[len("arg"):])
            arg = self.arguments[i]
            result_host[i] = np.fromfile(path, dtype=arg.dtype).reshape(arg.shape)
        correct = self.call(self.answer, result_host, atol=self.atol)
        return None if correct else f"the verify function returned {correct!r}"


class _PerConfig:
    """The call's functions of the parameters, which the engine asks about each configuration
    before it evaluates it (called with the configuration as JSON): `None` where a restriction
    function excludes it, else `(code, global size)`, each `None` where the spec's stands. With
    a verify function, `check` gets the files of a configuration's outputs (JSON, by name).
    With observers (`_Watching`), `observe` and `observed` call them."""

    def __init__(self, kernel_source, files, problem_size, tune_params, grid_div,
                 block_size_names, defines, restrictions, own_check, watching):
        self.generator = kernel_source if callable(kernel_source) else None
        self.text = files[0][1]
        self.problem_size = problem_size
        self.names = list(tune_params)
        self.grid_div = grid_div
        self.block_size_names = block_size_names
        self.defines = defines
        self.restrictions = [r for _, r in restrictions]
        if defines is not None and not isinstance(defines, dict):
            raise SpecError(f"tune_kernel: defines must be a dict of name -> value or function, "
                            f"not {type(defines).__name__}")
        if defines is not None and len(files) > 1:
            _refuse("defines", "with a list of kernel files; give the kernel as one file or code")
        self.own_check = own_check
        self.generates = self.generator is not None or defines is not None
        self.grid_per_config = _grid_per_config(problem_size, grid_div)
        self.watching = watching
        self.observers = watching.names if watching is not None else []
        self.active = (self.generates or self.grid_per_config or bool(self.restrictions)
                       or own_check is not None or watching is not None)
        # Only what changes an outcome is part of the results' identity: restrictions
        # choose configurations, as `[space]` does.
        changing = [self.generator, defines, problem_size if callable(problem_size) else None,
                    *(d for d in grid_div if callable(d))]
        if own_check is not None:
            changing += own_check.identity()
        self.identity = (
            hashlib.sha256(_identity(changing).encode()).hexdigest()
            if self.generates or self.grid_per_config or own_check is not None else None)

    def stub(self, text):
        """The kernel file's text with the functions' identity: the code itself where it is
        generated per configuration (the engine builds each configuration's own)."""
        mark = f"/* ndtune: per configuration, {self.identity} */\n"
        return mark if self.generator is not None else text + "\n" + mark

    def check(self, outputs):
        return self.own_check.check(outputs)

    def observe(self, moment, config):
        self.watching.observe(moment, config, self.names)

    def observed(self):
        return self.watching.observed()

    def __call__(self, config):
        params = {k: config[k] for k in self.names}
        if not all(r(params) for r in self.restrictions):
            return None
        threads = [int(params.get(n, d)) for n, d in zip(self.block_size_names,
                                                          DEFAULT_BLOCK_SIZES)]
        if not self.generates and not self.grid_per_config:
            return None, None
        grid = _kt_grid(self.problem_size, params, self.grid_div, self.block_size_names)
        source = None
        if self.generates:
            code = self.generator(params) if self.generator is not None else self.text
            if not isinstance(code, str):
                raise SpecError(f"tune_kernel: kernel_source returned {type(code).__name__} "
                                f"for {params}; it must return the code as a string")
            source = _kt_prefix(self.defines, params, grid, threads, self.block_size_names) + code
        global_size = [g * t for g, t in zip(grid, threads)] if self.grid_per_config else None
        return source, global_size


def _kt_replace(text, params):
    """Kernel Tuner's replace_param_occurrences: each token naming a parameter, by its value."""
    return "".join(str(params[t]) if t in params else t
                   for t in re.split("([a-zA-Z0-9_]+)", text))


def _kt_grid(problem_size, params, grid_div, block_size_names):
    """Kernel Tuner's grid of a configuration: work-groups per dimension."""
    if callable(problem_size):
        problem_size = problem_size(params)
    if isinstance(problem_size, (str, int, np.integer)):
        problem_size = (problem_size,)
    sizes = [1, 1, 1]
    for i, p in enumerate(problem_size):
        if isinstance(p, str):
            sizes[i] = int(eval(_kt_replace(p, params)))
        elif isinstance(p, (int, np.integer)):
            sizes[i] = int(p)
        else:
            raise SpecError(f"tune_kernel: problem_size gave {p!r} for {params}; it must give "
                            "integers or strings")

    def divisor(d, default):
        if d is None:
            return params.get(default, 1)
        if isinstance(d, (int, np.integer)):
            return int(d)
        if callable(d):
            return _kt_divisor(d, params)
        if isinstance(d, str):
            return int(eval(_kt_replace(d, params)))
        n = 1
        for x in d:
            n *= divisor(x, 1)
        return n

    return [int(np.ceil(float(s) / float(divisor(d, n))))
            for s, d, n in zip(sizes, grid_div, block_size_names)]


def _kt_divisor(function, params):
    """A grid divisor function's value for a configuration: a positive integer."""
    n = function(params)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise SpecError(f"a grid divisor function gave {n!r} for {params}; it must give a "
                        "positive integer")
    return int(n)


def _kt_prefix(defines, params, grid, threads, block_size_names):
    """Kernel Tuner's prepare_kernel_string: a #define of each of `defines` (a function's value
    for the parameters, a string's with the parameters replaced), by default of the grid, the
    block sizes, each parameter and kernel_tuner; then #line 1."""
    if defines is None:
        defines = dict(zip(["grid_size_x", "grid_size_y", "grid_size_z"], grid))
        defines.update(zip(block_size_names, threads))
        defines.update(params)
        defines["kernel_tuner"] = 1
    prefix = ""
    for k, v in defines.items():
        if callable(v):
            v = v(params)
        elif isinstance(v, str):
            v = _kt_replace(v, params)
        if not k.isidentifier():
            raise SpecError(f"tune_kernel: defines: {k!r} is not a valid identifier")
        prefix += f"#define {k} " + str(v).replace("\n", "\\\n") + "\n"
    return prefix + "#line 1\n" if prefix else ""


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
