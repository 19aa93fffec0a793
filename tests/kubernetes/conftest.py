"""Fixtures for the Kubernetes tests: a real two-node cluster (cluster.py).
They need root; elsewhere the tests are skipped. A missing binary is an
error that says to run `make kubernetes`.

- `kube_cluster` (package scope): a started KubeCluster (nodes kube-a and
  kube-b Ready, the fio and pause images on both), started on first use
  (9-11 s on a 2-core VM) and torn down to nothing (3-7 s) at the end of the
  session, also when tests fail or pytest gets SIGTERM (and at exit, as a
  last resort). The teardown fails the session if anything of the cluster
  is left.
- `kube_namespace`: a fresh namespace (its default service account there),
  deleted after the test with everything in it.
"""

import secrets

import pytest

from ..fleet.processes import sigterm_as_interrupt
from .cluster import KubeCluster, unavailable_reason


@pytest.fixture(scope="package")
def kube_cluster():
    if (reason := unavailable_reason()):
        pytest.skip(reason)
    with sigterm_as_interrupt():
        cluster = KubeCluster()
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.stop()  # raises if anything is left


@pytest.fixture
def kube_namespace(kube_cluster):
    from kubernetes import client

    name = f"t-{secrets.token_hex(3)}"
    kube_cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    kube_cluster.wait_service_account(name)
    yield name
    kube_cluster.core.delete_namespace(name)
