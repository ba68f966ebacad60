#!/usr/bin/env python3
"""Times two configurations of one size again, side by side: bench/deploy.sh's picks beside each
held-out size's best, bench/sweep_warm.sh's warm choices beside the independent bests.

A ratio read from one campaign's times compares a configuration's one measurement with the least
of many: on a noisy machine the least of many noisy times is low by luck (the winner's curse),
and the one time may have met a disturbance. Here both are measured in the same process, ROUNDS
times (fresh stores, `ndtune tune --config`, racing off, the order of the two alternating); each
round gives one ratio, and the figure is the median of those.

As bench/deploy.sh's step (sizes whose pick is their best are skipped, ratio 1):
    python3 bench/side_by_side.py OUT_DIR SPEC "NAMES" "HELD-OUT SIZES" NDTUNE DEVICE ROUNDS
writes OUT_DIR/confirm.json: per size, the pick's and the best's times per round (ms).
"""
import json
import statistics
import subprocess
import sys
import tempfile


def side_by_side(ndtune, spec, sets, device, a, b, rounds):
    """Times configurations `a` and `b` (dicts) of `spec` with `sets` (NAME=VALUE strings) on
    `device` (None: the default), `rounds` times; returns their times per round (ms)."""
    times = ([], [])
    for r in range(rounds):
        order = [(0, a), (1, b)]
        if r % 2:
            order.reverse()
        with tempfile.TemporaryDirectory() as tmp:
            args = [ndtune, "tune", spec, "--race", "off", "--json", "--db", f"{tmp}/side.db"]
            if device is not None:
                args += ["--device", device]
            for s in sets:
                args += ["--set", s]
            for _, config in order:
                args += ["--config", ",".join(f"{k}={v}" for k, v in sorted(config.items()))]
            done = subprocess.run(args, capture_output=True, text=True, check=True)
        top = json.loads(done.stdout)["devices"][0]["top"]
        for i, config in order:
            times[i].append(next(t["time_ms"] for t in top if t["config"] == config))
    return times


def ratio(times):
    """For times per round (a's, b's): the median over rounds of b's time / a's, that is a's
    speed as a fraction of b's."""
    return statistics.median(tb / ta for ta, tb in zip(*times))


def main():
    out, spec, names, held, ndtune, device, rounds = sys.argv[1:8]
    confirmed = {}
    for s in held.split():
        pick = json.load(open(f"{out}/pick.{s}.json"))["pick"]["config"]
        best = json.load(open(f"{out}/held.db.{s}.json"))["devices"][0]["best"]["config"]
        if pick == best:
            continue
        sets = [f"{n}={s}" for n in names.split()]
        pick_ms, best_ms = side_by_side(ndtune, spec, sets, device, pick, best, int(rounds))
        confirmed[s] = {"pick_ms": pick_ms, "best_ms": best_ms}
        print(f"{s}: pick {pick_ms} best {best_ms}", file=sys.stderr)
    json.dump(confirmed, open(f"{out}/confirm.json", "w"), indent=1)


if __name__ == "__main__":
    main()
