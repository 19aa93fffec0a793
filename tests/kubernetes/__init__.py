"""Tests on a real two-node Kubernetes cluster (cluster.py, conftest.py)."""
