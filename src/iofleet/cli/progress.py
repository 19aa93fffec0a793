"""Live progress of a run in the terminal (rich): test i of N, elapsed and
ETA for the test and the plan, current IOPS, MB/s and latency. All of it is
read from the run's one progress model (studies.progress), which the run's
publisher keeps up to date and gives to the observers that follow the run
(`watch`); this module only draws it."""

import os
import threading

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn
from rich.text import Text

from ..errors import IofleetError
from ..plan.units import format_bytes
from ..studies.events import RunObserver
from ..studies.progress import FinishedTest, HostFigures, RunProgress
from ..units import format_value


MAX_HOST_LINES = 12
# Piped output (a nohup log) has no live display: a line this often during a
# test says it is alive and what is left. IOFLEET_PROGRESS_EVERY (seconds) changes it.
PIPE_PROGRESS_S = 10.0
PROGRESS_EVERY_ENV = "IOFLEET_PROGRESS_EVERY"


def pipe_interval() -> float:
    """Seconds between progress lines in piped output."""
    text = os.environ.get(PROGRESS_EVERY_ENV)
    if text is None:
        return PIPE_PROGRESS_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < 1e6:
        raise IofleetError(f"{PROGRESS_EVERY_ENV}={text!r}: give the seconds between progress lines of piped "
                           f"output, e.g. 30")
    return seconds


def pipe_line(m: RunProgress, nth: str) -> str | None:
    """A running test's progress line for piped output: its name, elapsed of
    planned time, phase, latest IOPS and the plan's time left; None between tests."""
    if m.state == "preparing" and m.preparing_data is not None:
        p = m.preparing_data
        done = f"{format_bytes(p.done_bytes)} of " if p.done_bytes is not None else ""
        return f"  preparing data: {done}{format_bytes(p.total_bytes)}, {_hms(p.elapsed_s)} so far{_rate(p)}"
    t = m.test
    if t is None or m.running_test is None:
        return None
    now = m.clock()
    iops = m.totals.iops if m.totals is not None else None
    latest = f"{format_value(iops, 'IOPS')} IOPS" if iops is not None else "no IOPS reported yet"
    eta = m.eta_s(now)
    left = "" if eta is None else f"; the plan: {'at most ' if m.estimate_is_bound else ''}{_hms(eta)} left"
    return f"  test {nth} {t.id}: {m.phase}, {_hms(t.elapsed_s(now))} of {_hms(t.planned_s)}, {latest}{left}"


def _rate(p) -> str:
    """How fast preparation writes, and the time left at that rate (this
    host: fio's figures; a fleet's client gives none until the end)."""
    if p.mb_s is None:
        return ""
    return f", {format_value(p.mb_s, 'MB/s')} MB/s" + (f", {_hms(p.eta_s)} left" if p.eta_s is not None else "")


def host_lines(hosts: dict[str, HostFigures | None]) -> str:
    """One line per fleet host (at most MAX_HOST_LINES, within 80 columns):
    fio's IOPS, MB/s, mean and p99 latency of its last round when known,
    else its disks' IOPS from its node_exporter; CPU from node_exporter."""
    lines = []
    for name, h in list(hosts.items())[:MAX_HOST_LINES]:
        name = name if len(name) <= 16 else name[:15] + "…"
        if h is None:
            lines.append(f"    {name:<16} waiting for its first round (no metrics endpoint)")
            continue
        cpu = "n/a" if h.cpu_pct is None else f"{h.cpu_pct:.0f}%"
        if h.iops is not None:
            lat = f"{format_value(h.lat_ms, 'ms')}/{format_value(h.p99_ms, 'ms')} ms"
            lines.append(f"    {name:<16} {format_value(h.iops, 'IOPS'):>9} IOPS {format_value(h.mb_s, 'MB/s'):>8} "
                         f"MB/s  {lat:<15} CPU {cpu:>4}")
        else:
            lines.append(f"    {name:<16} disk {format_value(h.disk_iops, 'IOPS'):>9} IOPS  CPU {cpu:>4}  "
                         f"net {format_value(h.net_mb_s, 'MB/s')} MB/s")
    if len(hosts) > MAX_HOST_LINES:
        lines.append(f"    … and {len(hosts) - MAX_HOST_LINES} more hosts")
    return "\n".join(lines)


