"""A study's own report section (a study whose record is its own,
studies/kinds/): it adds its builder here (`add_section`), light to import,
and the report (sections.py) draws what it builds, a `StudySection`, after
the studies' other sections, in the HTML report and the web's result page."""

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class StudySection:
    """A study's own section as the report draws it."""

    name: str  # its anchor
    title: str
    lines: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)  # a table: one dict per row, its keys the columns
    chart: str | None = None  # a plotly figure's JSON


# Each study's own builder, by name: build(run, series) → StudySection, or None when the run is not its.
OWN_SECTIONS: dict[str, Callable] = {}


def add_section(name: str, build: Callable) -> None:
    OWN_SECTIONS[name] = build
