"""The report's sections that draw charts, in one registry: each section
module declares its own builder (its charts as JSON, with the rows and
lines beside them; None when the run has no such section), and the HTML
report and the web UI's result page walk this list. A new chart joins its
section's builder, or a new section joins here; a study whose record is
its own (studies/kinds/) adds its section in own_sections.py, drawn by the
report's block for such sections."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..fio.records import Series
from ..results.model import Run
from . import charts, curve, network, saturation, scenario
from .own_sections import OWN_SECTIONS


@dataclass(frozen=True)
class ChartSection:
    name: str  # its key in report.html.j2's context
    build: Callable[[Run, Mapping[int, list[Series]]], object]


SECTIONS: tuple[ChartSection, ...] = (
    ChartSection("sweep", saturation.sweep_section),  # a saturate run: IOPS and p99 by outstanding IO
    ChartSection("scenario", scenario.scenario_section),  # a scenario run: events on the time axis
    ChartSection("curve", curve.curve_section),  # a curve run: latency against load
    ChartSection("network", network.network_section),  # a network check; a fleet run's last one
    ChartSection("overview", charts.overview_section),  # every run: by block size, latency per test
    ChartSection("tests", charts.tests_section),  # each test: per second, per round, per host, percentiles
)


def built_sections(run: Run, series: Mapping[int, list[Series]]) -> dict:
    """Each section built, by name, and the studies' own (`own_sections`: those the run has)."""
    own = (build(run, series) for build in OWN_SECTIONS.values())
    return {s.name: s.build(run, series) for s in SECTIONS} | {"own_sections": [s for s in own if s]}