def _hms(seconds: float | None) -> str:
    """As rich's own time columns write it."""
    if seconds is None:
        return "-:--:--"
    minutes, secs = divmod(max(0, int(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"


class ClockColumn(ProgressColumn):
    """A bar's elapsed time or ETA, read from the progress model each time
    the display is drawn (so it ticks between events)."""

    def __init__(self, model: RunProgress | None, which: str):
        super().__init__()
        self.model, self.which = model, which  # the model: once the run gives it (TerminalProgress.watch)

    def render(self, task) -> Text:
        elapsed, eta = self.times(task.fields.get("part"))
        if self.which == "elapsed":
            return Text(_hms(elapsed), style="progress.elapsed")
        return Text(_hms(eta), style="progress.remaining")

    def times(self, part: str | None) -> tuple[float | None, float | None]:
        m = self.model
        if m is None:
            return None, None
        now = m.clock()
        if part == "run":
            return m.elapsed_s(now), m.eta_s(now)
        if part == "test" and m.test is not None:
            return m.test.elapsed_s(now), m.test.eta_s(now)
        if part == "preparing" and m.preparing_data is not None:
            return m.preparing_data.elapsed_s, m.preparing_data.eta_s
        return None, None


def live_text(m: RunProgress) -> str:
    """The lines under the bars: what the run is doing and its live figures."""
    p = m.preparing_data
    if m.state == "preparing" and p is not None:
        if p.done_bytes is not None:
            return f"  preparing data: {format_bytes(p.done_bytes)} of {format_bytes(p.total_bytes)} written{_rate(p)}"
        # fleet: fio's client says nothing until the end
        return (f"  preparing data on {len(p.hosts)} hosts: {format_bytes(p.total_bytes)} "
                f"in all, {p.elapsed_s:.0f} s so far\n" + host_lines(p.hosts))
    t = m.totals
    if t is None or m.phase not in ("warm-up", "measuring"):
        return f"  {m.phase}"
    if t.source == "node_exporter":
        return f"  {m.phase} on {len(m.hosts)} hosts (disk IOPS until the first round)\n" + host_lines(m.hosts)
    line = f"  {m.phase}: {format_value(t.iops, 'IOPS')} IOPS  {format_value(t.mb_s, 'MB/s')} MB/s  "
    if len(m.hosts) > 1 or "local" not in m.hosts:  # a fleet: its last whole round, then each host's
        return (f"{line}mean {format_value(t.lat_ms, 'ms', with_unit=True)} (last round, {len(m.hosts)} hosts)\n"
                f"    each host's last round: IOPS, MB/s, mean/p99 latency; CPU (node_exporter)\n"
                + host_lines(m.hosts))
    return f"{line}mean latency {format_value(t.lat_ms, 'ms', with_unit=True)}"


def result_line(r: FinishedTest, nth: str) -> str:
    """A finished test's line (rich markup): its headline figures or why it has none."""
    if r.status in ("ok", "partial") and r.iops is not None:
        span = ""
        w = r.window
        if w:  # until: steady: the row's figures are its window's
            state = "steady" if w["steady"] else "not steady"
            ended = (f", ended early at {r.ended_early_s:.1f} s of ≤{r.longest_s} s"
                     if r.ended_early_s else "")
            span = f" (window {w['start_s']:.1f}–{w['end_s']:.1f} s, {state}{ended})"
        mark = "[green]ok[/]     " if r.status == "ok" else "[yellow]partial[/]"
        return (f"{mark} {nth} {r.id}: {format_value(r.iops, 'IOPS')} IOPS, {format_value(r.mb_s, 'MB/s')} "
                f"MB/s, p99 {format_value(r.p99_ms, 'ms', with_unit=True)}{span}"
                + (f" ({r.error})" if r.error else ""))
    colour = "yellow" if r.status == "interrupted" else "red"
    return f"[{colour}]{r.status}[/] {nth} {r.id}: {r.error}"


class TerminalProgress(RunObserver):
    """Draws the run's progress model, given by the run's publisher (`watch`),
    at each of its events: the publisher has updated the model by then."""

    def __init__(self, console: Console, every_s: float | None = None):
        self.console = console
        self.model: RunProgress | None = None
        # Piped: a line every `every_s` seconds from a thread (a test may send no event for long).
        self.every_s = None if console.is_terminal else every_s or pipe_interval()
        self.stopped = threading.Event()
        self.ticker = None
        self.clocks = ClockColumn(None, "elapsed"), ClockColumn(None, "eta")
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            self.clocks[0],
            TextColumn("ETA"),
            self.clocks[1],
            console=console,
        )
        self.live_text = Text("")
        self.live = Live(Group(self.progress, self.live_text), console=console,
                         refresh_per_second=4, transient=True)
        self.plan_task = self.test_task = None

    def watch(self, progress: RunProgress) -> None:
        self.model = progress
        for column in self.clocks:
            column.model = progress

    def __enter__(self):
        self.live.__enter__()
        if self.every_s:
            self.ticker = threading.Thread(target=self._tick, name="pipe-progress", daemon=True)
            self.ticker.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        if self.ticker is not None:
            self.ticker.join()
        self.live.__exit__(*exc)

    def _tick(self):
        while not self.stopped.wait(self.every_s):
            m = self.model
            if m is None:
                continue
            line = pipe_line(m, self._nth(m.test.index if m.test is not None else 0))
            if line:
                self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def _nth(self, index: int) -> str:
        # A sweep runs part of its grid, and repeats some cells: no total to count to.
        return f"{index + 1}" if self.model.sweep else f"{index + 1}/{self.model.tests_planned}"

    def _draw(self):
        m = self.model
        if m.running_test is not None:
            self.progress.update(self.test_task, completed=m.running_test.done_s(m.clock()))
        self.progress.update(self.plan_task, completed=m.run_done_s())
        self.live_text.plain = live_text(m)

    def run_started(self, run_id, specs, estimate_s):
        m = self.model
        bound = "at most" if m.estimate_is_bound else "about"
        self.console.print(f"Run {run_id}: {'at most ' if m.sweep else ''}{m.tests_planned} tests, "
                           f"{bound} {m.estimate_s:.0f} s")
        self.plan_task = self.progress.add_task("plan", total=m.estimate_s, part="run")

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        if self.test_task is None:
            self.test_task = self.progress.add_task("preparing data", total=total_bytes, part="preparing")
        if done_bytes is not None:
            self.progress.update(self.test_task, completed=done_bytes)
        self.live_text.plain = live_text(self.model)

    def test_started(self, index, spec):
        if self.test_task is not None:
            self.progress.remove_task(self.test_task)
        self.test_task = self.progress.add_task(f"test {self._nth(index)} {spec.id}",
                                                total=self.model.test.planned_s, part="test")
        self.live_text.plain = live_text(self.model)

    def test_phase(self, index, spec, phase):
        self._draw()

    def test_live(self, index, spec, live):
        self._draw()

    def test_finished(self, index, spec, result):
        m = self.model
        self.progress.update(self.plan_task, completed=m.run_done_s())
        self.console.print(result_line(m.results[-1], self._nth(index)), highlight=False)

    def warning(self, text):
        self.console.print(f"warning: {text}", style="yellow", highlight=False, markup=False)

    def cleaning(self):
        self.live_text.plain = live_text(self.model)


# The progress of studies made of many runs (`curve`, `saturate`, `scale`): here
# beside TerminalProgress, so that their command modules import no study until they run.
class EachRunProgress(RunObserver):
    """A fresh progress display for each run of the study (the sweep, then
    the curve), closed when the next starts or the study ends."""

    def __init__(self, console: Console):
        self.console = console
        self.bar: TerminalProgress | None = None
        self.model = None  # the next run's (watch), drawn once it starts

    def watch(self, progress):
        self.model = progress

    def run_started(self, run_id, specs, estimate_s):
        self.close()
        self.bar = TerminalProgress(self.console).__enter__()
        self.bar.watch(self.model)
        self.bar.run_started(run_id, specs, estimate_s)

    def _forward(name):  # builds the forwarding methods below (not a method itself)
        def method(self, *args):
            if self.bar:
                getattr(self.bar, name)(*args)
        return method

    preparing, test_started, test_phase, test_live, test_finished, warning, cleaning = map(_forward, (
        "preparing", "test_started", "test_phase", "test_live", "test_finished", "warning", "cleaning"))

    def close(self):
        if self.bar:
            self.bar.__exit__(None, None, None)
            self.bar = None


class StepProgress(EachRunProgress):
    """A fresh progress display for each step of a study (one test per run)."""

    def warning(self, text):  # a step's display has never said these (kept as it was)
        pass

    def cleaning(self):
        pass

    def test_finished(self, index, spec, result):
        self.close()  # the step's own line says how it went
