"""Diagnostics: rules over a stored run that say what limited or spoiled a
measurement, with the numbers that show it and what to change in the plan
or the set-up (like vSAN's Performance Diagnostics for HCIBench).

The input is a stored run (`results.model.Run`; a recorded run's JSON file
reads back with `Run.from_dict`). Every rule is one row of `RULES`, every
threshold one field of `Thresholds`; docs/diagnostics.md shows each with a
real finding. Only tests with status ok or partial, and with IO, are judged.

Severities: critical = the figures do not measure what the plan asks (a
cache or RAM instead of the storage, never-written data, the client instead of the
storage); warning = the figures are weak, or the set-up limits them;
info = a better operating point exists.

The rules live by what they look at: `latency` (outstanding IO, the knee,
latency limits and spread), `hosts` (the client's CPU, storage daemons
taking it on a hyperconverged host, its network, hosts that lag), `method`
(steady state, prepared data, working set vs cache, runtime), `targets` (a target in RAM). This module runs them and gathers their findings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Iterator

from ...results.aggregate import shared_by_host
from ...results.model import Run
from . import hosts, latency, method, targets
from .context import Hit, JudgedRun
from .thresholds import Thresholds

__all__ = ["RULES", "SEVERITIES", "Finding", "Rule", "Thresholds", "diagnose"]

SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    test: str | None     # test id, with " #N" when the id repeats in the run; None when run-wide
    host: str | None
    evidence: str        # the numbers that triggered it, with units
    change: str          # what to change, phrased for the user

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    name: str
    title: str
    severity: str
    threshold: str  # when it fires; {names} are Thresholds fields
    check: Callable[[JudgedRun, Thresholds], Iterator[Hit]]

    def describe(self, th: Thresholds | None = None) -> str:
        return self.threshold.format(**asdict(th or Thresholds()))


RULES: tuple[Rule, ...] = (
    Rule("ram_target", "target in RAM", "critical",
         "a target is on tmpfs or ramfs, or on a zram or RAM disk (or a loop device over a file there)",
         targets.ram_target),
    Rule("outstanding_io_low", "outstanding IO too low", "warning",
         "the sweep's last step up in outstanding IO gained ≥ {oio_gain_pct:g} % IOPS while mean latency rose "
         "≤ {oio_latency_vs_gain:g} × as much; or, a lone test: its device busy < {disk_util_low_pct:g} % at "
         "≤ {low_oio_per_host} outstanding IO per host", latency.outstanding_io_low),
    Rule("past_knee", "past the knee", "info",
         "a step up in outstanding IO gained < {knee_gain_pct:g} % IOPS while mean latency rose "
         "≥ {knee_latency_rise_pct:g} %", latency.past_knee),
    Rule("latency_limit", "latency over the limit", "warning",
         "mean read latency > {read_latency_ms:g} ms or mean write latency > {write_latency_ms:g} ms",
         latency.latency_limit),
    Rule("unpredictable_latency", "unpredictable latency", "warning",
         "p95 > {p95_over_mean:g} × the mean latency (reads or writes)", latency.unpredictable_latency),
    Rule("not_steady", "not steady", "warning",
         "an until: steady test's SNIA verdict on its IOPS is not steady (n/a verdicts, fixed-time tests and "
         "scenarios are skipped)", method.not_steady),
    Rule("client_bound", "client-bound", "critical",
         "a host's mean CPU > {host_cpu_pct:g} %, fio's CPU per job ≥ {job_cpu_pct:g} % of a CPU, or IOPS × mean "
         "latency more than {little_tolerance_pct:g} % off the outstanding IO (Little's law); not when storage "
         "daemons used the host's CPU (storage_cpu)", hosts.client_bound),
    Rule("storage_cpu", "storage daemons beside fio", "warning",
         "a host's mean CPU > {host_cpu_pct:g} %, ≥ {storage_cpu_pct:g} % of it used by storage daemons and "
         "clients on that host (ceph-osd, ceph-fuse, glusterfsd, nfsd, ...: a hyperconverged host)",
         hosts.storage_cpu),
    Rule("network_bound", "network-bound", "warning",
         "a fleet host's MB/s ≥ {nic_pct:g} % of its inventory nic_gbps × 125 MB/s", hosts.network_bound),
    Rule("host_imbalance", "host imbalance", "warning",
         "a host's IOPS < {straggler_pct:g} % of the median host's running the same workload", hosts.host_imbalance),
    Rule("unprepared_reads", "unprepared reads", "critical",
         "the run has prepare: none and the test reads", method.unprepared_reads),
    Rule("working_set_cache", "working set vs cache", "critical",
         "measure: capacity and the working set fits in the cache (a cache test), or measure: cache and it "
         "does not", method.working_set_cache),
    Rule("runtime_too_short", "runtime too short", "warning",
         "fewer than {tail_ios} reads or writes beyond the run's percentile or p99", method.runtime_too_short),
)


def diagnose(run: Run, thresholds: Thresholds | None = None) -> list[Finding]:
    """Findings over a run, in run order of tests, then rule order."""
    th = thresholds or Thresholds()
    found = []
    with shared_by_host():  # several rules ask for a test's hosts: each a merge of its jobs' histograms
        ctx = JudgedRun(run)
        for order, rule in enumerate(RULES):
            for n, hit in enumerate(rule.check(ctx, th)):
                found.append(((hit.index, order, n), Finding(rule.name, rule.severity, hit.test, hit.host,
                                                             hit.evidence, hit.change)))
    return [f for _, f in sorted(found, key=lambda x: x[0])]
