"""This host as the place of a run: its target (directories, a device or an RBD
image), one local fio process per test."""

import threading
from pathlib import Path

from ...errors import FioError, ImportFormatError, IofleetError
from ...fio.command import error_line, run_command
from ...fio.jobfile import render_prepare, render_test
from ...fio.parse import parse_output
from ...fio.status import Rounds, snapshot
from ...plan.expand import TestSpec, expand, prepare_tiers
from ..targets.kept import LOCAL, KeptData, data_key, kept_entry, prepared_state
from ..metrics.sampler import MetricsSampler
from ..local import drop_kernel_caches, host_facts
from ..targets.engines import resolve_engine
from .base import (STATUS_INTERVAL_S, Measured, Place, Prepared, collect_artifacts, prepare_sizes, test_timeout,
                   verdict, written_bytes)
from ..fio_link.runner import FioRun, killed_reason, read_series, rebase_series, run_fio
from ..targets import Target, target_for
from ..targets.lock import TargetLock, holder_facts


class LocalPlace(Place):
    """The local host and its target (fleet/targets/: directories, a device
    or an RBD image)."""

    order = 90  # any run without hosts

    @classmethod
    def takes(cls, hosts):
        return not hosts

    @classmethod
    def for_plan(cls, plan, hosts, access):
        if plan.mixed:
            raise IofleetError(f"plan {plan.name!r} is mixed (workloads side by side on host groups); "
                               f"run it on a fleet with --hosts INVENTORY")
        if not plan.targets:
            raise IofleetError(f"plan {plan.name!r} has no targets; add `targets:` to the plan or give --target DIR")
        return cls(target_for(plan.targets, access), clear_cache=plan.clear_cache,
                   destroy_data=plan.destroy_data), expand(plan)

    def __init__(self, target: Target, clear_cache: bool = True, destroy_data: list[str] = ()):
        self.target = target
        self.clear_cache = clear_cache
        self.destroy_data = list(destroy_data)
        self.locks: list[TargetLock] = []  # held from prepare() to release()
        self._engines: dict[tuple[str, bool], str] = {}
        self.data_state: dict = {}  # what prepare_data wrote whole, or found kept (fleet/targets/kept.py)

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
        prepared, total = prepare_sizes(steps, passes)
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
            tiers, total = found.tails, written_bytes(found.tails, passes)
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
                          timeout_s=test_timeout(step), on_status=on_status, finish=finish, env=env)
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
