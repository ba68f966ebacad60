#!/usr/bin/env python3
"""The physical bound of each cold ndtune campaign that bench/tune_vs_kt.py kept (--keep DIR).

Usage: python3 bench/physical_bound.py DIR

bound = max(longest single build, total build time / build workers) + the campaign's launches
+ start-up (process start, spec, device discovery, store, pruning and the campaign's setup: what
comes before the first build can start). Build times come from the store's `builds` study (each
build worker's time per program, kept by the campaign); launches and start-up from the JSON
report's `time` objects. Prints one line per cold run: wall (as the benchmark timed the process),
the bound and its parts, and wall / bound.
"""
import json
import sqlite3
import sys
from pathlib import Path


def builds(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        rows = c.execute("SELECT body FROM studies WHERE kind = 'builds'").fetchall()
    return [seconds for (body,) in rows for _, seconds in json.loads(body)["builds"]]


def main():
    keep = Path(sys.argv[1])
    runs = json.loads((keep.parent / (keep.name + ".json")).read_text())["runs"] \
        if (keep.parent / (keep.name + ".json")).exists() else None
    walls = {}
    if runs:
        for r in runs:
            if r["tool"] == "ndtune" and r["mode"] == "cold":
                walls[r["repeat"]] = r["wall_s"]
    print(f"{'run':24} {'wall s':>8} {'bound s':>8} {'longest':>8} {'total/jobs':>10} {'launches':>8} "
          f"{'start-up':>8} {'wall/bound':>10}")
    for report in sorted(keep.glob("ndtune-*-cold-*.json")):
        db = report.with_suffix(".db")
        d = json.loads(report.read_text())
        if "devices" not in d:
            print(f"{report.stem:24} not a campaign's report: {sorted(d)[:4]}")
            continue
        t, w = d["devices"][0]["time"], d["time"]
        times = builds(db)
        if not times:
            print(f"{report.stem:24} no build times kept (every program was in the cache?)")
            continue
        longest, total = max(times), sum(times)
        jobs = max(t["build_jobs"], 1)
        startup = w["start_s"] + w["spec_s"] + w["discovery_s"] + w["store_s"] + w["prune_s"] + t["setup_s"]
        bound = max(longest, total / jobs) + t["launch_s"] + startup
        rep = int(report.stem.split("-")[1])
        wall = walls.get(rep, w["wall_s"])
        print(f"{report.stem:24} {wall:8.2f} {bound:8.2f} {longest:8.2f} {total / jobs:10.2f} "
              f"{t['launch_s']:8.2f} {startup:8.2f} {wall / bound:10.3f}")


if __name__ == "__main__":
    main()
