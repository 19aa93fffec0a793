"""Directories as the target: iofleet's data files in its own
sub-directory of each (fio spreads the jobs' files over them)."""

import errno
import os
from pathlib import Path

from ...errors import ImportFormatError, IofleetError
from ...fio.command import NOT_A_DIR_RE, SERVER_VERSION_RE, error_line
from ...fio.jobfile import (DATA_DIR_NAME, directory_probe, directory_where, render_layout, render_leftover_check,
                            render_target_check)
from ...fio.parse import parse_output
from ...plan.expand import TestSpec
from .kept import files_state
from .facts import network_client, seen_target, target_rotational
from .files import TargetDirs
from ..fio_link.procs import fio_using
from .space import check_space, explain_no_space, free_bytes
from .base import Access, Target, any_spinning, kernel_note, paths

# FUSE clients keep a cache of their own in their process, beside the
# kernel's page cache, which dropping the kernel's caches does not touch
# (a kernel client's, e.g. mount -t ceph or nfs, is the kernel's).
CLIENT_CACHES = {
    "ceph-fuse": "ceph-fuse's object cacher (client_oc) is not dropped by iofleet: it lives in the ceph-fuse "
                 "process; mount with --client_oc=false to measure without it",
}


def client_cache_note(filesystem: str | None) -> str | None:
    """What iofleet cannot drop in front of a target on this filesystem."""
    client = network_client(filesystem)
    if not client or not (filesystem or "").startswith("fuse."):
        return None
    return CLIENT_CACHES.get(client, f"{client}'s own cache (in its FUSE process) is not dropped by iofleet")


class Directories(Target):
    kind = "directory"
    holds_files = True

    def __init__(self, names, access=Access()):
        super().__init__(names, access)
        # A fleet host's paths are its own; this machine's are resolved
        # (and stored so: a resumed run started elsewhere finds them).
        self.targets = paths(self.names) if access.host else [p.resolve() for p in paths(self.names)]
        self.names = [str(t) for t in self.targets]
        self.dirs = TargetDirs(self.targets)

    def fio_where(self):
        return directory_where(self.targets)

    def probe_where(self, section):
        return directory_probe(self.targets[0], section)

    def layout_job(self, spec: TestSpec) -> str | None:
        return render_layout(spec, self.targets) if spec.working_set_pct < 100 else None

    def prepare(self, facts, destroy_data):
        self.dirs.prepare(facts)
        self.locks = list(self.dirs.locks)

    def check_busy(self, steps):
        busy = fio_using([t / DATA_DIR_NAME for t in self.targets])
        if busy:
            pids = " ".join(map(str, sorted(busy)))
            raise IofleetError(f"fio (pid {pids}) is still using {next(iter(busy.values()))}: another iofleet run "
                               f"is testing this target, or the fio of a killed one has not ended; wait for it, or "
                               f"stop it with `kill {pids}`")
        check_space(self.targets, [s for s in steps if isinstance(s, TestSpec)])

    def explain(self, error, steps):
        return explain_no_space(error, self.targets, steps)

    def claim(self, jobs):
        self.dirs.claim(jobs)

    def check_job(self):
        return render_target_check(self.targets) + render_leftover_check(self.targets)

    def read_check(self, check, fio):
        """Each directory took a tiny file (sections t0, t1, ...), and job 0's
        data file of an earlier run is there or not (section leftover)."""
        said = fio.stdout + fio.stderr
        for missing in NOT_A_DIR_RE.findall(said):
            for t in check.targets:
                if t.path == missing:
                    t.problem = "does not exist (or is not a directory)"
        results, leftover = {}, None
        if fio.final_output:
            try:
                jobs = parse_output(fio.final_output).jobs
            except ImportFormatError:
                jobs = []
            results = {j.job: j.error for j in jobs}
            leftover = next((j for j in jobs if j.job == "leftover"), None)
        check.leftovers = leftovers_seen(leftover)
        missing = any(t.problem for t in check.targets)
        for i, t in enumerate(check.targets):
            code = results.get(f"t{i}")
            if t.problem:
                pass
            elif code:
                t.problem = f"cannot write there ({errno.errorcode.get(code, code)}: {os.strerror(code)})"
            elif code is None:
                t.checked = False
                if not missing:  # else fio refused the whole check for the missing target
                    said = "\n".join(l for l in fio.stdout.splitlines() if not SERVER_VERSION_RE.search(l))
                    t.problem = f"not checked ({error_line(fio.stderr, said)})"
        for t in check.targets:
            if t.problem:
                check.problems.append(f"target {t.path} {t.problem}")

    def cleanup(self):
        return len(self.dirs.cleanup())

    def release(self):
        self.dirs.release()
        super().release()

    def resume_record(self):
        return {"created_dirs": [str(d) for d in self.dirs.created]}

    def adopt(self, record):
        for d in map(Path, record.get("created_dirs") or []):
            if d.is_dir() and d not in self.dirs.created:
                self.dirs.created.append(d)

    def fingerprint_where(self):
        return directory_where(self.targets)

    def files_state(self):
        return files_state(self.targets)

    def cache_note(self, clear, drop_why, facts=None):
        if not clear:
            return "caches kept (clear_cache: false)"
        note = f"page cache of iofleet's files invalidated; {kernel_note(drop_why)}"
        clients = {n for fs in self._filesystems(facts) if (n := client_cache_note(fs))}
        return "; ".join([note, *sorted(clients)])

    def _filesystems(self, facts):
        if facts is not None:  # a fleet host's, as its SSH facts read them
            return [(facts.get(n) or {}).get("filesystem") for n in self.names]
        if self.access.host is not None:
            return []
        return [seen_target(t).filesystem for t in self.targets]

    def describe(self):
        if self.access.host:
            return {}  # a fleet host's directories: its SSH facts say what they are
        return {"target_facts": {str(t): seen_target(t).to_dict() for t in self.targets}}

    def free_bytes(self):
        for t in self.targets:
            if not t.is_dir():
                raise IofleetError(f"target {t} is not a directory; create it or give another --target")
        return min(free_bytes(t) for t in self.targets)

    def spinning(self):
        return any_spinning([target_rotational(t) for t in self.targets])


def leftovers_seen(job) -> bool | None:
    """What the leftover check's job saw: job 0's data file (every run
    makes one) is there; None when the job did not run."""
    return None if job is None or job.error else job.read.io_bytes >= 4096
