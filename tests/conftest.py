import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
ARTIFACTS = ROOT / "test-artifacts"


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
