"""The results store the Results tests read (API and browser), made once per
test session with real runs, an import and hostile text."""

import gzip
import shutil
from pathlib import Path

from iofleet.results.store import Store

from ..cli import iofleet
from ..conftest import ROOT

FIO_OUTPUT = ROOT / "tests" / "fixtures" / "fio" / "single-job-json+.json"
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"
PLAN = """# results web test {hostile}
name: {name}
defaults: {{size: 8m, runtime: 1s, ramp: 0s, engine: {engine}, iodepth: 4}}
workloads:
  - {{name: randread, bs: 4k, read_pct: 100}}
"""
SECRET = b"SECRET-NOT-FOR-DOWNLOAD"
_DATA: list[Path] = []  # the store made once per session, shared by the results tests


def stored_runs(tmp_path_factory) -> Path:
    """A results store with three runs, made once per test session:
    1: plan webres-a, label alpha, libaio, complete (a real 1 s fio run);
    2: plan webres-b, libaio's twin with psync, complete, label HOSTILE (set in
       the store: labels are checked by name rules everywhere else);
    3: an imported fio output, label gamma, marked interrupted.
    Plus files no request may reach: data/secret.txt and a .gz beside run 1's artifacts."""
    if _DATA:
        return _DATA[0]
    tmp = tmp_path_factory.mktemp("results-web")
    disk = ROOT / "scratch" / "tests" / tmp.name  # a real disk, not tmpfs
    disk.mkdir(parents=True, exist_ok=True)
    data = tmp / "data"
    try:
        for name, engine, label in (("webres-a", "libaio", "alpha"), ("webres-b", "psync", "beta")):
            plan = tmp / f"{name}.yaml"
            plan.write_text(PLAN.format(hostile=HOSTILE, name=name, engine=engine))
            iofleet("run", plan, "--target", disk, "--label", label, data_dir=data)
    finally:
        shutil.rmtree(disk, ignore_errors=True)
    iofleet("results", "import", FIO_OUTPUT, "--label", "gamma", data_dir=data)
    with Store.open(data) as store:
        store.update_run(2, label=HOSTILE)
        store.finish_run(3, "interrupted")
        artifact_dir = Path(store.get_run(1).tests[0].artifact_dir)
    (data / "secret.txt").write_bytes(SECRET)
    (artifact_dir / "extra.txt.gz").write_bytes(gzip.compress(SECRET))  # on disk, not in the store
    _DATA.append(data)
    return data
