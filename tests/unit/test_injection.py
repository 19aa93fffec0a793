"""Job-file injection, on every path a user's text can take to a fio job
file: plan fields, the inventory (fleet hosts), the web API, imported fio
job files. fio job files can run commands (exec_prerun, exec_postrun,
ioengine=exec), read other files (include, filename=, read_iolog), expand
$VAR / ${VAR}, start an option or a section with a newline, and end a value
with a ;/# comment. Every payload must be refused with a clear iofleet
error, or reach the job files only where it is harmless: as a checked
directory or device (a whole option value, the target itself) — never as
an option, a section, or part of another option's value.

test_jobfile.py covers the renderer on its own (bad test ids, paths and
workload names); test_imports.py the importer's notes on dangerous options.
"""

import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from iofleet.errors import IofleetError, PlanError
from iofleet.fio import jobfile
from iofleet.fio.jobfile import (ALLOWED_OPTIONS, DATA_FILE_FORMAT, PROBE_FILE, device_where, directory_probe,
                                 directory_where, render_cleanup, render_layout, render_prepare, render_probe, render_target_check, render_test)
from iofleet.fleet.fio_link import remote
from iofleet.fleet.places import fleet as fleet_place
from iofleet.fleet.places import local as local_place
from iofleet.fleet.check import host_targets
from iofleet.fleet.targets import Access, target_for
from iofleet.fleet.places.fleet import FleetPlace
from iofleet.fleet.places.local import LocalPlace
from iofleet.fleet.inventory import InventoryError, load_inventory
from iofleet.fleet.fio_link.runner import FioRun
from iofleet.importers import import_file, load_plan_source
from iofleet.plan import expand, parse_plan
from iofleet.plan.expand import expand_mixed, prepare_tiers
from iofleet.plan.params import AUTO_ENGINES, ENGINES, PARAMS, RUN_PARAMS

MARK = "PWNED"
# Each carries MARK; a job file may hold MARK only as (part of) a target.
PAYLOADS = [
    f"x\nexec_prerun=touch /tmp/{MARK}",
    f"x\r\nexec_postrun=rm -rf /{MARK}",
    f"x]\n[{MARK}]\nexec_prerun=id",
    f"x\ninclude /etc/{MARK}",
    f"x\n[global]\nioengine=exec\nprogram={MARK}",
    f"${{HOME}}/{MARK}",
    f"$({MARK})",
    f"`{MARK}`",
    f"a;exec_prerun={MARK}",
    f"a # {MARK}",
    f"a:/{MARK}",
    f"x\x00{MARK}",
    f"x\u2028exec_prerun={MARK}",
    f"x\x85exec_prerun={MARK}",
    f"x\x0bexec_prerun={MARK}\x0c",
    f"'{MARK}\"",
    f"{MARK},exec_prerun=id",
    f"exec_prerun={MARK}",
    f"/t/exec_prerun={MARK}",  # a harmless directory name
    f"/t/{MARK} x",  # a directory with a space
    f"/dev/{MARK}",  # a device
    f"/dev/{MARK}:/etc/passwd",
    f"/dev/../etc/{MARK}",
    f"{MARK}",  # a plain name
    f" {MARK}",
    f"{MARK}\n",
]
FORBIDDEN = ("exec_prerun", "exec_postrun", "include", "ioscheduler", "read_iolog", "write_iolog", "program",
             "cgroup", "trigger", "opendir", "uid", "gid")


# --- what a safe job file is ---------------------------------------------------------

