"""Shared by the bench scripts: the machine line, BENCHMARKS.md sections
(write_section is overhead.py's, reused as fleet_start.py does) and
cProfile tables."""

import os
import platform
import pstats
from datetime import datetime, timezone
from pathlib import Path

from bench.overhead import write_section  # noqa: F401  (re-exported)

ROOT = Path(__file__).resolve().parents[1]


def machine() -> str:
    """'2026-11-21 on vm (2 cores, 6.18.44-fc-v470), Python 3.11.7': when and where."""
    return (f"{datetime.now(timezone.utc):%Y-%m-%d} on {platform.node()} ({os.cpu_count()} cores, "
            f"{platform.release()}), Python {platform.python_version()}")


def _where(file: str, line: int, name: str) -> str:
    if file == "~":  # a built-in
        return name.strip("<>")
    if "site-packages" + os.sep in file:
        return f"{file.split('site-packages' + os.sep, 1)[1]}:{line} {name}"
    for base in (ROOT / "src", ROOT):
        if file.startswith(str(base) + os.sep):
            return f"{Path(file).relative_to(base)}:{line} {name}"
    return f"{Path(file).name}:{line} {name}"  # the standard library


def profile_table(stats_file: Path, top: int = 20) -> str:
    """The `top` functions of a cProfile dump by own time, as a Markdown table."""
    stats = pstats.Stats(str(stats_file))
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]  # (cc, nc, tt, ct, callers)
    lines = ["| own time (s) | with callees (s) | calls | function |", "| ---: | ---: | ---: | --- |"]
    for (file, line, name), (_, nc, tt, ct, _) in rows:
        lines.append(f"| {tt:.2f} | {ct:.2f} | {nc:,} | `{_where(file, line, name)}` |")
    return "\n".join(lines) + f"\n\nTotal under the profiler: {stats.total_tt:.1f} s."
