"""The SSH control channel (ssh) and what it does on a host that fio
cannot: caches and facts (host), deploy and undeploy fio servers (deploy),
scenario faults (faults)."""
