"""`iofleet validate --jobfiles DIR`: the fio job file of each test, as it
would run, for users to read what iofleet will hand fio (as HCIBench users
read the vdbench files it generates). Importing one gives the same test."""

from pathlib import Path

from ..errors import IofleetError
from ..fio.jobfile import render_test
from ..fleet.devices import where
from ..plan.expand import expand, expand_mixed
from ..plan.model import Plan
from ..plan.params import AUTO_ENGINES

# Where the files point when the plan names no target yet (`--target` at run time).
NO_TARGET = "/path/to/target"


def write_jobfiles(plan: Plan, directory: Path) -> list[Path]:
    """One job file per test (repeats share theirs), numbered in run order.
    engine: auto is written as the first engine auto tries; the run takes
    the first that works on the target (the file's `; iofleet:` line says auto)."""
    specs = [s for step in expand_mixed(plan) for s in step.groups.values()] if plan.mixed else expand(plan)
    unique = list({(s.workload, s.id): s for s in specs}.values())
    targets = plan.targets or [NO_TARGET]
    stride = max(s.size for s in unique)  # a device: one region per job, each as large as the largest file
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for i, spec in enumerate(unique, 1):
            engine = AUTO_ENGINES[0] if spec.engine == "auto" else spec.engine
            name = f"{i:03d}-{spec.workload}.{spec.id}.fio" if plan.mixed else f"{i:03d}-{spec.id}.fio"
            path = directory / name
            path.write_text(render_test(spec, where(targets, stride), engine, plan.clear_cache))
            written.append(path)
    except OSError as exc:
        raise IofleetError(f"--jobfiles {directory}: cannot write there ({exc.strerror}); "
                           f"give a directory you can write to") from None
    return written
