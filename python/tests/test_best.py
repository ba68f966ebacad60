"""`ndtune.best`: a tuned configuration at run time from a wisdom file, for the live device."""

import json

import pytest

import ndtune

SPEC = """
[kernel]
name = "scale"
source = "scale.cl"
[constants]
N = 4096
[params]
WG = [8, 16, 32, 64]
[launch]
global = ["N"]
local = ["WG"]
[space]
constraints = ["N % WG == 0"]
"""


def wisdom(path, entries):
    profile = ndtune.devices()[0]["profile"]
    kernel = {
        "kernel": "scale", "spec_file": "scale.toml", "spec": SPEC, "defines": ["WG"],
        "objective": {"metric": "time", "unit": "ms", "higher_is_better": False},
        "entries": [{"device": profile, "constants": {"N": n}, "config": {"WG": wg},
                     "objective": ms, "setup": "0123456789abcdef", "measured": 4}
                    for n, wg, ms in entries],
    }
    path.write_text(json.dumps({"schema": 1, "ndtune": "test", "kernels": [kernel]}))
    return path


def test_exact_nearest_and_the_capture(tmp_path, monkeypatch):
    monkeypatch.setenv("NDTUNE_CAPTURE", str(tmp_path / "captured"))
    w = wisdom(tmp_path / "w.json", [(4096, 32, 0.5), (65536, 64, 3.0)])
    exact = ndtune.best(w, "scale", N=65536)
    assert exact["how"] == "exact"
    assert exact["config"] == {"WG": 64}
    assert exact["build_options"] == "-D WG=64"
    assert (exact["global"], exact["local"]) == ([65536], [64])
    assert exact["tuned_objective"] == 3.0
    near = ndtune.best(w, "scale", {"N": 8192})
    assert (near["how"], near["config"], near["tuned_constants"]) == ("nearest", {"WG": 32}, {"N": 4096})
    # 48 is no multiple of 32: the nearest tuned size's choice does not fit, a prediction does.
    predicted = ndtune.best(w, "scale", N=48)
    assert predicted["how"] == "predicted"
    assert 48 % predicted["config"]["WG"] == 0
    captured = [json.loads(line) for f in (tmp_path / "captured").iterdir() for line in f.open()]
    assert [c["constants"] for c in captured] == [{"N": 65536}, {"N": 8192}, {"N": 48}]


def test_numpy_scalars_are_taken_as_their_values(tmp_path):
    np = pytest.importorskip("numpy")
    w = wisdom(tmp_path / "w.json", [(4096, 32, 0.5), (65536, 64, 3.0)])
    assert ndtune.best(w, "scale", N=np.int64(65536))["how"] == "exact"
    assert ndtune.best(w, "scale", {"N": np.uint32(4096)})["config"] == {"WG": 32}


def test_wisdom_that_cannot_be_used_raises_wisdom_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "kernels": [')
    with pytest.raises(ndtune.WisdomError, match="bad.json:.*not a wisdom file"):
        ndtune.best(bad, "scale", N=4096)
    w = wisdom(tmp_path / "w.json", [(4096, 32, 0.5)])
    with pytest.raises(ndtune.WisdomError, match="no kernel `sgemm`"):
        ndtune.best(w, "sgemm")
    with pytest.raises(ndtune.WisdomError, match="no configuration is valid"):
        ndtune.best(w, "scale", N=7)
    assert issubclass(ndtune.WisdomError, ndtune.NdtuneError)


def test_a_cuda_device_is_asked_for_by_ordinal(tmp_path):
    # lang="CUDA": the device is a CUDA ordinal; a machine without CUDA says so.
    w = wisdom(tmp_path / "w.json", [(4096, 32, 0.5)])
    if not any(d["api"] == "cuda" for d in ndtune.devices()):
        with pytest.raises(ndtune.DeviceError, match="no CUDA device"):
            ndtune.best(w, "scale", N=4096, lang="CUDA")
    with pytest.raises(ndtune.SpecError, match="lang='HIP'"):
        ndtune.best(w, "scale", N=4096, lang="HIP")
    assert ndtune.best(w, "scale", N=4096, lang="OpenCL")["config"] == {"WG": 32}


def test_a_preference_picks_from_the_tuned_front(tmp_path):
    w = wisdom(tmp_path / "w.json", [(4096, 32, 0.5)])
    kernel = json.loads(w.read_text())
    k = kernel["kernels"][0]
    k["more_objectives"] = [{"metric": "power_w", "unit": "W", "higher_is_better": False}]
    k["entries"][0]["front"] = [
        {"config": {"WG": 32}, "values": [0.5, 300.0]},
        {"config": {"WG": 16}, "values": [0.7, 180.0]},
        {"config": {"WG": 8}, "values": [1.2, 120.0]},
    ]
    w.write_text(json.dumps(kernel))
    assert ndtune.best(w, "scale", N=4096)["config"] == {"WG": 32}
    under = ndtune.best(w, "scale", N=4096, prefer="time,power_w<=200")
    assert (under["how"], under["config"]) == ("exact", {"WG": 16})
    assert "power_w 180" in under["reason"]
    assert ndtune.best(w, "scale", N=4096, prefer="power_w,time<=3x")["config"] == {"WG": 8}
    with pytest.raises(ndtune.WisdomError, match="the least power_w is 120"):
        ndtune.best(w, "scale", N=4096, prefer="time,power_w<=100")
    with pytest.raises(ndtune.WisdomError, match="is not NAME<=VALUE"):
        ndtune.best(w, "scale", N=4096, prefer="time,power_w")
