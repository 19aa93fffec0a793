"""This machine: what a result says about where it came from, and
dropping its kernel caches."""

import os
import platform
import socket
from pathlib import Path

from .facts_records import MachineFacts


def this_machine() -> MachineFacts:
    """What a result needs to say about where it came from."""
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    return MachineFacts(hostname=socket.gethostname(), kernel=platform.release(), os=platform.platform(terse=True),
                        cpus=os.cpu_count(), memory_bytes=mem)


def host_facts() -> dict:
    """this_machine() as a run stores it (Run.host_facts)."""
    return this_machine().to_dict()


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_kernel_caches() -> str | None:
    """Write dirty data back, then drop this host's clean page cache,
    dentries and inodes (root only). None when done, else why not."""
    if os.geteuid() != 0:
        return "not root"
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError as exc:
        return f"cannot write {DROP_CACHES} ({exc.strerror})"
    return None
