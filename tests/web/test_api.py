"""The REST API end to end, as a script would use it: plain HTTP against a
real `iofleet serve` running real fio on a real disk."""

import json
import subprocess
import threading
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from iofleet.results.store import Store
from tests.webserver import save_plan

PLAN = """name: api
defaults: {size: 16m, runtime: 2s, ramp: 1s}
workloads:
  - name: rr
    matrix: {bs: [4k, 64k], read_pct: [100]}
"""
STOP_PLAN = """name: stopme
defaults: {size: 16m, ramp: 0s, iodepth: 2}
workloads:
  - name: first
    runtime: 2s
  - name: long
    runtime: 60s
    read_pct: 0
"""


def scrape(client: httpx.Client) -> dict[tuple, float]:
    """GET /metrics, parsed as Prometheus does: {(sample name, sorted labels): value}."""
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(r.text) for s in family.samples}


def samples(metrics: dict, name: str) -> dict[tuple, float]:
    return {labels: v for (n, labels), v in metrics.items() if n == name}


def read_events(response: httpx.Response) -> list[dict]:
    """Every event of a server-sent event stream, until the server ends it."""
    events, event = [], {}
    for line in response.iter_lines():
        if not line:
            if event:
                events.append(event)
            event = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            event[field] = value[1:] if value.startswith(" ") else value
    for e in events:
        e["data"] = json.loads(e["data"]) if "data" in e else None
        e["id"] = int(e["id"]) if "id" in e else None
    return events


