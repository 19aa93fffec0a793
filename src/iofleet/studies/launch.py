"""A study as the web's Run page starts it: a plan, Easy Run, a saturate
sweep, a latency curve or a scenario, from the settings the page sends.
Each is checked as the terminal's command checks it (the same option
parsers), gives the plan whose targets Validate checks (the study's first
run's, or its largest), and runs through the same study function as the
terminal's command."""

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import IofleetError
from ..fleet.inventory import Host
from ..plan import parse_plan
from ..plan.load import yaml_data
from ..plan.model import Plan
from ..plan.params import CURVE, EASY_RUN, IO_PARAMS, SATURATE
from ..plan.settings import offered, setting_help
from ..results.store import Store
from ..units import escaped
from .events import RunObserver

STUDIES = ("plan", "easy-run", "saturate", "curve", "scenario")
# Each study's own settings beside the parameter table's rows it offers
# (plan.settings.offered): its type, its help, and its default in words
# where the study's settings class has none (or has None).
OWN = {
    "easy-run": {"probe": (bool, "Measure which jobs × iodepth gives the most IOPS first (~1–2 min); "
                                 "off: guess from CPUs and device type.", "on")},
    "saturate": {
        "slo": (str, "Latency target, e.g. p99<=2ms or mean<500us.", "none"),
        "max_jobs": (int, "Most jobs per host.", "its CPUs"),
        "max_iodepth": (int, "Most outstanding IOs per job.", None),
        "min_gain_pct": (float, "A doubling gaining fewer % IOPS has stopped growing.", None),
        "bisect": (int, "Most bisection steps toward the target.", None),
        "repeats": (int, "Most runs of a cell whose verdict is within noise.", None),
        "noise_pct": (float, "Run-to-run IOPS noise, % (a single run is ± half).", None),
    },
    "curve": {
        "points": (int, "Loads evenly spaced up to the most IOPS: k/N of it, k = 1..N.", None),
        "loads": (str, "Loads in % of the most IOPS instead, e.g. 10,50,90,120.", "none"),
        "from_run": (int, "Take the most IOPS from this stored saturate run instead of sweeping.", "none"),
        "max_jobs": (int, "Most jobs per host in the sweep.", "its CPUs"),
        "max_iodepth": (int, "Most outstanding IOs per job in the sweep.", None),
    },
}
TABLE = {"easy-run": EASY_RUN, "saturate": SATURATE, "curve": CURVE}


@dataclass
class Setting:
    """One field of a study's form: a table row it offers or one of its own."""

    name: str
    label: str
    help: str
    default: str
    kind: str  # text | bool


def study_settings(study: str) -> list[Setting]:
    """What the Run page offers for `study`, with each default as the study has it."""
    from ..plan.easy import Durations
    from .curve import Curve
    from .saturate import Sweep
    defaults = {"easy-run": (Durations,), "saturate": (Sweep,), "curve": (Curve, Sweep)}[study]
    out = []
    for name, p in offered(TABLE[study]).items():
        default = next((getattr(cls, name) for cls in defaults if hasattr(cls, name)), None)
        out.append(Setting(name, p.label or name, setting_help(p, TABLE[study]),
                           "until steady" if default is None and name == "runtime" else
                           p.format(default) if default is not None else "chosen by the study",
                           "bool" if p.kind == "bool" else "text"))
    for name, (kind, text, when_none) in OWN[study].items():
        default = next((getattr(cls, name) for cls in defaults if getattr(cls, name, None) is not None), None)
        out.append(Setting(name, name.replace("_pct", " %").replace("_", " "), text,
                           when_none if default is None else f"{default:g}", "bool" if kind is bool else "text"))
    return out


@dataclass
class Launch:
    """A study ready to start: `go(store, observer, stop)` runs it and
    returns the status its last run ended with."""

    study: str
    name: str  # shown until its first run is stored
    label: str | None
    hosts: list[Host] | None
    preview: Plan  # the plan whose targets Validate checks
    go: Callable[[Store, RunObserver, threading.Event], str]
    about: str  # what the study runs, one line
    text: str | None = None  # the plan's or scenario's text as given


def settings_of(study: str, given: dict[str, Any] | None) -> dict[str, Any]:
    """The settings given (None and "" left out: the study's default), each
    a row the study offers or one of its own, as that type."""
    own = {name: kind for name, (kind, _, _) in OWN[study].items()}
    rows = offered(TABLE[study])
    out = {}
    for name, value in (given or {}).items():
        if value is None or value == "":
            continue
        if name in rows:
            out[name] = str(value)  # parsed by its row, as the command line's text is
            continue
        kind = own.get(name)
        if kind is None:
            known = ", ".join([*rows, *own])
            raise IofleetError(f"{study} has no setting {name!r}; its settings: {known}")
        try:
            out[name] = value if isinstance(value, kind) else (
                str(value).strip().lower() in ("1", "true", "yes", "on") if kind is bool else kind(value))
        except (TypeError, ValueError):
            wanted = "a number" if kind in (int, float) else kind.__name__
            raise IofleetError(f"{study} setting {name}: {value!r} is not {wanted}") from None
    return out


def plan_launch(plan: Plan, text: str, hosts: list[Host] | None, label: str | None) -> Launch:
    from .run import run_plan

    def go(store, observer, stop):
        return run_plan(plan, text, store, hosts=hosts, label=label, observer=observer, stop=stop).status
    return Launch("plan", plan.name, label or plan.label, hosts, plan, go, f"plan {plan.name}", text)


