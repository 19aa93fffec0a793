"""A scenario's `watch:` with the real fio, on this host (`--target`) and
on a fleet host over SSH, each with a device-slow fault: the
command's answers stored beside the series, the storage's account of each
event in the summary, and its states in the HTML report's chart. The
command reads a state file the test flips while the fault is in place, as
a storage's health would."""

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from iofleet.fleet.control.fault_kinds.device_slow import BLKIO_ROOT
from iofleet.results.store import Store

from ..cli import iofleet
from .sshfleet import ssh_fleet

# A fixed rate: a flat baseline.
LOAD = {"bs": "4k", "read_pct": 0, "iodepth": 1, "size": "8m", "runtime": "8s", "ramp": "1s", "engine": "psync",
        "rate_iops": 2000}


def _throttled() -> bool:
    """A device-slow fault of iofleet's in place (its blkio cgroup, on this host or a namespace host)."""
    return any(Path(BLKIO_ROOT).glob("iofleet-*"))


class _Flipper:
    """Writes `degraded` to a state file while `faulty()` holds, `ok` otherwise, until stopped (the `with`
    block's end)."""

    def __init__(self, path: Path, faulty):
        self.path, self.faulty, self.flips = path, faulty, []
        path.write_text("ok\n")
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        now = "ok"
        while not self._done.is_set():
            new = "degraded" if self.faulty() else "ok"
            if new != now:
                self.path.write_text(new + "\n")
                self.flips.append(new)
                now = new
            time.sleep(0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


def _report_chart(data_dir: Path, tmp_path: Path) -> tuple[str, dict]:
    """`iofleet report 1`'s HTML and its scenario chart's figure."""
    out = tmp_path / "report.html"
    iofleet("report", "1", "-o", out, data_dir=data_dir)
    html = out.read_text()
    section = html[html.index('<h2 id="scenario">'):html.index('<h2 id="charts">')]
    return section, next(json.loads(c) for c in _json_objects(section) if "storage" in c)


def _json_objects(html: str) -> list[str]:
    """The plotly figures' JSON in a page section (each begins with {"data")."""
    out, start = [], html.find('{"data"')
    decoder = json.JSONDecoder()
    while start >= 0:
        _, end = decoder.raw_decode(html, start)
        out.append(html[start:end])
        start = html.find('{"data"', end)
    return out


def _check_account(sc: dict, at_least: int) -> dict:
    """The stored watch of a scenario whose one event turned the state `degraded` and back to `ok`."""
    w = sc["watch"]
    states = [s["state"].split(" at ")[0] for s in w["samples"]]
    assert len(states) >= at_least and all(s["exit"] == 0 for s in w["samples"])
    # ok, then degraded while the fault was in place, then ok again.
    first_bad = states.index("degraded")
    last_bad = len(states) - 1 - states[::-1].index("degraded")
    assert set(states[:first_bad]) == {"ok"} and set(states[first_bad:last_bad + 1]) == {"degraded"}
    assert set(states[last_bad + 1:]) == {"ok"} and last_bad + 1 < len(states)
    (a,) = w["events"]
    (e,) = sc["impact"]["events"]
    assert a["index"] == 0 and a["at_s"] == e["from_s"] and a["until_s"] is None
    assert a["before"].startswith("ok") and a["changed_to"].startswith("degraded") and a["changed_s"] >= a["at_s"]
    assert a["back_s"] == w["samples"][last_bad + 1]["t_s"]
    assert a["back_after_s"] == round(a["back_s"] - a["end_s"], 2)
    return a


def test_a_local_watch_gives_the_storages_account_of_a_slowed_device(tmp_path, loop_target, data_dir):
    state = tmp_path / "state"
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "watched", "load": {
        "bs": "4k", "read_pct": 0, "iodepth": 4, "size": "16m", "runtime": "8s", "ramp": "1s"},
        "events": [{"at": "3s", "fault": "device-slow", "iops": 100, "for": "2s"}],
        "watch": {"command": f"cat {state}", "every": "1s"}}))
    proc = iofleet("scenario", f, "--target", loop_target, data_dir=data_dir, check_rc=2)
    assert proc.stderr.strip() == (f"error: {f}: the scenario runs commands on hosts as root (this host, every 1s: "
                                   f"cat {state}); check them and run again with --yes")
    with _Flipper(state, _throttled) as flipper:
        proc = iofleet("scenario", f, "--target", loop_target, "--yes", data_dir=data_dir, timeout=120)
    assert flipper.flips == ["degraded", "ok"]
    out = " ".join(proc.stdout.split())
    assert f"watch: cat {state} on this host every 1s" in out
    with Store.open(data_dir) as store:
        sc = store.get_run(1).methodology.scenario.to_dict()
    w = sc["watch"]
    assert (w["command"], w["host"], w["every_s"], w["timeout_s"]) == (f"cat {state}", None, 1, 0.9)
    a = _check_account(sc, 6)
    assert (a["before"], a["changed_to"]) == ("ok", "degraded")
    after = f"{a['back_after_s']:.1f} s after the fault ended" if a["back_after_s"] >= 0 else "before the fault ended"
    line = (f"device-slow local at 3s, in place {a['at_s']:.1f}–{a['end_s']:.1f} s: storage ok before, reported "
            f"degraded at {a['changed_s']:.1f} s; back to its state before the fault (ok) at {a['back_s']:.1f} s (")
    assert f"storage's account: `cat {state}` on this host every 1s, {len(w['samples'])} samples:" in out
    assert line in out and (after in out or a["back_after_s"] < 0)
    section, chart = _report_chart(data_dir, tmp_path)
    assert "storage ok before, reported degraded at" in section
    (trace,) = [t for t in chart["data"] if t["name"].startswith("storage")]
    assert trace["hovertext"][0] == "ok" and "degraded" in trace["hovertext"]
    texts = [a["text"] for a in chart["layout"]["annotations"]]
    assert texts[-3:] == ["ok", "degraded", "ok"]


def test_a_watch_on_a_fleet_host_runs_there_over_ssh(tmp_path, make_fleet, data_dir):
    if not Path(BLKIO_ROOT).is_dir():
        pytest.skip("needs the blkio cgroup (v1)")
    fleet = ssh_fleet(make_fleet, 2, fio_server=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    state = tmp_path / "state"
    # The host's own address in its answer: the command ran in h1's namespace, not here.
    command = f"""printf '%s at %s\\n' "$(cat {state})" "$(ip -o -4 addr show dev eth0 | awk '{{print $4}}')" """
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "watched", "load": LOAD,
                                 "events": [{"at": "3s", "fault": "device-slow", "host": "h1", "iops": 100, "for": "2s"}],
                                 "watch": {"command": command.strip(), "host": "h1"}}))
    with _Flipper(state, _throttled) as flipper:
        proc = iofleet("scenario", f, "--hosts", inv, "--yes", data_dir=data_dir, timeout=120)
    assert flipper.flips == ["degraded", "ok"]
    with Store.open(data_dir) as store:
        sc = store.get_run(1).methodology.scenario.to_dict()
    assert sc["watch"]["host"] == "h1"
    a = _check_account(sc, 5)
    where = f" at {fleet.host('h1').address}/"
    assert where in a["before"] and where in a["changed_to"]
    assert all(s["state"].startswith(("ok at ", "degraded at ")) for s in sc["watch"]["samples"])
    assert "device-slow h1 at 3s, in place" in proc.stdout and "storage ok at" in proc.stdout
    assert not _throttled() and subprocess.run(["pgrep", "-f", f"cat {state}"]).returncode == 1
