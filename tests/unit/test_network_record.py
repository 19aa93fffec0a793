"""A network check stored as a run (tests/fixtures/network/check-h4-slow.json:
a real check of 4 namespace hosts with traffic towards h4 shaped to 50
Mbit/s; README there): read back as measured, shown by `results show`,
compared link by link, and used by a fleet run's diagnostics to explain a
host that lags."""

import copy
import json
from pathlib import Path

import pytest

from iofleet.analysis.compare import Config, compare
from iofleet.analysis.diagnostics import diagnose
from iofleet.errors import IofleetError
from iofleet.fleet.network_check import check_of_links, matrix_lines
from iofleet.report.summary import summary_notes, summary_table
from iofleet.results.links import Link, links_of
from iofleet.results.methodology import NetworkRecord
from iofleet.results.model import Run
from rich.console import Console

FIXTURES = Path(__file__).parents[1] / "fixtures"


def check_doc() -> dict:
    return json.loads((FIXTURES / "network" / "check-h4-slow.json").read_text())


def fleet_run(network: dict | None) -> Run:
    """The recorded uneven fleet run (h4 lags), with `network` as its last check."""
    doc = json.loads((FIXTURES / "runs" / "fleet-uneven.json").read_text())
    if network is not None:
        doc["methodology"]["network"] = network
    return Run.from_dict(doc)


def last_check(doc: dict) -> dict:
    """The check as a fleet run records it (studies/network.py last_network_check)."""
    return doc["methodology"]["network"] | {"run": doc["id"], "at": doc["created_at"]}


def test_a_stored_check_reads_back_link_for_link():
    net = NetworkRecord.from_dict(check_doc()["methodology"]["network"])
    assert all(isinstance(k, Link) for k in net.links) and net.links[0].name == "h1 → h2"
    check = check_of_links(net.hosts, net.links, net.errors, net.problems)
    assert [k.to_dict() for k in links_of(check)] == check_doc()["methodology"]["network"]["links"]
    lines = matrix_lines(check, 80)
    assert "  h3 → h4: 47 Mbit/s" in lines and all(len(line) <= 80 for line in lines)


def test_results_show_of_a_check_prints_its_matrix_and_problems():
    run = Run.from_dict(check_doc())
    console = Console(width=80, record=True)
    console.print(summary_table(run, 80))
    text = console.export_text()
    assert text.startswith("Run 1 · network check · complete · h1, h2, h3, h4\n"), text
    assert "h3 → h4: 47 Mbit/s" in text and "problem: h4: every slow link is to or from h4" in text


def test_a_lagging_host_is_explained_by_its_slow_link_in_the_last_check():
    (finding,) = [f for f in diagnose(fleet_run(last_check(check_doc()))) if f.rule == "host_imbalance"]
    assert finding.host == "h4"
    assert finding.evidence.endswith("; the network check of run 1 measured h4's link h3 → h4 at 47 Mbit/s "
                                     "against a median of 43.43 Gbit/s for the others"), finding.evidence
    assert finding.change.startswith("fix the network first: h4's link")
    assert ("Network: the last check of these hosts, run 1 at 2026-11-27 00:53 UTC, found 3 problems "
            "(`iofleet results show 1`).", "yellow") in summary_notes(fleet_run(last_check(check_doc())))


def test_a_healthy_link_or_no_check_explains_nothing():
    """The fixture's links of h4 set to the others' rate (changed here): the
    finding stays, without a network explanation; so without a check."""
    net = last_check(check_doc())
    for link in net["links"]:
        if "h4" in (link["from"], link["to"]) and link["bits_per_s"]:
            link["bits_per_s"] = 43e9
    for run in (fleet_run(net), fleet_run(None)):
        (finding,) = [f for f in diagnose(run) if f.rule == "host_imbalance"]
        assert "network check" not in finding.evidence and not finding.change.startswith("fix the network")


def test_lost_pings_and_a_failed_mtu_probe_of_the_lagging_host_are_named():
    """Changed here: h4 → h1 lost 2 of 5 pings, h1 → h4 did not pass the expected MTU."""
    net = last_check(check_doc())
    for link in net["links"]:
        if (link["from"], link["to"]) == ("h4", "h1"):
            link["received"] = 3
        if (link["from"], link["to"]) == ("h1", "h4"):
            link.update(mtu=9000, mtu_sent=2, mtu_received=0)
    (finding,) = [f for f in diagnose(fleet_run(net)) if f.rule == "host_imbalance"]
    assert "h1 → h4: packets of 9000 bytes (the expected MTU) do not pass" in finding.evidence
    assert "h4 → h1: 40 % of pings lost" in finding.evidence


def test_checks_compare_link_by_link_and_never_with_fio_runs():
    base, other = check_doc(), copy.deepcopy(check_doc())
    other["id"] = 2
    for link in other["methodology"]["network"]["links"]:
        if link["bits_per_s"]:
            link["bits_per_s"] = 1e9
    cmp = compare([Config("before", [Run.from_dict(base)]), Config("after", [Run.from_dict(other)])], "before")
    assert cmp.match == ("link",) and [m.name for m in cmp.metrics] == ["rtt", "gbps"]
    rows = {t.label: t.row("gbps").cell("after") for t in cmp.tests if any(r.metric == "gbps" for r in t.rows)}
    assert sorted(rows) == ["h1 → h2", "h2 → h3", "h3 → h4", "h4 → h1"]
    assert rows["h3 → h4"].pct_change == pytest.approx(100 * (1e9 / 46.7e6 - 1), rel=0.02)
    assert rows["h1 → h2"].verdict == "not enough repeats"  # one check a side
    with pytest.raises(IofleetError, match="run 1 is a network check and run 7 is not"):
        fio = json.loads((FIXTURES / "runs" / "fleet-uneven.json").read_text()) | {"id": 7}
        compare([Config("net", [Run.from_dict(base)]), Config("fio", [Run.from_dict(fio)])], "net")
