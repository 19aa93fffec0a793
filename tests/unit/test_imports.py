"""Importing HCIBench/vdbench parameter files and fio job files as plans.

The fixtures in tests/fixtures/imports are written the way HCIBench writes
its files (vdb-<N>vmdk-<ws>ws-<bs>-<rd>rdpct-<rand>randompct-<T>threads) and
the way people write fio job files; the assertions are on the *expanded
tests*, i.e. what would actually run.
"""

import re
from pathlib import Path
from typing import List, Optional

import pytest
import typer
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from iofleet.cli.importing import import_command
from iofleet.errors import IofleetError, PlanError
from iofleet.fio.jobfile import directory_where, render_test
from iofleet.importers import detect_kind, import_file, load_plan_source
from iofleet.plan import expand, parse_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HCIBENCH_VDB = FIXTURES / "vdb-8vmdk-100ws-4k-70rdpct-100randompct-4threads"
HCIBENCH_FIO = FIXTURES / "fio-8vmdk-100ws-4k-70rdpct-100randompct-4threads"
SWEEP_VDB = FIXTURES / "sweep-4files.vdb"
NAMED_VDB = FIXTURES / "vdb-4vmdk-50ws-8k-50rdpct-100randompct-16threads"
TWO_JOBS = FIXTURES / "seqwrite-then-randread.fio"
DANGEROUS = FIXTURES / "shared-lab.fio"
BROKEN = FIXTURES / "broken.fio"


def specs_of(result):
    return expand(parse_plan(result.plan, "imported"))


def fields(spec, *names):
    return {n: getattr(spec, n) for n in names}


MAIN = ("bs", "read_pct", "random_pct", "jobs", "iodepth", "runtime", "ramp", "working_set_pct", "direct")


# ---------------------------------------------------------------- vdbench

def test_hcibench_vdbench_file_becomes_the_same_test():
    r = import_file(HCIBENCH_VDB)
    assert r.kind == "vdbench"
    [spec] = specs_of(r)
    # 8 sds → 8 jobs; threads=4 per sd → iodepth 4 (outstanding IOs per disk).
    assert fields(spec, *MAIN) == dict(bs=4096, read_pct=70, random_pct=100, jobs=8, iodepth=4,
                                       runtime=3600, ramp=1800, working_set_pct=100, direct=True)
    assert spec.id == "4k-r70-rand-j8-qd4"
    assert r.plan["name"] == HCIBENCH_VDB.name
    assert "targets" not in r.plan  # raw devices are never carried over
    assert not r.refused and not r.unsupported
    text = "\n".join(r.notes)
    assert "sd1..sd8 lun=/dev/sdb, /dev/sdc, /dev/sdd, /dev/sde, ...: raw device targets are not carried over" in text
    assert "give --target DIR" in text
    assert "interval=30: not carried over; iofleet samples every second" in text
    assert all(n.startswith(f"{HCIBENCH_VDB}: ") and "\n" not in n for n in r.notes)
    # debug= and data_errors= are documented as irrelevant: not mentioned.
    assert "debug" not in text and "data_errors" not in text


