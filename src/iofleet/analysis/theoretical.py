"""The theoretical model: what the hardware should deliver for a block size
and read share, bounded by the devices (their IO budget after the layout's
write penalty) or by the network, and a run's measured share of it.

Pure computation: no store, no printing. The formulas and their reasons are
in docs/model.md.
"""

from dataclasses import dataclass, field

from ..errors import IofleetError
from ..plan.hardware import HardwareModel
from ..plan.units import format_size
from ..results.model import Run, TestRecord

MB = 1e6  # MB/s are 10^6 bytes/s throughout iofleet


@dataclass(frozen=True)
class Device:
    """One device's figures; `sources` says where each came from when they
    were taken from a run (figure name → test)."""

    read_iops: float
    write_iops: float
    read_mb_s: float
    write_mb_s: float
    read_bs: int = 4096  # block size the IOPS figures were measured at
    write_bs: int = 4096
    sources: dict[str, str] = field(default_factory=dict)

    def read_iops_at(self, bs: int) -> float:
        # A device is IOPS-bound at small blocks and bandwidth-bound at large
        # ones; one IOPS and one MB/s figure give both ceilings.
        return min(self.read_iops, self.read_mb_s * MB / bs)

    def write_iops_at(self, bs: int) -> float:
        return min(self.write_iops, self.write_mb_s * MB / bs)


def entered_device(model: HardwareModel) -> Device:
    """The device figures written in the model file."""
    d = model.device
    if d.run is not None:
        raise IofleetError(f"the model takes its device figures from run {d.run}; load them with device_from_run")
    bs = d.bs or 4096
    return Device(d.read_iops, d.write_iops, d.read_mb_s, d.write_mb_s, bs, bs)


@dataclass(frozen=True)
class Penalty:
    """What one client write costs the back end: device reads and writes of
    the client's block size, and bytes sent host to host per byte written."""

    reads: float
    writes: float
    forwarded: float
    why: str

    @property
    def total(self) -> float:
        return self.reads + self.writes


def write_penalty(model: HardwareModel, bs: int, pattern: str = "random") -> Penalty:
    """The layout's write penalty for a client write of `bs` bytes."""
    across_hosts = model.hosts > 1
    if model.layout == "raid0":
        return Penalty(0, 1, 0, "raid0: each write goes to one device")
    if model.layout == "mirror":
        c = model.mirror_copies
        where = f"on {c} hosts" if across_hosts else "on the host's devices"
        return Penalty(0, c, c - 1 if across_hosts else 0, f"mirror: {c} copies written {where}")
    k, m = model.data_parity()
    # Parity RAID is inside each host; erasure spreads a stripe's chunks over hosts.
    spread = model.layout == "erasure" and across_hosts
    stripe = k * model.stripe_unit if model.stripe_unit else None
    if pattern == "sequential" and stripe and bs >= stripe:
        return Penalty(0, (k + m) / k, (k + m - 1) / k if spread else 0,
                       f"{model.layout} {k}+{m} full stripe: {k + m} chunks written per {k} of data")
    return Penalty(m + 1, m + 1, m if spread else 0,
                   f"{model.layout} {k}+{m} read-modify-write: read and write data + {m} parity")


@dataclass(frozen=True)
class Expected:
    """What the hardware should deliver for one workload."""

    bs: int
    read_pct: int
    pattern: str
    penalty: Penalty
    device_iops: float  # the devices' IO budget after the write penalty
    network_iops: float | None  # None: no NIC speed given, no network cap
    iops: float
    bound: str  # "devices" or "network"

    @property
    def mb_s(self) -> float:
        return self.iops * self.bs / MB

    @property
    def name(self) -> str:
        return f"{format_size(self.bs)}-r{self.read_pct}-{'rand' if self.pattern == 'random' else 'seq'}"


def network_iops(model: HardwareModel, bs: int, read_share: float, penalty: Penalty) -> float | None:
    """Client IOPS the hosts' NICs carry. Links are full duplex; clients are
    outside the hosts: reads leave a host once, writes enter it once, and
    copies or parity for other hosts leave one host and enter another."""
    if model.nic_gbps is None:
        return None
    w = 1 - read_share
    out_bytes = read_share + w * penalty.forwarded  # per client IO, in units of bs
    in_bytes = w * (1 + penalty.forwarded)
    link_bytes_s = model.nic_gbps * 1e9 / 8
    return model.hosts * link_bytes_s / (bs * max(out_bytes, in_bytes))


