import pytest

from iofleet.analysis.scaling import growth_pct, scaling
from iofleet.errors import IofleetError
from iofleet.fio.records import DirectionStats
from iofleet.fleet.inventory import Host
from iofleet.plan.expand import expand
from iofleet.plan.load import parse_plan
from iofleet.results.model import Aggregate
from iofleet.studies.scale import check_steps, parse_steps, run_scale, select_test


def agg(iops, mb_s=None, mean_us=100.0, p99_us=400.0):
    d = DirectionStats(ios=int(iops) * 10, iops=iops,
                       bw_bytes_s=(mb_s if mb_s is not None else iops * 4096 / 1e6) * 1e6,
                       lat_mean_ns=None if mean_us is None else mean_us * 1000,
                       percentiles_ns={} if p99_us is None else {"p99": p99_us * 1000})
    return Aggregate(jobs=1, read=d, write=DirectionStats(), all=d, usr_cpu_pct=0, sys_cpu_pct=0)


def test_rows_carry_the_figures_growth_and_iops_per_host():
    result = scaling([(1, agg(10_000, mb_s=40.96, mean_us=50, p99_us=120)),
                      (2, agg(18_000, mb_s=73.728, mean_us=55, p99_us=150)),
                      (4, agg(30_000, mb_s=122.88, mean_us=70, p99_us=210))])
    first, second, third = result.rows
    assert (first.hosts, first.iops, first.mb_s, first.mean_ms, first.p99_ms) == (1, 10_000, 40.96, 0.05, 0.12)
    assert first.growth_pct is None and first.iops_per_host == 10_000
    assert second.growth_pct == pytest.approx(80.0) and second.iops_per_host == 9_000
    assert third.growth_pct == pytest.approx(100 * 12_000 / 18_000) and third.iops_per_host == 7_500
    assert third.mean_ms == pytest.approx(0.07) and third.p99_ms == pytest.approx(0.21)
    assert result.saturation is None and result.best is None
    assert result.verdict() == "No saturation: still growing at 4 hosts (IOPS +66.7 % from 2 to 4 hosts)."


def test_saturation_is_the_first_step_growing_10_percent_or_less():
    result = scaling([(1, agg(40_000)), (2, agg(78_000)), (4, agg(81_234)), (8, agg(82_000)), (16, agg(150_000))])
    assert result.saturation is result.rows[2] and result.best is result.rows[1]
    assert result.rows[2].growth_pct == pytest.approx(100 * 3_234 / 78_000)  # +4.1 %
    assert result.verdict() == ("Saturation: the fleet stops growing at 4 hosts (+4.1 % over 2 hosts); "
                                "best: 2 hosts, 78,000 IOPS")


def test_exactly_10_percent_saturates_and_just_above_does_not():
    assert scaling([(1, agg(1000)), (2, agg(1100))]).saturation.hosts == 2
    above = scaling([(1, agg(1000)), (2, agg(1100.5))])
    assert above.saturation is None
    assert above.verdict() == "No saturation: still growing at 2 hosts (IOPS +10.1 % from 1 to 2 hosts)."


def test_a_flat_or_falling_fleet_saturates_at_the_second_step():
    flat = scaling([(1, agg(5000)), (2, agg(5000)), (3, agg(5000))])
    assert flat.saturation is flat.rows[1] and flat.best is flat.rows[0]
    assert flat.rows[1].growth_pct == 0.0 and flat.rows[1].iops_per_host == 2500
    assert flat.verdict() == "Saturation: the fleet stops growing at 2 hosts (+0.0 % over 1 host); best: 1 host, 5,000 IOPS"
    falling = scaling([(1, agg(5000)), (2, agg(4000))])
    assert falling.rows[1].growth_pct == -20.0
    assert falling.verdict().startswith("Saturation: the fleet stops growing at 2 hosts (-20.0 % over 1 host)")


def test_an_unmeasured_step_has_no_figures_and_breaks_the_growth_chain():
    result = scaling([(1, agg(1000)), (2, None), (3, agg(1050)), (4, agg(2000))])
    missing = result.rows[1]
    assert (missing.hosts, missing.iops, missing.mb_s, missing.iops_per_host) == (2, None, None, None)
    assert [r.growth_pct for r in result.rows][:3] == [None, None, None]  # 3 is not compared with 1
    assert result.rows[3].growth_pct == pytest.approx(100 * 950 / 1050)
    assert result.saturation is None
    assert result.verdict() == "No saturation: still growing at 4 hosts (IOPS +90.5 % from 3 to 4 hosts)."


