"""Fixtures for the Ceph tests: a real Ceph micro-cluster (cluster.py) on
the bridge of a 2-host test fleet (tests/fleet/testfleet.py). They need root,
the Ceph packages, /dev/loop-control and /dev/fuse; elsewhere the tests are
skipped.

- `ceph` (package scope): a CephEnv with `.cluster`, a started CephCluster
  whose public address is the fleet's gateway, and `.fleet`, the TestFleet
  of hosts h1 and h2 (sshd on each; fio servers with CEPH_CONF of the
  cluster in their environment). Started once, on first use (about 10-25 s),
  and torn down when the tests of tests/ceph have run (not kept busy beside
  the rest of the suite), also when tests fail or pytest gets SIGTERM.
"""

import subprocess
from dataclasses import dataclass

import pytest

from ..fleet.prerequisites import unavailable_reason as fleet_unavailable_reason
from ..fleet.processes import sigterm_as_interrupt
from ..fleet.testfleet import TestFleet
from .cluster import CephCluster, unavailable_reason


@dataclass
class CephEnv:
    cluster: CephCluster
    fleet: TestFleet


def _fio_rbd_missing() -> str | None:
    proc = subprocess.run(["fio", "--enghelp=rbd"], capture_output=True, timeout=30)
    return None if proc.returncode == 0 else "this fio has no rbd engine (Debian's fio has)"


@pytest.fixture(scope="package")
def ceph():
    reason = fleet_unavailable_reason(ssh=True) or unavailable_reason() or _fio_rbd_missing()
    if reason:
        pytest.skip(reason)
    with sigterm_as_interrupt():
        # The fio servers start only once the cluster is up: they need its
        # conf's path (CEPH_CONF), and the cluster needs the fleet's bridge.
        with TestFleet(2, ssh=True, fio_server=False) as fleet:
            with CephCluster(fleet.base_dir, fleet.gateway, fleet.subnet) as cluster:
                fleet.env.update(cluster.env)
                for host in fleet.hosts:
                    fleet.restart_server(host.name)
                yield CephEnv(cluster, fleet)
