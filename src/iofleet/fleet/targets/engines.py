"""The IO engine a test uses on a target: the one asked for, or the first
that works there (auto)."""

import os
import subprocess
from pathlib import Path

from ...errors import FioError
from ...fio.command import error_line, fio_binary
from ...fio.jobfile import render_probe
from ...plan.params import AUTO_ENGINES
from ...plan.target_kinds import engine_kind
from ..fio_link.workdir import work_dir


def resolve_engine(target, engine: str, direct: bool) -> str:
    """The engine to use on a target (fleet/targets): the one asked for,
    checked, or for `auto` the first of io_uring, libaio, psync that works
    there; a target driven by its own engines (an RBD image) only those."""
    candidates = engine_candidates(target, engine)
    errors = []
    with work_dir("iofleet-probe-") as tmp:
        job = Path(tmp) / "probe.fio"
        for candidate in candidates:
            job.write_text(render_probe(target.probe_where("probe"), candidate, direct))
            try:
                proc = subprocess.run(
                    [fio_binary(), "--output-format=terse", "--eta=never", str(job)],
                    capture_output=True, text=True, timeout=60, cwd=tmp, env=os.environ | target.fio_env(),
                )
            except subprocess.TimeoutExpired:
                errors.append(f"{candidate}: probe timed out")
                continue
            if proc.returncode == 0:
                return candidate
            errors.append(f"{candidate}: {error_line(proc.stderr, proc.stdout)}")
    hint = " (the filesystem may not support O_DIRECT: try `direct: false`)" if direct else ""
    raise FioError(f"target {target.label}: no IO engine works{hint}: " + "; ".join(errors))


def engine_candidates(target, engine: str) -> tuple[str, ...]:
    """The engines to try, in order, for a plan's `engine` on a target."""
    own = target.engines
    if own:
        if engine not in ("auto", *own):
            raise FioError(f"target {target.label} is driven by fio's {' or '.join(own)} engine only, not "
                           f"engine: {engine}; leave engine out (auto) or set it to {own[0]}")
        return own
    kind = engine_kind(engine)
    if kind is not None:
        raise FioError(f"engine: {engine} drives {kind.what} only; give a target {kind.example} or leave engine "
                       f"out (auto)")
    return AUTO_ENGINES if engine == "auto" else (engine,)
