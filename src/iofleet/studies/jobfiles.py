"""`iofleet validate --jobfiles DIR`: the fio job file of each test, as it
would run, for users to read what iofleet will hand fio (as HCIBench users
read the vdbench files it generates). Importing one gives the same test."""

from pathlib import Path

from ..errors import IofleetError
from ..fio.jobfile import render_test
from ..fleet.places import plan_access
from ..fleet.targets.engines import engine_candidates
from ..fleet.targets import target_for
from ..plan.expand import expand, expand_mixed
from ..plan.model import Plan

# Where the files point when the plan names no target yet (`--target` at run time).
NO_TARGET = "/path/to/target"


def write_jobfiles(plan: Plan, directory: Path) -> list[Path]:
    """One job file per test (repeats share theirs), numbered in run order.
    engine: auto is written as the first engine auto tries; the run takes
    the first that works on the target (the file's `; iofleet:` line says auto)."""
    specs = [s for step in expand_mixed(plan) for s in step.groups.values()] if plan.mixed else expand(plan)
    unique = list({(s.workload, s.id): s for s in specs}.values())
    target = target_for(plan.targets or [NO_TARGET], plan_access(plan))
    target.fit(unique, True, local=False)  # a device or image: one region per job, as large as the largest file
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for i, spec in enumerate(unique, 1):
            engine = engine_candidates(target, spec.engine)[0]
            name = f"{i:03d}-{spec.workload}.{spec.id}.fio" if plan.mixed else f"{i:03d}-{spec.id}.fio"
            path = directory / name
            path.write_text(render_test(spec, target.fio_where(), engine, plan.clear_cache))
            written.append(path)
    except OSError as exc:
        raise IofleetError(f"--jobfiles {directory}: cannot write there ({exc.strerror}); "
                           f"give a directory you can write to") from None
    return written
