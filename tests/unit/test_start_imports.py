"""`iofleet` starts without the libraries a command does not use: each
`iofleet` command imports the CLI, and a fleet run's start-up is measured
from the command's start (issue 19: 64 hosts running in under 5 s).
Checked in a fresh interpreter, as a user's command starts."""

import json
import subprocess
import sys

# Libraries of other commands or later steps: SSH (only an inventory with
# `ssh:`), statistics and charts (analysis, reports), the web server.
NOT_AT_START = ("asyncssh", "scipy", "plotly", "jinja2", "fastapi", "starlette", "uvicorn", "kneed")


def _modules_after(code: str) -> set[str]:
    """The modules loaded once `code` has run in a fresh python, with their packages' names."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted({p for m in sys.modules for p in (m, m.split('.')[0])})))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_cli_imports_no_study_library():
    loaded = _modules_after("import iofleet.cli.main")
    assert "typer" in loaded  # the check sees what the CLI imports
    assert not loaded & {*NOT_AT_START, "numpy", "prometheus_client"}


def test_a_fleet_run_without_ssh_reaches_its_hosts_without_asyncssh(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: p\ndefaults: {size: 1m, runtime: 1s}\nworkloads:\n  - {name: w, bs: 4k}\n")
    inventory = tmp_path / "inventory.yaml"
    # Nothing listens on port 1: the run stops at its host check, after every start-up import.
    inventory.write_text(f"hosts:\n  - {{name: h1, address: '127.0.0.1:1', targets: ['{tmp_path}']}}\n")
    args = ["run", str(plan), "--hosts", str(inventory), "--data-dir", str(tmp_path / "data")]
    loaded = _modules_after(
        "import contextlib, io\nfrom iofleet.cli.main import app\n"
        "with contextlib.redirect_stderr(io.StringIO()) as err:\n"
        f"    try:\n        app({args!r})\n    except SystemExit as exc:\n        code = exc.code\n"
        "assert code == 2 and 'fio server not reachable' in err.getvalue(), (code, err.getvalue())\n")
    assert {"iofleet.studies.run", "iofleet.fleet.check"} <= loaded  # it ran the study up to the host check
    assert not loaded & {*NOT_AT_START, "prometheus_client"}
