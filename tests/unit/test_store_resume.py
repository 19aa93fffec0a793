"""What a resume relies on in the store: who holds a run, replacing an
unfinished test, leftovers of a crashed save, and failed writes as one
StoreError; and the space and signal helpers of the fleet stage."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from iofleet.errors import StoreError
from iofleet.fleet.fio_link.runner import FioRun, killed_reason
from iofleet.fleet.targets.space import data_bytes_per_target, explain_no_space
from iofleet.plan.expand import TestSpec
from iofleet.results.store import artifacts as store_mod
from iofleet.results.store import Store

from .store_records import new_run, save


@pytest.fixture
def st(tmp_path):
    with Store.open(tmp_path / "data") as s:
        yield s


def test_a_new_run_is_held_by_its_process_until_it_finishes(st):
    run_id = new_run(st)
    assert st.run_holder(run_id) == os.getpid()
    assert st.list_runs()[0].held_by == os.getpid()
    with Store.open(st.data_dir) as other:  # another connection: a second process would do the same
        with pytest.raises(StoreError, match=rf"^run {run_id} is being run by another iofleet process "
                                             rf"\(pid {os.getpid()}\); wait for it to end"):
            other.claim_run(run_id)
    st.finish_run(run_id, "complete")
    assert st.run_holder(run_id) is None
    assert not (st.data_dir / "locks" / f"run-{run_id}.lock").exists()
    assert st.list_runs()[0].held_by is None


def test_a_crashed_process_leaves_its_run_running_and_stale(tmp_path):
    code = textwrap.dedent(f"""
        import os
        from iofleet.results.store import Store
        st = Store.open({str(tmp_path)!r})
        st.create_run(plan_name="p", plan_text="", fio_version="fio-3.33", host_facts={{}}, tests_planned=1)
        os._exit(9)  # no clean-up, as after kill -9
    """)
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    with Store.open(tmp_path) as st:
        run = st.list_runs()[0]
        assert run.status == "running" and run.held_by is None  # stale
        st.claim_run(run.id)  # a resume can take it
        st.reopen_run(run.id)
        assert st.run_holder(run.id) == os.getpid()


def test_a_rerun_test_replaces_its_unfinished_result_never_a_finished_one(st):
    run_id = new_run(st)
    save(st, run_id, 0)
    save(st, run_id, 1, status="interrupted", artifacts={"fio.json": b"old"})
    old_dir = Path(st.get_run(run_id).tests[1].artifact_dir)
    new = save(st, run_id, 1, replace=True, artifacts={"fio.json": b"new"})
    tests = st.get_run(run_id).tests
    assert [(t.seq, t.status) for t in tests] == [(0, "ok"), (1, "ok")]
    assert tests[1].pk == new
    assert st.read_artifact(new, "fio.json") == b"new"
    assert not old_dir.exists() and Path(tests[1].artifact_dir).name == old_dir.name + ".2"
    with pytest.raises(StoreError, match="test 2 of run .* is stored ok; a finished test is never replaced"):
        save(st, run_id, 1, replace=True)
    with pytest.raises(Exception):  # without replace, a seq is saved once
        save(st, run_id, 0)


def test_files_of_a_save_cut_short_are_discarded(st):
    run_id = new_run(st)
    save(st, run_id, 0, artifacts={"a": b"1"})
    orphan = st.data_dir / "artifacts" / f"run-{run_id}" / "0001-4k-r70-rand-j2-qd8"
    orphan.mkdir()
    (orphan / "fio.json.gz").write_bytes(b"half")
    assert st.discard_orphan_artifacts(run_id) == [orphan]
    assert not orphan.exists() and len(st.get_run(run_id).tests[0].artifacts) == 1


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs: a disk that fills up for real (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


@pytest.mark.parametrize("size", [100_000, store_mod.PROCESS_BYTES], ids=["thread", "archiver process"])
def test_an_archive_that_fills_the_disk_is_one_store_error_and_leaves_nothing(small_disk, size):
    with Store.open(small_disk / "data") as st:
        run_id = new_run(st)
        save(st, run_id, 0, artifacts={"small.json": b"{}"})
        big = {f"log{i}": os.urandom(size // 4) for i in range(4)}  # random: deflate cannot shrink it
        if size < store_mod.PROCESS_BYTES:
            big["filler"] = os.urandom(3 * 1024**2)
        with pytest.raises(StoreError, match=rf"^cannot write results to {st.data_dir}: no space left on device"):
            save(st, run_id, 1, artifacts=big)
        assert [t.seq for t in st.get_run(run_id).tests] == [0] and not st._conn.in_transaction
        assert [p.name for p in (st.data_dir / "artifacts" / f"run-{run_id}").iterdir()] == [
            Path(st.get_run(run_id).tests[0].artifact_dir).name]  # the failed test's directory is gone


def test_a_large_archive_is_written_by_the_archiver_process_and_reads_back(st, monkeypatch):
    monkeypatch.setattr(store_mod, "_archiver", None)
    run_id = new_run(st)
    logs = {f"lat.{i}.log": (f"{i}000, 123, 0, 4096, 0\n" * 70_000).encode() for i in range(3)}
    assert sum(map(len, logs.values())) >= store_mod.PROCESS_BYTES
    pk = save(st, run_id, 0, artifacts=logs)
    assert store_mod._archiver is not None  # it went to the process
    for name, data in logs.items():
        assert st.read_artifact(pk, name) == data


def spec(jobs: int, size: int) -> TestSpec:
    return TestSpec(id=f"j{jobs}", workload="w", bs=4096, read_pct=100, random_pct=100, iodepth=1, jobs=jobs,
                    size=size, working_set_pct=100, runtime=1, ramp=0, engine="psync", direct=False)


def test_data_files_per_target_follow_fios_round_robin():
    a, b = Path("/a"), Path("/b")
    specs = [spec(1, 8 << 20), spec(3, 2 << 20)]
    # file 0 (largest: 8 MiB) and file 2 on /a, file 1 on /b.
    assert data_bytes_per_target(specs, [a, b]) == {a: (8 << 20) + (2 << 20), b: 2 << 20}
    assert data_bytes_per_target(specs, [a]) == {a: 12 << 20}


def test_no_space_errors_name_the_target_and_what_the_plan_needs(tmp_path):
    line = f"fio: io_u error on file {tmp_path}/iofleet/iofleet-data.0.0: No space left on device: write offset=0"
    text = explain_no_space(line, [tmp_path], [spec(1, 6 << 20)])
    assert text.startswith(f"no space left on {tmp_path}: {line}; the plan's data files need 6.0 MiB there, ")
    assert text.endswith(" is free now")
    assert explain_no_space("fio: bad option", [tmp_path], [spec(1, 1)]) == "fio: bad option"


def test_killed_reason_names_the_signal_unless_iofleet_stopped_fio():
    killed = FioRun(returncode=-9, final_output=None, stdout="", stderr="", stopped=False, killed=False, wall_s=3.04)
    assert killed_reason(killed).startswith("fio was killed by signal 9 (SIGKILL) 3.0 s into the test")
    assert killed_reason(FioRun(-9, None, "", "", stopped=True, killed=True, wall_s=1)) is None
    assert killed_reason(FioRun(1, None, "", "", stopped=False, killed=False, wall_s=1)) is None
