"""Kubernetes as a place: the inventory's `kubernetes:` section (settings.py) and its pod hosts (fleet/inventory.py PodHost),
the cluster's API (cluster.py: namespace, PVCs, fio server pods, their
facts, what a killed run left), the apiserver's port-forward to a pod
(portforward.py) and the fio image for clusters without a registry (image.py)."""
