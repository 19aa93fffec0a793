"""A remote host's node_exporter page: fetched over HTTP, read into
counters, its CPU count and memory, and the free space of a target's
filesystem."""

import posixpath
import re
import urllib.error
import urllib.request

from .counters import Counters, disk_counters


_CPU = "node_cpu_seconds_total"
_IO_TIME = "node_disk_io_time_seconds_total"
_READS = "node_disk_reads_completed_total"
_WRITES = "node_disk_writes_completed_total"
_RX = "node_network_receive_bytes_total"
_TX = "node_network_transmit_bytes_total"
_AVAIL = "node_filesystem_avail_bytes"


def exporter_samples(text: str, names: tuple[str, ...]):
    """(name, labels, value) of the named metrics in exporter text. Only their
    lines go to the parser: a whole node_exporter page (~1000 lines) takes
    ~8 ms to parse, too much once a second for many hosts."""
    from prometheus_client.parser import text_string_to_metric_families  # here: a run without node_exporter never needs it (~10 ms)

    wanted = re.compile(r"^(?:%s)[{ ].*$" % "|".join(map(re.escape, names)), re.M)
    for family in text_string_to_metric_families("\n".join(wanted.findall(text)) + "\n"):
        for s in family.samples:
            yield s.name, s.labels, s.value


def parse_exporter(text: str) -> Counters:
    """The counters in a node_exporter /metrics page."""
    c = Counters()
    per_device = {_IO_TIME: {}, _READS: {}, _WRITES: {}, _RX: {}, _TX: {}}
    for name, labels, value in exporter_samples(text, (_CPU, *per_device)):
        if name == _CPU:
            # node_exporter has no guest modes (they are inside user/nice),
            # so the sum of its modes is the total, as with /proc/stat.
            c.cpu_total = (c.cpu_total or 0.0) + value
            if labels.get("mode") in ("idle", "iowait"):
                c.cpu_idle = (c.cpu_idle or 0.0) + value
        elif "device" in labels:
            per_device[name][labels["device"]] = value
    if c.cpu_total is not None and c.cpu_idle is None:
        c.cpu_total = None  # no idle mode: busy % cannot be told
    disk_counters(c, per_device[_IO_TIME], per_device[_READS], per_device[_WRITES])
    c.net_rx_bytes = {d: v for d, v in per_device[_RX].items() if d != "lo"}
    c.net_tx_bytes = {d: v for d, v in per_device[_TX].items() if d != "lo"}
    return c


def exporter_facts(text: str) -> dict:
    """A host's CPU count and memory from its node_exporter page (None
    where the page does not say)."""
    cpus = {labels.get("cpu") for _, labels, _ in exporter_samples(text, (_CPU,))} - {None}
    memory = [value for _, _, value in exporter_samples(text, ("node_memory_MemTotal_bytes",))]
    return {"cpus": len(cpus) or None, "memory_bytes": int(memory[0]) if memory else None}


_SIZE = "node_filesystem_size_bytes"
_FS_ERROR = "node_filesystem_device_error"


def free_bytes(metrics_text: str, path: str) -> int | None:
    """Bytes available to users on the filesystem holding `path`: that of the
    longest mountpoint containing it, component-wise (/mnt/a holds /mnt/a/x,
    not /mnt/ab). None when the exporter does not list one, or cannot read
    it: a statfs error, or a size of 0 (a FUSE mount without allow_other
    answers node_exporter's user with zeros, not an error). A mount the
    exporter leaves out (Debian's excludes /mnt, /media and /run) is not
    seen at all: the one around it answers; the SSH facts (statvfs through
    df, fleet/control/host.py) say the target's own."""
    if not path.startswith("/"):
        return None  # a host's own path is absolute; a relative one names nothing
    path = posixpath.normpath(path)
    best, found = -1, {}  # the longest mountpoint holding path: its figures by metric name
    for name, labels, value in exporter_samples(metrics_text, (_AVAIL, _SIZE, _FS_ERROR)):
        mount = labels.get("mountpoint", "")
        inside = mount == "/" or path == mount or path.startswith(mount.rstrip("/") + "/")
        # >= : of two mounts on one mountpoint, the later one is the visible one
        if mount.startswith("/") and inside and len(mount) >= best:
            if len(mount) > best:
                best, found = len(mount), {}
            found[name] = value
    if found.get(_FS_ERROR) or found.get(_SIZE) == 0 or _AVAIL not in found:
        return None
    return int(found[_AVAIL])


def _why(exc: Exception) -> str:
    """'connection refused', 'timed out', 'HTTP 404 Not Found', ..."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    reason = getattr(exc, "reason", exc)  # URLError wraps the socket's error
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


# Exporters are on the hosts' own network: never go through an http_proxy
# from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch_metrics(url: str, timeout: float = 3.0) -> str:
    """The text of an exporter's /metrics page. Raises OSError saying why
    not, in a few words ('connection refused', 'timed out', 'HTTP 404 Not Found')."""
    try:
        with _OPENER.open(url, timeout=timeout) as resp:
            return resp.read().decode("utf-8", "replace")
    except (OSError, ValueError) as exc:  # ValueError: not an http URL
        raise OSError(_why(exc)) from None
