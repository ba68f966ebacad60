"""What the package offers beside `tune_kernel`: Kernel Tuner's `run_kernel`, the pruned space of
a call without measuring it (`space`), a results store's contents (`Store`) and its HTML report
(`report`), search strategies replayed on recorded spaces (`bench_strategies`) and stencil data
collection for learning (`collect`).

A call is written as a spec directory by `_kt`'s helpers, as `tune_kernel` writes it; the
extension (`_ndtune`) runs, prunes and reads through the libraries the `ndtune` command uses,
and hands back Python objects.
"""

import numpy as np

from . import _ndtune
from ._kt import (
    DEFAULT_BLOCK_SIZES,
    SpecError,
    _block_size_names,
    _Data,
    _check_refused,
    _kernel_files,
    _kt_divisor,
    _kt_grid,
    _kt_prefix,
    _language,
    _plain,
    _worker_command,
    _refuse,
    _spec_document,
    constant_memory,
    write_spec,
)


def _write(kernel_name, kernel_source, problem_size, arguments, tune_params, grid_div,
           restrictions, compiler_options, block_size_names, lang, smem_args=None,
           cmem_args=None):
    """The spec of a call, written as tune_kernel writes it (one run per configuration: these
    calls measure nothing); its path."""
    files = _kernel_files(kernel_source)
    if isinstance(restrictions, str):
        restrictions = [restrictions]
    language = _language(lang, files)
    constants = constant_memory(cmem_args, language)
    data = _Data(arguments, constants=constants)
    document = _spec_document(kernel_name, files[0][0], problem_size, arguments, data,
                              tune_params, grid_div, restrictions, 1, compiler_options,
                              _block_size_names(block_size_names), {}, {},
                              language=language, smem_args=smem_args, constants=constants)
    return write_spec(kernel_name, files, document, data)


def run_kernel(kernel_name, kernel_source, problem_size, arguments, params, grid_div_x=None,
               grid_div_y=None, grid_div_z=None, lang=None, device=0, platform=0,
               smem_args=None, cmem_args=None, texmem_args=None, compiler=None,
               compiler_options=None, defines=None, block_size_names=None, quiet=False,
               log=None):
    """Runs one configuration (`params`: each parameter's value) once, as Kernel Tuner's
    `run_kernel` does: returns the arguments after the run, each NumPy array replaced by a new
    array with the buffer's contents, each scalar as given. Functions of the parameters (the
    kernel's code, problem_size, grid divisors, defines) are called for `params`. A failed build
    or a refused launch raises `NdtuneError` with why."""
    _check_refused(locals())
    block_size_names = _block_size_names(block_size_names)
    grid_div = (grid_div_x, grid_div_y, grid_div_z)
    # One configuration: every function of the parameters is worked out here, for it.
    if callable(problem_size):
        problem_size = problem_size(params)
    if any(callable(d) for d in grid_div):
        grid_div = tuple(_kt_divisor(d, params) if callable(d) else d for d in grid_div)
    if callable(kernel_source) or defines is not None:
        files = _kernel_files(kernel_source)
        if defines is not None and len(files) > 1:
            _refuse("defines", "with a list of kernel files; give the kernel as one file or code")
        code = kernel_source(params) if callable(kernel_source) else files[0][1]
        if not isinstance(code, str):
            raise SpecError(f"run_kernel: kernel_source returned {type(code).__name__} for "
                            f"{params}; it must return the code as a string")
        threads = [int(params.get(n, d)) for n, d in zip(block_size_names, DEFAULT_BLOCK_SIZES)]
        grid = _kt_grid(problem_size, params, grid_div, block_size_names)
        # As Kernel Tuner prepares a kernel's code; a trailing newline keeps it code, not a name.
        kernel_source = _kt_prefix(defines, params, grid, threads, block_size_names) + code + "\n"
    tune_params = {name: [value] for name, value in params.items()}
    spec = _write(kernel_name, kernel_source, problem_size, arguments, tune_params,
                  grid_div, None, compiler_options, block_size_names, lang, smem_args,
                  cmem_args)
    config = {name: _plain(value) for name, value in params.items()}
    buffers = _ndtune.run_kernel(str(spec), config, platform, device)
    return [
        arg if data is None else np.frombuffer(data, dtype=arg.dtype).reshape(arg.shape).copy()
        for arg, data in zip(arguments, buffers)
    ]


