"""The thresholds of the diagnostics rules: one field each, with its
default, meaning and allowed range (docs/diagnostics.md)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from ...errors import IofleetError
from ..little import LITTLE_TOLERANCE
from ..stragglers import STRAGGLER_SHARE


def _threshold(default, doc: str, low: float = 0, high: float | None = None):
    return field(default=default, metadata={"doc": doc, "low": low, "high": high})


@dataclass(frozen=True)
class Thresholds:
    """Every threshold a rule uses, with its default (docs/diagnostics.md)."""

    oio_gain_pct: float = _threshold(
        10.0, "outstanding_io_low: the sweep's last step still gained at least this much IOPS, %")
    oio_latency_vs_gain: float = _threshold(
        1.0, "outstanding_io_low: ... while mean latency rose at most this many times as much (in %) as IOPS")
    disk_util_low_pct: float = _threshold(
        50.0, "outstanding_io_low (single test): a device busier than this, %, is not idle enough to say", high=100)
    low_oio_per_host: int = _threshold(
        8, "outstanding_io_low (single test): judged only at up to this many outstanding IOs per host", low=1)
    deep_iodepth: int = _threshold(
        32, "advice: from this iodepth per job on, add jobs rather than depth", low=1)
    knee_gain_pct: float = _threshold(5.0, "past_knee: a step up in outstanding IO gained less IOPS than this, %")
    knee_latency_rise_pct: float = _threshold(25.0, "past_knee: ... while mean latency rose at least this much, %")
    read_latency_ms: float = _threshold(15.0, "latency_limit: highest acceptable mean read latency, ms")
    write_latency_ms: float = _threshold(20.0, "latency_limit: highest acceptable mean write latency, ms")
    p95_over_mean: float = _threshold(3.0, "unpredictable_latency: p95 above this many times the mean", low=1)
    host_cpu_pct: float = _threshold(90.0, "client_bound: a host's mean CPU above this, % of all its CPUs", high=100)
    job_cpu_pct: float = _threshold(90.0, "client_bound: fio's CPU per job (user + system) from this, % of one CPU",
                                    high=100)
    storage_cpu_pct: float = _threshold(
        50.0, "storage_cpu: a host over host_cpu_pct whose storage daemons used at least this share of its busy "
              "CPU, %", high=100)
    little_tolerance_pct: float = _threshold(
        LITTLE_TOLERANCE * 100, "client_bound: IOPS × mean latency may differ this much from the outstanding IO, %")
    nic_pct: float = _threshold(90.0, "network_bound: a host's MB/s from this share of its nic_gbps, %", high=100)
    straggler_pct: float = _threshold(
        STRAGGLER_SHARE * 100, "host_imbalance: a host below this share of the median host's IOPS, %", high=100)
    tail_ios: int = _threshold(100, "runtime_too_short: IOs needed beyond a percentile to trust it", low=1)

    def with_overrides(self, items: list[str]) -> Thresholds:
        """A copy with `NAME=VALUE` items applied (`read_latency_ms=10`)."""
        known = {f.name: f for f in fields(self)}
        changes = {}
        for item in items:
            name, sep, text = item.partition("=")
            name, text = name.strip(), text.strip()
            if not sep or not name:
                raise IofleetError(f"threshold {item!r}: write NAME=VALUE, e.g. read_latency_ms=10")
            if name not in known:
                raise IofleetError(f"unknown threshold {name!r}; known: {', '.join(known)}")
            meta = known[name].metadata
            whole = isinstance(known[name].default, int)
            allowed = (f"{'a whole number' if whole else 'a number'} from {meta['low']:g}"
                       + (f" to {meta['high']:g}" if meta["high"] is not None else ""))
            try:
                value = int(text) if whole else float(text)
            except ValueError:
                raise IofleetError(f"threshold {name}: {text!r} is not a number; allowed: {allowed}") from None
            if not math.isfinite(value) or value < meta["low"] or (meta["high"] is not None and value > meta["high"]):
                raise IofleetError(f"threshold {name}: {text} is out of range; allowed: {allowed}")
            changes[name] = value
        return Thresholds(**(asdict(self) | changes))
