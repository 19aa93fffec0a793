"""Fixtures for the fleet tests: real `fio --server` hosts in network
namespaces (see testfleet.py). They need root; elsewhere the tests are skipped.

- `make_fleet(n, metrics=False, **kw)`: start a fleet of n hosts (a
  TestFleet), removed after the test; may be called more than once.
- `fleet4`: four hosts h1..h4, one fresh fleet per test (starting one takes
  about 0.2 s, so tests stay isolated: a killed host never leaks into the
  next test).
- `loop_target`: a directory on an ext4 filesystem on a loop device, on
  this host (device-slow with `--target`).

Every fleet first removes what crashed earlier runs left behind
(`cleanup_stale`), so a killed pytest never breaks the next run.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iofleet.fleet.control.fault_kinds.device_slow import BLKIO_ROOT

from .network import FleetError
from .prerequisites import unavailable_reason
from .processes import sigterm_as_interrupt
from .testfleet import TestFleet


@pytest.fixture
def make_fleet():
    fleets: list[TestFleet] = []

    def make(n: int, metrics: bool = False, **kw) -> TestFleet:
        reason = unavailable_reason(metrics)
        if reason:
            pytest.skip(reason)
        fleet = TestFleet(n, metrics=metrics, **kw)
        fleets.append(fleet)
        return fleet.__enter__()  # cleans up after itself if it fails to start

    with sigterm_as_interrupt():
        try:
            yield make
        finally:
            problems = []
            for fleet in reversed(fleets):
                try:
                    fleet.close()
                except FleetError as exc:
                    problems.append(str(exc))
            if problems:
                pytest.fail("; ".join(problems), pytrace=False)


@pytest.fixture
def fleet4(make_fleet) -> TestFleet:
    return make_fleet(4)


@pytest.fixture
def loop_target(tmp_path):
    """A directory on an ext4 filesystem on a 96 MiB loop device."""
    if os.geteuid() != 0 or not Path(BLKIO_ROOT).is_dir() or not shutil.which("losetup"):
        pytest.skip("needs root, losetup and the blkio cgroup (v1)")
    image, mnt = tmp_path / "disk.img", tmp_path / "mnt"
    with open(image, "wb") as f:
        f.truncate(96 * 2**20)
    dev = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=True)
    dev = dev.stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        mnt.mkdir()
        subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True)
        try:
            yield mnt
        finally:
            subprocess.run(["umount", str(mnt)], capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)