def fio_children(pid: int) -> list[str]:
    """fio processes below the server process (its run's fio), as 'pid args'."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    parent, args = {}, {}
    for line in out.splitlines():
        p, pp, *a = line.split(None, 2)
        parent[int(p)], args[int(p)] = int(pp), (a or [""])[0]

    def below(p):
        while p in parent and p not in (0, 1):
            p = parent[p]
            if p == pid:
                return True
        return False
    return [f"{p} {a}" for p, a in args.items() if below(p) and a.split(" ")[0].endswith("fio")]


def test_run_over_http_with_events_metrics_and_stored_results(server, disk_dir):
    client = server.client()
    assert save_plan(client, PLAN)["name"] == "api"
    idle = scrape(client)
    assert idle[("iofleet_run_active", ())] == 0 and not samples(idle, "iofleet_run_id")  # no run yet

    r = client.post("/api/runs", json={"plan": "api", "targets": [str(disk_dir)]})
    assert r.status_code == 202, r.text
    run_id = r.json()["run_id"]
    assert isinstance(run_id, int) and r.json()["tests_planned"] == 2

    again = client.post("/api/runs", json={"plan": "api", "targets": [str(disk_dir)]})
    assert again.status_code == 409, again.text
    assert f"run {run_id} (api) is still going" in again.json()["error"]

    # Follow the event stream (another client, as a page would) while polling the status and /metrics.
    events: list[dict] = []
    follower = threading.Thread(target=lambda: events.extend(stream_events(server.client())), daemon=True)
    follower.start()
    seen_tests, seen_iops, seen_active, states = set(), [], False, set()
    deadline = time.monotonic() + 60
    while (status := client.get("/api/runs/current").json())["state"] != "ended":
        assert time.monotonic() < deadline, f"the run did not end: {status}"
        states.add(status["state"])
        m = scrape(client)
        if m[("iofleet_run_active", ())] == 1:
            seen_active = True
            assert m[("iofleet_run_id", ())] == run_id
            assert m[("iofleet_run_tests_planned", ())] == 2
            for labels in samples(m, "iofleet_run_test_info"):
                assert dict(labels)["run"] == str(run_id) and dict(labels)["plan"] == "api"
                seen_tests.add(dict(labels)["test"])
            seen_iops += [v for labels, v in samples(m, "iofleet_host_iops").items() if labels == (("host", "local"),)]
            # A local run knows no host CPU: no sample rather than 0.
            assert not samples(m, "iofleet_host_cpu_ratio")
        time.sleep(0.2)
    assert states <= {"starting", "preparing", "running"}

    assert status["status"] == "complete" and status["tests_done"] == 2, status
    ids = [row["id"] for row in status["results"]]
    assert len(ids) == 2 and all(row["status"] == "ok" and row["iops"] > 0 for row in status["results"])
    assert seen_active and seen_tests and seen_tests <= set(ids), (seen_tests, ids)
    assert seen_iops and max(seen_iops) > 0, "no live IOPS for host local in any scrape"

    after = scrape(client)
    assert after[("iofleet_run_active", ())] == 0 and after[("iofleet_run_id", ())] == run_id
    assert after[("iofleet_run_tests_done", ())] == 2
    assert samples(after, "iofleet_run_status") == {
        (("run", str(run_id)), ("status", s)): float(s == "complete") for s in
        ("complete", "failed", "interrupted", "partial")}
    assert not samples(after, "iofleet_host_iops") and not samples(after, "iofleet_run_test_info")

    listed = client.get("/api/results")
    assert listed.status_code == 200, listed.text
    assert [(r["id"], r["plan"], r["status"], r["tests"]) for r in listed.json()] == [(run_id, "api", "complete", 2)]
    run = client.get(f"/api/results/{run_id}").json()
    assert run["id"] == run_id and run["status"] == "complete" and run["plan_name"] == "api"
    stored = {t["id"]: t["all"]["iops"] for t in run["tests"]}
    assert set(stored) == set(ids) and all(v > 0 for v in stored.values())
    with Store.open(server.data_dir) as store:  # the API gives what the store holds
        assert {t.id: t.aggregate.all.iops for t in store.get_run(run_id).tests} == stored
    for row in status["results"]:
        assert row["iops"] == round(stored[row["id"]], 1)

    follower.join(timeout=10)
    assert not follower.is_alive(), "the event stream did not end with the run"
    check_events(client, events)


def stream_events(client: httpx.Client, **headers) -> list[dict]:
    with client.stream("GET", "/api/runs/current/events", headers=headers) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        return read_events(response)


def check_events(client: httpx.Client, events: list[dict]) -> None:
    """The stream followed during the run: test, live, result per test, then ended, with
    increasing ids; a reconnect with Last-Event-ID gets only the later events."""
    assert events and events[0]["event"] == "status" and events[0]["id"] is None  # the snapshot it starts from
    events = events[1:]
    ids = [e["id"] for e in events]
    assert ids == sorted(set(ids)), "ids must increase"
    assert events[-1]["event"] == "ended" and events[-1]["data"]["status"] == "complete"
    # Per test: test, then its live figures, then its result; test 0 before test 1.
    order = [(e["event"], e["data"].get("index")) for e in events if e["event"] in ("test", "live", "result")]
    for index in (0, 1):
        mine = [kind for kind, i in order if i == index]
        assert mine[0] == "test" and mine[-1] == "result" and "live" in mine, mine
        assert set(mine[1:-1]) <= {"live"}, mine
    assert max(i for i, (_, x) in enumerate(order) if x == 0) < min(i for i, (_, x) in enumerate(order) if x == 1)
    assert [e["data"]["iops"] > 0 for e in events if e["event"] == "result"] == [True, True]
    live = next(e["data"] for e in events if e["event"] == "live" and e["data"]["fleet"]["iops"])
    assert live["hosts"]["local"]["iops"] > 0 and live["fleet"]["source"] == "fio"

    first_result = next(e["id"] for e in events if e["event"] == "result")
    resumed = stream_events(client, **{"Last-Event-ID": str(first_result)})
    assert resumed[0]["event"] == "status" and resumed[0]["data"]["state"] == "ended"
    assert [e["id"] for e in resumed[1:]] == [i for i in ids if i > first_result]
    assert resumed[1]["event"] == "test" and resumed[1]["data"]["index"] == 1


def test_stop_ends_the_run_keeps_finished_tests_and_fio(server, disk_dir):
    client = server.client()
    save_plan(client, STOP_PLAN)
    assert client.post("/api/runs", json={"plan": "stopme", "targets": [str(disk_dir)]}).status_code == 202
    deadline = time.monotonic() + 30
    while True:  # until the long (second) test's fio is writing
        status = client.get("/api/runs/current").json()
        if status["test_index"] == 1 and status["fleet"].get("iops"):
            break
        assert time.monotonic() < deadline and status["state"] != "ended", status
        time.sleep(0.2)
    assert fio_children(server.proc.pid), "the long test's fio should be running under the server"

    sent = time.monotonic()
    r = client.post("/api/runs/current/stop")
    assert r.status_code == 200 and r.json() == {"stopping": True}, r.text
    status = server.wait_run(client, timeout=30)
    assert time.monotonic() - sent < 10, "the run did not stop within a few seconds"
    assert status["status"] == "interrupted", status
    assert [row["status"] for row in status["results"]] == ["ok", "interrupted"]
    assert status["results"][0]["iops"] > 0
    assert not fio_children(server.proc.pid), "fio is still running after the stop"
    assert not (disk_dir / "iofleet").exists(), "the test files were not removed"

    run = client.get(f"/api/results/{status['run_id']}").json()
    assert run["status"] == "interrupted"
    assert [t["status"] for t in run["tests"]] == ["ok", "interrupted"]
    assert run["tests"][0]["all"]["iops"] > 0

    again = client.post("/api/runs/current/stop")
    assert again.status_code == 409 and again.json()["error"] == "no run is going"
    assert scrape(client)[("iofleet_run_status", (("run", str(status["run_id"])), ("status", "interrupted")))] == 1
