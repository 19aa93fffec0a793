"""What made the 64-host ingest faster keeps its results: logs parsed from
their bytes, logs read once, the archive begun before the save, fio clients
on reused threads."""


import pytest

from iofleet.errors import ImportFormatError
from iofleet.fio.parse import parse_log
from iofleet.fleet.fio_link.runner import read_series
from iofleet.results.store import Store
from tests.unit.store_records import new_run, save

LOG = "1000, 250, 0, 4096, 0\n1000, 120, 1, 4096, 0\n2001, 260, 0, 4096, 0\n2001, 130, 1, 4096, 0\n"


@pytest.mark.parametrize("text", [
    LOG,  # fio's usual form: the fast path
    LOG.rstrip("\n"),
    LOG.replace(", 0\n", ",0\n"),  # other spacing: line by line
    "1000, 2.5, 0, 4096, 0\n",  # a float value: line by line
])
def test_a_log_parses_the_same_from_bytes_as_from_text(text):
    assert parse_log(text.encode(), scale=1024) == parse_log(text, scale=1024)


def test_a_log_that_is_not_utf8_is_reported_as_not_a_log():
    with pytest.raises(ImportFormatError, match="line 2"):
        parse_log(b"1000, 250, 0, 4096, 0\n\xff\xfe, 1\n")


def test_read_series_takes_the_logs_already_read(tmp_path):
    """A log in `files` is not read again (here its file on disk differs)."""
    name = "series_iops.1.log.10.0.0.1"
    (tmp_path / name).write_text("1000, 999, 0, 4096, 0\n")
    from_disk = read_series(tmp_path, "h1", ".10.0.0.1")
    given = read_series(tmp_path, "h1", ".10.0.0.1", files={name: LOG.encode()})
    assert [s.values for s in from_disk] == [[999.0]]
    assert [(s.direction, s.t_ms, s.values) for s in given] == [("read", [1000, 2001], [250.0, 260.0]),
                                                                ("write", [1000, 2001], [120.0, 130.0])]


def test_an_archive_begun_before_the_save_is_the_tests(tmp_path):
    with Store.open(tmp_path / "data") as st:
        run_id = new_run(st)
        files = st.start_artifacts(run_id, 0, "4k-r70-rand-j2-qd8", {"fio.json": b"{}", "job.fio": b"[x]"})
        pk = save(st, run_id, 0, artifacts=files)
        assert st.read_artifact(pk, "job.fio") == b"[x]"
        assert sorted(st.get_run(run_id).tests[0].artifacts) == ["fio.json", "job.fio"]


def test_an_archive_whose_save_fails_or_never_comes_is_removed(tmp_path):
    with Store.open(tmp_path / "data") as st:
        run_id = new_run(st)
        save(st, run_id, 0, artifacts={"fio.json": b"original"})
        files = st.start_artifacts(run_id, 0, "4k-r70-rand-j2-qd8", {"fio.json": b"again"})
        with pytest.raises(Exception):
            save(st, run_id, 0, artifacts=files)  # the same seq twice
        never = st.start_artifacts(run_id, 1, "4k-r70-rand-j2-qd8", {"fio.json": b"unsaved"})
        never.undo()
        never.undo()  # the run study undoes after a failed save too: harmless
        left = sorted(p.name for p in (st.data_dir / "artifacts" / f"run-{run_id}").iterdir())
        assert left == ["0000-4k-r70-rand-j2-qd8"]
