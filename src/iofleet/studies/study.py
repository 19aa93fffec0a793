"""The study protocol, as CBT has one Benchmark base class: a study (Easy
Run, saturate, curve, scale, scenario, ...) is one module of studies/kinds/
that declares a `Study` subclass: its name, its line in `iofleet --help`,
its choice on the Run page, its own settings (each a `Setting`, declared
once: the terminal's option, the Run page's field and the launcher's parsing
all read it; the parameter table's rows it offers are named by the rows,
Param.studies) and its one run entry, `run(where, settings)`. Its record
registers itself in results (methodology.study_record) and its report
section in report (own_sections.add_section). The front doors loop over
studies.kinds.STUDIES; nothing outside a study's module asks which it is.

Its life, as either front door drives it: `given` (the Run page's values
typed) → `parse` (its settings object, each value checked: a one-line
error naming the option) → `preview` and `about` (what Validate checks and
says) → `run(where, settings)` → `status`, `lines`; later, of its stored
runs: `headline` (the results list).

Light on purpose: `iofleet --help` imports every declaration, so a study's
work (fio, numpy, the store) is imported inside its methods."""

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import IofleetError
from ..fleet.places import place_class
from ..plan.settings import offered, option_name, setting_help

if TYPE_CHECKING:  # annotations only
    from ..fleet.inventory import Host
    from ..plan.model import Plan
    from ..results.store import Store
    from .events import RunObserver


@dataclass(frozen=True)
class Setting:
    """One setting of a study's own (not a parameter-table row)."""

    name: str  # its field in the study's settings (Sweep.min_gain_pct)
    kind: type  # str, int, float or bool
    help: str  # a sentence; a bool that is on unless turned off: what turning it off does
    words: str | None = None  # its default in words where its settings class has none: "its CPUs", "none"
    option: str | None = None  # its command-line option when not --name, e.g. --min-gain
    metavar: str | None = None
    default: Any = None  # its default when no settings class holds it (Easy Run's probe: True)
    # Its limits: a parameter-table row's (max_jobs: jobs), or a check of its own and what to give instead.
    bounded_by: str | None = None
    allowed: Callable[[Any], bool] | None = None
    why: str = ""
    given_default: bool = False  # the command line gives the default when not given (typer shows it)

    @property
    def flag(self) -> str:
        """Its command-line option: --no-probe for a bool that is on unless turned off."""
        if self.kind is bool and self.default is True:
            return f"--no-{self.name.replace('_', '-')}"
        return self.option or "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """The value if within its limits, else a one-line error naming the option."""
        if value is None:
            return None
        if self.bounded_by is not None:
            from ..plan.params import PARAMS
            try:
                return PARAMS[self.bounded_by].parse(value)
            except ValueError as exc:
                raise IofleetError(f"{self.flag} {value}: {exc}") from None
        if self.allowed is not None and not self.allowed(value):
            raise IofleetError(f"{self.flag} {value}: {self.why}")
        return value


@dataclass(frozen=True)
class Where:
    """Where a study runs and what it reports to: what every study is given."""

    targets: list[Path] | None = None  # this host's targets (None: the hosts' own)
    hosts: list["Host"] | None = None  # fio servers, at once (None: this host)
    label: str | None = None
    store: "Store | None" = None
    observer: "RunObserver | None" = None
    stop: threading.Event | None = None
    destroy_data: list[str] | None = None


@dataclass
class Launch:
    """A study ready to start: `go(store, observer, stop)` runs it and
    returns the status its last run ended with."""

    study: str
    name: str  # shown until its first run is stored
    label: str | None
    hosts: list["Host"] | None
    preview: "Plan"  # the plan whose targets Validate checks
    go: Callable[["Store", "RunObserver", threading.Event], str]
    about: str  # what the study runs, one line
    text: str | None = None  # the plan's or scenario's text as given


@dataclass
class Field:
    """One field of a study's form on the Run page: a table row it offers or one of its own."""

    name: str
    label: str
    help: str
    default: str
    kind: str  # text | bool


@dataclass(frozen=True)
class TextField:
    """What a study takes as text on the Run page besides its settings (a scenario's YAML)."""

    label: str
    placeholder: str
    note: str  # under it, HTML
    missing: str  # the error when it is not given