def assert_safe_jobfile(text: str, targets: list[str]) -> None:
    """Only iofleet's comments, sections and allow-listed options; MARK (or
    any '$', newline, comment) only inside a directory/filename value that is
    exactly the targets."""
    assert text.endswith("\n") and "\r" not in text
    for line in text[:-1].split("\n"):
        assert re.fullmatch(r"[\x20-\x7e]+", line), repr(line)  # printable ASCII: no NUL, no U+2028, no VT
        if line.startswith(";"):  # fio skips the line (it may name a test and its workload)
            continue
        section = re.fullmatch(r"\[([A-Za-z0-9][A-Za-z0-9_.-]*)\]", line)
        if section:
            assert section[1] != "global" and MARK not in section[1], line
            continue
        key, sep, value = line.partition("=")
        assert sep and key in ALLOWED_OPTIONS and key not in FORBIDDEN, line
        if key == "directory":
            assert set(value.split(":")) <= set(targets), line
            assert not re.search(r"[$;#`'\"\\]", value), line
        elif key == "filename":  # only a device target
            assert value in targets and re.fullmatch(r"/dev(/[A-Za-z0-9_+@=~-][A-Za-z0-9_.+@=~-]*)+", value), line
        elif key == "filename_format":
            assert value in (DATA_FILE_FORMAT, PROBE_FILE), line
        else:
            assert MARK not in value and "$" not in value and re.fullmatch(r"[A-Za-z0-9_.:%-]+", value), line
        if key == "ioengine":
            assert value in ENGINES and value != "auto", line


FIO = shutil.which("fio")


