"""Where a test runs: on this host (`LocalPlace`) or on fio servers at once
(`FleetPlace`), the two places of the place protocol (place.py): both judge
a test by its one verdict and keep its files by one rule (place.py), and
return a `Measured` record the run study stores."""

import collections
import os
import threading
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from ..errors import FioError, ImportFormatError, IofleetError
from ..fio.command import error_line, run_command
from ..fio.jobfile import render_prepare, render_test
from ..fio.parse import parse_output
from ..fio.status import Rounds, snapshot
from ..plan.expand import MixedStep, TestSpec, expand, expand_mixed, prepare_tiers
from ..plan.model import Plan
from .check import HostCheckError, filesystem_problems, problem_line, require_ready
from .control import NO_SSH, drop_caches
from .control import host_facts as ssh_host_facts
from .inventory import Host, host_groups
from .kept import LOCAL, KeptData, data_key, host_key, kept_entry, prepared_state
from .metrics import MetricsSampler, exporter_facts, fetch_metrics, mean_cpu
from .local import drop_kernel_caches, host_facts, resolve_engine
from .place import Measured, Place, Prepared, collect_artifacts, verdict
from .remote import cleanup_fleet, lost_reason, resolve_fleet_engines, run_on_hosts
from .runner import FioRun, LiveHosts, killed_reason, read_series, rebase_series, run_fio
from .targets import Access, Target, target_for
from .targets_lock import TargetLock, holder_facts
from .workdir import work_dir

# fio needs a moment beyond ramp + runtime to lay out files and write its
# results; past this margin a test is stopped as hung.
TIMEOUT_MARGIN_S = 120
# fio's status documents come this often (seconds): the live figures, and
# the rounds of a local test (fio/status.py).
STATUS_INTERVAL_S = 1
# The machine running iofleet, in a fleet test's metrics (not a host name:
# host names cannot hold parentheses).
CONTROLLER = "(controller)"


def _prepare_sizes(specs: list[TestSpec], passes: int) -> tuple[int, int]:
    """(bytes of data prepared, bytes written): a file in several tiers is
    written once per tier."""
    tiers = prepare_tiers(specs)
    prepared = sum(size * (n - (tiers[i + 1][0] if i + 1 < len(tiers) else 0)) for i, (n, size) in enumerate(tiers))
    return prepared, _written(tiers, passes)


def _written(tiers: list[tuple[int, int]], passes: int) -> int:
    return passes * sum(n * size for n, size in tiers)


def _timeout(spec: TestSpec | MixedStep) -> float:
    return spec.ramp + spec.longest_s + TIMEOUT_MARGIN_S


def plan_access(plan: Plan) -> Access:
    """How the plan's targets in a cluster are reached (its `ceph:`)."""
    return Access(plan.ceph.conf, plan.ceph.client, plan.ceph.shared_image)


def place_for(plan: Plan, hosts: list[Host] | None) -> tuple[Place, list]:
    """Where the plan runs (on `hosts`, fio servers, or on the plan's
    targets here), and its tests in run order."""
    access = plan_access(plan)
    if plan.mixed:
        if not hosts:
            raise IofleetError(f"plan {plan.name!r} is mixed (workloads side by side on host groups); "
                               f"run it on a fleet with --hosts INVENTORY")
        groups = host_groups(hosts, {w.name: w.hosts for w in plan.workloads})
        place, specs = FleetPlace(hosts, groups, clear_cache=plan.clear_cache, destroy_data=plan.destroy_data,
                                  access=access), expand_mixed(plan)
    elif hosts:
        place, specs = FleetPlace(hosts, clear_cache=plan.clear_cache, destroy_data=plan.destroy_data,
                                  access=access), expand(plan)
    elif not plan.targets:
        raise IofleetError(
            f"plan {plan.name!r} has no targets; add `targets:` to the plan or give --target DIR")
    else:
        place, specs = LocalPlace(target_for(plan.targets, access), clear_cache=plan.clear_cache,
                                  destroy_data=plan.destroy_data), expand(plan)
    # On a device or image each job gets its own region (sized to the
    # device when the plan gives no size): the tests as they will run.
    return place, place.fit(specs, plan.sets("size"))


