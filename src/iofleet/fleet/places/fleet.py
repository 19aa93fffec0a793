"""fio servers as the place of a run: every host at once through one fio
client and iofleet's relay, each host with its own targets."""

import collections
import os
import threading
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from ...errors import FioError
from ...fio.command import error_line
from ...fio.jobfile import render_prepare, render_test
from ...plan.expand import MixedStep, TestSpec, expand, expand_mixed, prepare_tiers
from ..check import HostCheckError, filesystem_problems, problem_line, require_ready
from ..control.host import NO_SSH, drop_caches
from ..control.host import host_facts as ssh_host_facts
from ..facts_records import RecordedHost, SeenHost
from ..inventory import Host, host_groups
from ..targets.kept import KeptData, host_key, kept_entry, prepared_state
from ..metrics.node_exporter import exporter_facts, fetch_metrics
from ..metrics.records import mean_cpu
from ..metrics.sampler import MetricsSampler
from .base import (CONTROLLER, Measured, Place, Prepared, collect_artifacts, prepare_sizes, test_timeout, verdict,
                   written_bytes)
from ..fio_link.remote import cleanup_fleet, lost_reason, resolve_fleet_engines, run_on_hosts
from ..fio_link.live_rounds import LiveRounds, SteadyWatch, not_decoded_note
from ..fio_link.runner import LiveHosts, read_series, rebase_series
from ..targets import Access, target_for
from ..targets.lock import TargetLock, holder_facts
from ..fio_link.workdir import work_dir


