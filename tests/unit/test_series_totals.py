"""Per-second totals of real fio logs never show a second in which not
every job reported (DESIGN.md, rule 6)."""

from pathlib import Path

import pytest

from iofleet.analysis.methodology import test_totals as totals_of
from iofleet.fio.parse import parse_log
from iofleet.fleet.fio_link.runner import read_series

# fio 3.33, 2 jobs × 5 s after a 2 s warm-up (job.fio beside the logs):
# job 3 logged 4 IOPS samples, job 4 a fifth one a second after the rest.
UNEVEN = Path(__file__).resolve().parents[1] / "fixtures" / "fio" / "uneven-jobs"


def iops_log(name: str) -> tuple[list[int], list[float]]:
    return parse_log((UNEVEN / name).read_bytes())["read"]


def test_a_second_only_one_job_logged_is_dropped_not_drawn_at_half_the_iops():
    t3, v3 = iops_log("series_iops.3.log")
    t4, v4 = iops_log("series_iops.4.log")
    assert (len(t3), len(t4)) == (4, 5), "the recording: one job logged one second more"
    totals = totals_of(read_series(UNEVEN, "local"))
    # Every second shown holds both jobs: each is the sum of their samples.
    assert totals["iops"] == pytest.approx([a + b for a, b in zip(v3, v4)])
    assert totals["t_ms"] == [1000, 2000, 3000, 4000]
    assert min(totals["iops"]) > 0.8 * max(totals["iops"])  # no invented drop at the end
    assert all(v is not None and v > 0 for v in totals["lat_mean_ns"])


def test_the_same_logs_on_two_hosts_keep_only_the_seconds_both_hosts_have():
    one = read_series(UNEVEN, "h1")
    two = [s for s in read_series(UNEVEN, "h2") if not (s.job_index == 1 and s.metric == "iops")]
    for s in read_series(UNEVEN, "h2"):
        if s.job_index == 1 and s.metric == "iops" and s.phase == "measured":
            s.t_ms, s.values = s.t_ms[1:], s.values[1:]  # h2's job 1 lost its first second
            two.append(s)
    totals = totals_of(one + two)
    assert totals["t_ms"] == [2000, 3000, 4000]
    assert totals["iops"][0] == pytest.approx(2 * (iops_log("series_iops.3.log")[1][1]
                                                   + iops_log("series_iops.4.log")[1][1]))


def test_the_warm_up_is_summed_over_its_own_jobs():
    warmup = totals_of(read_series(UNEVEN, "local"), phase="warmup")
    assert warmup["iops"] == pytest.approx([iops_log("warmup_iops.1.log")[1][0] + iops_log("warmup_iops.2.log")[1][0]])