def easy_run_launch(targets: list[Path], hosts: list[Host] | None, label: str | None,
                    given: dict | None) -> Launch:
    from ..plan.easy import easy_plan
    from .easy_run import run_easy_run, survey
    from .options import easy_run_options
    settings = settings_of("easy-run", given)
    probe_first = settings.pop("probe", True)
    durations, working_set = easy_run_options(**settings)
    facts, names = survey(targets, hosts)
    data, _ = easy_plan(facts, names, durations, working_set)
    preview = parse_plan(data, "easy-run")

    def go(store, observer, stop):
        return run_easy_run(store, targets=targets, hosts=hosts, durations=durations, working_set=working_set,
                            label=label, observer=observer, stop=stop, probe_first=probe_first).last.status
    about = ("a probe of jobs × iodepth (4k random reads in short cells), then " if probe_first else "") + \
        f"{len(data['workloads'])} standard profiles"
    return Launch("easy-run", "easy-run", label or "easy-run", hosts, preview, go, about)


def _sweep_preview(sweep, targets: list[Path], hosts: list[Host] | None, study: str) -> Plan:
    """The sweep's whole grid as a plan: its largest data files."""
    from .saturate import doubling, max_jobs_for, place_names, sweep_plan
    names = place_names(hosts, targets, study, checking=None)
    data, _ = sweep_plan(sweep, doubling(max_jobs_for(sweep, hosts)), doubling(sweep.max_iodepth), names)
    return parse_plan(data, study)


def saturate_launch(targets: list[Path], hosts: list[Host] | None, label: str | None,
                    given: dict | None) -> Launch:
    from .options import sweep_from_options
    from .saturate import run_saturate
    settings = settings_of("saturate", given)
    sweep = sweep_from_options(**settings)

    def go(store, observer, stop):
        return run_saturate(store, sweep, targets=targets, hosts=hosts, label=label, observer=observer,
                            stop=stop).run.status
    about = (f"a sweep of jobs × iodepth up to {sweep.max_iodepth} IOs per job"
             + (f", target {sweep.slo.text}" if sweep.slo else ""))
    return Launch("saturate", "saturate", label or "saturate", hosts,
                  _sweep_preview(sweep, targets, hosts, "saturate"), go, about)


def curve_launch(targets: list[Path], hosts: list[Host] | None, label: str | None, given: dict | None,
                 data_dir: Path) -> Launch:
    """From a stored saturate run (`from_run`, read from the store at
    `data_dir`) its fixed-rate tests are the preview; else the sweep's grid."""
    from .curve import fixed_rate_plan, run_curve, stored_maximum
    from .options import curve_from_options
    from .saturate import place_names
    settings = settings_of("curve", given)
    own = {name: settings.pop(name) for name in OWN["curve"] if name in settings}
    curve = curve_from_options(**own, **settings)
    io_given = {name for name in IO_PARAMS if settings.get(name)}
    if curve.from_run is not None:
        with Store.open(data_dir) as store:
            jobs, iodepth, max_iops, io = stored_maximum(store, curve.from_run, curve, io_given)
        names = place_names(hosts, targets, "curve", checking=None)
        preview = parse_plan(fixed_rate_plan(curve, io, jobs, iodepth, max_iops, names, [])[0], "curve")
        first = f"the most IOPS of saturate run {curve.from_run}, {max_iops:,.0f}"
    else:
        preview = _sweep_preview(curve.sweep, targets, hosts, "curve")
        first = "a saturate sweep for the most IOPS"

    def go(store, observer, stop):
        return run_curve(store, curve, targets=targets, hosts=hosts, label=label, observer=observer, stop=stop,
                         given=io_given).run.status
    about = f"{first}, then {len(curve.load_list())} fixed-rate tests up to it"
    return Launch("curve", "curve", label or "curve", hosts, preview, go, about)


def scenario_launch(text: str, targets: list[Path], hosts: list[Host] | None, label: str | None) -> Launch:
    from ..plan.scenario import parse_scenario
    from .scenario import check_scenario, clear_left_faults, run_scenario
    from .watch import shown
    source = "scenario"
    scenario = parse_scenario(yaml_data(text, source), source)
    if bool(targets) == bool(hosts):
        raise IofleetError("give where the scenario runs: targets (this host) or the fleet")
    commands = [t for _, _, t in scenario.commands] + shown(scenario.watch)
    if commands:  # the terminal shows them and asks for --yes; a page gets no such say
        raise IofleetError(escaped(f"the scenario runs commands on hosts as root ({'; '.join(commands)}): the web "
                                   f"UI does not run commands; check them and run `iofleet scenario FILE --yes`"))
    faults = check_scenario(scenario, source, hosts, str(targets[0].resolve()) if targets else None, yes=False)
    preview = scenario.plan(source, [str(t) for t in targets])

    def go(store, observer, stop):
        for line in clear_left_faults(hosts):  # a killed scenario's, undone here (docs/scenarios.md)
            observer.warning(line)
        return run_scenario(scenario, text, source, store, faults, targets=targets, hosts=hosts, label=label,
                            observer=observer, stop=stop).run.status
    about = f"scenario {scenario.name}: a load with {len(scenario.events)} events"
    return Launch("scenario", scenario.name, label, hosts, preview, go, about, text)
