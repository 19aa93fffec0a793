"""A run started in the web UI honours the lock of a CLI run on the same
target (issue 16, item 2): refused with the CLI's line, nothing stored."""

from tests.cli import wait_for, write_plan
from tests.target_lock import DEFAULTS, TWO, holder, runs_in
from tests.webserver import save_plan

WEB_PLAN = """name: web
defaults: {size: 16m, runtime: 1s, ramp: 0s, iodepth: 2}
workloads: [{name: w, bs: 4k, read_pct: 100}]
"""


def test_a_web_run_on_a_target_a_cli_run_holds_is_refused(server, disk_dir, tmp_path, spawn):
    plan = write_plan(tmp_path / "p.yaml", name="cli", defaults=DEFAULTS | {"runtime": "2s"}, workloads=TWO)
    a = tmp_path / "a"
    first = spawn("run", plan, "--target", disk_dir, data_dir=a)
    wait_for(lambda: "run" in holder(disk_dir / "iofleet" / ".iofleet-lock"), timeout=30, what="the CLI run's lock")
    client = server.client()
    save_plan(client, WEB_PLAN)
    r = client.post("/api/runs", json={"plan": "web", "targets": [str(disk_dir)]})
    assert r.status_code == 400, r.text
    assert r.json()["error"] == (
        f"target {disk_dir} is being tested by another iofleet run (pid {first.pid}, run 1, results in "
        f"{a.resolve()}); wait for it to end, or stop it (Ctrl-C there), then run again")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0 and "Run 1 complete: 2 of 2 tests ok" in out, out + err
    assert runs_in(server.data_dir) == []
