"""Matrix expansion: a plan becomes an ordered list of test specs.

Order (stable, documented in docs/plans.md): workloads in file order; within
a workload, the cartesian product of its matrix with parameters varied in
table order (bs outermost, then read_pct, random_pct, iodepth, jobs, size,
working_set_pct, runtime, ramp, engine, direct); repeats of one test run one
after the other.
"""

import collections
import itertools
from dataclasses import dataclass, field, make_dataclass, replace
from typing import Any

from ..errors import PlanError
from .model import Plan
from .params import MATRIX_PARAMS, PARAMS, SPEC_PARAMS, STEADY_WINDOW_ROUNDS, base_id, pattern, working_set
from .units import format_duration, format_size


class _SpecMethods:
    """What a test spec knows beyond its values."""

    __test__ = False  # not a pytest test class

    @property
    def working_set(self) -> int:
        """Bytes of each file that the IO touches, rounded down to whole blocks."""
        return working_set(self.values())

    @property
    def longest_s(self) -> int:
        """The longest the measured part can last: runtime, or with
        until: steady the maximum."""
        return self.max_runtime if self.until == "steady" else self.runtime

    @property
    def pattern(self) -> str:
        return pattern(self.random_pct)

    def values(self) -> dict:
        """Every parameter's value, by the table's names."""
        return {name: getattr(self, name) for name in SPEC_PARAMS}

    def params(self) -> dict:
        """The parameters alone, for storing and matching across runs."""
        return self.values()


# One fully resolved test: every parameter of the table has its final value.
TestSpec = make_dataclass(
    "TestSpec",
    [("id", str), ("workload", str),
     *((name, Any, field(default=PARAMS[name].default)) for name in SPEC_PARAMS),
     ("repeat", int, field(default=1)),  # which repeat this is, 1-based
     ("repeats", int, field(default=1))],  # how many repeats the workload asked for
    bases=(_SpecMethods,), frozen=True,
)
TestSpec.__module__ = __name__  # for pickling and reprs: it is defined here


def expand(plan: Plan) -> list[TestSpec]:
    """All tests of a plan, in the documented order, with unique readable ids."""
    defaults = {name: p.default for name, p in PARAMS.items()}
    defaults.update(plan.defaults.model_dump(exclude_none=True))

    rows = []  # (workload name, params dict, where each parameter was set)
    set_in_defaults = set(plan.defaults.model_dump(exclude_none=True))
    for i, w in enumerate(plan.workloads):
        fixed = dict(defaults)
        own = w.model_dump(exclude_none=True, exclude={"name", "description", "matrix", "hosts"})
        fixed.update(own)
        matrix = w.matrix.model_dump(exclude_none=True) if w.matrix else {}
        axes = [(name, matrix[name]) for name in MATRIX_PARAMS if name in matrix]
        # A problem's field, as validation errors name theirs (the web editor shows it there).
        where = {name: f"workloads[{i}].matrix.{name}" if name in matrix else f"workloads[{i}].{name}"
                 if name in own or name not in set_in_defaults else f"defaults.{name}" for name in PARAMS}
        for combo in itertools.product(*(values for _, values in axes)):
            params = dict(fixed)
            params.update({name: value for (name, _), value in zip(axes, combo)})
            rows.append((w.name, params, where))

    problems: dict[str, str] = {}  # message → its field
    for wname, p, where in rows:
        if p["size"] < p["bs"]:
            problems[f"workload {wname!r}: size {format_size(p['size'])} is smaller than bs {format_size(p['bs'])}; "
                     f"make size at least one block"] = where["size"]
        if p["until"] == "steady" and p["max_runtime"] < STEADY_WINDOW_ROUNDS * p["round"]:
            problems[f"workload {wname!r}: max_runtime {format_duration(p['max_runtime'])} is shorter than the "
                     f"steady-state window ({STEADY_WINDOW_ROUNDS} rounds of {format_duration(p['round'])}); "
                     f"raise max_runtime or shorten round"] = where["max_runtime"]
        if p["rate_iops"] is not None and p["rate_mbps"] is not None:
            problems[f"workload {wname!r}: both rate_iops and rate_mbps are set; give one of them"] = \
                where["rate_mbps"]
        if p["bs"] % 512:
            problems[f"workload {wname!r}: bs {p['bs']} is not a multiple of 512 bytes"] = where["bs"]
    if problems:
        ordered = sorted(problems)
        raise PlanError(ordered, fields=[(problems[m], m.split(": ", 1)[1]) for m in ordered])

    varying = [name for name, param in PARAMS.items()
               if param.id_part and len({p[name] for _, p, _ in rows}) > 1]

    def make_id(wname, p, with_workload):
        parts = [base_id(p)] + [PARAMS[n].id_part(p[n]) for n in varying]
        test_id = "-".join(parts)
        return f"{wname}.{test_id}" if with_workload else test_id

    ids = [make_id(w, p, False) for w, p, _ in rows]
    if len(set(ids)) != len(ids):
        ids = [make_id(w, p, True) for w, p, _ in rows]
    dupes = sorted(i for i, n in collections.Counter(ids).items() if n > 1)
    if dupes:
        raise PlanError(
            [f"test {d!r} appears more than once: the matrix lists a value twice" for d in dupes]
        )

    specs = []
    for test_id, (wname, p, _) in zip(ids, rows):
        repeats = p.pop("repeat")
        for r in range(1, repeats + 1):
            specs.append(TestSpec(id=test_id, workload=wname, repeat=r, repeats=repeats, **p))
    return specs


