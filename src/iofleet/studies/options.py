"""The settings of the saturate, curve and Easy Run studies given as text
(the command line's options), parsed by the parameter table's rows. What is
not given (None) keeps the study's own default, so each default is written
once: in the parameter table (a row's, or the study's there) or in the
study's dataclass."""

from typing import Any

from ..analysis.curve import DEFAULT_POINTS
from ..analysis.saturation import parse_slo
from ..errors import IofleetError
from ..plan.easy import Durations
from ..plan.params import CURVE, EASY_RUN, SATURATE, STEADY_WINDOW_ROUNDS, UNTIL
from ..plan.settings import offered, option_name
from ..plan.units import format_duration
from .curve import Curve, parse_loads
from .saturate import SWEEP_SETTINGS, Sweep
from .study import parse_option


def parse_given(study: str, given: dict) -> dict:
    """The options `study` offers that were given (not None), parsed by their rows."""
    rows = offered(study)
    unknown = set(given) - set(rows)
    if unknown:
        raise TypeError(f"not a {study} setting: {', '.join(sorted(unknown))}")  # a caller's bug
    return {name: parse_option(option_name(name), rows[name], value)
            for name, value in given.items() if value is not None}


def sweep_from_options(slo: str | None = None, **given: Any) -> Sweep:
    """The Sweep of the given settings (Sweep field names; None: the sweep's
    default), each checked: the table's rows the saturate study offers and
    its own settings (SWEEP_SETTINGS: its axes' bounds, its knobs)."""
    own = {s.name: s for s in SWEEP_SETTINGS}
    values = parse_given(SATURATE, {name: value for name, value in given.items() if name not in own})
    values |= {name: own[name].check(value) for name, value in given.items() if name in own and value is not None}
    if slo is not None:
        values["slo"] = parse_slo(slo)
    sweep = Sweep(**values)
    if sweep.runtime is None and sweep.max_runtime < STEADY_WINDOW_ROUNDS * sweep.round:
        shown = {name: given.get(name) or format_duration(getattr(sweep, name)) for name in UNTIL["steady"]}
        raise IofleetError(f"--max-runtime {shown['max_runtime']}: shorter than the steady-state window (5 rounds "
                           f"of --round {shown['round']}); raise --max-runtime or shorten --round")
    return sweep


def curve_from_options(points: int | None = None, loads: str | None = None, from_run: int | None = None,
                       max_jobs: int | None = None, max_iodepth: int | None = None, **given: Any) -> Curve:
    """The Curve of the given settings: the options the curve offers set its
    sweep (each a Sweep field), and the curve's own where it has them (a
    point's runtime and ramp: given, each sweep cell's too)."""
    parse_given(CURVE, given)  # each checked, named as the curve's option
    sweep = sweep_from_options(max_jobs=max_jobs, max_iodepth=max_iodepth,
                               **{name: value for name, value in given.items() if name in Sweep.rows})
    own = parse_given(CURVE, {name: value for name, value in given.items() if name in Curve.rows})
    return Curve(points=DEFAULT_POINTS if points is None else points, loads=parse_loads(loads), from_run=from_run,
                 sweep=sweep, **own)


def easy_run_options(**given: str | None) -> tuple[Durations, int | None]:
    """Easy Run's durations and working set per host (None: Easy Run's own
    defaults, and a working set sized from the hosts' free space)."""
    values = parse_given(EASY_RUN, given)
    durations = Durations(**{name: value for name, value in values.items() if name in Durations.rows})
    return durations, values.get("size")  # --size: the working set per host