def space(kernel_name, kernel_source, problem_size, arguments, tune_params, grid_div_x=None,
          grid_div_y=None, grid_div_z=None, restrictions=None, lang=None, device=0, platform=0,
          compiler_options=None, block_size_names=None, *, configs=None):
    """The space `tune_kernel` would search with these arguments, pruned for the device and not
    measured: a dict with `pruned` (the configurations left), `declared` (the product of the
    values), `bounded` (within the device's work-item sizes), `constraints` (each with
    `constraint`, `origin` and the configurations it `removed`), `order` and `hints`; with
    `configs=N`, `configs`: the first N configurations left, each a dict of parameter values."""
    spec = _write(kernel_name, kernel_source, problem_size, arguments, tune_params,
                  (grid_div_x, grid_div_y, grid_div_z), restrictions, compiler_options,
                  block_size_names, lang)
    limit = None if configs is None else int(configs)
    return _ndtune.space(str(spec), platform, device, limit)


def _row(result):
    """One stored result as a flat row: its campaign, parameters, outcome, time and metrics."""
    outcome = result["outcome"]
    row = {"kernel": result["kernel"], "device": result["device"]}
    row.update(result["config"])
    row["outcome"] = outcome["outcome"]
    row["time"] = result["score_ms"]
    row["times"] = outcome.get("times_ms")
    row.update({m["name"]: m["value"] for m in result["metrics"]})
    for key in ("constants", "source_hash", "device_fingerprint", "ndtune_version",
                "started_at", "finished_at"):
        row[key] = result[key]
    return row


class Store:
    """A results store: an SQLite file or a PostgreSQL URL (tune_kernel's `db`), read when asked
    and never written."""

    def __init__(self, path_or_url):
        self.location = str(path_or_url)

    def __repr__(self):
        return f"ndtune.Store({self.location!r})"

    def results(self):
        """Every stored result, one row each: `kernel`, `device`, each parameter, `outcome`
        (measured, build_failed, ...), `time` (the score in ms, None where not measured),
        `times` (every timed run), each metric, then `constants`, `source_hash`,
        `device_fingerprint`, `ndtune_version`, `started_at`, `finished_at`. A pandas DataFrame
        where pandas is installed, else a list of dicts."""
        rows = [_row(r) for r in _ndtune.store_results(self.location)]
        try:
            import pandas
        except ImportError:
            return rows
        return pandas.DataFrame(rows)


def report(db, out="report.html"):
    """Writes the HTML report of the store `db` (a path, a PostgreSQL URL or a `Store`) to
    `out`, as `ndtune report` does; returns the path written."""
    location = db.location if isinstance(db, Store) else str(db)
    return str(_ndtune.report(location, str(out)))


def bench_strategies(recordings, strategies=("bo",), budgets=(25, 50, 100), seeds=8,
                     warm_start=None):
    """Replays search strategies on recorded spaces, as `ndtune bench-strategies` does:
    `recordings` are paths (or one path) of Kernel Tuner caches (.json, .json.gz), CLTune CSV
    files or ndtune stores (a dataset per recorded campaign); each strategy runs with seeds
    0..seeds-1 at each budget (distinct configurations evaluated). With `warm_start=N`, each
    dataset's runs first measure the N best configurations of the other datasets of the same
    kernel. Returns a dict: `datasets` (`id`, `configurations`, `optimum_ms`, `warm_points`)
    and `results`, one dict per dataset and strategy: `mean` (budget -> mean fraction of the
    optimum reached), `evals_90` and `evals_95` (median evaluations to reach 90% and 95% of it,
    None where fewer than half the seeds did)."""
    if isinstance(recordings, (str, bytes)) or hasattr(recordings, "__fspath__"):
        recordings = [recordings]
    if isinstance(strategies, str):
        strategies = [strategies]
    if isinstance(budgets, int):
        budgets = [budgets]
    if not budgets:
        raise ValueError("bench_strategies: give at least one budget")
    out = _ndtune.bench_strategies([str(r) for r in recordings], list(strategies),
                                   [int(b) for b in budgets], int(seeds),
                                   None if warm_start is None else int(warm_start))
    for r in out["results"]:
        r["mean"] = {int(b): m for b, m in r["mean"].items()}
    return out


def collect(campaign, db="ndtune.db", work=None, seed=1, quiet=False, export=None):
    """Runs a stencil collection campaign file (docs/collect.md), as `ndtune collect` does: every
    (device, kernel, dataset) scenario measured exhaustively into the store `db`, what it holds
    reused; the scenarios' generated files go under `work` (default: `DB.stencils` beside the
    store). With `export`, then writes the long CSV that `ndtune learn` reads there. Returns one
    dict per scenario: `label`, `outcomes` (counts by kind), `evaluated` (now), `reused` and
    `best_ms`. Ctrl-C stops it with what was measured kept."""
    work = work if work is not None else f"{db}.stencils"
    return _ndtune.collect(str(campaign), str(db), str(work), int(seed), _worker_command(),
                           bool(quiet), None if export is None else str(export))
