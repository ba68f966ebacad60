#!/usr/bin/env python3
"""Times `ndtune tune SPEC --captured DIR` reading N captured questions (issue 51, item 9).

Writes N capture lines of kernel `saxpy` over N/2 distinct sizes (each asked twice, spread over
four files), on a device model this machine does not have, so the command reads and plans the
captures, then stops with "none of the devices asked for is here": what is timed is the reading.

    bench/captured_read.py [NDTUNE=target/release/ndtune] [N=40000 ...]
"""
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ndtune = sys.argv[1] if len(sys.argv) > 1 else "target/release/ndtune"
sizes = [int(n) for n in sys.argv[2:]] or [10_000, 40_000]
device = json.loads(subprocess.run([ndtune, "devices", "--json"], capture_output=True,
                                   text=True, check=True).stdout)[0]
device["name"] = "bench device not here"
for n in sizes:
    with tempfile.TemporaryDirectory() as d:
        for f in range(4):
            with open(Path(d) / f"capture-bench-{f}.jsonl", "w") as out:
                for i in range(n // 4):
                    size = (f * (n // 4) + i) % (n // 2) + 1
                    out.write(json.dumps({"kernel": "saxpy", "device": device,
                                          "constants": {"N": size * 64}}) + "\n")
        started = time.perf_counter()
        ran = subprocess.run([ndtune, "tune", "examples/saxpy.toml", "--captured", d],
                             capture_output=True, text=True)
        took = time.perf_counter() - started
        said = ran.stderr.strip().splitlines()[-1] if ran.stderr.strip() else ""
        print(f"{n} captured questions ({n // 2} distinct): {took:.2f} s  [{said}]")