def test_the_readme_import_example_imports_the_sample_in_examples():
    """README's `iofleet import examples/...` names a file a user has: the
    HCIBench sample in examples/, which imports as the recorded one does."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    (name,) = re.findall(r"^iofleet import (examples/\S+)", readme, re.M)
    sample = import_file(EXAMPLES.parent / name)
    assert sample.kind == "vdbench" and sample.plan == import_file(HCIBENCH_VDB).plan
    assert [s.id for s in specs_of(sample)] == ["4k-r70-rand-j8-qd4"]


def test_vdbench_for_loops_become_a_matrix():
    r = import_file(SWEEP_VDB)
    specs = specs_of(r)
    # forxfersize=(4k,16k,64k) x forrdpct=(0,70,100): bs outermost.
    assert [(s.bs, s.read_pct) for s in specs] == [
        (bs * 1024, rd) for bs in (4, 16, 64) for rd in (0, 70, 100)]
    assert [s.id for s in specs[:3]] == ["4k-r0-rand-j4-qd8", "4k-r70-rand-j4-qd8", "4k-r100-rand-j4-qd8"]
    assert specs[-1].id == "64k-r100-rand-j4-qd8"
    for s in specs:
        assert fields(s, "random_pct", "jobs", "iodepth", "size", "working_set_pct", "runtime", "ramp",
                      "direct", "compress_pct", "dedupe_pct") == dict(
            random_pct=100, jobs=4, iodepth=8, size=10 * 1024**3, working_set_pct=50, runtime=600, ramp=120,
            direct=True, compress_pct=50, dedupe_pct=50)
    # The sd files' directory is the target; iofleet writes only under its iofleet/ sub-directory.
    assert r.plan["targets"] == ["/mnt/vsan/vdb"]
    assert r.plan["name"] == "sweep-4files"
    assert r.plan["workloads"][0]["matrix"] == {"bs": ["4k", "16k", "64k"], "read_pct": [0, 70, 100]}


def test_hcibench_file_name_fills_what_the_content_lacks():
    r = import_file(NAMED_VDB)
    specs = specs_of(r)
    # rd=mixed has a size distribution: left out, with a note; the other two runs stay.
    assert [s.workload for s in specs] == ["oltp", "capped"]
    for s in specs:
        # No threads= and no range= in the file: 16threads and 50ws come from its name.
        assert fields(s, *MAIN) == dict(bs=8192, read_pct=50, random_pct=100, jobs=4, iodepth=16,
                                        runtime=1800, ramp=300, working_set_pct=50, direct=True)
    text = "\n".join(r.notes)
    assert "rd=oltp: iodepth=16 taken from the file name (16threads in " in text
    assert "rd=oltp: working_set_pct=50 taken from the file name (50ws in " in text
    assert "xfersize=(4k,50,64k,50): a distribution of xfersize values" in text
    assert "workload mixed is not imported" in text
    # vdbench's iorate is the run's total rate, as iofleet's rate_iops
    assert [s.values().get("rate_iops") for s in specs] == [None, 20000] and "iorate" not in text
    [refused] = r.refused
    assert "line 3 start_cmd=/opt/automation/drop-caches.sh: refused: runs a command" in refused
    assert "drop-caches" not in yaml.safe_dump(r.plan)


def test_vdbench_defaults_and_unknown_parameters_are_noted(tmp_path):
    f = tmp_path / "plain.vdb"
    f.write_text("* no threads, no elapsed, no openflags\n"
                 "sd=sd1,lun=/data/vdb/file1,size=1g,stride=(4k,8k)\n"
                 "wd=wd1,sd=sd1,xfersize=64k,rdpct=0,seekpct=seq\n"
                 "rd=rd1,wd=wd1,iorate=max\n")
    r = import_file(f)
    [spec] = specs_of(r)
    # vdbench's own defaults: threads 8, elapsed 30 s, buffered IO; warm-up = the first 1 s interval.
    assert fields(spec, *MAIN, "size") == dict(bs=65536, read_pct=0, random_pct=0, jobs=1, iodepth=8, runtime=30,
                                               ramp=1, working_set_pct=100, direct=False, size=1024**3)
    text = "\n".join(r.notes)
    assert "threads not given: vdbench's default 8 gives iodepth: 8" in text
    assert "elapsed not given: vdbench's default 30 gives runtime: 30s" in text
    assert "no openflags=o_direct: vdbench does buffered IO; imported as direct: false" in text
    assert [n for n in r.unsupported if "stride" in n] == [
        f"{f}: line 2 sd=sd1 stride=(4k,8k): stride is not carried over (iofleet has no equivalent); "
        f"check the imported plan does what you need"]


def test_the_file_wins_over_its_name(tmp_path):
    f = tmp_path / "vdb-8vmdk-50ws-8k-70rdpct-100randompct-4threads"
    f.write_text(HCIBENCH_VDB.read_text())  # says 4k and range=(0,100)
    r = import_file(f)
    [spec] = specs_of(r)
    assert (spec.bs, spec.working_set_pct) == (4096, 100)
    text = "\n".join(r.notes)
    assert "rd=run1: the file name says 8k but the file says bs=4k; the file's value is used" in text
    assert "rd=run1: the file name says 50ws but the file says working_set_pct=100; the file's value is used" in text


# ---------------------------------------------------------------- fio

def test_hcibench_fio_file_becomes_one_workload_of_eight_jobs():
    r = import_file(HCIBENCH_FIO)
    assert r.kind == "fio"  # no extension: recognised by its content
    [spec] = specs_of(r)
    # job0..job7 run at the same time with the same IO: one workload, one job per disk.
    assert fields(spec, *MAIN, "engine") == dict(bs=4096, read_pct=70, random_pct=100, jobs=8, iodepth=4,
                                                 runtime=3600, ramp=1800, working_set_pct=100, direct=True,
                                                 engine="libaio")
    assert r.plan["workloads"][0]["name"] == "job"
    assert not r.refused and not r.unsupported
    text = "\n".join(r.notes)
    assert "[job0]..[job7] filename=/dev/sdb, /dev/sdc" in text
    assert "8 sections with the same IO run at the same time in fio" in text
    assert "norandommap: not carried over" in text
    assert "group_reporting" not in text  # documented as irrelevant


def test_plain_fio_file_with_two_jobs():
    r = import_file(TWO_JOBS)
    specs = specs_of(r)
    assert [s.workload for s in specs] == ["seq-write", "rand-read-4k"]
    common = dict(size=2 * 1024**3, runtime=120, ramp=10, direct=True, engine="io_uring", working_set_pct=100)
    assert fields(specs[0], *MAIN, "size", "engine") == dict(
        bs=1024**2, read_pct=0, random_pct=0, jobs=1, iodepth=16, **common)
    assert fields(specs[1], *MAIN, "size", "engine") == dict(
        bs=4096, read_pct=100, random_pct=100, jobs=4, iodepth=32, **common)
    assert r.plan["targets"] == ["/mnt/scratch"]
    assert r.plan["workloads"][0]["description"] == "1 MiB sequential writes, 16 deep"
    # Only the renamed section is worth a note: logs and group_reporting are iofleet's own business.
    assert r.notes == [f"{TWO_JOBS}: [rand read 4k]: workload named rand-read-4k "
                       f"(plan names use letters, digits, '.', '_', '-')"]


def test_fio_defaults_are_fios_own(tmp_path):
    f = tmp_path / "minimal.fio"
    f.write_text("[randread]\nrw=randread\nsize=256m\n")
    r = import_file(f)
    [spec] = specs_of(r)
    assert fields(spec, "bs", "iodepth", "jobs", "direct", "engine", "ramp", "size", "runtime") == dict(
        bs=4096, iodepth=1, jobs=1, direct=False, engine="psync", ramp=0, size=256 * 1024**2, runtime=60)
    text = "\n".join(r.notes)
    assert "direct not set: fio's default is buffered IO; imported as direct: false" in text
    assert "ioengine not set: fio's default on Linux is psync" in text
    assert "runtime not set: fio runs until size is done" in text


def test_fio_options_iofleet_cannot_reproduce_are_noted(tmp_path):
    f = tmp_path / "odd.fio"
    f.write_text("[global]\nioengine=windowsaio\nruntime=30\ntime_based\nrate_iops=700,300\n"
                 "[capped]\nrw=randrw\nrwmixwrite=30\nbs=8k\n"
                 "[split]\nstonewall\nrw=randread\nbssplit=4k/50:64k/50\n")
    r = import_file(f)
    [spec] = specs_of(r)  # [split] has no single bs: left out
    assert fields(spec, "read_pct", "random_pct", "bs", "engine") == dict(read_pct=70, random_pct=100, bs=8192,
                                                                         engine="auto")
    assert spec.rate_iops == 1000  # reads,writes a second: the test's total is their sum
    assert len(r.unsupported) == 2
    text = "\n".join(r.unsupported)
    assert "line 2 [global] ioengine=windowsaio: engine windowsaio is not one of iofleet's" in text
    assert "line 13 [split] bssplit=4k/50:64k/50: a block-size split is not supported" in text
    assert "split" not in yaml.safe_dump(r.plan)


def test_fio_sections_that_run_at_once_are_noted_and_refused_for_run(tmp_path):
    f = tmp_path / "mix.fio"
    f.write_text("[global]\nruntime=60\ntime_based\ndirect=1\n[reader]\nrw=randread\n[writer]\nrw=randwrite\n")
    r = import_file(f)
    assert [s.workload for s in specs_of(r)] == ["reader", "writer"]
    [note] = r.unsupported
    assert "[reader], [writer]: fio runs these sections at the same time" in note and "add stonewall" in note
    with pytest.raises(PlanError) as exc:
        load_plan_source(f)
    assert exc.value.problems[0].startswith(note)


@pytest.mark.parametrize("options, where", [
    ("rw=randrw\nrwmixread=150", "line 3 [bad] rwmixread=150: allowed: 0 to 100"),
    ("rw=randrw\nrwmixwrite=-1", "line 3 [bad] rwmixwrite=-1: allowed: 0 to 100"),
    ("rw=randread\npercentage_sequential=101", "line 3 [bad] percentage_sequential=101: allowed: 0 to 100"),
    ("ramp_time=soon", "line 2 [bad] ramp_time=soon: 'soon' is not a duration; use e.g. 90s, 5m, 2h, 1h30m"),
    ("size=200%", "line 2 [bad] size=200%: allowed: 1 to 100"),
    ("buffered=perhaps", "line 2 [bad] buffered=perhaps: expected 0 or 1"),
    ("iodepth=4,8", "line 2 [bad] iodepth=4,8: different values per direction are not supported"),
])
def test_a_value_the_table_refuses_is_noted_at_its_own_line(tmp_path, options, where):
    f = tmp_path / "values.fio"
    f.write_text(f"[bad]\n{options}\n[good]\nstonewall\nrw=read\n")
    r = import_file(f)
    assert [w["name"] for w in r.plan["workloads"]] == ["good"]
    assert r.unsupported == [f"{f}: {where}; the sections using it are not imported"]


DANGEROUS_WORDS = ["include", "lab-common", "exec", "drop_caches", "rm -rf", "HOME", "$", "mb_memory",
                   "ioscheduler", "iolog", "verify", "md5"]


def test_dangerous_options_are_refused_and_never_reach_a_job_file(tmp_path):
    r = import_file(DANGEROUS)
    refused = "\n".join(r.refused)
    for what in ("line 3 include lab-common.fio: refused: `include` reads another job file",
                 "line 8 [global] directory='${HOME}/fio-data': refused: expands an environment variable",
                 "line 9 [global] size='$mb_memory*2': refused: is a fio $-expression",
                 "line 12 [global] exec_prerun='sync; echo 3 > /proc/sys/vm/drop_caches': refused: runs a shell",
                 "line 13 [global] ioscheduler=none: refused: changes the host's IO scheduler",
                 "line 19 [randwrite] write_iolog=/tmp/randwrite.iolog: refused",
                 "line 20 [randwrite] exec_postrun=rm -rf /tmp/fio-scratch: refused: runs a shell command"):
        assert what in refused
    assert len(r.refused) == 7
    [unsupported] = r.unsupported
    assert "line 21 [randwrite] verify=md5: not carried over: data verification is not supported" in unsupported

    # What is carried is the IO itself.
    [spec] = specs_of(r)
    assert fields(spec, "bs", "read_pct", "random_pct", "iodepth", "runtime", "direct", "engine") == dict(
        bs=4096, read_pct=0, random_pct=100, iodepth=8, runtime=60, direct=True, engine="libaio")
    assert "targets" not in r.plan

    # Absent from the plan, its YAML, and every job file rendered from it.
    plan_text = yaml.safe_dump(r.plan)
    job_text = render_test(spec, directory_where([tmp_path]), "libaio")
    for word in DANGEROUS_WORDS:
        assert word not in plan_text, word
        assert word not in job_text.replace("$jobnum", "").replace("$filenum", ""), word

    # Running the job file refuses it: one line per option, naming file, section, option and fix.
    with pytest.raises(PlanError) as exc:
        load_plan_source(DANGEROUS)
    lines = exc.value.problems
    assert len(lines) == 8
    assert all(line.startswith(f"{DANGEROUS}: line ") for line in lines)
    assert any("[global] exec_prerun=" in line and "; remove it" in line for line in lines)
    assert any("include lab-common.fio" in line and "; paste the options you need" in line for line in lines)
    assert any("[randwrite] verify=md5" in line and "`iofleet import` only notes it" in line for line in lines)


@pytest.mark.parametrize("text, refused", [
    ("[j]\nrw=read\nfilename=/data/important.db\n", "names a file outside iofleet's own directory"),
    ("[j]\nrw=read\nioengine=external:/tmp/evil.so\n", "runs a program or loads a library"),
    ("[j]\nrw=read\ncgroup=bench\ncgroup_weight=100\n", "changes the host's cgroups"),
    ("[j]\nrw=read\ntrigger=/tmp/t\n", "runs a command or reboots the host"),
    ("[j]\nrw=read\nread_iolog=/tmp/trace\n", "replays IO from another file"),
    ("[j]\nrw=read\nopendir=/home\n", "does IO to every file under a directory"),
    ("[j]\nrw=read\nbs=${BS}\n", "expands an environment variable"),
])
def test_every_dangerous_kind_is_refused(tmp_path, text, refused):
    f = tmp_path / "d.fio"
    f.write_text(text)
    r = import_file(f)
    assert len(r.refused) >= 1 and all(refused in line for line in r.refused)
    with pytest.raises(PlanError):
        load_plan_source(f)


# ---------------------------------------------------------------- running a file

def test_load_plan_source_imports_a_clean_fio_file():
    plan, text, notes = load_plan_source(HCIBENCH_FIO)
    assert [s.id for s in expand(plan)] == ["4k-r70-rand-j8-qd4"]
    # The stored text is the plan, with what was assumed as comments on top.
    assert text.startswith("# iofleet plan imported from fio job file")
    assert parse_plan(yaml.safe_load(text)) == plan
    assert notes and all(f"# note: {n}" in text for n in notes)


def test_load_plan_source_passes_yaml_plans_through_and_sends_vdbench_to_import():
    plan, text, notes = load_plan_source(EXAMPLES / "quick.yaml")
    assert text == (EXAMPLES / "quick.yaml").read_text() and notes == []
    with pytest.raises(PlanError) as exc:
        load_plan_source(HCIBENCH_VDB)
    assert exc.value.problems == [f"{HCIBENCH_VDB}: is a vdbench parameter file; convert it first: "
                                  f"iofleet import {HCIBENCH_VDB} -o plan.yaml (then check the notes)"]


# ---------------------------------------------------------------- broken input

def _write(tmp_path, name, data):
    f = tmp_path / name
    f.write_bytes(data)
    return f


@pytest.mark.parametrize("name, data, words", [
    ("empty.fio", b"", "is empty"),
    ("blank", b"  \n\n", "is empty"),
    ("disk.img", b"\x7fELF\x00\x00\x01", "is a binary file"),
    ("latin1.fio", b"[j]\ndescription=caf\xe9\n", "is not UTF-8 text"),
    ("notes.txt", b"remember to buy milk\n", "is neither a vdbench parameter file"),
    ("plan.txt", b"name: x\nworkloads: []\n", "is already an iofleet plan"),
    ("outside.fio", b"bs=4k\n[j]\nrw=read\n", "line 1: option bs=4k is outside any [section]"),
    ("global-only.fio", b"[global]\nbs=4k\n", "has no job section"),
    ("paren.vdb", b"sd=sd1,lun=/dev/sdb,range=(0,100\nwd=wd1,sd=sd1\nrd=r,wd=wd1\n", "unbalanced parentheses"),
    ("norun.vdb", b"sd=sd1,lun=/dev/sdb\nwd=wd1,sd=sd1\n", "has no rd="),
    ("bad-value.vdb", b"sd=sd1,lun=/dev/sdb\nwd=wd1,sd=sd1,rdpct=150\nrd=r,wd=wd1\n",
     "nothing could be imported"),
])
def test_broken_files_give_one_line_errors(tmp_path, name, data, words):
    f = _write(tmp_path, name, data)
    with pytest.raises(PlanError) as exc:
        import_file(f)
    first = exc.value.problems[0]
    assert first.startswith(f"{f}: ") and words in first and "\n" not in first
    assert "Traceback" not in str(exc.value)


_LINES = st.sampled_from([
    "[global]", "[job]", "[a b]", "rw=randrw", "rw=trim", "bs=4k,8k", "size=10%", "iodepth=0", "runtime=1.5s",
    "directory=/dev", "directory=a:b", "filename=x:/dev/sda", "stonewall", "direct=maybe", "include x",
    "percentage_random=50,20", "exec_prerun=ls", "bs=${X}", "sd=sd1,lun=/dev/sdb,threads=4", "sd=sd2,lun=/tmp/x,size=1k",
    "wd=wd1,sd=sd*,xfersize=(4k,8k)", "wd=wd2,sd=(sd1-sd9),rdpct=50,seekpct=eof", "rd=r1,wd=wd*,forthreads=(1-64,d)",
    "rd=r2,wd=wd1,forxfersize=(512-4k,d),elapsed=1h,warmup=x", "sd=default,threads=0", "compratio=0.5", "x=(", "[",
    "rd=r3,wd=nope", "wd=wd3,sd=sd1,range=(10,5)", "* comment", "; comment", "key"])


@settings(max_examples=150, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.lists(st.one_of(_LINES, st.text(max_size=20)), max_size=12),
       st.sampled_from(["x.fio", "x", "vdb-2vmdk-10ws-4k-0rdpct-0randompct-threads"]))
def test_any_input_gives_a_valid_plan_or_one_line_errors(tmp_path_factory, lines, name):
    f = tmp_path_factory.mktemp("fuzz") / name
    f.write_text("\n".join(lines), errors="surrogatepass")
    try:
        r = import_file(f)
    except PlanError as exc:
        assert exc.problems and all("\n" not in p for p in exc.problems)
    else:
        expand(parse_plan(r.plan))
        assert all("\n" not in n for n in r.notes)
    try:
        load_plan_source(f)
    except PlanError as exc:
        assert exc.problems and all("\n" not in p for p in exc.problems)


def test_broken_fixture_names_the_line():
    with pytest.raises(PlanError) as exc:
        import_file(BROKEN)
    assert exc.value.problems == [f"{BROKEN}: line 3: bs 4k is neither a [section] header nor an "
                                  f"option=value line; check the line"]


def test_missing_and_directory(tmp_path):
    with pytest.raises(PlanError, match="no such file"):
        import_file(tmp_path / "nope.fio")
    with pytest.raises(PlanError, match="is a directory"):
        import_file(tmp_path)


def test_detect_kind():
    assert detect_kind(HCIBENCH_VDB.read_text()) == "vdbench"
    assert detect_kind(HCIBENCH_FIO.read_text()) == "fio"
    assert detect_kind((EXAMPLES / "quick.yaml").read_text()) is None


# ---------------------------------------------------------------- CLI

def _app():
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.command("import")
    def run_import(files: List[Path] = typer.Argument(...),
                   output: Optional[Path] = typer.Option(None, "-o", "--output")):
        try:
            import_command(files, output)
        except IofleetError as exc:  # what cli.main's user_errors does
            for line in str(exc).splitlines():
                typer.echo(f"error: {line}", err=True)
            raise typer.Exit(exc.exit_code) from None

    @app.command()
    def other():  # a second command, so `import` is a sub-command as in iofleet
        pass

    return app


def test_cli_merges_files_prints_the_plan_and_notes():
    result = CliRunner().invoke(_app(), ["import", str(HCIBENCH_VDB), str(HCIBENCH_FIO), str(TWO_JOBS)])
    assert result.exit_code == 0, result.stderr
    plan = parse_plan(yaml.safe_load(result.stdout))
    assert [w.name for w in plan.workloads] == ["run1", "job", "seq-write", "rand-read-4k"]
    assert plan.targets == ["/mnt/scratch"]
    assert len(expand(plan)) == 4
    notes = result.stderr.splitlines()
    assert notes and all(line.startswith("note: ") for line in notes)
    assert any("targets belong to the whole plan" in line for line in notes)
    assert result.stdout.startswith("# iofleet plan imported from ")


def test_cli_renames_clashing_workloads_and_writes_a_file(tmp_path):
    out = tmp_path / "plan.yaml"
    result = CliRunner().invoke(_app(), ["import", str(HCIBENCH_VDB), str(HCIBENCH_VDB), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    plan = parse_plan(yaml.safe_load(out.read_text()))
    assert [w.name for w in plan.workloads] == ["run1", "run1-2"]
    assert f"Wrote {out}: 2 workloads, 2 tests" in result.stderr


def test_cli_reports_every_broken_file_in_one_line_each(tmp_path):
    result = CliRunner().invoke(_app(), ["import", str(BROKEN), str(tmp_path / "missing.fio"), str(TWO_JOBS)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {BROKEN}: line 3: bs 4k is neither a [section] header nor an option=value line; check the line",
        f"error: {tmp_path / 'missing.fio'}: no such file"]


def test_a_vdbench_rate_curve_is_pointed_to_iofleet_curve(tmp_path):
    f = tmp_path / "curve.vdb"
    f.write_text("sd=sd1,lun=/data/vdb/file1,size=1g\n"
                 "wd=wd1,sd=sd1,xfersize=4k,rdpct=70,seekpct=100\n"
                 "rd=rd1,wd=wd1,iorate=curve,elapsed=60\n")
    r = import_file(f)
    [spec] = specs_of(r)
    assert spec.values().get("rate_iops") is None
    assert any("iorate=curve: only a fixed iorate is carried over (as rate_iops); `iofleet curve` runs latency "
               "against load" in n for n in r.notes)