def assert_fio_reads_only_ours(path: Path, targets: list[str]) -> None:
    """fio's own reading of the file (--showcmd parses, runs nothing): the
    options it sees are iofleet's, and the targets come through whole."""
    if not FIO:
        return
    out = subprocess.run([FIO, "--showcmd", str(path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    for opt in re.split(r" (?=--)", out.stdout.strip())[1:]:
        key, _, value = opt[2:].partition("=")
        assert key in ALLOWED_OPTIONS | {"name"} and key not in FORBIDDEN, opt
        if key == "directory":
            assert set(value.strip().split(":")) <= set(targets), opt
        elif key == "filename":
            assert value.strip() in targets, opt
        else:
            assert MARK not in value, opt


def refused_cleanly(exc: IofleetError, *names: str) -> None:
    text = str(exc)
    lines = text.splitlines()
    assert lines and all(line.strip() for line in lines), text
    assert "Traceback" not in text
    if names:
        assert any(n in text for n in names), text


# --- rendering a plan as iofleet does ---------------------------------------------------

def render_plan(plan) -> dict[str, str]:
    """Every job file a local run of the plan writes: engine probes,
    preparation, layouts, tests, cleanup, target check."""
    target = target_for(plan.targets or ["/t"], Access(host="h1"))  # its paths as written, not resolved here
    steps = expand_mixed(plan) if plan.mixed else expand(plan)
    specs = [s for step in steps for s in (step.groups.values() if plan.mixed else [step])]
    target.fit(specs, True, local=False)
    place = target.fio_where()
    files = {f"probe.{e}": render_probe(target.probe_where("probe"), e, True) for e in AUTO_ENGINES}
    for mode in ("random", "zero"):
        files[f"prepare.{mode}"] = render_prepare(prepare_tiers(specs), place, "psync", True, mode, 2, 128 * 1024)
    for i, spec in enumerate(specs):
        for engine in ("psync", "io_uring"):
            files[f"test{i}.{engine}"] = render_test(spec, place, engine, clear_cache=i % 2 == 0)
        if target.holds_files:
            files[f"layout{i}"] = render_layout(spec, target.targets)
    if target.holds_files:
        files["cleanup"] = render_cleanup(target.targets, max(s.jobs for s in specs))
        files["check"] = render_target_check(target.targets)
    return files


def accepted_safely(plan, tmp_path=None) -> None:
    targets = plan.targets or ["/t"]
    files = render_plan(plan)
    for text in files.values():
        assert_safe_jobfile(text, targets)
    if tmp_path is not None and MARK in files["test0.psync"]:  # a target holds the payload: fio's own reading
        path = tmp_path / "test.fio"
        path.write_text(files["test0.psync"])
        assert_fio_reads_only_ours(path, targets)


# --- plan fields ------------------------------------------------------------------------------

BASE = {"name": "p", "targets": ["/t"], "defaults": {"size": "1m"},
        "workloads": [{"name": "w", "matrix": {"iodepth": [1, 2], "working_set_pct": [50, 100]}}]}


def _set(plan: dict, field: str, payload: str) -> dict:
    """The plan with the payload in one field ('workloads[0].matrix.bs' …)."""
    plan = yaml.safe_load(yaml.safe_dump(plan))  # a deep copy
    parts = field.split(".")
    target = plan
    for part in parts[:-1]:
        m = re.fullmatch(r"(\w+)\[(\d+)\]", part)
        target = target[m[1]][int(m[2])] if m else target.setdefault(part, {})
    last = parts[-1]
    if last.endswith("[]"):  # a list field: the payload as one more entry
        target[last[:-2]] = [*target.get(last[:-2], []), payload]
    elif last.endswith("{}"):  # a mapping: the payload as key and as value
        target[last[:-2]] = {payload: "v", "k": payload}
    else:
        target[last] = payload
    return plan


PLAN_FIELDS = (["name", "description", "label", "targets[]", "destroy_data[]", "hosts{}", "on_error",
                "on_host_loss", "keep_files", "mixed", "workloads[0].name", "workloads[0].description",
                "workloads[0].hosts{}", "x"]
               + [f"defaults.{p}" for p in sorted(PARAMS)]
               + [f"workloads[0].{p}" for p in sorted(PARAMS)]
               + [f"workloads[0].matrix.{p}[]" for p, spec in sorted(PARAMS.items()) if spec.in_matrix]
               + sorted(RUN_PARAMS))


@pytest.mark.parametrize("field", PLAN_FIELDS)
def test_plan_field_payloads_are_refused_or_harmless(field, tmp_path):
    accepted = []
    for payload in PAYLOADS:
        data = _set(BASE, field, payload)
        if field == "targets[]":
            data["targets"] = [payload]  # alone too (a device is only ever alone)
        try:
            plan = parse_plan(data, "plan.yaml")
            if plan.mixed:
                pytest.skip("a mixed plan needs host groups")  # (mixed: 'PWNED' is not a bool)
            expand(plan)
        except PlanError as exc:
            refused_cleanly(exc, field.split(".")[-1].split("[")[0].rstrip("{}"))
            continue
        accepted.append(payload)
        accepted_safely(plan, tmp_path)
    # Only free text and what names a target can hold a payload; nothing
    # that becomes an option does.
    free = ("description", "targets[]", "destroy_data[]", "hosts{}")  # hosts: labels to match, nothing more
    if not field.endswith(free):
        assert accepted in ([], [MARK]), (field, accepted)  # a plain name at most


def test_targets_of_a_real_local_run(monkeypatch, tmp_path):
    """The job files LocalPlace writes for a run (fio itself replaced by a
    recorder) are the safe ones, with a payload that is a valid directory."""
    seen: list[str] = []

    def fake_fio(cmd, work, stop, on_live=None, timeout_s=None, **kw):
        seen.append(Path(cmd[-1]).read_text())
        ok = Path(cmd[-1]).name == "layout.fio"  # so that the test after it is rendered too
        return FioRun(0 if ok else 1, None, "", "fio: recorded, not run", False, False, 0.0)

    monkeypatch.setattr(local_place, "run_fio", fake_fio)
    monkeypatch.setattr(local_place, "resolve_engine", lambda target, engine, direct: "psync")
    target = tmp_path / f"exec_prerun={MARK} x"
    plan = parse_plan(_set(BASE, "targets[]", str(target)) | {"targets": [str(target)]})
    place = LocalPlace(target_for(plan.targets))
    specs = expand(plan)
    with pytest.raises(IofleetError):
        place.prepare_data(specs, "random", 2, 128 * 1024, tmp_path, threading.Event(), lambda *a: None)
    for spec in specs:
        place.run_test(spec, tmp_path, threading.Event(), lambda phase: None, None)
    assert len(seen) == 1 + len(specs) + sum(s.working_set_pct < 100 for s in specs)
    for text in seen:
        assert_safe_jobfile(text, [str(target)])
        assert f"directory={target}\n" in text
    (tmp_path / "seen.fio").write_text(seen[-1])
    assert_fio_reads_only_ours(tmp_path / "seen.fio", [str(target)])


def test_the_renderer_refuses_what_slips_past_the_model():
    """Defence in depth: a spec or target that never passed the plan model
    (built by hand) is refused by the renderer itself."""
    spec = expand(parse_plan(BASE))[0]
    for payload in PAYLOADS:
        for where, valid in ((lambda: directory_where([Path(payload)]),
                              re.fullmatch(r"[A-Za-z0-9_./+@,=~ -]+", str(Path(payload)))),
                             (lambda: device_where(payload),
                              re.fullmatch(r"/dev(/[A-Za-z0-9_+@=~-][A-Za-z0-9_.+@=~-]*)+", payload))):
            if valid:
                place = where()
                assert_safe_jobfile(render_test(spec, place, "psync"), [str(Path(payload)), payload])
            else:
                with pytest.raises(IofleetError, match="refused"):
                    render_test(spec, where(), "psync")
    for engine in ("exec", "external:/x.so", f"psync\nexec_prerun={MARK}", "auto"):
        with pytest.raises(IofleetError):
            render_test(spec, directory_where([Path("/t")]), engine)
    for key in FORBIDDEN:
        with pytest.raises(IofleetError, match="allow-list"):
            jobfile._option(key, "x")
    # Every string value is checked where it is written, whoever passed it.
    for payload in PAYLOADS:
        unsafe = not re.fullmatch(r"[A-Za-z0-9_./+@,=~ -]*", payload)
        for key in ("rw", "ioengine", "write_iops_log", "verify"):  # (directory: joined by ":")
            if unsafe:
                with pytest.raises(IofleetError, match="refused"):
                    jobfile._option(key, payload)
        if unsafe:
            with pytest.raises(IofleetError, match="refused"):
                render_probe(directory_probe(Path("/t")), payload, True)  # (the engine is also in its comment line)


# --- the inventory and the fleet --------------------------------------------------------------------

HOST = {"name": "h1", "address": "10.0.0.1:8765", "labels": {"role": "db"}, "targets": ["/data"]}
HOST_FIELDS = ["name", "address", "targets[]", "labels{}", "metrics", "x"]
# An IPv6 scope id is free text to Python's ipaddress; fio's --client splits at ','.
ADDRESS_PAYLOADS = [f"fe80::1%{MARK}\nexec_prerun=id", f"::1%{MARK},1", f"[fe80::1%{MARK};id]:8765",
                    f"fe80::1%eth0 {MARK}", f"{MARK}:8765\n", f"10.0.0.1:8765,{MARK}", f"[::1]:{MARK}"]


class FakeListener:
    def getsockname(self):
        return ("127.100.0.1", 40000)


def fleet_jobfiles(monkeypatch, tmp_path, hosts, plan) -> list[tuple[str, str, str]]:
    """(client argument, job file name, text) of every fio client run the
    fleet path starts for a plan — engine probes, preparation, layouts,
    tests, cleanup — through FleetPlace and run_on_hosts, with fio and the
    relay's sockets replaced by recorders (nothing runs)."""
    seen = []

    def fake_fio(cmd, work, stop, on_live=None, timeout_s=None, **kw):
        args = [a for a in cmd[1:] if a.startswith("--client=") or not a.startswith("--")]  # (client, job file) pairs
        for client, path in zip(args[::2], args[1::2]):
            assert client.startswith("--client=") and Path(path).parent == work
            seen.append((client.removeprefix("--client="), Path(path).name, Path(path).read_text()))
        return FioRun(1, None, "", "fio: recorded, not run", False, False, 0.0)

    class NoRelay(remote.Relay):
        """The relay without its sockets: no packet leaves this test. A host's
        address is only ever a socket's peer: check what it would connect to."""

        def open(self, timeout_s=0.0):
            for link in self.links.values():
                address, port = link.upstream
                assert re.fullmatch(r"[A-Za-z0-9.:%_-]+", address) and isinstance(port, int), link.upstream
                link.connected, link.listener = True, FakeListener()
            return {}

        def close(self):
            pass

    monkeypatch.setattr(remote, "run_fio", fake_fio)
    monkeypatch.setattr(remote, "Relay", NoRelay)
    stop = threading.Event()
    with pytest.raises(IofleetError, match="no IO engine works"):
        remote.resolve_fleet_engines(hosts, "auto", True, tmp_path, stop, host_targets(hosts))
    monkeypatch.setattr(fleet_place, "resolve_fleet_engines",
                        lambda todo, engine, direct, work, stop, targets: {h.name: "psync" for h in todo})
    place = FleetPlace(hosts)
    steps = place.fit(expand(plan), True)
    with pytest.raises(IofleetError, match="preparing the data failed"):
        place.prepare_data(steps, "random", 2, 128 * 1024, tmp_path, stop, lambda *a: None)
    for step in steps:
        place.run_test(step, tmp_path, stop, lambda phase: None, None)
    remote.cleanup_fleet(hosts, 2, tmp_path)
    return seen


@pytest.mark.parametrize("field", HOST_FIELDS)
def test_inventory_payloads_are_refused_or_never_reach_a_job_file(field, monkeypatch, tmp_path):
    plan = parse_plan(BASE)
    accepted = []
    for i, payload in enumerate(PAYLOADS + (ADDRESS_PAYLOADS if field == "address" else [])):
        host = _set(HOST, field, payload)
        if field == "targets[]":
            host["targets"] = [payload]
        path = tmp_path / f"inventory{i}.yaml"
        path.write_text(yaml.safe_dump({"hosts": [host, {"address": "10.0.0.2", "targets": ["/data"]}]}))
        try:
            inventory = load_inventory(path)
        except InventoryError as exc:
            refused_cleanly(exc, str(path))
            continue
        accepted.append(payload)
        for h in inventory.hosts:
            h.metrics = None  # a payload URL is only ever fetched, never written to a job file
        work = tmp_path / f"work{i}"
        work.mkdir()
        seen = fleet_jobfiles(monkeypatch, work, inventory.hosts, plan)
        assert {name.split(".")[0] for _, name, _ in seen} >= {"probe-io_uring", "prepare", "job", "layout",
                                                              "cleanup"} - ({"layout", "cleanup"} if any(
            not target_for(h.targets).holds_files for h in inventory.hosts) else set())
        for client, name, text in seen:
            h = next(h for h in inventory.hosts if name.endswith(f".{h.name}.fio"))
            assert re.fullmatch(r"((ip|ip6):)?[A-Za-z0-9.:%_-]+,[0-9]{1,5}", client), client
            assert re.fullmatch(r"[A-Za-z0-9_.-]+\.fio", name), name
            assert_safe_jobfile(text, h.targets)
    if field not in ("targets[]", "x"):  # only a plain name or address (which loses its blanks)
        assert all(re.fullmatch(rf"{MARK}(:8765)?", p.strip()) for p in accepted), (field, accepted)


# --- the web API ------------------------------------------------------------------------------------

class Recorder:
    """Stands in for the web server's RunManager: records the run it was
    asked to start and starts nothing (answers as a busy server: 409)."""

    def __init__(self):
        self.started = []

    def start(self, launch):
        from iofleet.web.live import RunBusy
        self.started.append((launch.preview, launch.text, launch.hosts, launch.label))
        raise RunBusy("recorded, not started")

    def status(self):
        return None


@pytest.fixture
def web(tmp_path):
    from fastapi.testclient import TestClient

    from iofleet.web.app import create_app
    from iofleet.web.render import Settings

    app = create_app(Settings(data_dir=tmp_path / "data"))
    app.state.runs = Recorder()
    client = TestClient(app, base_url="http://127.0.0.1")
    token = client.get("/api/session").json()["csrf_token"]
    client.headers["X-CSRF-Token"] = token
    return client, app.state.runs, tmp_path / "data"


# The web API's share (the model behind it is the same): one payload of each kind.
WEB_PAYLOADS = [p for p in PAYLOADS if p.startswith(("x\n", "x]", "${", "a;", "a:", "x\x00", "x\u2028", "/t/",
                                                     "/dev/", MARK))]
WEB_FIELDS = ["name", "description", "label", "targets[]", "destroy_data[]", "hosts{}", "workloads[0].name",
              "workloads[0].description", "workloads[0].engine", "defaults.bs", "workloads[0].matrix.runtime[]",
              "prepare", "percentile"]


def saved(data_dir: Path) -> list[str]:
    plans = data_dir / "plans"
    return sorted(p.name for p in plans.iterdir()) if plans.is_dir() else []


def assert_refused(response, *names) -> None:
    assert response.status_code in (400, 422), (response.status_code, response.text)
    body = response.json()
    message = body.get("error") or str(body.get("detail"))
    assert message and "Traceback" not in response.text
    if names and response.status_code == 400:
        assert any(n in " ".join(body.get("problems", [message])) for n in names), body


@pytest.mark.parametrize("field", WEB_FIELDS)
def test_web_api_refuses_payloads_or_saves_and_starts_them_harmlessly(web, field):
    client, runs, data_dir = web
    short = field.split(".")[-1].split("[")[0].rstrip("{}")
    for payload in WEB_PAYLOADS:
        data = _set(BASE, field, payload)
        text = yaml.safe_dump(data, allow_unicode=False)
        check = client.post("/api/validate", json={"yaml": text})
        assert check.status_code == 200, check.text
        verdict = check.json()
        before = saved(data_dir)
        save = client.post("/api/plans", json={"yaml": text})
        run = client.post("/api/runs", json={"yaml": text})
        if not verdict["ok"]:
            assert verdict["error"] and "\n" not in verdict["error"] and short in verdict["error"], verdict
            assert_refused(save, short)
            assert_refused(run, short)
            assert saved(data_dir) == before and not runs.started
            continue
        # Accepted: saved under its (checked) name, and the run it would start renders safely.
        assert save.status_code == 200 and saved(data_dir) == sorted(set(before) | {f"{save.json()['name']}.yaml"})
        assert run.status_code == 409 and len(runs.started) == 1, run.text
        plan, stored_text, _, _ = runs.started.pop()
        assert stored_text == text
        accepted_safely(plan)


def test_web_run_body_fields_are_checked(web):
    client, runs, data_dir = web
    good = yaml.safe_dump(BASE)
    for payload in WEB_PAYLOADS:
        r = client.post("/api/runs", json={"yaml": good, "label": payload})
        if payload == MARK:  # a plain label
            assert r.status_code == 409 and runs.started.pop()[3] == MARK
        else:
            assert_refused(r, "label")
        r = client.post("/api/runs", json={"yaml": good, "targets": [payload]})
        if r.status_code == 409:
            plan = runs.started.pop()[0]
            assert plan.targets == [payload]
            accepted_safely(plan)
        else:
            assert_refused(r, "targets")
        r = client.post("/api/validate", json={"yaml": good, "targets": ["/t", payload]})
        assert r.status_code == 200
        r = client.post("/api/runs", json={"plan": payload})
        assert r.status_code in (400, 404, 422) and r.json()["error"], r.text
    for body in ({"plan": "../../etc/passwd"}, {"plan": "p", "yaml": good}, {}, {"yaml": 5}, {"yaml": ["x"]},
                 {"yaml": good, "fleet": True}, {"yaml": good, "targets": "/t"}, {"yaml": "[" * 5000},
                 {"yaml": f"name: p\nworkloads: [{{name: w, iodepth: 0x{'f' * 5000}}}]"}):
        r = client.post("/api/runs", json=body)
        assert r.status_code in (400, 404, 422), (body, r.text)
        assert "Traceback" not in r.text
    assert not runs.started and saved(data_dir) == []


def test_web_editor_save_refuses_payloads(web):
    client, runs, data_dir = web
    for payload in WEB_PAYLOADS:
        for field in ("name", "workloads[0].name", "targets[]"):
            text = yaml.safe_dump(_set(BASE, field, payload))
            r = client.post("/plans/editor/save", data={"yaml": text, "original": ""})
            assert r.status_code == 200
            names = saved(data_dir)
            if names:  # accepted: a plain name, and a plan that renders safely
                assert names == [f"{yaml.safe_load(text)['name']}.yaml"]
                from iofleet.plan.load import parse_plan_text
                accepted_safely(parse_plan_text((data_dir / "plans" / names[0]).read_text()))
                (data_dir / "plans" / names[0]).unlink()
    assert not runs.started


# --- imported fio job files ---------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    f"exec_prerun=touch /tmp/{MARK}", f"exec_postrun={MARK}", f"EXEC_PRERUN={MARK}", f"  exec_prerun = {MARK}",
    f"include /etc/{MARK}", f"\tinclude {MARK}", f"ioengine=exec\nprogram={MARK}", f"ioengine=external:/{MARK}.so",
    f"directory=${{HOME}}/{MARK}", f"filename=/tmp/{MARK}", f"filename=a:../{MARK}", "bs=$mb_memory",
    f"read_iolog=/{MARK}", f"write_iolog=/{MARK}", f"ioscheduler={MARK}", f"cgroup={MARK}", f"trigger={MARK}",
    f"trigger_cmd={MARK}", "uid=0", f"opendir=/{MARK}", f"exec_prerun=a\\\nb={MARK}",
])
def test_dangerous_job_file_lines_are_refused_when_run(tmp_path, line):
    path = tmp_path / "job.fio"
    path.write_text(f"[global]\nsize=1m\n{line}\n[job]\nrw=randread\nruntime=5\n")
    with pytest.raises(PlanError) as info:
        load_plan_source(path)
    refused_cleanly(info.value, str(path))
    assert "refused: " in str(info.value)  # as dangerous, not merely as unsupported
    result = import_file(path)  # `iofleet import` notes it, and carries nothing of it
    assert MARK not in yaml.safe_dump(result.plan)
    accepted_safely(parse_plan(result.plan))


@pytest.mark.parametrize("value", [f"/t/{MARK}\nexec_prerun=id", f"/t;{MARK}", f"/t/`{MARK}`", f"/t/$({MARK})",
                                   f"/a:/{MARK}", f"/t/{MARK} ; x", f"/t/{MARK}#x"])
def test_job_file_directory_payloads_never_become_targets(tmp_path, value):
    path = tmp_path / "job.fio"
    path.write_text(f"[job]\nrw=randread\nsize=1m\nruntime=5\ndirectory={value}\n")
    for load in (lambda: import_file(path).plan, lambda: load_plan_source(path)[0].model_dump(exclude_none=True)):
        try:
            plan = load()
        except PlanError as exc:
            refused_cleanly(exc)
            continue
        for target in plan.get("targets", []):
            assert not re.search(r"[\n;`$#:]", target), target
        accepted_safely(parse_plan(plan))


def test_web_fleet_runs_select_hosts_by_labels_only(tmp_path):
    """With an inventory (`iofleet serve --hosts`), a plan's `hosts:` labels
    only select hosts: a payload there selects none and is refused in one line."""
    from fastapi.testclient import TestClient

    from iofleet.web.app import create_app
    from iofleet.web.render import Settings

    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump({"hosts": [HOST, {"address": "10.0.0.2", "targets": ["/data"]}]}))
    app = create_app(Settings(data_dir=tmp_path / "data", inventory=load_inventory(inv), inventory_path=inv))
    app.state.runs = runs = Recorder()
    client = TestClient(app, base_url="http://127.0.0.1")
    client.headers["X-CSRF-Token"] = client.get("/api/session").json()["csrf_token"]
    for payload in WEB_PAYLOADS:
        text = yaml.safe_dump(BASE | {"hosts": {"role": payload}})
        r = client.post("/api/runs", json={"yaml": text, "fleet": True})
        assert_refused(r, "labels")
        assert len(r.json()["problems"]) == 1
    r = client.post("/api/runs", json={"yaml": yaml.safe_dump(BASE | {"hosts": {"role": "db"}}), "fleet": True})
    assert r.status_code == 409 and [h.name for h in runs.started.pop()[2]] == ["h1"]
    assert not runs.started
