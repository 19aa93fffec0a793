"""fio job files are rendered from typed specs only; injection is impossible."""

from dataclasses import replace
from pathlib import Path

import pytest

from iofleet.errors import FioError
from iofleet.fio.jobfile import ALLOWED_OPTIONS, render_layout, render_probe, render_test
from iofleet.plan import expand, parse_plan


def spec(**over):
    s = expand(parse_plan({"name": "p", "workloads": [{"name": "w", "read_pct": 70, "bs": "8k",
                                                        "size": "1m", "jobs": 2, "iodepth": 4}]}))[0]
    return replace(s, **over)


def options(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if line.startswith((";", "[")) or not line:
            continue
        k, v = line.split("=", 1)
        out[k] = v
    return out


def test_render_maps_parameters_to_fio_options():
    text = render_test(spec(), [Path("/mnt/a"), Path("/mnt/b")], "libaio")
    o = options(text)
    assert o["rw"] == "randrw" and o["rwmixread"] == "70" and o["bs"] == "8192"
    assert o["iodepth"] == "4" and o["numjobs"] == "2" and o["ioengine"] == "libaio"
    assert o["directory"] == "/mnt/a:/mnt/b" and o["filename_format"].startswith("iofleet/")
    assert o["lat_percentiles"] == "1" and o["log_avg_msec"] == "1000"
    assert o["ramp_time"] == "10" and o["time_based"] == "1"
    assert set(o) <= ALLOWED_OPTIONS
    assert "[4k" not in text and "[8k-r70-rand-j2-qd4]" in text


@pytest.mark.parametrize("read,rand,rw,extra", [
    (100, 100, "randread", {}), (0, 0, "write", {}), (100, 0, "read", {}),
    (50, 30, "randrw", {"rwmixread": "50", "percentage_random": "30"}),
    (0, 40, "randwrite", {"percentage_random": "40"}),
])
def test_read_and_random_shares(read, rand, rw, extra):
    o = options(render_test(spec(read_pct=read, random_pct=rand), [Path("/t")], "psync"))
    assert o["rw"] == rw
    for k, v in extra.items():
        assert o[k] == v


def test_working_set_limits_io_region_and_layout_writes_whole_file():
    s = spec(size=1024 * 1024, working_set_pct=50)
    assert options(render_test(s, [Path("/t")], "psync"))["size"] == str(512 * 1024)
    layout = options(render_layout(s, [Path("/t")]))
    assert layout["size"] == str(1024 * 1024) and layout["create_only"] == "1"


@pytest.mark.parametrize("bad_id", [
    "x\nexec_prerun=rm -rf /", "x]\n[evil", "a;b", "$(id)", "a`id`", "${HOME}", "x\rexec_postrun=ls"])
def test_injection_in_test_name_is_refused(bad_id):
    with pytest.raises(FioError, match="refused"):
        render_test(spec(id=bad_id), [Path("/t")], "psync")


@pytest.mark.parametrize("bad_path", [
    "/t\nexec_prerun=touch /tmp/pwned", "/t;id", "/t/${HOME}", "/t/`id`", "/a:/b", "/t/$(id)"])
def test_injection_in_target_path_is_refused(bad_path):
    with pytest.raises(FioError, match="refused"):
        render_test(spec(), [Path(bad_path)], "psync")
    with pytest.raises(FioError, match="refused"):
        render_probe(Path(bad_path), "psync", True)


def test_injection_in_workload_name_is_refused():
    with pytest.raises(FioError, match="refused"):
        render_test(spec(workload="w\nexec_prerun=id"), [Path("/t")], "psync")


def test_unresolved_or_unknown_engine_is_refused():
    with pytest.raises(FioError):
        render_test(spec(), [Path("/t")], "auto")
    with pytest.raises(FioError):
        render_test(spec(), [Path("/t")], "exec")


def test_command_running_options_are_not_on_the_allow_list():
    for opt in ("exec_prerun", "exec_postrun", "ioscheduler", "include", "filename", "write_hist_log"):
        assert opt not in ALLOWED_OPTIONS
