"""Where the tests run, in parts:

- places/: the place protocol (base) and its two places, this host (local)
  and fio servers at once (fleet); `place_for` picks one.
- targets/: the target protocol (base) and its kinds, one module each
  (directory, device, rbd; found by listing the package), with what
  belongs to a target: its lock, facts, iofleet's files, engine, free
  space, a device's safety checks, and the data kept on it between runs.
- fio_link/: fio itself, here (runner) and on the hosts through one client
  and iofleet's relay (remote, relay), its processes and scratch dirs.
- control/: the SSH control channel (ssh) and what it does that fio cannot:
  caches and facts (host), deploy, scenario faults.
- The hosts: the inventory, their facts and metrics, the check before a
  fleet run (check), this machine's own facts and caches (local).
"""
