"""The settings of the saturate and Easy Run studies given as text (the
command line's options), parsed by the parameter table. What is not given
(None) keeps the study's own default, so each default is written once: in
the parameter table or in the study's dataclass."""

from typing import Any

from ..analysis.saturation import parse_slo
from ..errors import IofleetError
from ..plan.easy import Durations
from ..plan.params import PARAMS, RUN_PARAMS, STEADY_WINDOW_ROUNDS, Param
from ..plan.units import format_duration
from .saturate import Sweep


def parse_option(option: str, param: Param, value: Any) -> Any:
    """A given value parsed by its table row (units, bounds), or a one-line error naming the option."""
    try:
        return param.parse(value)
    except ValueError as exc:
        raise IofleetError(f"{option} {value}: {exc}") from None


# Sweep field: its option and the table row that parses it (the axes' bounds are jobs' and iodepth's).
SWEEP_OPTIONS = {
    "bs": ("--bs", PARAMS["bs"]), "read_pct": ("--read-pct", PARAMS["read_pct"]),
    "random_pct": ("--random-pct", PARAMS["random_pct"]), "size": ("--size", PARAMS["size"]),
    "round": ("--round", PARAMS["round"]), "max_runtime": ("--max-runtime", PARAMS["max_runtime"]),
    "runtime": ("--runtime", PARAMS["runtime"]), "ramp": ("--ramp", PARAMS["ramp"]),
    "engine": ("--engine", PARAMS["engine"]), "prepare": ("--prepare", RUN_PARAMS["prepare"]),
    "max_jobs": ("--max-jobs", PARAMS["jobs"]), "max_iodepth": ("--max-iodepth", PARAMS["iodepth"]),
}
# The sweep's own knobs (no plan parameter): their option, bounds and what to give instead.
SWEEP_LIMITS = {
    "min_gain_pct": ("--min-gain", lambda v: 0 < v < 1000, "give a share above 0, e.g. 10 (%)"),
    "bisect": ("--bisect", lambda v: 0 <= v <= 10, "allowed 0 to 10 steps"),
    "repeats": ("--repeats", lambda v: 1 <= v <= 10, "allowed 1 to 10 runs of a cell"),
    "noise_pct": ("--noise", lambda v: 0 <= v < 100, "give a share from 0 to 99, e.g. 8 (%)"),
}


def sweep_from_options(slo: str | None = None, **given: Any) -> Sweep:
    """The Sweep of the given settings (Sweep field names; None: the sweep's
    default), each checked, in the order the options are listed."""
    unknown = set(given) - set(SWEEP_OPTIONS) - set(SWEEP_LIMITS)
    if unknown:
        raise TypeError(f"not a sweep setting: {', '.join(sorted(unknown))}")  # a caller's bug
    values = {name: parse_option(option, param, given[name])
              for name, (option, param) in SWEEP_OPTIONS.items() if given.get(name) is not None}
    if slo is not None:
        values["slo"] = parse_slo(slo)
    for name, (option, ok, why) in SWEEP_LIMITS.items():
        if given.get(name) is not None:
            if not ok(given[name]):
                raise IofleetError(f"{option} {given[name]}: {why}")
            values[name] = given[name]
    sweep = Sweep(**values)
    if sweep.runtime is None and sweep.max_runtime < STEADY_WINDOW_ROUNDS * sweep.round:
        shown = {name: given.get(name) or format_duration(getattr(sweep, name)) for name in ("max_runtime", "round")}
        raise IofleetError(f"--max-runtime {shown['max_runtime']}: shorter than the steady-state window (5 rounds "
                           f"of --round {shown['round']}); raise --max-runtime or shorten --round")
    return sweep


def easy_run_options(runtime: str | None = None, max_runtime: str | None = None, ramp: str | None = None,
                     round: str | None = None, size: str | None = None) -> tuple[Durations, int | None]:
    """Easy Run's durations and working set per host (None: Easy Run's own
    defaults, and a working set sized from the hosts' free space)."""
    durations = Durations()
    for name, value in (("runtime", runtime), ("max_runtime", max_runtime), ("ramp", ramp), ("round", round)):
        if value is not None:
            setattr(durations, name, parse_option(f"--{name.replace('_', '-')}", PARAMS[name], value))
    working_set = parse_option("--size", PARAMS["size"], size) if size is not None else None
    return durations, working_set