class LocalPlace(Place):
    """The local host and its target (fleet/targets/: directories, a device
    or an RBD image)."""

    def __init__(self, target: Target, clear_cache: bool = True, destroy_data: list[str] = ()):
        self.target = target
        self.clear_cache = clear_cache
        self.destroy_data = list(destroy_data)
        self.locks: list[TargetLock] = []  # held from prepare() to release()
        self._engines: dict[tuple[str, bool], str] = {}
        self.data_state: dict = {}  # what prepare_data wrote whole, or found kept (fleet/kept.py)

    def describe(self) -> dict:
        return {"targets": self.target.names} | self.target.describe()  # what it is (diagnostics)

    def fit(self, steps: list[TestSpec], size_given: bool) -> list[TestSpec]:
        """The run's tests as they will run here (a device's or image's
        regions: the target's fit)."""
        return self.target.fit(steps, size_given, local=True)

    def cache_sizes(self, plan_cache: int | None) -> dict[str, tuple[int | None, str, int | None]]:
        """host → (stated cache bytes, where it was stated, RAM bytes)."""
        return {"local": (plan_cache, "plan cache_size", host_facts().get("memory_bytes"))}

    def prepare(self, facts: dict | None = None) -> None:
        """Lock the target for this run (`facts` say who holds it), then
        check it, before anything is written."""
        self.target.prepare(facts or holder_facts(), self.destroy_data)
        self.locks = list(self.target.locks)

    def check_targets(self, steps: list[TestSpec]) -> None:
        """No fio is still using the target (the fio of a killed run, or of
        a run of an older iofleet), and the data fits."""
        self.target.check_busy(steps)

    def explain(self, error: str, steps: list[TestSpec]) -> str:
        """Which target ran out of space, when one did."""
        return self.target.explain(error, steps)

    def specs_by_host(self, step: TestSpec) -> dict[str, TestSpec]:
        return {"local": step}

    def hosts_record(self, step: TestSpec) -> None:
        return None  # one host

    def drop(self, names: list[str]) -> int:
        return 1  # this host is never lost: only a fleet's hosts are

    def resume_record(self, inventory: Path | None) -> dict:
        return {"targets": self.target.names} | self.target.resume_record()

    def adopt(self, record: dict) -> None:
        """What the run created on its target is removed at its end, by the
        resume that ends it too."""
        self.target.adopt(record)

    def cleanup(self) -> int:
        return self.target.cleanup()

    def release(self) -> None:
        """The run is over: let go of the target."""
        self.target.release()
        self.locks = []

    def engine_for(self, spec: TestSpec) -> str:
        key = (spec.engine, spec.direct)
        if key not in self._engines:
            self._engines[key] = resolve_engine(self.target, spec.engine, spec.direct)
        return self._engines[key]

    def prepare_data(self, steps: list[TestSpec], mode: str, passes: int, bs: int, work: Path,
                     stop: threading.Event, progress, kept: KeptData | None = None) -> Prepared:
        """Write every data file's working set sequentially before the first
        test, unless `kept` records the same preparation of these very
        files; `progress(done_bytes, total_bytes, elapsed_s, hosts)`."""
        prepared, total = _prepare_sizes(steps, passes)
        self.target.claim(max(s.jobs for s in steps))
        tiers = prepare_tiers(steps)
        state = prepared_state(tiers, self.target, mode, passes, bs)
        key = data_key(LOCAL, self.target.names)
        found = kept.find(key, state.get("fingerprint"), self.target.files_state(), state.get("layout"),
                          tiers) if kept and state else None
        if found and not found.tails:
            self.data_state = state | {"run": found.entry["run"], "prepared_at": found.entry["prepared_at"]}
            return Prepared(mode, passes, bs, {LOCAL: prepared}, {}, 0.0, reused={LOCAL: found.entry["run"]})
        if kept:
            kept.update(forget=[key])  # written again from here: the record no longer holds
        if found:
            tiers, total = found.tails, _written(found.tails, passes)
        job = render_prepare(tiers, self.target.fio_where(), self.engine_for(steps[0]), steps[0].direct, mode,
                             passes, bs, append=bool(found))
        (work / "prepare.fio").write_text(job)
        done = last = 0.0

        def on_live(live):
            nonlocal done, last
            done += live.bw_bytes_s * (live.elapsed_s - last)
            last = live.elapsed_s
            progress(min(done, total), total, live.elapsed_s, None)

        fio = run_fio(run_command(str(work / "prepare.fio")), work, stop, on_live, env=self.target.fio_env())
        if fio.returncode != 0 and not fio.stopped:
            raise FioError(f"preparing the data failed: {error_line(fio.stderr, fio.stdout)}")
        if not fio.stopped and state:
            self.data_state = state
        return Prepared(mode, passes, bs, {LOCAL: prepared}, {LOCAL: total}, fio.wall_s,
                        extended={LOCAL: found.entry["run"]} if found else {})

    def record_data(self, kept: KeptData, run_id: int, keep: bool) -> None:
        key = data_key(LOCAL, self.target.names)
        if keep and self.data_state:
            kept.update({key: kept_entry(self.data_state, run_id, self.target.files_state())})
        else:
            kept.update(forget=[key])

    def run_test(self, step: TestSpec, work: Path, stop: threading.Event, phase, on_live,
                 steady_now=None) -> Measured:
        """`steady_now(host → rounds)`: the steady-state rule; an until:
        steady test ends (its results whole) at the first round it holds."""
        self.target.claim(step.jobs)  # recorded as iofleet's before fio makes them
        phase("checking the IO engine")
        engine = self.engine_for(step)
        env = self.target.fio_env()
        layout_job = self.target.layout_job(step)
        if layout_job:
            phase("laying out data files")
            (work / "layout.fio").write_text(layout_job)
            layout = run_fio(run_command(str(work / "layout.fio"), None), work, stop, env=env)
            if layout.returncode != 0 and not layout.stopped:
                return Measured("failed", error_line(layout.stderr, layout.stdout), engine=engine)
        drop_why = None
        if self.clear_cache:
            phase("clearing caches")
            drop_why = drop_kernel_caches()
        self.target.before_test(step)
        jobfile = render_test(step, self.target.fio_where(), engine, self.clear_cache)
        (work / "job.fio").write_text(jobfile)
        phase("warm-up" if step.ramp else "measuring")
        rounds, finish, steady_at = Rounds(step.round, STATUS_INTERVAL_S * 1000), threading.Event(), []

        def on_status(doc: dict) -> None:
            try:
                closed = rounds.add(snapshot(doc.get("jobs") or []))
            except ImportFormatError:
                return  # a document without the figures: no round (fio's final one is parsed again below)
            if closed and step.until == "steady" and steady_now and not finish.is_set() \
                    and steady_now({"local": rounds.rounds}):
                steady_at.append(rounds.rounds[-1].end_ms / 1000)
                phase(f"steady at {steady_at[0]:.0f} s: ending the test")
                finish.set()

        with MetricsSampler({}, local="local") as sampler:
            fio = run_fio(run_command(str(work / "job.fio"), STATUS_INTERVAL_S), work, stop, on_live,
                          timeout_s=_timeout(step), on_status=on_status, finish=finish, env=env)
        m = self._judge(fio)
        m.rounds = {"local": rounds.rounds}
        m.ended_early_s = steady_at[0] if fio.ended_early and steady_at else None
        m.engine = engine
        m.cache = {"local": self.target.cache_note(self.clear_cache, drop_why)}
        m.host_metrics = [sampler.summary(skip_s=step.ramp, until_s=fio.wall_s)["local"]]
        m.host_cpu = m.host_metrics[0].cpu
        m.artifacts = collect_artifacts(work, {"": jobfile}, fio, ".log")
        if m.jobs:
            m.series = read_series(work, "local", files=m.artifacts)  # the logs as just read, not again
            rebase_series(m.series)
        return m

    @staticmethod
    def _judge(fio: FioRun) -> Measured:
        parsed = None
        # A killed fio's last status is no result: nothing of it is kept.
        if fio.final_output and not killed_reason(fio):
            try:
                parsed = parse_output(fio.final_output)
            except ImportFormatError as exc:
                return verdict(fio, [], [], [], parse_error=str(exc))
        if parsed is None:
            return verdict(fio, [], [], [], output=False)
        errors = [j for j in parsed.jobs + parsed.warmup_jobs if j.error]
        return verdict(fio, parsed.jobs, parsed.disks, errors)


