#!/usr/bin/env python3
"""Tabulates `ndtune split --json` reports (bench/split.sh): each device alone, the plan
(Table 3), theoretical vs measured time (Fig. 5), the co-execution metrics and the sweep
(Fig. 6-7), as Markdown for BENCHMARKS.md."""
import json
import sys


def main(paths):
    for path in paths:
        with open(path) as f:
            text = f.read()
        if not text.strip():
            print(f"### {path}: no report (see split.log)\n")
            continue
        r = json.loads(text)
        print(f"### `{r['kernel']}` ({path.rsplit('/', 1)[-1]}), {r['global']} items along dimension {r['dim']}\n")
        print("| device | config | tuned kernel ms | alone ms (host, transfers) | adjusted | optimal | finish ms |")
        print("|---|---|---|---|---|---|---|")
        parts = {p["device"]: p for p in r["plan"]}
        finish = {p["device"]: p for p in r["parts"]}
        for i, d in enumerate(r["devices"]):
            cfg = " ".join(f"{k}={v}" for k, v in d["config"].items())
            p = parts.get(i)
            fin = finish.get(i)
            print(
                f"| {d['device']} | {cfg} | {d['tuned_ms']:.3f} | {d['single_ms']:.3f} | "
                f"{p['factor'] if p else 0:.3f} | {p['optimal_factor'] if p else 0:.3f} | "
                f"{fin['finish_ms'] if fin else 0:.3f} |"
            )
        dec = r["decision"]
        print()
        print(
            f"theoretical {r['theoretical_ms']:.3f} ms, co-execution {r['coexec_ms']:.3f} ms "
            f"(overhead {r['overhead'] * 100:+.1f}%), ideal speedup {r['ideal_speedup']:.3f}, "
            f"speedup {r['speedup']:.3f}, efficiency E = {r['efficiency']:.3f}, "
            f"balance B = {r['balance']:.3f}, verified {str(r['verified']).lower()}; "
            f"decision: {dec['mode']} ({dec['ms']:.3f} ms, {r['single_ms'][r['best_single']] / dec['ms']:.3f}x the best device alone)\n"
        )
        if r.get("sweep"):
            print("| device 0 factor | adjusted factors | co-execution ms | verified |")
            print("|---|---|---|---|")
            for p in r["sweep"]:
                fs = ", ".join(f"{x:.3f}" for x in p["factors"])
                mark = " (planner)" if p["planner"] else ""
                print(f"| {p['factor']:.3f}{mark} | {fs} | {p['coexec_ms']:.3f} | {str(p['verified']).lower()} |")
            print()


if __name__ == "__main__":
    main(sys.argv[1:])
