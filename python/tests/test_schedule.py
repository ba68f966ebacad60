"""`ndtune.Schedule`: the co-execution schedulers for a program that drives its own devices, one
thread per device asking for its next range."""

import threading

import pytest

import ndtune


def drive(schedule, fail_device=None):
    """Each device in a thread takes ranges until none is left; returns them per device."""
    got = [[] for _ in range(schedule.devices)]

    def device(i):
        while (r := schedule.next(i)) is not None:
            if i == fail_device:
                assert schedule.fail(i) == [r[:2]]
                return
            got[i].append(r)

    threads = [threading.Thread(target=device, args=(i,)) for i in range(schedule.devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def covered_once(ranges, total):
    at = 0
    for offset, size, _ in sorted(ranges):
        assert offset == at, ranges
        at += size
    assert at == total


@pytest.mark.parametrize("name", ["static", "dynamic", "hguided"])
def test_every_item_goes_to_one_device(name):
    s = ndtune.Schedule(name, 4096, [16, 32], [2.0, 1.0], chunks=8)
    assert s.scheduler == name and "2 devices" in repr(s)
    got = drive(s)
    covered_once(got[0] + got[1], 4096)
    if name == "static":
        # The plan: the device twice as fast gets about two thirds, in whole work-groups.
        assert [len(g) for g in got] == [1, 1]
        assert got[1][0][1] % 32 == 0 and 2600 < got[1][0][1] < 2900
    if name == "dynamic":
        assert len(got[0] + got[1]) == 8


def test_a_failed_devices_range_goes_to_the_other():
    s = ndtune.Schedule("dynamic", 1024, [16, 16], [1.0, 1.0], chunks=4)
    got = drive(s, fail_device=1)
    assert got[1] == []
    covered_once(got[0], 1024)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="name one of"):
        ndtune.Schedule("auto", 1024, [16], [1.0])
    with pytest.raises(ValueError, match="does not divide the global size 1000"):
        ndtune.Schedule("dynamic", 1000, [16, 32], [1.0, 1.0])
    with pytest.raises(ValueError, match="work_groups names 2 devices but times_ms 1"):
        ndtune.Schedule("static", 1024, [16, 32], [1.0])
    s = ndtune.Schedule("static", 1024, [16], [1.0])
    with pytest.raises(ValueError, match="device 3: the schedule has 1 devices"):
        s.next(3)
