#!/usr/bin/env python3
"""Where a sweep's campaigns spend the time that is not measuring: one line per campaign of a
`ndtune tune SPEC --set N=a,b,... --json` output (its start, set-up and end, the worker processes
it started), then the sums. A sweep's campaigns on a device hand their measurement and build
workers on (issue 52): from the second campaign on, `workers`/`builders` started are 0.

    bench/sweep_overhead.py OUT.json [MORE.json ...]
"""
import json
import sys

COLUMNS = ("campaign_s", "setup_s", "startup_s", "startup_waited_s", "build_s", "shutdown_s")


def main(paths):
    for path in paths:
        with open(path) as f:
            ran = json.load(f)
        print(f"{path}: wall {ran['time']['wall_s']:.2f} s")
        print("  constants".ljust(24) + "".join(c.rjust(18) for c in COLUMNS) + "  workers builders")
        sums = dict.fromkeys(COLUMNS, 0.0)
        for report in ran["devices"]:
            t = report["time"]
            constants = " ".join(f"{k}={v}" for k, v in report.get("constants", {}).items())
            row = "".join(f"{t[c]:18.3f}" for c in COLUMNS)
            started = f"{t.get('workers_started', '-'):>9} {t.get('builders_started', '-'):>8}"
            print(f"  {constants:<22}{row}{started}")
            for c in COLUMNS:
                sums[c] += t[c]
        print("  sum".ljust(24) + "".join(f"{sums[c]:18.3f}" for c in COLUMNS))
        outside = sums["campaign_s"] - sum(
            r["time"]["total_s"] for r in ran["devices"]
        )
        print(f"  not measuring (campaign_s - total_s), summed: {outside:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1:] or sys.exit(__doc__))