class Study:
    """A study: subclass it in a module of studies/kinds/; it registers itself."""

    name: ClassVar[str] = ""  # its command and its name on the Run page, the API and Param.studies
    order: ClassVar[int] = 100  # in lists (the Run page's choices)
    after: ClassVar[str | None] = None  # the command it follows in `iofleet --help` (None: last)
    short_help: ClassVar[str | None] = None  # its line in `iofleet --help` (None: its command's first line)
    title: ClassVar[str] = ""  # its choice on the Run page ("": started from the terminal only)
    settings: ClassVar[tuple[Setting, ...]] = ()  # its own, in the order of its options
    text: ClassVar[TextField | None] = None  # what else it takes on the Run page
    about_help: ClassVar[str] = ""  # its generic command's help (a study with a command of its own: unused)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.name:
            _STUDIES[cls.name] = cls()

    # ---- its settings ----------------------------------------------------------

    def defaults_from(self) -> tuple[type, ...]:
        """Its settings classes, whose defaults the options and fields show, first first."""
        return ()

    def rows(self) -> dict:
        """The parameter table's rows it offers as settings."""
        return offered(self.name)

    def own(self) -> Mapping[str, Setting]:
        return {s.name: s for s in self.settings}

    def class_default(self, name: str) -> Any:
        """A setting's default as its settings classes hold it (None: none does)."""
        return next((getattr(cls, name) for cls in self.defaults_from()
                     if getattr(cls, name, None) is not None), None)

    def fields(self) -> list[Field]:
        """What the Run page offers, with each default as the study has it."""
        out = []
        for name, p in self.rows().items():
            default = next((getattr(cls, name) for cls in self.defaults_from() if hasattr(cls, name)), None)
            out.append(Field(name, p.label or name, setting_help(p, self.name),
                             "until steady" if default is None and name == "runtime" else
                             p.format(default) if default is not None else "chosen by the study",
                             "bool" if p.kind == "bool" else "text"))
        for s in self.settings:
            default = self.class_default(s.name)
            if s.kind is bool:
                on = s.default if default is None else default
                shown, text = "on" if on else "off", f"Off: {s.help[0].lower()}{s.help[1:]}" if on else s.help
            else:
                shown, text = (s.words if default is None else f"{default:g}"), s.help
            out.append(Field(s.name, s.name.replace("_pct", " %").replace("_", " "), text, shown or "none",
                             "bool" if s.kind is bool else "text"))
        return out

    def given(self, settings: dict[str, Any] | None) -> dict[str, Any]:
        """The settings given (None and "" left out: the study's default), each
        a row the study offers (as text, parsed by its row) or one of its own, as that type."""
        own, rows = self.own(), self.rows()
        out = {}
        for name, value in (settings or {}).items():
            if value is None or value == "":
                continue
            if name in rows:
                out[name] = str(value)  # parsed by its row, as the command line's text is
                continue
            setting = own.get(name)
            if setting is None:
                known = ", ".join([*rows, *own])
                raise IofleetError(f"{self.name} has no setting {name!r}; its settings: {known}")
            out[name] = _typed(self.name, setting, value)
        return out

    def checked(self, given: dict[str, Any]) -> dict[str, Any]:
        """Its own settings given (None: its `default`, if it has one), each within its limits."""
        own = self.own()
        return {s.name: s.default for s in self.settings if s.default is not None} | {
            name: own[name].check(value) for name, value in given.items() if name in own and value is not None}

    def parse(self, given: dict[str, Any]) -> Any:
        """Its settings object from the settings given (`given`'s or the command line's, None: not given):
        by default its own settings, checked, and the table's rows it offers, parsed by them."""
        rows = self.rows()
        return self.checked(given) | {name: parse_option(option_name(name), rows[name], value)
                                      for name, value in given.items() if name in rows and value is not None}

    # ---- running it ------------------------------------------------------------

    def launch(self, where: Where, settings: dict | None, text: str | None = None,
               data_dir: Path | None = None) -> Launch:
        """The study as the Run page starts it, checked as its command checks it."""
        parsed = self.parse(self.given(settings))

        def go(store, observer, stop):
            return self.status(self.start(replace(where, store=store, observer=observer, stop=stop), parsed))
        return Launch(self.name, self.name, where.label or self.name, where.hosts,
                      self.preview(where, parsed), go, self.about(parsed))

    def preview(self, where: Where, settings: Any) -> "Plan":
        """The plan whose targets Validate checks: its first run's, or its largest."""
        raise NotImplementedError

    def about(self, settings: Any) -> str:
        """What it runs, one line."""
        return self.title

    def run(self, where: Where, settings: Any):
        """Run it; returns its outcome, whose `run` is the last run's RunOutcome."""
        raise NotImplementedError

    def start(self, where: Where, settings: Any, **kw):
        """`run`, with the hosts up for the whole study: a Kubernetes
        inventory's pods are created once, not for each of its runs."""
        with place_class(where.hosts).hosts_up(where.hosts):
            return self.run(where, settings, **kw)

    def status(self, outcome) -> str:
        """The status its last run ended with."""
        return outcome.run.status

    def headline(self, run, best: dict) -> dict:
        """A stored run's headline figures in the results list (`best`: its best test's), as the study tells them."""
        return best

    def lines(self, outcome) -> list[str]:
        """What its generic command prints after the run."""
        return []


def parse_option(option: str, param, value: Any) -> Any:
    """A given value parsed by its table row (units, bounds), or a one-line error naming the option."""
    try:
        return param.parse(value)
    except ValueError as exc:
        raise IofleetError(f"{option} {value}: {exc}") from None


def _typed(study: str, setting: Setting, value: Any) -> Any:
    kind = setting.kind
    try:
        return value if isinstance(value, kind) else (
            str(value).strip().lower() in ("1", "true", "yes", "on") if kind is bool else kind(value))
    except (TypeError, ValueError):
        wanted = "a number" if kind in (int, float) else kind.__name__
        raise IofleetError(f"{study} setting {setting.name}: {value!r} is not {wanted}") from None


_STUDIES: dict[str, Study] = {}
