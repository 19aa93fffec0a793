from iofleet.analysis.stragglers import stragglers
from iofleet.fio.records import DirectionStats
from iofleet.results.model import Aggregate


def agg(iops):
    d = DirectionStats(iops=iops)
    return Aggregate(jobs=1, read=d, write=DirectionStats(), all=d, usr_cpu_pct=0, sys_cpu_pct=0)


def test_host_below_80_percent_of_median_is_named():
    hosts = {"h1": agg(1000), "h2": agg(1010), "h3": agg(790), "h4": agg(990)}
    assert stragglers(hosts) == [("h3", 790 / 995)]


def test_no_stragglers_in_an_even_fleet_or_single_host():
    assert stragglers({"h1": agg(1000), "h2": agg(850), "h3": agg(1000)}) == []
    assert stragglers({"h1": agg(1000)}) == []
