#!/usr/bin/env python3
"""Tabulates bench/coexec_node.sh: per study (device set, kernel, size) each scheduler's time,
speedup over the best device alone, efficiency and balance, the prediction made before running,
and the decision; then the issue's comparisons: the GPUs and the CPU against the GPUs alone, and
hguided against static with one GPU slowed. Markdown, for BENCHMARKS.md."""
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        text = f.read()
    return json.loads(text) if text.strip() else None


def label(run):
    """A schedule run's (or a decision's) name: its scheduler, and the device it left out."""
    without = run.get("without")
    return run["scheduler"] + ("" if without is None else f" without device {without}")


def main(out):
    studies = {}
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        name = os.path.basename(path)[:-5]
        r = load(path)
        if r is None:
            print(f"- {name}: no report (see split.log)")
            continue
        studies[name] = r
    print("| study | devices | best alone ms | ideal speedup | predicted ms | schedule | ms | speedup | E | balance | chunks |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in studies.items():
        best = min(r["single_ms"])
        pred = r.get("prediction") or {}
        for k, s in enumerate(r.get("schedules", [])):
            chosen = (r["decision"].get("scheduler"), r["decision"].get("without")) == \
                (s["scheduler"], s.get("without"))
            print(
                f"| {name if k == 0 else ''} | {len(r['devices']) if k == 0 else ''} | "
                f"{best:.3f} | {r['ideal_speedup']:.3f} | {pred.get('ms', float('nan')):.3f} | "
                f"{'**' if chosen else ''}{label(s)}{'**' if chosen else ''} | {s['ms']:.3f} | "
                f"{s['speedup']:.3f} | {s['efficiency']:.3f} | {s['balance']:.3f} | {len(s['timeline'])} |"
            )
    print()
    for name, r in studies.items():
        d = r["decision"]
        print(f"- {name}: decision {d['mode']} {label(d) if d.get('scheduler') else ''} {d['ms']:.3f} ms: {d['reason']}")
        for s in r.get("schedules", []):
            for f in s.get("failures", []):
                print(f"  - {label(s)}: device {f['device']} failed: {f['message']}")
    print()
    for name, r in studies.items():
        if not name.startswith("all-"):
            continue
        gpus = studies.get("gpus-" + name[4:])
        if gpus:
            ratio = gpus["decision"]["ms"] / r["decision"]["ms"]
            print(f"- {name[4:]}: GPUs + CPU {r['decision']['ms']:.3f} ms vs GPUs alone {gpus['decision']['ms']:.3f} ms: {ratio:.3f}x (target >= 0.98x)")
    for name, r in studies.items():
        if not name.startswith("slowed-"):
            continue
        by = {s["scheduler"]: s for s in r.get("schedules", []) if s.get("without") is None}
        if "static" in by and "hguided" in by:
            print(
                f"- {name[7:]} with one GPU slowed (plan from the quiet times {r.get('plan_ms')}): "
                f"static {by['static']['ms']:.3f} ms, hguided {by['hguided']['ms']:.3f} ms: "
                f"{by['static']['ms'] / by['hguided']['ms']:.3f}x (target >= 1.2x); hguided E "
                f"{by['hguided']['efficiency']:.3f} against the slowed speeds {r['single_ms']} (target >= 0.85)"
            )


if __name__ == "__main__":
    main(sys.argv[1])
