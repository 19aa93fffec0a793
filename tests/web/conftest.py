import pytest

from tests.webserver import start_server


@pytest.fixture
def server(tmp_path):
    """A real `iofleet serve` on a fresh results directory (no token, loopback)."""
    s = start_server(tmp_path / "data")
    yield s
    s.stop()
