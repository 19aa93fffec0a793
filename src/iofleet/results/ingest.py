"""`results import`: existing fio JSON outputs become a stored run.

Each file is a fio json or json+ output, from one machine or from fio's
client/server mode. Its jobs are grouped into tests by job name; per-host
figures are kept, and percentiles across jobs come from merged bins when the
file has them, otherwise they are marked unavailable (never estimated).
"""

import json
import re
from pathlib import Path

from ..errors import ImportFormatError, IofleetError
from ..fio.parse import parse_output, split_documents
from ..fio.records import DIRECTIONS
from ..inputs import MAX_FIO_OUTPUT_BYTES, read_input
from ..plan.model import check_name
from ..plan.params import params_from_fio
from .aggregate import aggregate
from .model import TestInfo
from .store import MAX_INTEGER, Store

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _read_document(path: Path) -> tuple[str, str]:
    """(document text, note). A --status-interval stream gives its last
    document, which is fio's final result."""
    # A regular file only (a FIFO would block, /dev/zero fill the memory), bounded.
    text = read_input(path, "fio output", MAX_FIO_OUTPUT_BYTES).decode(errors="replace")
    docs = split_documents(text)
    if len(docs) > 1:
        return docs[-1], f"{path.name}: {len(docs)} status documents, imported the final one"
    return (docs[0] if docs else text), ""


def _known_params(options: dict) -> dict:
    """iofleet's parameters where fio's options state them (read by the
    parameter table; a value it cannot take is left out); fio's own
    options are kept as given."""
    # fio's defaults for the two that shape every figure
    return {"fio_options": options, "iodepth": 1, "jobs": 1, **params_from_fio(options, strict=False)}


def _options(raw: dict, jobname: str) -> dict:
    # Informative only: anything that is not fio's {option: value} is left out.
    glob = raw.get("global options")
    options = dict(glob) if isinstance(glob, dict) else {}
    entries = raw.get("client_stats") if "client_stats" in raw else raw.get("jobs")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("jobname") == jobname:
            own = entry.get("job options")
            options.update(own if isinstance(own, dict) else {})
            break
    return {str(k): str(v) for k, v in options.items()}


def _check_totals(path: Path, output) -> None:
    """Each test's summed counts must fit the store's integers (each job's
    do: the parser checks them)."""
    for name in dict.fromkeys(j.job for j in output.jobs):
        totals = aggregate([j for j in output.jobs if j.job == name])
        for direction in DIRECTIONS:
            d = getattr(totals, direction)
            for figure in ("ios", "io_bytes", "lat_n"):
                if getattr(d, figure) > MAX_INTEGER:
                    raise ImportFormatError(f"{path}: job {name!r}: the jobs' {direction} {figure} add up to "
                                            f"{getattr(d, figure):.3g}, more than fio can have counted")


def import_outputs(store: Store, files: list[Path], label: str | None = None) -> int:
    """Parse every file first (nothing is stored if one is unreadable),
    then store them as one run; return its id. `label` follows the rule
    of every run label (plans, `results label`, the web API)."""
    if label is not None:
        try:
            check_name(label)
        except ValueError as exc:
            raise IofleetError(f"label {label!r}: {exc}") from None
    parsed = []
    for path in files:
        text, note = _read_document(Path(path))
        try:
            output = parse_output(text)
        except ImportFormatError as exc:
            raise ImportFormatError(f"{path}: {exc}") from None
        if not output.jobs:
            raise ImportFormatError(f"{path}: fio output without any job")
        _check_totals(path, output)
        parsed.append((Path(path), output, json.loads(text), note))

    versions = sorted({o.fio_version for _, o, _, _ in parsed})
    hosts = sorted({j.host for _, o, _, _ in parsed for j in o.jobs})
    notes = [n for *_, n in parsed if n]
    run_id = store.create_run(
        plan_name="import", plan_text="", label=label, source="import",
        fio_version=", ".join(versions),
        host_facts={"hosts": hosts, "files": [str(p) for p, *_ in parsed]},
        tests_planned=sum(len({j.job for j in o.jobs}) for _, o, _, _ in parsed),
    )
    seq = 0
    for path, output, raw, _ in parsed:
        names = list(dict.fromkeys(j.job for j in output.jobs))
        for name in names:
            jobs = [j for j in output.jobs if j.job == name]
            stem = _UNSAFE.sub("-", path.stem).strip("-") or "fio"
            test_id = stem if len(names) == 1 else f"{stem}.{_UNSAFE.sub('-', name)}"
            errors = [j for j in jobs if j.error]
            store.save_test(
                run_id, seq=seq,
                test=TestInfo(id=test_id, workload=name, repeat=1, params=_known_params(_options(raw, name))),
                status="failed" if errors else "ok",
                error=f"fio reported error {errors[0].error} on {errors[0].host}" if errors else None,
                started_at=None, ended_at=None, jobs=jobs, aggregate=aggregate(jobs),
                host_cpu=None, disks=output.disks if name == names[0] else [],
                series=[], artifacts={"fio-output.json": json.dumps(raw).encode()},
            )
            seq += 1
    status = "failed" if any(j.error for _, o, _, _ in parsed for j in o.jobs) else "complete"
    store.finish_run(run_id, status, note="; ".join(notes) or None)
    return run_id
