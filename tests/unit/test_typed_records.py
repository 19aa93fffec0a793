"""A scenario's impact (with its stalls), its watch and a network check's
links are records: a new one writes the JSON iofleet always wrote (same
keys, same order), and one read from a stored run exports as it was
stored, byte for byte, whatever keys it lacked or had that this iofleet
does not know."""

import json
from pathlib import Path

from iofleet.analysis.impact import Load, impact
from iofleet.analysis.watch_recovery import storage_recovery
from iofleet.fio.status import Round, Totals
from iofleet.fleet.network_check import check_of_links
from iofleet.results.impact import CatchUp, EventImpact, Impact, ImpactSeries, SpanFigures, Stall
from iofleet.results.links import Link
from iofleet.results.methodology import NetworkRecord, RunMethodology, ScenarioRecord
from iofleet.results.model import Run, run_to_json
from iofleet.results.watch import StorageAccount, WatchRecord, WatchSample

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _round(k: int, ios: int, lat_ns: int = 100_000) -> Round:
    return Round(500 + 1000 * k, 1500 + 1000 * k, Totals(), Totals(ios, ios * 4096, ios, float(ios * lat_ns),
                                                                   {lat_ns: ios} if ios else {}), 0.0)


def _stalled_load() -> Impact:
    """A fixed-rate load (1,000 IOPS) whose IO paused for 3 s, then caught up, its status coming all along."""
    rounds = [_round(k, 1000) for k in range(4)] + [_round(k, 0) for k in range(4, 7)]
    rounds += [_round(7, 4000, 3_000_000_000)] + [_round(k, 1000) for k in range(8, 14)]
    return impact({"h1": rounds}, [{"index": 0, "at_s": 4.5, "end_s": 7.5}], Load(1000, 4))


def test_a_new_impact_writes_the_keys_it_always_wrote_in_their_order():
    d = _stalled_load().to_dict()
    assert list(d) == ["band_pct", "hold_s", "baseline", "events", "series", "stalls"]
    assert list(d["baseline"]) == ["seconds", "iops", "p99_ms", "p99_lower_bound"]
    (e,) = d["events"]
    assert list(e) == ["index", "from_s", "to_s", "during", "iops_change_pct", "p99_change_pct", "recovery_s",
                       "catch_up"]
    assert list(e["catch_up"]) == ["behind_ios", "drained_s", "burst_iops"]
    assert list(d["series"]) == ["t_s", "iops", "p99_ms", "hosts_reporting", "stalled", "estimated", "hosts",
                                 "behind_ios"]
    (stall,) = d["stalls"]
    assert list(stall) == ["host", "from_s", "to_s", "waited_s", "bounded"] and stall["host"] == "h1"
    # Read back from its JSON: the same record, the same JSON.
    again = Impact.from_dict(json.loads(json.dumps(d)))
    assert again == _stalled_load() and json.dumps(again.to_dict()) == json.dumps(d)
    assert isinstance(again.events[0].catch_up, CatchUp) and isinstance(again.stalls[0], Stall)


def test_a_load_at_full_speed_writes_no_backlog_and_an_event_without_index_none():
    out = impact({"h1": [_round(k, 1000) for k in range(6)]}, [{"at_s": 2.5, "end_s": 3.5}])
    d = out.to_dict()
    assert "behind_ios" not in d["series"] and "index" not in d["events"][0]
    assert d["events"][0]["catch_up"] is None and d["stalls"] == []


