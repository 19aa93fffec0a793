import shutil

import pytest

from tests.conftest import ROOT
from tests.webserver import start_server


@pytest.fixture
def server(tmp_path):
    """A real `iofleet serve` on a fresh results directory (no token, loopback)."""
    s = start_server(tmp_path / "data")
    yield s
    s.stop()


@pytest.fixture
def disk(tmp_path):
    d = ROOT / "scratch" / "tests" / f"web-{tmp_path.name}"  # a real disk, not tmpfs
    d.mkdir(parents=True, exist_ok=True)
    yield d
    shutil.rmtree(d, ignore_errors=True)
