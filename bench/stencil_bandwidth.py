#!/usr/bin/env python3
"""The best tuned stencils' bandwidth per device, from an `ndtune collect --export` CSV (gzip or
plain): cells x (input + output bytes) / runtime, with the scenario and work-group size."""
import csv
import gzip
import sys


def main(path, top=3):
    opener = gzip.open if path.endswith(".gz") else open
    best = {}
    with opener(path, "rt", newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "measured":
                continue
            moved = float(r["f_data_cells"]) * (float(r["f_data_input_bytes"]) + float(r["f_data_output_bytes"]))
            gbs = moved / (float(r["runtime_ms"]) * 1e6)
            best.setdefault(r["device"], []).append((gbs, r["scenario"], f"{r['wg_c']}x{r['wg_r']}"))
    for device, rows in best.items():
        rows.sort(reverse=True)
        print(device)
        for gbs, scenario, wg in rows[:top]:
            print(f"  {gbs:8.1f} GB/s  {scenario}  work-group {wg}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
