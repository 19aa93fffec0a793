"""Diagnostics rules on the hosts that make the load: a client whose CPU
or fio jobs are the limit, a network at its line rate, hosts that lag."""

from __future__ import annotations

import math
import statistics
from collections import namedtuple
from typing import Iterator

from ...fleet.network_check import OUTLIER, rate_text
from ...results.methodology import NetworkRecord
from ..host_facts import how_hosts_differ
from ..little import in_flight, little_holds, little_ratio, outstanding_io
from ..stragglers import stragglers
from .context import Hit, JudgedRun, as_percent, cpu_hot, host_count, per_host_text, storage_hot, values_of
from .thresholds import Thresholds

MB_S_PER_GBPS = 125  # 1 Gbit/s = 125 MB/s (10^6 bytes)


def _span(values) -> str:
    """"92" or "88–92": the range of some percentages."""
    values = list(values)
    low, high = min(values, default=math.nan), max(values, default=math.nan)
    return f"{low:.0f}" if f"{low:.0f}" == f"{high:.0f}" else f"{low:.0f}–{high:.0f}"


def client_bound(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    for i, t in run.tests:
        evidence, changes = [], []
        storage = storage_hot(t, th)
        if storage:
            continue  # the storage's own daemons took the CPU: storage_cpu says so, and more fio would not help
        hot = cpu_hot(t, th)
        if hot:
            cpus = [m.cpu for m in hot.values()]
            avg = _span(c.avg_pct for c in cpus)
            top = _span(c.max_pct for c in cpus if c.max_pct is not None)
            on = f" on {', '.join(hot)}" if host_count(t) > 1 else ""
            split = all(c.fio_avg_pct is not None for c in cpus)
            shares = (f": fio {_span(c.fio_avg_pct for c in cpus)} %, storage daemons "
                      f"{_span(c.storage_avg_pct for c in cpus)} %, other "
                      f"{_span(c.other_avg_pct for c in cpus)} %") if split else ""
            evidence.append(f"host CPU {avg} % avg (max {top} %){on} > {th.host_cpu_pct:g} %{shares}")
            if split and any(c.fio_avg_pct < c.other_avg_pct for c in cpus):
                # Other processes (or the kernel's work for them) took more of it than fio did.
                changes.append("add hosts, or find what else kept the host's CPU busy (`other`: not fio, not a "
                               "storage daemon) and run where it does not")
            else:
                changes.append("add hosts: the same outstanding IO spread over more clients")
        figures = t.figures()
        job_cpu = (figures.fio_usr_cpu_pct or 0) + (figures.fio_sys_cpu_pct or 0)
        if job_cpu >= th.job_cpu_pct:
            evidence.append(f"fio used {job_cpu:.0f} % of a CPU per job (≥ {th.job_cpu_pct:g} %)")
        ratio = little_ratio(t)
        tolerance = th.little_tolerance_pct / 100
        if little_holds(ratio, tolerance) is False:
            seen = in_flight(figures.all.iops, figures.all.lat_mean_us)
            evidence.append(f"IOPS × mean latency = {seen:.2f} IOs in flight of {outstanding_io(t)} outstanding "
                            f"(ratio {ratio:.2f}, outside 1 ± {tolerance:g})")
        if hot:
            pass  # more jobs on a host whose CPU is spent would not help
        elif (job_cpu >= th.job_cpu_pct or (ratio is not None and ratio < 1 - tolerance)) \
                and run.more_jobs_no_better(t):
            continue  # the run measured more jobs at this outstanding IO: no more IOPS, so fio is not the limit
        elif job_cpu >= th.job_cpu_pct or (ratio is not None and ratio < 1 - tolerance):
            jobs = values_of(t, "jobs")
            more = f" (from {jobs[0]} to {2 * jobs[0]}{per_host_text(t)})" if len(jobs) == 1 else ""
            changes.append(f"add jobs{more}: fio itself could not keep its IOs in flight")
        elif ratio is not None and ratio > 1 + tolerance:
            changes.append("rerun the test: its figures hold more IOs in flight than it asked for")
        if evidence:
            host = next(iter(hot)) if len(hot) == 1 and host_count(t) > 1 else None
            yield run.hit(i, t, "; ".join(evidence), "; ".join(changes), host=host)


def _names(by_name: dict | None) -> str:
    """"ceph-osd 40 %, ceph-fuse 17 %": the busiest storage processes."""
    shown = [(n, p) for n, p in (by_name or {}).items() if round(p) >= 1]
    return ", ".join(f"{n} {p:.0f} %" for n, p in shown)


def storage_cpu(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    """A host whose CPU was spent, mostly by the storage's own daemons and
    clients beside fio (ceph-osd, ceph-fuse, ...): a hyperconverged host.
    The figures are the storage's, under contention with the load it
    serves; adding fio jobs or hosts there would not help."""
    for i, t in run.tests:
        fleet = host_count(t) > 1
        for host, m in storage_hot(t, th).items():
            cpu = m.cpu
            names = _names(cpu.storage_by_name)
            on = f"{host}: " if fleet else ""
            top = f" (max {cpu.max_pct:.0f} %)" if cpu.max_pct is not None else ""
            yield run.hit(
                i, t,
                f"{on}host CPU {cpu.avg_pct:.0f} % avg{top} > {th.host_cpu_pct:g} %: "
                f"{cpu.storage_avg_pct:.0f} % storage daemons" + (f" ({names})" if names else "")
                + f" beside fio's {cpu.fio_avg_pct:.0f} % (other {cpu.other_avg_pct:.0f} %): a "
                f"hyperconverged host, where fio competes with the storage for CPU",
                "run fio on hosts that do not serve the storage, or count this CPU as the storage's cost "
                "(more fio jobs or hosts would not help: fio is not what used it)",
                host=host if fleet else None)


def network_bound(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    for i, t in run.tests:
        if not t.fleet:
            continue
        hosts = t.host_figures()
        for host in t.fleet.hosts or []:
            nic, figures = run.nics.get(host), hosts.get(host)
            if not nic or not figures or figures.all.bw_mb_s is None:
                continue
            mb_s, line = figures.all.bw_mb_s, nic * MB_S_PER_GBPS
            if mb_s >= th.nic_pct / 100 * line:
                yield run.hit(i, t, f"{host}: {mb_s:,.1f} MB/s = {as_percent(mb_s / line)} of its {nic:g} Gbit/s NIC "
                                    f"({line:,.0f} MB/s; ≥ {th.nic_pct:g} %)",
                              f"the network, not the storage, limits {host}: give it a faster network or spread the "
                              f"load over more hosts (or correct its nic_gbps in the inventory)", host=host)


def host_imbalance(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    # stragglers() reads a.all.iops of each host's figures.
    figures = namedtuple("figures", "all")
    iops = namedtuple("iops", "iops")
    for i, t in run.tests:
        hosts = t.host_figures()
        if not t.fleet or len(hosts) < 2:
            continue
        # Hosts are only comparable when they ran the same workload: per group in a mixed test.
        groups = {g: info.hosts for g, info in (t.fleet.groups or {}).items()} or {None: list(hosts)}
        for group, members in groups.items():
            per_host = {h: figures(iops(hosts[h].all.iops or 0)) for h in members if h in hosts}
            slow = stragglers(per_host, th.straggler_pct / 100)
            if not slow:
                continue
            median = statistics.median(f.all.iops for f in per_host.values())
            names = ", ".join(f"{h}: {per_host[h].all.iops:,.0f} IOPS = {as_percent(share)}" for h, share in slow)
            where = f" in group {group}" if group else ""
            slow_names = [h for h, _ in slow]
            # What the SSH facts show of them (another kernel, device model, ...), else where to look.
            differs = how_hosts_differ(slow_names, {h: f for h, f in run.facts.items() if h in per_host})
            found = f"; {', '.join(slow_names)} differ{'s' if len(slow) == 1 else ''}: {differs}" if differs else ""
            links = [line for h in slow_names for line in link_evidence(run.network, h)]
            if links:  # the run's last network check explains it
                found += f"; the network check of run {run.network.run} measured {'; '.join(links)}"
            look = "that difference, " if differs else ""
            fix = (f"fix the network first: {', '.join(slow_names)}'s link{'s' if len(slow) > 1 else ''} "
                   f"(`ethtool`, cabling, switch port, shaping), then check it again with `iofleet hosts network "
                   f"INVENTORY`; " if links else "")
            yield run.hit(i, t, f"{names} of the median host's {median:,.0f} IOPS{where} "
                                f"(< {th.straggler_pct:g} %){found}",
                          f"{fix}check what differs on {', '.join(slow_names)} ({look}its targets' devices, network, "
                          f"CPU, other load), or leave {'it' if len(slow) == 1 else 'them'} out of the inventory",
                          host=slow[0][0] if len(slow) == 1 else None)


def link_evidence(net: NetworkRecord | None, host: str) -> list[str]:
    """What a network check measured of `host`'s links that stands out:
    pings lost, the expected MTU not passing, a bandwidth below 1/OUTLIER
    of the median of the links without it (the check's own rule)."""
    if not net:
        return []
    mine = [k for k in net.links if k.touches(host)]
    out = []
    for k in mine:
        if k.sent and k.received is not None and k.received < k.sent:
            lost = "all pings lost" if k.received == 0 else f"{100 * (1 - k.received / k.sent):.0f} % of pings lost"
            out.append(f"{k.name}: {lost}")
        elif k.mtu_sent and k.mtu_received == 0:
            out.append(f"{k.name}: packets of {k.mtu} bytes (the expected MTU) do not pass")
    others = [k.bits_per_s for k in net.links if k.bits_per_s and not k.touches(host)]
    rates = [k for k in mine if k.bits_per_s]
    if others and rates:
        slowest = min(rates, key=lambda k: k.bits_per_s)
        median = statistics.median(others)
        if slowest.bits_per_s < median / OUTLIER:
            out.append(f"{host}'s link {slowest.name} at {rate_text(slowest.bits_per_s)} "
                       f"against a median of {rate_text(median)} for the others")
    return out

