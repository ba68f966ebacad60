#!/usr/bin/env python3
"""Would a learnt model pick better than `ndtune pick`'s rule for sizes between tuned ones?

Reads a `bench/deploy.sh` OUT folder (every configuration measured at the tuned sizes,
`tuned.S.show.json`, and at the held-out ones, `held.S.show.json`) and, for each held-out size,
compares three picks by the size's own best / the pick's time (geometric mean, as deploy.sh):

- `between`: the picker's rule (crates/ndtune-wisdom/src/pick.rs): of the configurations measured
  at the nearest tuned sizes on either side, the one with the highest mean of the logarithm of
  its fraction of each one's best, weighted by nearness in log size;
- `forest` / `extra-trees`: a regression forest (scikit-learn) of log(time / that size's best)
  over log2 of the size, of each parameter, and of the launch's work-groups per dimension, their
  product, the work-group size and the global size; the pick is the valid configuration it
  predicts fastest.

The launch of each spec is written out here (`LAUNCH`), so only the kernels named there work.

    target/ktvenv/bin/python bench/pick_models.py OUT cnn "32 64 128 256 512" "48 80 96 112 160 192 224 320 384 448"
"""
import json
import math
import sys

import numpy as np
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

# Per kernel: its parameters, and its global and local sizes for a size (H = W) and a config.
LAUNCH = {
    "cnn": (("LX", "LY", "LZ", "I_SUB", "H_SUB", "W_SUB"),
            lambda n, c: ([16 / c["I_SUB"], n / 2 / c["H_SUB"], n / 2 / c["W_SUB"]],
                          [c["LX"], c["LY"], c["LZ"]])),
    "conv2d": (("BX", "BY", "TX", "TY", "LOOP"),
               lambda n, c: ([n / c["TX"], n / c["TY"]], [c["BX"], c["BY"]])),
}


def load(out, prefix, size):
    rows = json.load(open(f"{out}/{prefix}.{size}.show.json"))
    return {tuple(sorted(r["config"].items())): r["score_ms"] for r in rows if r.get("score_ms")}


def features(kernel, size, config):
    names, launch = LAUNCH[kernel]
    c = dict(config)
    glob, local = launch(size, c)
    groups = [g / l for g, l in zip(glob, local)]
    return ([math.log2(size)] + [math.log2(c[k] + 1) for k in names]
            + [math.log2(g) for g in groups]
            + [math.log2(math.prod(groups)), math.log2(math.prod(local)), math.log2(math.prod(glob))])


def between(tuned, size, valid):
    below = [t for t in tuned if t < size]
    above = [t for t in tuned if t > size]
    if not below or not above:
        near = min(tuned, key=lambda t: abs(math.log(t / size)))
        return min(tuned[near], key=tuned[near].get)
    lo, hi = max(below), min(above)
    w_lo = math.log(hi / size) / math.log(hi / lo)
    best_lo, best_hi = min(tuned[lo].values()), min(tuned[hi].values())
    scored = [(w_lo * math.log(best_lo / tuned[lo][c]) + (1 - w_lo) * math.log(best_hi / tuned[hi][c]), c)
              for c in tuned[lo] if c in tuned[hi] and c in valid]
    return max(scored)[1]


def main():
    out, kernel, tuned_sizes, held_sizes = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
    tuned = {int(s): load(out, "tuned", s) for s in tuned_sizes}
    held = {int(s): load(out, "held", s) for s in held_sizes}
    x, y = [], []
    for size, rows in tuned.items():
        best = min(rows.values())
        for config, ms in rows.items():
            x.append(features(kernel, size, config))
            y.append(math.log(ms / best))
    picks = {"between": {s: between(tuned, s, rows) for s, rows in held.items()}}
    for name, model in (("forest", RandomForestRegressor(200, min_samples_leaf=2, random_state=0)),
                        ("extra-trees", ExtraTreesRegressor(300, min_samples_leaf=2, random_state=0))):
        model.fit(np.array(x), np.array(y))
        picks[name] = {}
        for size, rows in held.items():
            configs = list(rows)
            predicted = model.predict(np.array([features(kernel, size, c) for c in configs]))
            picks[name][size] = configs[int(np.argmin(predicted))]
    print(f"{'pick':>12} " + " ".join(f"{s:>6}" for s in held) + "  geometric mean")
    for name, chosen in picks.items():
        ratios = [min(rows.values()) / rows[chosen[s]] for s, rows in held.items()]
        mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{name:>12} " + " ".join(f"{r:6.3f}" for r in ratios) + f"  {mean:.3f}")


if __name__ == "__main__":
    main()