class FleetPlace(Place):
    """Hosts running `fio --server`, each with its own targets."""

    order = 10

    @classmethod
    def takes(cls, hosts):
        return bool(hosts)

    @classmethod
    def for_plan(cls, plan, hosts, access):
        """A mixed plan's workloads each on its host group, at once."""
        groups = host_groups(hosts, {w.name: w.hosts for w in plan.workloads}) if plan.mixed else None
        place = cls(hosts, groups, clear_cache=plan.clear_cache, destroy_data=plan.destroy_data, access=access)
        return place, expand_mixed(plan) if plan.mixed else expand(plan)

    def __init__(self, hosts: list[Host], groups: dict[str, list[str]] | None = None, clear_cache: bool = True,
                 destroy_data: list[str] = (), access: Access = Access()):
        self.hosts = hosts
        # Each host's target, as it names it there (an image: one of its own).
        self.targets = {h.name: target_for(h.targets, replace(access, host=h.name)) for h in hosts}
        self.clear_cache = clear_cache
        self.groups = groups or {}  # mixed plans: workload → its hosts' names
        self.destroy_data = list(destroy_data)
        self._engines: dict[tuple[tuple[str, bool], str], str] = {}  # ((engine, direct), host) → engine
        self._max_jobs = 0
        self._probes: dict[str, list[tuple[str, bool]]] = {}  # host → (engine, direct) its tests use
        self.locks: list[TargetLock] = []  # held from prepare() to release()
        self.lost: set[str] = set()  # hosts that gave no result in a test (dropped or not)
        self.not_cleaned: tuple[str, ...] = ()  # after cleanup(): hosts whose data files are left
        self._started = list(hosts)  # every host the run began with
        self._leftovers: dict[str, bool | None] = {}  # host → its check found iofleet's data files there
        self.data_state: dict[str, dict] = {}  # host → what prepare_data wrote whole, or found kept (fleet/targets/kept.py)

    def _where(self, host: Host) -> list[tuple[str, object]]:
        return self.targets[host.name].fio_where()

    def _specs_per_host(self, steps: list[TestSpec | MixedStep]) -> dict[str, list[TestSpec]]:
        per_host: dict[str, list[TestSpec]] = {}
        for step in steps:
            for name, spec in self.specs_by_host(step).items():
                per_host.setdefault(name, []).append(spec)
        return per_host

    def fit(self, steps: list, size_given: bool) -> list:
        """Each host's target fits its tests (a device's or image's regions:
        a device's size cannot be read through fio's server, so the plan's
        `size` is used and the host check reads that far)."""
        for name, specs in self._specs_per_host(steps).items():
            self._probes[name] = sorted({(s.engine, s.direct) for s in specs})
            self.targets[name].fit(specs, size_given, local=False)
        return steps

    def metrics_sources(self, hosts: list[Host]) -> dict[str, object]:
        """host → where its CPU, disk and network are read: its node_exporter, or None."""
        return {h.name: h.metrics for h in hosts}

    def drop(self, names: list[str]) -> int:
        """Go on without hosts that were lost (run_test notes them as lost)."""
        self.hosts = [h for h in self.hosts if h.name not in names]
        return len(self.hosts)

    def check_targets(self, steps: list) -> None:
        pass  # prepare() refused hosts that `hosts check` does not pass

    def explain(self, error: str, steps: list) -> str:
        return error

    def resume_record(self, inventory: Path | None) -> dict:
        return {"inventory": str(Path(inventory).resolve()) if inventory else None,
                "hosts": {h.name: list(h.targets) for h in self.hosts}}

    def adopt(self, record: dict) -> None:
        pass  # a host's data files are found by name (remote.cleanup_fleet): nothing to take over

    def hosts_record(self, step: TestSpec | MixedStep) -> dict:
        """Which hosts ran the step and, in a mixed plan, each group's
        hosts and test."""
        ran = self.specs_by_host(step)
        out: dict = {"hosts": [h.name for h in self.hosts if h.name in ran]}
        if self.groups:
            out["groups"] = {g: {"hosts": [h for h in names if h in ran], "test": step.groups[g].id}
                             for g, names in self.groups.items()}
        return out

    @cached_property
    def host_facts(self) -> dict[str, dict]:
        """host → its facts read through SSH (control.host_facts), once per
        run; hosts without `ssh:` are not in it."""
        return ssh_host_facts(self.hosts)

    def describe(self) -> dict:
        """The hosts as the run records them, with their SSH facts."""
        return {"hosts": [RecordedHost(h.name, h.address, h.labels, h.targets, h.nic_gbps,
                                       self.targets[h.name].describe(),
                                       SeenHost.from_dict(self.host_facts.get(h.name))).to_dict()
                          for h in self.hosts]}

    def cache_sizes(self, plan_cache: int | None) -> dict[str, tuple[int | None, str, int | None]]:
        """host → (stated cache bytes, where it was stated, RAM bytes from
        its SSH facts or its node_exporter, or None)."""
        out = {}
        for h in self.hosts:
            ram = self.host_facts.get(h.name, {}).get("memory_bytes")
            if ram is None and h.metrics:
                try:
                    ram = exporter_facts(fetch_metrics(h.metrics))["memory_bytes"]
                except OSError:
                    pass
            stated = (h.cache_size, "inventory cache_size") if h.cache_size is not None else (
                plan_cache, "plan cache_size")
            out[h.name] = (*stated, ram)
        return out

    def prepare(self, facts: dict | None = None) -> None:
        """Lock every host's targets on this machine (fleet/targets/lock.py), then
        refuse to start unless every host passes `hosts check`, device
        targets included (what a fio server shows of them: devices.py)."""
        try:
            for h in self.hosts:
                target = self.targets[h.name]
                target.prepare_remote(h.endpoint, facts or holder_facts(), self.destroy_data)
                self.locks += target.locks
            # What each fio server sees under its targets (SSH facts, read in its
            # mount namespace) first: fio's check writes a probe file there.
            wrong = [problem_line(*p) for p in filesystem_problems(self.hosts, self.host_facts, self.groups)]
            if wrong:
                raise HostCheckError("\n".join(wrong + ["no test was started; fix the hosts above or leave them "
                                                         "out of the inventory"]))
            checks = require_ready(self.hosts, destroy_data=self.destroy_data, targets=self.targets,
                                   probes=self._probes, ssh_facts=lambda: self.host_facts)
            # The engines the check's own fio run found working: not probed again.
            self._engines.update({(key, c.host.name): e for c in checks for key, e in c.engines.items()})
            self._leftovers = {c.host.name: c.leftovers for c in checks}  # kept data still there (prepare_data)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """The run is over: let go of the hosts' targets."""
        for target in self.targets.values():
            target.release()
        self.locks = []

    def cleanup(self) -> int:
        """Remove the data files on every host; return how many hosts did
        (a device target has no files). Hosts lost during the run are not
        tried (gone, or frozen): `not_cleaned` names them, and the hosts
        where removing failed."""
        files = {h.name for h in self._started if self.targets[h.name].holds_files}
        lost = [h for h in self._started if h.name in self.lost and h.name in files]
        with_files = [h for h in self.hosts if h.name in files and h.name not in self.lost]
        # What the controller created for a host (an image) goes, lost host or not.
        cleaned = sum(self.targets[h.name].cleanup() for h in self._started if h.name not in files)
        if not self._max_jobs:
            return cleaned
        failed = []
        if with_files:
            with work_dir("iofleet-cleanup-") as tmp:
                failed = cleanup_fleet(with_files, self._max_jobs, Path(tmp))
        self.not_cleaned = tuple(sorted({h.name for h in lost} | set(failed)))
        return cleaned + len(with_files) - len(failed)

    def specs_by_host(self, step: TestSpec | MixedStep) -> dict[str, TestSpec]:
        """Each host's test: the same one everywhere, or in a mixed step its
        group's (a host in no group sits the step out)."""
        if isinstance(step, MixedStep):
            group_of = {h: g for g, names in self.groups.items() for h in names}
            return {h.name: step.groups[group_of[h.name]] for h in self.hosts if h.name in group_of}
        return {h.name: step for h in self.hosts}

    def _engines_for(self, specs: dict[str, TestSpec], work: Path, stop: threading.Event) -> dict[str, str]:
        engines = {}
        for key in sorted({(s.engine, s.direct) for s in specs.values()}):
            todo = [h for h in self.hosts if h.name in specs and (specs[h.name].engine, specs[h.name].direct) == key
                    and (key, h.name) not in self._engines]
            if todo:
                found = resolve_fleet_engines(todo, key[0], key[1], work, stop, self.targets)
                self._engines.update({(key, name): e for name, e in found.items()})
            engines.update({name: self._engines[(key, name)] for name, s in specs.items()
                            if (s.engine, s.direct) == key})
        return engines

    def prepare_data(self, steps: list[TestSpec | MixedStep], mode: str, passes: int, bs: int, work: Path,
                     stop: threading.Event, progress, kept: KeptData | None = None) -> Prepared:
        """Write every host's working sets at once, in one fio client run,
        on the hosts where `kept` does not record the same preparation (and
        the host check found its data files). fio's client reports nothing
        until the end: progress shows each host's disk and network rates
        from its node_exporter."""
        per_host = self._specs_per_host(steps)
        hosts = [h for h in self.hosts if h.name in per_host]
        self._max_jobs = max([self._max_jobs] + [s.jobs for specs in per_host.values() for s in specs])
        sizes = {name: prepare_sizes(specs, passes) for name, specs in per_host.items()}
        tiers = {h.name: prepare_tiers(per_host[h.name]) for h in hosts}
        states = {h.name: prepared_state(tiers[h.name], self.targets[h.name], mode, passes, bs) for h in hosts}
        reused, extended = {}, {}
        for h in hosts:
            state = states[h.name]
            found = (kept.find(host_key(h), state.get("fingerprint"), layout=state.get("layout"), tiers=tiers[h.name])
                     if kept and state and self._leftovers.get(h.name) else None)
            if found and not found.tails:
                reused[h.name] = found.entry["run"]
                self.data_state[h.name] = state | {"run": found.entry["run"],
                                                   "prepared_at": found.entry["prepared_at"]}
            elif found:
                extended[h.name], tiers[h.name] = found.entry["run"], found.tails
        hosts = [h for h in hosts if h.name not in reused]
        working_sets = {name: ws for name, (ws, _) in sizes.items()}
        if not hosts:
            return Prepared(mode, passes, bs, working_sets, {}, 0.0, reused=reused)
        if kept:
            kept.update(forget=[host_key(h) for h in hosts])  # written again from here
        first = {h.name: per_host[h.name][0] for h in hosts}
        engines = self._engines_for(first, work, stop)
        jobfiles = {h.name: render_prepare(tiers[h.name], self._where(h), engines[h.name], first[h.name].direct,
                                           mode, passes, bs, append=h.name in extended)
                    for h in hosts}
        totals = {h.name: written_bytes(tiers[h.name], passes) for h in hosts}

        def on_live(live):
            progress(None, sum(totals.values()), live.elapsed_s, live.hosts)

        with MetricsSampler(self.metrics_sources(hosts), local=CONTROLLER) as sampler, \
                LiveHosts(sampler, on_live):
            run = run_on_hosts(jobfiles, hosts, work, stop, tag="prepare", work_bytes=totals)
        self.lost |= set(run.lost)  # left out of cleanup: gone, or frozen
        if not run.fio.stopped and (run.lost or run.fio.returncode != 0 or any(j.error for j in run.jobs)):
            why = lost_reason(run) if run.lost else error_line(run.fio.stderr, run.fio.stdout)
            raise FioError(f"preparing the data failed: {why}")
        if not run.fio.stopped:
            self.data_state |= {h.name: states[h.name] for h in hosts if states[h.name]}
        return Prepared(mode, passes, bs, working_sets, totals, run.fio.wall_s, reused=reused, extended=extended)

    def record_data(self, kept: KeptData, run_id: int, keep: bool) -> None:
        """Kept: each host's data as prepared or used (not a lost host's:
        what it holds is not known); else, or on a host without, forgotten."""
        put = {host_key(h): kept_entry(self.data_state[h.name], run_id) for h in self._started
               if keep and h.name in self.data_state and h.name not in self.lost}
        kept.update(put, forget=[host_key(h) for h in self._started])

    def run_test(self, step: TestSpec | MixedStep, work: Path, stop: threading.Event, phase, on_live,
                 steady_now=None) -> Measured:
        """Every host runs its test at once; each host's status rounds are
        known as its server sends them (LiveRounds), so an until: steady test
        ends on every host together at the first round the fleet's summed
        rounds hold by `steady_now` (host → rounds), the rule that judges
        them afterwards."""
        specs = self.specs_by_host(step)
        hosts = [h for h in self.hosts if h.name in specs]
        self._max_jobs = max(self._max_jobs, step.jobs)
        phase("checking the IO engine on every host")
        engines = self._engines_for(specs, work, stop)
        engine = ",".join(sorted(set(engines.values())))
        timeout = test_timeout(step)
        layouts = {h.name: job for h in hosts if (job := self.targets[h.name].layout_job(specs[h.name]))}
        layout_hosts = [h for h in hosts if h.name in layouts]
        if layout_hosts:
            phase("laying out data files on every host")
            run = run_on_hosts(layouts, layout_hosts, work, stop, timeout_s=timeout, tag="layout")
            if run.lost or run.fio.returncode != 0 and not run.fio.stopped:
                why = lost_reason(run) if run.lost else error_line(run.fio.stderr, run.fio.stdout)
                return Measured("failed", why, engine=engine)
        # A rate is the test's total: shared by the hosts running that test (a mixed step: its group).
        sharing = collections.Counter(specs[h.name] for h in hosts)
        for h in hosts:
            self.targets[h.name].before_test(specs[h.name])
        jobfiles = {h.name: render_test(specs[h.name], self._where(h), engines[h.name],
                                        self.clear_cache, sharing[specs[h.name]]) for h in hosts}
        dropped: dict[str, str | None] = {}  # host → why its kernel caches were kept (None: dropped)
        if self.clear_cache and any(h.ssh for h in hosts):
            phase("dropping kernel caches on every host")
            dropped = drop_caches(hosts)  # through SSH, where the inventory gives it
        phase(f"running on {len(hosts)} hosts")
        round_s = next(iter(specs.values())).round
        # fio lists each job every snapshot: the warm-up group's and the measured one's.
        per_tick = {h.name: specs[h.name].jobs * (2 if specs[h.name].ramp else 1) for h in hosts}
        names = [h.name for h in hosts]
        until_steady = all(s.until == "steady" for s in specs.values())  # a mixed step: every group's test
        finish, steady = threading.Event(), SteadyWatch(names, steady_now if until_steady else None, phase)
        live = LiveRounds(per_tick, round_s * 1000, on_round=lambda host: steady.check(live, finish))
        with MetricsSampler(self.metrics_sources(hosts), local=CONTROLLER) as sampler, \
                LiveHosts(sampler, on_live, live, names):
            run = run_on_hosts(jobfiles, hosts, work, stop, timeout_s=timeout,
                               planned_s={h.name: specs[h.name].ramp + specs[h.name].longest_s for h in hosts},
                               status_s=round_s, per_tick=per_tick, start_together=True, live=live, finish=finish)
        self.lost |= set(run.lost)  # left out of cleanup: gone, or frozen
        m = verdict(run.fio, run.jobs, run.disks, run.job_errors, parse_error=run.parse_error, lost=run.lost,
                     lost_why=lost_reason(run) if run.lost else "")
        m.engine, m.rounds = engine, run.rounds
        if run.fio.ended_early:
            m.ended_early_s = steady.at_s
        m.round_spread_s = live.spread_s([n for n in names if n not in run.lost])
        unreadable = live.unreadable()
        m.live_note = not_decoded_note(unreadable) if unreadable else None
        # fio invalidates the files' page cache on each host; the kernel's
        # caches were dropped where SSH reaches the host (as root).
        m.cache = {h.name: self.targets[h.name].cache_note(self.clear_cache, dropped.get(h.name, NO_SSH),
                                                           self.host_facts.get(h.name, {}).get("targets"))
                   for h in hosts}
        # fio's client's own document (every host in it, by its address) and all its messages.
        m.artifacts = collect_artifacts(work, jobfiles, run.fio, ".log.*")
        listing = os.listdir(work)
        # A lost host's logs (a late one's may come with its stopped client) are no result.
        m.series = [s for h in hosts if h.name not in run.lost
                    for s in read_series(work, h.name, f".{h.endpoint[0]}", listing, files=m.artifacts)]
        rebase_series(m.series)
        metrics = sampler.summary(skip_s=step.ramp, until_s=run.fio.wall_s)
        m.controller = metrics.pop(CONTROLLER)
        m.host_metrics = [metrics[h.name] for h in hosts]
        m.host_cpu = mean_cpu([h.cpu for h in m.host_metrics])
        return m
