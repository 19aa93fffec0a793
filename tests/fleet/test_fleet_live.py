"""A fleet test's fast path on real fio servers in network namespaces: each
host's status rounds decoded live from the frames its server sends through
iofleet's relay, early stop of the whole fleet by the SNIA rule, and the
fallback when a server's status cannot be decoded."""

import statistics

import pytest

from iofleet.fio import status_frames
from iofleet.fleet.inventory import load_inventory
from iofleet.plan import parse_plan
from iofleet.results.store import Store
from iofleet.studies.events import RunObserver
from iofleet.studies.run import run_plan

from ..cli import iofleet, show_json
from .helpers import SHORT

# A rate-limited load is steady from its first rounds: the fleet ends long before max_runtime.
STEADY_PLAN = {"name": "fast", "prepare": "none",
               "defaults": {**SHORT, "ramp": "1s", "until": "steady", "round": "1s", "max_runtime": "40s"},
               "workloads": [{"name": "paced", "rate_iops": 600, "jobs": 2}]}


class Live(RunObserver):
    def __init__(self):
        self.seen, self.phases, self.warnings = [], [], []

    def test_live(self, index, spec, live):
        self.seen.append(live)

    def test_phase(self, index, spec, phase):
        self.phases.append(phase)

    def warning(self, text):
        self.warnings.append(text)


def _run(tmp_path, fleet, data_dir, plan=STEADY_PLAN) -> Live:
    hosts = load_inventory(fleet.write_inventory(tmp_path / "inv.yaml")).hosts
    watch = Live()
    with Store.open(data_dir) as store:
        assert run_plan(parse_plan(plan), "", store, hosts=hosts, observer=watch).ok
    return watch


def test_a_steady_fleet_ends_early_on_every_host_judged_on_the_rounds_seen_live(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(3)
    watch = _run(tmp_path, fleet, data_dir)
    (t,) = show_json(1, data_dir)["tests"]
    m = t["methodology"]
    stopped = m["early_stop"]["stopped_at_s"]
    assert m["steady"]["iops"]["steady"] and stopped < 20, m["steady"]
    assert any(p.startswith(f"steady at {stopped:.0f} s on every host") for p in watch.phases)
    # Every host stopped together, each host's result whole (both jobs, a measured part that ended early).
    assert set(t["hosts"]) == {"h1", "h2", "h3"}
    for name, h in t["hosts"].items():
        assert h["all"]["ios"] > 0 and h["all"]["runtime_ms"] < 20_000, (name, h["all"])
    # Judged afterwards on exactly the rounds it was stopped on.
    fleet_rounds = m["latency_rounds"]["fleet"]["iops"]
    assert m["steady"]["iops"]["end_s"] == pytest.approx(stopped)
    assert len(fleet_rounds) == len(m["steady"]["iops"]["rounds"]) >= 5
    assert m["round_spread_s"] is not None and m["round_spread_s"] >= 0
    # Each host's own figures over the same window: they add up to the fleet's.
    w = m["window"]
    assert set(w["hosts"]) == {"h1", "h2", "h3"}
    assert sum(h["all"]["ios"] for h in w["hosts"].values()) == w["all"]["ios"] > 0
    assert sum(h["all"]["iops"] for h in w["hosts"].values()) == pytest.approx(w["all"]["iops"], rel=1e-9)
    shown = iofleet("results", "show", "1", data_dir=data_dir).stdout
    span = f"window {round(w['start_s'], 1):g}-{round(w['end_s'], 1):g} s"
    assert all(any(line.strip().startswith(h) and span in line for line in shown.splitlines())
               for h in ("h1", "h2", "h3")), shown
    # Live: each host's own rounds, the same figures as stored (exact, from the same status).
    per_host: dict[str, dict[float, float]] = {}
    for live in watch.seen:
        for name, r in (live.rounds or {}).items():
            if r is not None:
                per_host.setdefault(name, {})[r.end_s] = r.iops
                # (fio counts an IO and its bytes a moment apart: a round may hold one more of either)
                assert r.p99_ns > 0 and r.bw_bytes_s == pytest.approx(r.iops * 4096, abs=2 * 4096 / r.seconds)
    assert set(per_host) == {"h1", "h2", "h3"}
    for name, seen in per_host.items():
        stored = m["latency_rounds"]["hosts"][name]["iops"]
        live_iops = [seen[end_s] for end_s in sorted(seen)]  # live figures come once a second: a round may be missed
        assert len(live_iops) >= 3 and all(any(v == pytest.approx(s, rel=1e-9) for s in stored) for v in live_iops)
    # The fleet's live line: its last whole round, the paced 600 IOPS (a busy machine may delay a round's IOs).
    fleet_live = [live.iops for live in watch.seen if live.iops is not None]
    assert fleet_live and statistics.median(fleet_live) == pytest.approx(600, rel=0.25), fleet_live


def test_a_server_whose_status_is_not_decoded_runs_its_full_time_and_says_so(tmp_path, make_fleet, data_dir,
                                                                               monkeypatch):
    # As with a fio release whose protocol version iofleet does not know.
    monkeypatch.setattr(status_frames, "LAYOUTS", {})
    plan = {**STEADY_PLAN, "defaults": {**STEADY_PLAN["defaults"], "max_runtime": "6s"}}
    watch = _run(tmp_path, make_fleet(2), data_dir, plan)
    (t,) = show_json(1, data_dir)["tests"]
    m = t["methodology"]
    assert m["early_stop"] is None and t["all"]["runtime_ms"] >= 5_500
    assert "is not one iofleet decodes" in m["live_note"] and "h1, h2" in m["live_note"]
    assert any("no live figures from h1, h2" in w for w in watch.warnings)
    assert all(r is None for live in watch.seen for r in (live.rounds or {}).values())
    # Judged afterwards as before, on the rounds in fio's client's document.
    assert m["rounds_source"] == "fio status" and len(m["latency_rounds"]["fleet"]["iops"]) >= 5