def expected(model: HardwareModel, device: Device, bs: int, read_pct: int, pattern: str = "random") -> Expected:
    """The device-bound and network-bound IOPS of one workload, and which applies."""
    r = read_pct / 100
    w = 1 - r
    penalty = write_penalty(model, bs, pattern)
    read_time = 1 / device.read_iops_at(bs)  # device-seconds per back-end IO
    write_time = 1 / device.write_iops_at(bs)
    # Each client IO costs the devices r reads plus w × (penalty's reads and
    # writes); N devices share that budget. With equal read and write IOPS this
    # is N · IOPS / (r + w · penalty).
    per_io = r * read_time + w * (penalty.reads * read_time + penalty.writes * write_time)
    dev = model.devices / per_io
    net = network_iops(model, bs, r, penalty)
    bound = "network" if net is not None and net < dev else "devices"
    return Expected(bs, read_pct, pattern, penalty, dev, net, min(dev, net) if net is not None else dev, bound)


def model_table(model: HardwareModel, device: Device) -> list[Expected]:
    """One row per workload of the model file."""
    return [expected(model, device, w.bs, w.read_pct, w.pattern) for w in model.workloads]


def _one_host(test: TestRecord) -> bool:
    return len(test.host_aggregates()) <= 1


def _iops(test: TestRecord, direction: str) -> float:
    return test.figures().direction(direction).iops or 0.0


def _mb_s(test: TestRecord, direction: str) -> float:
    return test.figures().direction(direction).bw_mb_s or 0.0


def device_from_run(run: Run) -> Device:
    """Device figures from a stored run on one device: the best 100 %-read
    test for the read figures and the best 0 %-read test for the write
    figures (IOPS and MB/s each from its own best test)."""
    run_id = run.id
    ok = [t for t in run.tests if t.status == "ok" and _one_host(t)
          and (t.params or {}).get("bs") and (t.params or {}).get("read_pct") is not None]
    found, sources = {}, {}
    for direction, pct in (("read", 100), ("write", 0)):
        tests = [t for t in ok if t.params["read_pct"] == pct]
        if not tests:
            raise IofleetError(
                f"run {run_id} has no successful {pct} %-read test on one host, so it gives no {direction} "
                f"figures; use a run with a read-only and a write-only test (e.g. `iofleet easy-run`) "
                f"or enter read_iops, write_iops, read_mb_s and write_mb_s under device")
        best_iops = max(tests, key=lambda t: _iops(t, direction))
        best_bw = max(tests, key=lambda t: _mb_s(t, direction))
        found[f"{direction}_iops"] = _iops(best_iops, direction)
        found[f"{direction}_mb_s"] = _mb_s(best_bw, direction)
        found[f"{direction}_bs"] = best_iops.params["bs"]
        sources[f"{direction}_iops"] = f"run {run_id} test {best_iops.id}"
        sources[f"{direction}_mb_s"] = f"run {run_id} test {best_bw.id}"
    for name in ("read_iops", "write_iops", "read_mb_s", "write_mb_s"):
        if found[name] <= 0:
            raise IofleetError(f"run {run_id}: {sources[name].split('test ')[1]} measured no IO; "
                               f"use another run or enter the device figures")
    return Device(sources=sources, **found)


@dataclass(frozen=True)
class Measured:
    """One test of a run beside what the model expects of it."""

    test: str
    expected: Expected
    iops: float
    mb_s: float

    @property
    def share_pct(self) -> float:
        """Measured as a share of what the hardware should deliver."""
        return 100 * self.iops / self.expected.iops


@dataclass
class Comparison:
    rows: list[Measured]
    skipped: list[str]  # "test: reason"
    notes: list[str]


def measured_vs_theoretical(run: Run, model: HardwareModel, device: Device | None = None) -> Comparison:
    """Each ok test of a run with its expected IOPS and MB/s; random_pct 0
    counts as sequential."""
    device = device or entered_device(model)
    rows, skipped, host_counts = [], [], set()
    for t in run.tests:
        name = t.id if t.repeat == 1 else f"{t.id} #{t.repeat}"
        params = t.params or {}
        if t.status != "ok":
            skipped.append(f"{name}: {t.status}")
            continue
        if not params.get("bs") or params.get("read_pct") is None:
            mixed = t.fleet is not None and bool(t.fleet.groups)
            why = "mixed test: host groups ran different workloads" if mixed else \
                "its block size or read share is unknown"
            skipped.append(f"{name}: {why}")
            continue
        pattern = "sequential" if params.get("random_pct") == 0 else "random"
        exp = expected(model, device, params["bs"], params["read_pct"], pattern)
        rows.append(Measured(name, exp, _iops(t, "all"), _mb_s(t, "all")))
        host_counts.add(max(1, len(t.host_aggregates())))
    notes = []
    if host_counts and host_counts != {model.hosts}:
        ran = ", ".join(str(h) for h in sorted(host_counts))
        notes.append(f"the run's tests ran on {ran} host(s) but the model has {model.hosts}: "
                     f"the share compares the run's total with the whole modelled system")
    return Comparison(rows, skipped, notes)
