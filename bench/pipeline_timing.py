#!/usr/bin/env python3
"""Whether build workers disturb the timings on a CPU device: each configuration's fastest run
with the build pipeline against the same without it (builds in the measurement worker).

On a CPU device the build workers share the device's cores, so the campaign stops them while it
evaluates a configuration. If it did not, a build beside a timed run would slow it (up to twice
on 2 cores), in every round. A shared machine's speed also wanders for seconds at a time, so the
two ways alternate over ROUNDS rounds (fresh stores, racing off) and each configuration's fastest
run over them counts; the figure is the median over configurations of pipelined / serial.

    python3 bench/pipeline_timing.py NDTUNE SPEC JOBS ROUNDS OUT.json [--set NAME=VALUE ...]

e.g. `python3 bench/pipeline_timing.py target/release/ndtune examples/conv2d.toml 4 4 t.json`.
Prints the median and its spread; OUT.json holds both ways' fastest time per configuration (ms).
"""
import json
import statistics
import subprocess
import sys
import tempfile


def fastest_per_config(ndtune, spec, jobs, extra, into):
    """Tunes `spec` with `jobs` build workers in a fresh store; lowers `into`'s fastest run per
    measured configuration (ms) to this campaign's."""
    with tempfile.TemporaryDirectory() as tmp:
        db, cache = f"{tmp}/t.db", f"{tmp}/t.kt.json"
        subprocess.run([ndtune, "tune", spec, "--db", db, "--race", "off", "--build-jobs",
                        str(jobs), *extra], check=True, capture_output=True)
        subprocess.run([ndtune, "export", "--db", db, "--format", "kt", "--out", cache],
                       check=True, capture_output=True)
        entries = json.load(open(cache))["cache"]
    for key, e in entries.items():
        outcome = e["ndtune_outcome"]
        if outcome["outcome"] == "measured":
            into[key] = min(into.get(key, float("inf")), min(outcome["times_ms"]))


def main():
    ndtune, spec, jobs, rounds, out = sys.argv[1:6]
    extra = sys.argv[6:]
    serial, piped = {}, {}
    for r in range(int(rounds)):
        for j, into in [(1, serial), (int(jobs), piped)][:: 1 if r % 2 == 0 else -1]:
            fastest_per_config(ndtune, spec, j, extra, into)
        print(f"round {r + 1} of {rounds} done", file=sys.stderr)
    ratios = sorted(piped[k] / serial[k] for k in piped if k in serial)
    q = statistics.quantiles(ratios, n=4)
    print(f"{spec}: {len(ratios)} configurations, {rounds} rounds; pipelined ({jobs} build "
          f"workers) / serial fastest time: median {statistics.median(ratios):.3f}, "
          f"quartiles {q[0]:.3f}-{q[2]:.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}")
    json.dump({"spec": spec, "jobs": int(jobs), "rounds": int(rounds), "set": extra,
               "serial_ms": serial, "pipelined_ms": piped}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