def tests_table(specs: list) -> tuple[list[str], list[dict[str, str]]]:
    """A plan's tests as a table: the parameters every tests table shows and
    those the plan sets away from their default, in table order. Returns
    (names, rows); each row maps `id` and those names to display text."""
    shown = [name for name in SPEC_PARAMS
             if PARAMS[name].in_table or any(getattr(s, name) != PARAMS[name].default for s in specs)]
    rows = [{"id": s.id if s.repeats == 1 else f"{s.id} ({s.repeat}/{s.repeats})",
             **{name: PARAMS[name].format(getattr(s, name)) for name in shown}} for s in specs]
    return shown, rows


def with_load(spec: TestSpec, jobs: int, iodepth: int) -> TestSpec:
    """The same test at another jobs × iodepth (a cell of a saturate sweep)."""
    return replace(spec, jobs=jobs, iodepth=iodepth, id=base_id(spec.values() | {"jobs": jobs, "iodepth": iodepth}))


def data_per_target_set(specs: list[TestSpec]) -> int:
    """Bytes of data files the plan creates: job file N is reused by every
    test with more than N jobs and grows to the largest size asked of it."""
    max_jobs = max((s.jobs for s in specs), default=0)
    return sum(max(s.size for s in specs if s.jobs > n) for n in range(max_jobs))


def prepare_tiers(specs: list[TestSpec]) -> list[tuple[int, int]]:
    """What preparation writes, as (files, bytes per file) tiers: file N
    gets the largest working set of the tests that use it (those with more
    than N jobs). Files are numbered by job, so a tier of N files writes
    files 0..N-1; tiers with more files come first."""
    max_jobs = max((s.jobs for s in specs), default=0)
    sizes = [max(s.working_set for s in specs if s.jobs > n) for n in range(max_jobs)]
    tiers: list[tuple[int, int]] = []
    for n in range(max_jobs, 0, -1):
        if not tiers or sizes[n - 1] != tiers[-1][1]:
            tiers.append((n, sizes[n - 1]))
    return tiers


@dataclass(frozen=True)
class MixedStep:
    """One step of a mixed plan: a test of every workload at the same time,
    each on its own host group. Quacks like a TestSpec where the run and
    its progress need it (id, duration)."""

    __test__ = False

    id: str
    groups: dict[str, TestSpec]  # workload name → its test in this step
    repeat: int = 1
    repeats: int = 1
    workload: str = "mixed"

    @property
    def ramp(self) -> int:
        return max(s.ramp for s in self.groups.values())

    @property
    def runtime(self) -> int:
        return max(s.runtime for s in self.groups.values())

    @property
    def longest_s(self) -> int:
        return max(s.longest_s for s in self.groups.values())

    @property
    def jobs(self) -> int:
        return max(s.jobs for s in self.groups.values())

    def params(self) -> dict:
        return {"groups": {name: {"test": s.id, **s.params()} for name, s in self.groups.items()}}


def expand_mixed(plan: Plan) -> list[MixedStep]:
    """Steps of a mixed plan: step i runs test i of every workload at once;
    a workload with a single test runs it in every step."""
    specs = expand(plan)
    per_workload = {w.name: [s for s in specs if s.workload == w.name] for w in plan.workloads}
    counts = {name: len(tests) for name, tests in per_workload.items()}
    steps = max(counts.values())
    uneven = {name: n for name, n in counts.items() if n not in (1, steps)}
    if uneven:
        listed = ", ".join(f"{name!r}: {n}" for name, n in counts.items())
        raise PlanError([f"mixed plan {plan.name!r}: its workloads expand to different numbers of tests "
                         f"({listed}); give each the same number, or one test that runs in every step"])
    out = []
    for i in range(steps):
        groups = {name: tests[i if len(tests) > 1 else 0] for name, tests in per_workload.items()}
        out.append(MixedStep(id="+".join(f"{name}.{s.id}" for name, s in groups.items()), groups=groups))
    return out
