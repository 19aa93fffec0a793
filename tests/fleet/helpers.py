"""What the fleet tests share: short test settings, iofleet's data files on
the hosts, and the wait until a run's fio jobs are busy on a host."""

import time

SHORT = {"size": "4m", "runtime": "2s", "ramp": "1s", "iodepth": 2, "engine": "psync"}
# On a fio server, fio prefixes iofleet's directory with the host's address.
DATA_FILES = "*iofleet/iofleet-data.*"


def data_files(fleet) -> list:
    """iofleet's data files on every host of the fleet."""
    return [f for h in fleet.hosts for f in h.target.glob(DATA_FILES)]


def host_files(fleet, name: str) -> list:
    """iofleet's data files on one host, sorted."""
    return sorted(fleet.host(name).target.glob(DATA_FILES))


def wait_for_jobs(fleet, name, timeout=30):
    """Until fio jobs run on the host and have opened their files, plus 1 s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fleet.fio_processes(name) and any(fleet.host(name).target.glob(DATA_FILES)):
            time.sleep(1)
            return
        time.sleep(0.2)
    raise AssertionError(f"no fio job started on {name}")
