"""The web's run manager holds a study of several runs as one stream of
events (real fio, 1-s tests): each run gets a publisher of its own, event
ids follow on, a run that ends while the study goes on says so, and an
error after a run keeps that run's own status with the study's error."""

import pytest

from iofleet.errors import IofleetError
from iofleet.plan import parse_plan
from iofleet.studies.launch import Launch
from iofleet.studies.run import run_plan
from iofleet.web.live import RunManager

from ..cli import wait_for

pytestmark = pytest.mark.integration


def _plan(disk):
    return parse_plan({"name": "tiny", "targets": [str(disk)], "defaults": {"size": "4m", "ramp": "0s", "runtime": "1s"},
                       "workloads": [{"name": "w", "bs": "4k"}]}, "tiny")


def _run(manager: RunManager, go, plan) -> list[dict]:
    status = manager.start(Launch("two-runs", "tiny", None, None, plan, go, "two runs of one test"))
    assert status["run_id"] == 1 and status["study"]["about"] == "two runs of one test"
    manager.wait(120)
    assert not manager.running
    return manager.events_after(0)


def test_a_study_of_two_runs_is_one_stream(tmp_path, disk):
    plan = _plan(disk)

    def go(store, observer, stop):
        run_plan(plan, "", store, observer=observer, stop=stop)
        return run_plan(plan, "", store, observer=observer, stop=stop).status

    manager = RunManager(tmp_path / "data")
    events = _run(manager, go, plan)
    ids = [e["id"] for e in events]
    assert ids == sorted(set(ids)), "ids follow on from run to run"
    runs = [e["data"]["run_id"] for e in events if e["type"] == "run"]
    ends = [e["data"] for e in events if e["type"] == "ended"]
    assert runs == [1, 2]
    assert [(e["run_id"], e["status"], e.get("more")) for e in ends] == [(1, "complete", True), (2, "complete", None)]
    assert manager.status()["study"]["runs"] == [1, 2] and manager.status()["state"] == "ended"
    # A page that reattaches after the first run's end gets the second run whole.
    first_end = next(e["id"] for e in events if e["type"] == "ended")
    assert [e["type"] for e in manager.events_after(first_end)][0] == "run"


def test_an_error_after_a_run_keeps_its_status_and_says_why(tmp_path, disk):
    plan = _plan(disk)

    def go(store, observer, stop):
        run_plan(plan, "", store, observer=observer, stop=stop)
        raise IofleetError("the sweep for the maximum (run 1) measured no IO; no curve was run")

    manager = RunManager(tmp_path / "data")
    end = [e["data"] for e in _run(manager, go, plan) if e["type"] == "ended"]
    assert len(end) == 1 and end[0]["status"] == "complete" and "measured no IO" in end[0]["error"], end


def test_stop_during_a_curves_sweep_ends_the_study(server, disk):
    """Stop in the sweep: the sweep's run is interrupted and the curve never starts (no second run)."""
    client = server.client()
    r = client.post("/api/runs", json={"study": "curve", "targets": [str(disk)], "settings": {
        "size": "8m", "runtime": "30s", "ramp": "0s", "max_jobs": "1", "max_iodepth": "4"}})
    assert r.status_code == 202, r.text
    assert r.json()["study"]["kind"] == "curve" and r.json()["plan"] == "saturate"
    wait_for(lambda: client.get("/api/runs/current").json()["fleet"], timeout=30, what="live figures")
    assert client.post("/api/runs/current/stop").json() == {"stopping": True}
    status = server.wait_run(client, timeout=60)
    assert (status["run_id"], status["status"], status["study"]["runs"]) == (1, "interrupted", [1]), status
    assert [run["id"] for run in client.get("/api/results").json()] == [1]