def test_unmeasured_fields_are_none():
    row = scaling([(2, None)]).rows[0]
    assert (row.hosts, row.iops, row.mb_s, row.mean_ms, row.p99_ms, row.growth_pct, row.iops_per_host) == \
        (2, None, None, None, None, None, None)
    no_latency = scaling([(1, agg(100, mean_us=None, p99_us=None))]).rows[0]
    assert no_latency.iops == 100 and no_latency.mean_ms is None and no_latency.p99_ms is None


def test_no_verdict_without_two_consecutive_measured_steps():
    for steps in ([], [(1, agg(1000))], [(1, agg(1000)), (2, None)], [(1, None), (2, agg(1000))]):
        result = scaling(steps)
        assert result.saturation is None
        assert result.verdict().startswith("No saturation verdict: it needs two consecutive steps measured")


def test_growth_from_nothing_is_unknown():
    assert growth_pct(0.0, 100.0) is None
    assert growth_pct(None, 100.0) is None
    assert growth_pct(200.0, 150.0) == -25.0


# ---- the study's checks (before anything runs) ----------------------------

def plan(**extra):
    data = {"name": "p", "defaults": {"size": "4m", "runtime": "1s", "ramp": "0s"},
            "workloads": [{"name": "w"}]} | extra
    return parse_plan(data, "test")


def test_steps_parse_and_check():
    assert parse_steps("1, 2,4,8") == [1, 2, 4, 8]
    assert check_steps(None, 3) == [1, 2, 3]
    assert check_steps([1, 3], 3) == [1, 3]
    for text in ("1,,2", "a", "1.5", "-1"):
        with pytest.raises(IofleetError, match=r"^--steps .*: give host counts as whole numbers"):
            parse_steps(text)
    cases = {
        (1, 2, 9): "--steps 1,2,9: the inventory has 4 hosts",
        (2, 1): "--steps 2,1: give the host counts in increasing order, each once",
        (1, 1): "--steps 1,1: give the host counts in increasing order, each once",
        (0, 2): "--steps 0,2: host counts start at 1",
    }
    for steps, message in cases.items():
        with pytest.raises(IofleetError) as exc:
            check_steps(list(steps), 4)
        assert str(exc.value) == message
    with pytest.raises(IofleetError) as exc:
        check_steps([2], 1, selected=True)
    assert str(exc.value) == "--steps 2: the plan's `hosts:` selector leaves 1 host"


def test_a_plan_of_several_tests_needs_test_id():
    p = plan(workloads=[{"name": "w", "matrix": {"bs": ["4k", "8k", "16k", "32k", "64k", "128k"]}},
                        {"name": "seq", "random_pct": 0}])
    with pytest.raises(IofleetError) as exc:
        select_test(p, None)
    assert str(exc.value) == (
        "plan 'p' expands to 7 tests and a scaling study runs one: pass --test ID with one of "
        "4k-r100-rand-j1-qd1, 8k-r100-rand-j1-qd1, 16k-r100-rand-j1-qd1, 32k-r100-rand-j1-qd1, "
        "64k-r100-rand-j1-qd1 (and 2 more: see `iofleet validate PLAN`)")
    with pytest.raises(IofleetError, match=r"^--test 3k: plan 'p' has no such test; its tests: 4k-"):
        select_test(p, "3k")
    narrowed, spec, notes = select_test(p, "16k-r100-rand-j1-qd1")
    assert spec.bs == 16384 and notes == []
    assert [w.name for w in narrowed.workloads] == ["w"] and narrowed.workloads[0].matrix is None
    (only,) = expand(narrowed)
    assert only.params() == spec.params() and only.repeats == 1


def test_a_single_test_is_chosen_and_repeats_are_run_once():
    narrowed, spec, notes = select_test(plan(workloads=[{"name": "w", "repeat": 3, "iodepth": 8}]), None)
    assert spec.id == "4k-r100-rand-j1-qd8" and spec.iodepth == 8
    assert notes == ["workload 'w' asks for 3 repeats; each step ran the test once"]
    assert narrowed.workloads[0].repeat is None


def test_run_scale_refuses_before_contacting_any_host():
    hosts = [Host(name=f"h{i}", address=f"127.0.0.1:{i}", targets=["/tmp"]) for i in (1, 2)]
    with pytest.raises(IofleetError, match="^--steps 1,3: the inventory has 2 hosts$"):
        run_scale(plan(), "", None, hosts, steps=[1, 3])
    with pytest.raises(IofleetError, match="runs on a fleet"):
        run_scale(plan(), "", None, [])


def test_a_mixed_plan_is_refused():
    p = plan(mixed=True, workloads=[{"name": "a", "hosts": {"role": "x"}}, {"name": "b", "hosts": {"role": "y"}}])
    with pytest.raises(IofleetError, match=r"^plan 'p' is mixed .*runs one test on growing numbers of hosts$"):
        select_test(p, None)
