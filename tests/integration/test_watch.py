"""The watch's sampler on this host (studies/watch.py) with real commands:
on the measured part's clock, following what the command prints, one run
at a time (a slow one ended with its children before the next), and
stopped at once with a run under way."""

import subprocess
import time

from iofleet.plan.scenario import Watch
from iofleet.studies.watch import Watcher

from ..cli import wait_for


def _clock(delay_s: float = 0.3):
    """Seconds into a measured part beginning `delay_s` from now."""
    t0 = time.monotonic() + delay_s
    return lambda: time.monotonic() - t0


def _running(marker: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", f"^{marker}$"], capture_output=True, text=True).stdout.split()


def test_a_local_watch_follows_what_its_command_prints_on_the_measured_parts_clock(tmp_path):
    state = tmp_path / "state"
    state.write_text("ok\n")
    w = Watcher(Watch(command=f"cat {state}"), None, _clock())
    try:
        wait_for(lambda: len(w.samples) >= 2, timeout=20, what="two samples")
        state.write_text("degraded\nsince now\n")
        wait_for(lambda: w.samples[-1].state == "degraded", timeout=20, what="the new state")
    finally:
        w.stop()
    states = [s.state for s in w.samples]
    k = states.index("degraded")
    assert k >= 2 and set(states[:k]) == {"ok"} and set(states[k:]) == {"degraded"}
    assert w.samples[k].output == "degraded\nsince now" and w.samples[k].exit == 0
    # Sample k runs at tick k (k s into the measured part) or later, never before.
    assert all(s.t_s >= i * 1.0 for i, s in enumerate(w.samples))
    assert w.timeout_s == 0.9
    n = len(w.samples)
    time.sleep(1.5)
    assert len(w.samples) == n  # stopped
    record = w.record(0.5, [{"index": 0, "at_s": w.samples[k].t_s - 0.6, "end_s": None}])
    assert [s.t_s for s in record.samples] == [round(s.t_s - 0.5, 2) for s in w.samples]
    (a,) = record.events
    assert (a.before, a.changed_to, a.back_s) == ("ok", "degraded", None)
    assert (record.command, record.host, record.every_s) == (f"cat {state}", None, 1)


def test_a_slow_command_is_ended_with_its_children_and_runs_never_pile_up(tmp_path):
    marker = "sleep 30.5123"
    w = Watcher(Watch(command=f"sh -c '{marker}'; echo done"), None, _clock(0))
    alive = []
    try:
        while len(w.samples) < 2:
            alive.append(len(_running(marker)))
            time.sleep(0.1)
    finally:
        w.stop()
    assert max(alive) == 1  # one run at a time
    assert {s.state for s in w.samples} == {"no answer: not done in 0.9 s"}
    assert {s.exit for s in w.samples} == {None}
    assert _running(marker) == []  # the shell's child killed too


def test_stop_ends_a_run_under_way_and_keeps_no_sample_of_it():
    marker = "sleep 20.4321"
    w = Watcher(Watch(command=f"sh -c '{marker}'", every=60), None, _clock(0))
    wait_for(lambda: _running(marker), timeout=20, what="the first run")
    w.stop()
    assert _running(marker) == [] and w.samples == []


def test_a_failing_command_is_a_sample_with_its_exit_status():
    w = Watcher(Watch(command="echo 'no cluster here' >&2; exit 3"), None, _clock(0))
    try:
        wait_for(lambda: w.samples, timeout=20, what="a sample")
    finally:
        w.stop()
    s = w.samples[0]
    assert (s.exit, s.output, s.state) == (3, "", "exit 3: no cluster here")


def test_a_chatty_command_is_read_to_its_end_and_kept_in_part():
    # 20 MB on one line, then an exit status of its own: read through, its first bytes kept.
    w = Watcher(Watch(command="head -c 20000000 /dev/zero | tr '\\0' x; echo; exit 4", every=5), None, _clock(0))
    try:
        wait_for(lambda: w.samples, timeout=30, what="a sample")
    finally:
        w.stop()
    s = w.samples[0]
    assert s.exit == 4 and s.output == "x" * 4096
    assert s.state == "exit 4: " + "x" * 191 + "…"
