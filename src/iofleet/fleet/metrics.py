"""Host metrics measured during a test."""

from dataclasses import dataclass


@dataclass
class HostCpu:
    """Host CPU utilization sampled from /proc/stat during the measured part."""

    samples: int
    avg_pct: float | None
    max_pct: float | None
