"""fio job files are rendered from typed specs only; injection is impossible."""

from dataclasses import replace
from pathlib import Path

import pytest

from iofleet.errors import FioError
from iofleet.fio.jobfile import (ALLOWED_OPTIONS, WARMUP_JOB, directory_probe, directory_where, render_layout,
                                 render_prepare, render_probe, render_test)
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


def sections(text: str) -> dict[str, dict]:
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("["):
            current = out.setdefault(line.strip("[]"), {})
        elif line and not line.startswith(";"):
            k, v = line.split("=", 1)
            current[k] = v
    return out


def test_render_maps_parameters_to_fio_options():
    text = render_test(spec(), directory_where([Path("/mnt/a"), Path("/mnt/b")]), "libaio")
    o = options(text)
    assert o["rw"] == "randrw" and o["rwmixread"] == "70" and o["bs"] == "8192"
    assert o["iodepth"] == "4" and o["numjobs"] == "2" and o["ioengine"] == "libaio"
    assert o["directory"] == "/mnt/a:/mnt/b" and o["filename_format"].startswith("iofleet/")
    assert o["lat_percentiles"] == "1" and o["log_avg_msec"] == "1000"
    assert o["time_based"] == "1" and "ramp_time" not in o
    assert set(o) <= ALLOWED_OPTIONS
    assert "[4k" not in text and "[8k-r70-rand-j2-qd4]" in text


def test_warm_up_is_its_own_logged_group_before_the_measured_one():
    sec = sections(render_test(spec(ramp=10, runtime=60), directory_where([Path("/t")]), "libaio"))
    assert list(sec) == [WARMUP_JOB, "8k-r70-rand-j2-qd4"]
    warm, measured = sec.values()
    assert warm["runtime"] == "10" and warm["write_iops_log"] == "warmup" and warm["invalidate"] == "1"
    assert measured["runtime"] == "60" and measured["stonewall"] == "1" and measured["write_iops_log"] == "series"
    assert measured["invalidate"] == "0"  # the warm-up's cache state is kept
    assert list(sections(render_test(spec(ramp=0), directory_where([Path("/t")]), "psync"))) == ["8k-r70-rand-j2-qd4"]
    no_clear = sections(render_test(spec(ramp=0), directory_where([Path("/t")]), "psync", clear_cache=False))
    assert no_clear["8k-r70-rand-j2-qd4"]["invalidate"] == "0"


def test_until_steady_runs_to_max_runtime_without_fios_own_steadystate_check():
    # iofleet's own SNIA rule ends it (fio/status.py); fio's check judges the slope alone.
    s = spec(until="steady", round=60, max_runtime=7200, runtime=30, ramp=0)
    o = sections(render_test(s, directory_where([Path("/t")]), "libaio"))[s.id]
    assert "steadystate" not in o and "ss_dur" not in o
    assert o["runtime"] == "7200" and o["group_reporting"] == "0"


def test_data_pattern_options():
    o = options(render_test(spec(compress_pct=50, dedupe_pct=30, ramp=0), directory_where([Path("/t")]), "psync"))
    assert o["buffer_compress_percentage"] == "50" and o["dedupe_percentage"] == "30"
    assert "buffer_compress_percentage" not in options(render_test(spec(ramp=0), directory_where([Path("/t")]), "psync"))


def test_preparation_writes_each_tier_sequentially():
    sec = sections(render_prepare([(4, 1 << 20), (1, 8 << 20)], directory_where([Path("/t")]), "libaio", True, "random", 2, 131072))
    a, b = sec["prepare0"], sec["prepare1"]
    assert a["numjobs"] == "4" and a["size"] == str(1 << 20) and a["rw"] == "write" and a["loops"] == "2"
    assert a["refill_buffers"] == "1" and a["bs"] == "131072" and "stonewall" not in a
    assert b["numjobs"] == "1" and b["size"] == str(8 << 20) and b["stonewall"] == "1"
    zero = sections(render_prepare([(1, 1 << 20)], directory_where([Path("/t")]), "psync", False, "zero", 1, 131072))
    assert zero["prepare0"]["zero_buffers"] == "1" and "refill_buffers" not in zero["prepare0"]


@pytest.mark.parametrize("read,rand,rw,extra", [
    (100, 100, "randread", {}), (0, 0, "write", {}), (100, 0, "read", {}),
    (50, 30, "randrw", {"rwmixread": "50", "percentage_random": "30"}),
    (0, 40, "randwrite", {"percentage_random": "40"}),
])
def test_read_and_random_shares(read, rand, rw, extra):
    o = options(render_test(spec(read_pct=read, random_pct=rand), directory_where([Path("/t")]), "psync"))
    assert o["rw"] == rw
    for k, v in extra.items():
        assert o[k] == v


def test_working_set_limits_io_region_and_layout_writes_whole_file():
    s = spec(size=1024 * 1024, working_set_pct=50)
    assert options(render_test(s, directory_where([Path("/t")]), "psync"))["size"] == str(512 * 1024)
    layout = options(render_layout(s, [Path("/t")]))
    assert layout["size"] == str(1024 * 1024) and layout["create_only"] == "1"


@pytest.mark.parametrize("bad_id", [
    "x\nexec_prerun=rm -rf /", "x]\n[evil", "a;b", "$(id)", "a`id`", "${HOME}", "x\rexec_postrun=ls"])
def test_injection_in_test_name_is_refused(bad_id):
    with pytest.raises(FioError, match="refused"):
        render_test(spec(id=bad_id), directory_where([Path("/t")]), "psync")


@pytest.mark.parametrize("bad_path", [
    "/t\nexec_prerun=touch /tmp/pwned", "/t;id", "/t/${HOME}", "/t/`id`", "/a:/b", "/t/$(id)"])
def test_injection_in_target_path_is_refused(bad_path):
    with pytest.raises(FioError, match="refused"):
        render_test(spec(), directory_where([Path(bad_path)]), "psync")
    with pytest.raises(FioError, match="refused"):
        render_probe(directory_probe(Path(bad_path)), "psync", True)


def test_injection_in_workload_name_is_refused():
    with pytest.raises(FioError, match="refused"):
        render_test(spec(workload="w\nexec_prerun=id"), directory_where([Path("/t")]), "psync")


def test_unresolved_or_unknown_engine_is_refused():
    with pytest.raises(FioError):
        render_test(spec(), directory_where([Path("/t")]), "auto")
    with pytest.raises(FioError):
        render_test(spec(), directory_where([Path("/t")]), "exec")


def test_command_running_options_are_not_on_the_allow_list():
    for opt in ("exec_prerun", "exec_postrun", "ioscheduler", "include", "write_hist_log", "allow_mounted_write"):
        assert opt not in ALLOWED_OPTIONS
