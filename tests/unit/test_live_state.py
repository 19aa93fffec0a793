"""A run's published live state (studies.live_state): what a web UI that
did not start the run reads, and how a run whose process died reads."""

import json
from types import SimpleNamespace

from iofleet.results.store.locks import RunLocks
from iofleet.studies.live_state import Publisher, held_runs, live_path, read_published
from iofleet.studies.events import RunObserver


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def spec(test_id: str):
    return SimpleNamespace(id=test_id, ramp=0, runtime=1, longest_s=1)


class Recorder(RunObserver):
    def __init__(self):
        self.calls = []

    def test_started(self, index, spec):
        self.calls.append(("test_started", index))


def test_events_are_published_forwarded_and_live_figures_paced(tmp_path):
    clock, inner = Clock(), Recorder()
    pub = Publisher(tmp_path, inner, "quick", None, clock=clock)
    locks = RunLocks(tmp_path)
    locks.claim(7)  # as the store holds a run it runs
    specs = [spec("4k-a"), spec("8k-b")]
    pub.run_started(7, specs, 6.0)
    pub.test_started(0, specs[0])
    assert inner.calls == [("test_started", 0)], "the run's own observer still gets every event"
    live = SimpleNamespace(elapsed_s=0.5, hosts=None, rounds=None, iops=1000.0, bw_bytes_s=4e6, lat_mean_ns=2e6)
    pub.test_live(0, specs[0], live)  # within a second of the last write: not written yet
    body = read_published(tmp_path)
    assert [e["type"] for e in body["events"]] == ["run", "test"]
    clock.now = 1.5
    pub.test_live(0, specs[0], live)
    body = read_published(tmp_path)
    assert [e["type"] for e in body["events"]] == ["run", "test", "live", "live"]
    assert body["status"]["run_id"] == 7 and body["status"]["state"] == "running"
    assert body["status"]["test_id"] == "4k-a" and body["status"]["fleet"]["iops"] == 1000.0
    assert held_runs(tmp_path) == {7: body["pid"]}
    pub.ended("interrupted")
    locks.release(7)
    body = read_published(tmp_path)
    assert body["status"]["state"] == "ended" and body["status"]["status"] == "interrupted"
    assert body["events"][-1]["type"] == "ended" and body["status"]["error"] is None
    assert held_runs(tmp_path) == {}


def test_a_run_whose_process_died_reads_as_ended_with_the_resume_command(tmp_path):
    pub = Publisher(tmp_path, None, "quick", None, clock=Clock())
    pub.run_started(3, [spec("4k-a")], 3.0)  # nobody holds run 3: its process is gone (kill -9)
    status = read_published(tmp_path)["status"]
    assert status["state"] == "ended" and status["eta_s"] is None
    assert status["error"].endswith("ended early; `iofleet run --resume 3` finishes it")


def test_no_file_or_a_damaged_one_reads_as_none(tmp_path):
    assert read_published(tmp_path) is None
    live_path(tmp_path).parent.mkdir()
    live_path(tmp_path).write_text("{not json")
    assert read_published(tmp_path) is None
    live_path(tmp_path).write_text(json.dumps({"pid": 1}))
    assert read_published(tmp_path) is None


def test_runs_at_once_on_one_store_keep_their_files_and_the_going_one_is_shown(tmp_path):
    """Two runs at once on one store (on other targets): one file each; the
    web shows the going run, else the newest; a new run clears the ended files."""
    locks = RunLocks(tmp_path)
    clock = Clock()
    going = Publisher(tmp_path, None, "long", None, clock=clock)
    locks.claim(7)
    going.run_started(7, [spec("4k-a")], 60.0)
    other = Publisher(tmp_path, None, "short", None, clock=clock)
    other.path = live_path(tmp_path, pid=999_999)  # as another process would
    locks.claim(8)
    other.run_started(8, [spec("8k-b")], 3.0)
    other.ended("complete")
    locks.release(8)
    assert {p.name for p in (tmp_path / "live").iterdir()} == {going.path.name, "run-999999.json"}
    assert read_published(tmp_path)["status"]["run_id"] == 7  # the going run, though the other wrote last
    going.ended("complete")
    locks.release(7)
    assert read_published(tmp_path)["status"]["run_id"] == 7  # both ended: the newest
    third = Publisher(tmp_path, None, "next", None, clock=clock)
    third.path = live_path(tmp_path, pid=999_998)
    locks.claim(9)
    third.run_started(9, [spec("4k-c")], 3.0)
    assert [p.name for p in (tmp_path / "live").iterdir()] == ["run-999998.json"]
    assert read_published(tmp_path)["status"]["run_id"] == 9


def test_followers_read_the_one_model_already_updated(tmp_path):
    seen = []

    class Follower(RunObserver):
        def watch(self, progress):
            self.model = progress

        def test_started(self, index, spec):
            seen.append((self.model.test.id, self.model.phase))

    follower = Follower()
    pub = Publisher(tmp_path, follower, "quick", None, clock=Clock())
    assert follower.model is pub.progress
    pub.run_started(7, [spec("4k-a")], 3.0)
    pub.test_started(0, spec("4k-a"))
    assert seen == [("4k-a", "starting")]
    assert pub.snapshot() == pub.progress.snapshot() and pub.snapshot()["test_id"] == "4k-a"


def test_a_held_run_ends_when_its_holder_says_and_its_file_says_so_before_the_lock_goes(tmp_path):
    """The web holds its run: its page shows the run going until the web
    closes it, with the error that ended it; the live file says ended as soon
    as the session knows, since the run lock that proves it going goes next."""
    locks = RunLocks(tmp_path)
    locks.claim(5)
    pub = Publisher(tmp_path, None, "quick", None, clock=Clock(), held=True, first_id=40)
    pub.run_started(5, [spec("4k-a")], 3.0)
    pub.stopping()
    pub.ended("interrupted")  # the session, before the run lock is let go
    locks.release(5)
    body = read_published(tmp_path)
    assert body["status"]["state"] == "ended" and body["status"]["status"] == "interrupted"
    assert body["status"]["error"] is None and body["events"][-1]["type"] == "ended"
    assert pub.snapshot()["state"] == "stopping"
    assert [(e["id"], e["type"]) for e in pub.events_after(0)] == [(40, "run"), (41, "stopping")]
    pub.close("failed", "no space left on /mnt/a")
    (last,) = pub.events_after(41)
    assert last["type"] == "ended" and last["data"]["status"] == "failed"
    assert last["data"]["error"] == "no space left on /mnt/a" and read_published(tmp_path)["events"][-1] == last
    pub.stopping()  # asked as it ended: it stays ended
    assert pub.snapshot()["state"] == "ended" and pub.next_id == 43
