import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def disk_dir(tmp_path_factory):
    """A directory on a real disk filesystem (not tmpfs) for fio data, so
    direct IO behaves as it does on storage under test."""
    base = Path(os.environ.get("IOFLEET_TEST_DIR", ROOT / "scratch" / "tests"))
    base.mkdir(parents=True, exist_ok=True)
    d = Path(tmp_path_factory.mktemp("disk", numbered=True))
    target = base / d.name
    target.mkdir(parents=True, exist_ok=True)
    yield target
    shutil.rmtree(target, ignore_errors=True)


@pytest.fixture
def data_dir(tmp_path):
    """A fresh results directory."""
    return tmp_path / "data"


@pytest.fixture
def spawn():
    """Start `iofleet ...` in the background; never leave it running after the test."""
    procs = []

    def start(*args, data_dir):
        env = dict(os.environ, IOFLEET_DATA=str(data_dir))
        p = subprocess.Popen([sys.executable, "-m", "iofleet", *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
