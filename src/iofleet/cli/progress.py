"""Live progress of a run in the terminal (rich): test i of N, elapsed and
ETA for the test and the plan, current IOPS, MB/s and latency."""

import time

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from ..plan.units import format_bytes
from ..studies.run import RunObserver, TestOutcome


def fmt_lat_ms(ns) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


MAX_HOST_LINES = 12


def host_lines(hosts: dict) -> str:
    """One line per fleet host from its node_exporter: disk IOPS, CPU and
    network; fio's client reports no per-host figures until the test ends."""
    lines = []
    for name, s in list(hosts.items())[:MAX_HOST_LINES]:
        if s is None:
            lines.append(f"    {name:<16} n/a (no metrics endpoint yet)")
            continue
        iops = "n/a" if s.disk_iops is None else f"{s.disk_iops:,.0f}"
        cpu = "n/a" if s.cpu_pct is None else f"{s.cpu_pct:.0f}%"
        net = "n/a" if s.net_rx_bytes_s is None else f"{(s.net_rx_bytes_s + (s.net_tx_bytes_s or 0)) / 1e6:,.1f}"
        lines.append(f"    {name:<16} disk {iops:>9} IOPS  CPU {cpu:>4}  net {net} MB/s")
    if len(hosts) > MAX_HOST_LINES:
        lines.append(f"    … and {len(hosts) - MAX_HOST_LINES} more hosts")
    return "\n".join(lines)


class TerminalProgress(RunObserver):
    def __init__(self, console: Console, sweep: bool = False):
        self.console = console
        # A sweep (saturate) stops when it has its answer: its planned tests are an upper bound.
        self.sweep = sweep
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self.live_text = Text("")
        self.live = Live(Group(self.progress, self.live_text), console=console,
                         refresh_per_second=4, transient=True)
        self.plan_task = self.test_task = None
        self._done_s = 0.0
        self._test_start = 0.0

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc):
        self.live.__exit__(*exc)

    def run_started(self, run_id, specs, estimate_s):
        # A sweep runs part of its grid, and repeats some cells: no total to count to.
        self.count = None if self.sweep else len(specs)
        bound = "at most" if self.sweep or any(s.longest_s != s.runtime for s in specs) else "about"  # until: steady
        self.console.print(f"Run {run_id}: {'at most ' if self.sweep else ''}{len(specs)} tests, "
                           f"{bound} {estimate_s:.0f} s")
        self.plan_task = self.progress.add_task("plan", total=estimate_s)

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        if self.test_task is None:
            self.test_task = self.progress.add_task("preparing data", total=total_bytes)
        if done_bytes is not None:
            self.progress.update(self.test_task, completed=done_bytes)
            self.live_text.plain = (f"  preparing data: {format_bytes(done_bytes)} of {format_bytes(total_bytes)} "
                                    f"written, {done_bytes / max(elapsed_s, 0.1) / 1e6:,.0f} MB/s")
        else:  # fleet: fio's client says nothing until the end
            self.live_text.plain = (f"  preparing data on {len(hosts or {})} hosts: {format_bytes(total_bytes)} "
                                    f"in all, {elapsed_s:.0f} s so far\n" + host_lines(hosts or {}))

    def test_started(self, index, spec):
        if self.test_task is not None:
            self.progress.remove_task(self.test_task)
        self._test_start = time.monotonic()
        self._duration = spec.ramp + spec.longest_s
        self.test_task = self.progress.add_task(
            f"test {self._nth(index)} {spec.id}", total=self._duration)
        self.live_text.plain = "  starting"

    def test_phase(self, index, spec, phase):
        self.live_text.plain = f"  {phase}"
        self._tick()

    def _tick(self):
        elapsed = time.monotonic() - self._test_start
        self.progress.update(self.test_task, completed=min(elapsed, self._duration))
        self.progress.update(self.plan_task, completed=self._done_s + min(elapsed, self._duration))
        return elapsed

    def test_live(self, index, spec, live):
        elapsed = self._tick()
        phase = "warm-up" if elapsed < spec.ramp else "measuring"
        if live.hosts is not None:
            self.live_text.plain = f"  {phase} on {len(live.hosts)} hosts\n" + host_lines(live.hosts)
            return
        self.live_text.plain = (
            f"  {phase}: {live.iops:,.0f} IOPS  {live.bw_bytes_s / 1e6:,.1f} MB/s  "
            f"mean latency {fmt_lat_ms(live.lat_mean_ns)} ms"
        )

    def _nth(self, index: int) -> str:
        return f"{index + 1}" if self.count is None else f"{index + 1}/{self.count}"

    def test_finished(self, index, spec, result: TestOutcome):
        self._done_s += spec.ramp + spec.longest_s + 2
        self.progress.update(self.plan_task, completed=self._done_s)
        if result.status in ("ok", "partial") and result.aggregate:
            a = result.aggregate.all
            iops, mb_s, p99_ns = a.iops, a.bw_bytes_s / 1e6, a.percentiles_ns.get("p99")
            span = ""
            w = result.window
            if w and "all" in w:  # until: steady: the row's figures are its window's
                iops, mb_s = w["all"]["iops"], w["all"]["bw_mb_s"]
                p99_ns = None if w["all"]["lat_p99_us"] is None else w["all"]["lat_p99_us"] * 1000
                state = "steady" if w["steady"] else "not steady"
                ended = (f", ended early at {result.ended_early_s:.1f} s of ≤{spec.longest_s} s"
                         if result.ended_early_s else "")
                span = f" (window {w['start_s']:.1f}–{w['end_s']:.1f} s, {state}{ended})"
            mark = "[green]ok[/]     " if result.status == "ok" else "[yellow]partial[/]"
            line = (f"{mark} {self._nth(index)} {spec.id}: {iops:,.0f} IOPS, "
                    f"{mb_s:,.1f} MB/s, p99 {fmt_lat_ms(p99_ns)} ms{span}"
                    + (f" ({result.error})" if result.error else ""))
        else:
            colour = "yellow" if result.status == "interrupted" else "red"
            line = f"[{colour}]{result.status}[/] {self._nth(index)} {spec.id}: {result.error}"
        self.console.print(line, highlight=False)
