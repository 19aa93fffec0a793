"""This host's counters from /proc: CPU (/proc/stat), every process's CPU
(/proc/PID/stat), disks (/proc/diskstats) and network (/proc/net/dev)."""

import os

from .counters import Counters, disk_counters


def proc_stat_entry(line: bytes) -> tuple[tuple[int, int], str, int] | None:
    """One /proc/PID/stat line → ((pid, start time), comm, utime + stime),
    or None when it cannot be read. The comm is in parentheses and may hold
    spaces and parentheses itself: the fields are after its last ')'.
    utime, stime and starttime are fields 14, 15 and 22 (proc(5)); a
    process's own figures include all of its threads (fio's job threads)."""
    head, sep, tail = line.rpartition(b")")
    pid, _, comm = head.partition(b" (")
    fields = tail.split()
    if not sep or len(fields) < 20:
        return None
    try:
        return (int(pid), int(fields[19])), comm.decode("utf-8", "replace"), int(fields[11]) + int(fields[12])
    except ValueError:
        return None


def read_procs(proc: str = "/proc") -> dict[tuple[int, int], tuple[str, int]]:
    """Every process's CPU so far: (pid, start time) → (comm, utime +
    stime in clock ticks, /proc/stat's unit). One pass over /proc; a
    process that ends meanwhile is skipped."""
    out = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"{proc}/{name}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            line = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        entry = proc_stat_entry(line)
        if entry:
            out[entry[0]] = entry[1:]
    return out


def read_local(proc: str = "/proc") -> Counters:
    """The counters of this host, from /proc (a missing file: those fields
    stay missing)."""
    c = Counters()
    try:
        c.procs = read_procs(proc)
    except OSError:
        pass
    try:
        with open(f"{proc}/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        c.cpu_idle = fields[3] + fields[4]  # idle + iowait
        c.cpu_total = sum(fields[:8])  # guest time is already inside user/nice
    except (OSError, ValueError, IndexError):
        pass
    io_time, reads, writes = {}, {}, {}
    try:
        with open(f"{proc}/diskstats") as f:
            for line in f:
                p = line.split()
                if len(p) >= 14:  # fields 4 reads, 8 writes completed, 13 io_ticks (ms)
                    reads[p[2]], writes[p[2]], io_time[p[2]] = int(p[3]), int(p[7]), int(p[12]) / 1000
    except OSError:
        pass
    disk_counters(c, io_time, reads, writes)
    try:
        with open(f"{proc}/net/dev") as f:
            for line in f.readlines()[2:]:  # two header lines
                name, _, data = line.partition(":")
                p, name = data.split(), name.strip()
                if name != "lo" and len(p) >= 9:
                    c.net_rx_bytes[name], c.net_tx_bytes[name] = int(p[0]), int(p[8])
    except OSError:
        pass
    return c