class FleetPlace(Place):
    """Hosts running `fio --server`, each with its own targets."""

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
        self.data_state: dict[str, dict] = {}  # host → what prepare_data wrote whole, or found kept (fleet/kept.py)

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
        return {"hosts": [{"name": h.name, "address": h.address, "labels": h.labels, "targets": h.targets,
                           "nic_gbps": h.nic_gbps} | self.targets[h.name].describe()
                          | ({"facts": self.host_facts[h.name]} if h.name in self.host_facts else {})
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
        """Lock every host's targets on this machine (targets_lock), then
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
        sizes = {name: _prepare_sizes(specs, passes) for name, specs in per_host.items()}
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
        totals = {h.name: _written(tiers[h.name], passes) for h in hosts}

        def on_live(live):
            progress(None, sum(totals.values()), live.elapsed_s, live.hosts)

        with MetricsSampler({h.name: h.metrics for h in hosts}, local=CONTROLLER) as sampler, \
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
        """fio's client holds its servers' status until the end, so an
        until: steady test runs to max_runtime here (`steady_now` is not
        used); its rounds are judged afterwards (docs/steady-state.md)."""
        specs = self.specs_by_host(step)
        hosts = [h for h in self.hosts if h.name in specs]
        self._max_jobs = max(self._max_jobs, step.jobs)
        phase("checking the IO engine on every host")
        engines = self._engines_for(specs, work, stop)
        engine = ",".join(sorted(set(engines.values())))
        timeout = _timeout(step)
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
        with MetricsSampler({h.name: h.metrics for h in hosts}, local=CONTROLLER) as sampler, \
                LiveHosts(sampler, on_live):
            run = run_on_hosts(jobfiles, hosts, work, stop, timeout_s=timeout,
                               planned_s={h.name: specs[h.name].ramp + specs[h.name].longest_s for h in hosts},
                               status_s=round_s, per_tick=per_tick, start_together=True)
        self.lost |= set(run.lost)  # left out of cleanup: gone, or frozen
        m = verdict(run.fio, run.jobs, run.disks, run.job_errors, parse_error=run.parse_error, lost=run.lost,
                     lost_why=lost_reason(run) if run.lost else "")
        m.engine, m.rounds = engine, run.rounds
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