def test_an_impact_stored_before_stalls_index_and_catch_up_exports_as_stored():
    """tests/fixtures/scenario/fleet-faults.json: no `stalls`, its events no `index` nor `catch_up`, its figures
    no `p99_lower_bound`, its series no `stalled`: none of them appears on export."""
    text = (FIXTURES / "scenario" / "fleet-faults.json").read_text()
    stored = json.loads(text)
    record = ScenarioRecord.from_dict(stored)
    assert isinstance(record.impact, Impact) and isinstance(record.impact.series, ImpactSeries)
    assert isinstance(record.impact.baseline, SpanFigures) and isinstance(record.impact.events[0], EventImpact)
    assert record.impact.stalls == [] and record.impact.events[0].index is None
    assert not record.impact.events[0].has("index") and not record.impact.baseline.p99_lower_bound
    assert json.dumps(record.to_dict(), indent=1, ensure_ascii=False) == text.rstrip("\n")
    # An unknown key (a later iofleet's) is kept where it was.
    stored["impact"]["events"][0] = {"later": 1} | stored["impact"]["events"][0]
    assert ScenarioRecord.from_dict(stored).to_dict() == stored


def test_a_network_check_s_links_export_as_stored():
    doc = json.loads((FIXTURES / "network" / "check-h4-slow.json").read_text())
    run = Run.from_dict(doc)
    (k, *_) = run.methodology.network.links
    assert isinstance(k, Link) and (k.from_host, k.to_host, k.name, k.reached) == ("h1", "h2", "h1 → h2", True)
    assert json.loads(run_to_json(run))["methodology"] == doc["methodology"]
    assert list(k.to_dict())[:2] == ["from", "to"]


def test_a_link_stored_without_later_keys_keeps_them_out():
    """A link stored before `bandwidth_measured` (and with a key this iofleet does not know): read as not
    measured, written as stored."""
    stored = {"from": "h1", "to": "h2", "sent": 5, "received": 0, "rtt_avg_ms": None, "rtt_max_ms": None,
              "mtu": None, "mtu_sent": None, "mtu_received": None, "bits_per_s": None, "flow": "x"}
    net = NetworkRecord.from_dict({"pairs": "ring", "hosts": ["h1", "h2"], "links": [stored], "errors": [],
                                   "problems": []})
    (k,) = net.links
    assert not k.bandwidth_measured and not k.reached and k.retransmits is None
    assert net.to_dict()["links"] == [stored] and list(net.to_dict()["links"][0]) == list(stored)
    check = check_of_links(net.hosts, net.links, net.errors, net.problems)
    assert check.pings["h1"]["h2"].received == 0 and check.bandwidth == {}
    assert RunMethodology.from_dict({"network": net.to_dict()}).network.to_dict() == net.to_dict()


def test_a_watch_writes_the_keys_it_always_wrote_and_a_stored_one_exports_as_stored():
    samples = [WatchSample(0.5, 0.2, 0, "HEALTH_OK", "HEALTH_OK"), WatchSample(1.5, 0.2, 0, "", "HEALTH_WARN"),
               WatchSample(2.5, 0.9, None, "", "no answer: not done in 0.9 s"),
               WatchSample(3.5, 0.2, 0, "", "HEALTH_OK")]
    accounts = storage_recovery(samples, [{"index": 0, "at_s": 1.0, "end_s": 2.0}])
    d = WatchRecord("ceph health", None, 1, 0.9, samples, accounts).to_dict()
    assert list(d) == ["command", "host", "every_s", "timeout_s", "samples", "events"]
    assert list(d["samples"][0]) == ["t_s", "took_s", "exit", "output", "state"]
    assert d["events"] == [{"index": 0, "at_s": 1.0, "end_s": 2.0, "until_s": None, "samples": 3, "before": "HEALTH_OK",
                            "before_t_s": 0.5, "changed_s": 1.5, "changed_to": "HEALTH_WARN", "back_s": 3.5,
                            "back_after_s": 1.5}]
    stored = json.loads((FIXTURES / "scenario" / "fleet-faults.json").read_text())
    stored["watch"] = d | {"samples": [{"t_s": 0.5, "state": "ok", "exit": 0, "output": "ok"}]}  # keys as stored
    record = ScenarioRecord.from_dict(stored)
    assert isinstance(record.watch, WatchRecord) and isinstance(record.watch.events[0], StorageAccount)
    assert record.watch.samples[0].took_s is None and json.dumps(record.to_dict()) == json.dumps(stored)
