from iofleet.analysis.skew import measure_skew
from iofleet.fio.records import Series


def iops(host, first_ms, seconds, job=0):
    return Series(host=host, job_index=job, metric="iops", direction="read",
                  t_ms=[first_ms + 1000 * i for i in range(seconds)], values=[1.0] * seconds)


def test_a_window_starts_one_interval_before_the_first_sample_and_lasts_the_runtime():
    skew = measure_skew([iops("a", 1000, 10), iops("b", 1500, 9), iops("b", 2000, 10, job=1),
                         Series("a", 0, "lat_ns", "read", [0, 99_000], [1.0, 1.0])],  # lat: ignored
                        {"a": 10_000, "b": 10_500})
    # b's log lacks its last interval: the end comes from its runtime, not the log.
    assert skew.windows_ms == {"a": (0, 10_000), "b": (500, 11_000)}
    assert skew.start_spread_ms == 500 and skew.end_spread_ms == 1000
    assert skew.overlap_pct == 100.0 * 9500 / 11_000
    assert not skew.overlapping  # 86 % < 95 %


def test_hosts_that_never_overlap_give_zero_and_one_host_gives_none():
    assert measure_skew([iops("a", 1000, 3), iops("b", 10_000, 3)], {"a": 3000, "b": 3000}).overlap_pct == 0.0
    assert measure_skew([iops("a", 1000, 3)], {"a": 3000}) is None
    assert measure_skew([iops("a", 1000, 30), iops("b", 1000, 29)], {"a": 30_000, "b": 30_000}).overlapping
