"""`iofleet server --bind`: which addresses it accepts and the fio command
it would exec (exec itself is replaced here: nothing runs)."""

import pytest

from iofleet.fio.command import CLOCK_NAMES, clock_from_debug, server_clock
from iofleet.cli import server
from iofleet.cli.server import BindError, parse_bind, serve_fio
from iofleet.errors import FioError, IofleetError


@pytest.mark.parametrize("bind, expected", [
    ("10.0.0.11", ("ip", "10.0.0.11", 8765)),
    ("10.0.0.11:8766", ("ip", "10.0.0.11", 8766)),
    (" 0.0.0.0:8765 ", ("ip", "0.0.0.0", 8765)),
    ("127.0.0.1:1", ("ip", "127.0.0.1", 1)),
    ("192.168.1.2:65535", ("ip", "192.168.1.2", 65535)),
    ("fd00::11", ("ip6", "fd00::11", 8765)),
    ("::", ("ip6", "::", 8765)),
    ("[fd00::11]", ("ip6", "fd00::11", 8765)),
    ("[fd00::11]:9000", ("ip6", "fd00::11", 9000)),
    ("[::]:8765", ("ip6", "::", 8765)),
    ("[::ffff:10.0.0.1]:8765", ("ip6", "::ffff:10.0.0.1", 8765)),
    ("storage01", ("ip", "storage01", 8765)),
    ("storage01.lab.example:8770", ("ip", "storage01.lab.example", 8770)),
    ("esx-01.site-a", ("ip", "esx-01.site-a", 8765)),
])
def test_accepted_bind_addresses(bind, expected):
    assert parse_bind(bind) == expected


@pytest.mark.parametrize("bind, words", [
    ("", "needs an address"),
    ("   ", "needs an address"),
    ("10.0.0.11:", "port must be a number"),
    ("10.0.0.11:0", "port must be a number"),
    ("10.0.0.11:65536", "port must be a number"),
    ("10.0.0.11:http", "port must be a number"),
    ("10.0.0.11:-1", "port must be a number"),
    ("10.0.0.11:87 65", "port must be a number"),
    ("999.1.1.1", "not an IP address or host name"),
    ("10.0.0", "not an IP address or host name"),
    ("10.0.0.11,8765", "not an IP address or host name"),
    ("ip:10.0.0.11", "without fio's ip:/ip6:/sock: prefix"),
    ("ip6:fd00::1", "without fio's ip:/ip6:/sock: prefix"),
    ("sock:/tmp/fio.sock", "without fio's ip:/ip6:/sock: prefix"),
    ("host name", "not an IP address or host name"),
    ("-host", "not an IP address or host name"),
    ("host_1", "not an IP address or host name"),
    ("$(reboot)", "not an IP address or host name"),
    ("a;b", "not an IP address or host name"),
    ("[10.0.0.11]:8765", "only an IPv6 address goes in brackets"),
    ("[fd00::11", "write an IPv6 address as [ADDRESS]"),
    ("[fd00::11]8765", "write an IPv6 address as [ADDRESS]"),
    ("[fd00::11]:", "port must be a number"),
    ("fd00::11::1", "not an IPv6 address"),
    ("fd00::zz:8765", "not an IPv6 address"),
    ("x" * 64, "not an IP address or host name"),
])
def test_refused_bind_addresses_say_why_in_one_line(bind, words):
    with pytest.raises(BindError) as info:
        parse_bind(bind)
    message = str(info.value)
    assert isinstance(info.value, IofleetError)
    assert words in message and "\n" not in message
    assert "--bind" in message


@pytest.fixture
def no_exec(monkeypatch):
    """serve_fio up to the exec: fio's version is given, exec is recorded."""
    calls = []

    class Exec(Exception):
        pass

    def fake_execvp(file, args):
        calls.append((file, list(args)))
        raise Exec

    monkeypatch.setattr(server, "fio_version", lambda: "fio-3.33")
    monkeypatch.setattr(server, "fio_binary", lambda: "/usr/bin/fio")
    monkeypatch.setattr(server.os, "execvp", fake_execvp)
    return calls, Exec


@pytest.mark.parametrize("bind, arg", [
    ("10.0.0.11", "--server=ip:10.0.0.11,8765"),
    ("10.0.0.11:8766", "--server=ip:10.0.0.11,8766"),
    ("[fd00::11]:8765", "--server=ip6:fd00::11,8765"),
    ("::", "--server=ip6:::,8765"),
    ("storage01:9000", "--server=ip:storage01,9000"),
])
def test_serve_fio_execs_fio_server(no_exec, bind, arg):
    calls, Exec = no_exec
    said = []
    with pytest.raises(Exec):
        serve_fio(bind, echo=said.append)
    (binary, argv), = calls
    # then fio's own clock choice, which can differ from one look to the next (its TSC test)
    assert binary == "/usr/bin/fio" and argv[:2] == [binary, arg] and len(argv) == 3
    assert argv[2].split("=")[1] in CLOCK_NAMES.values()
    assert "fio-3.33" in said[0] and arg.split("=", 1)[1].split(":", 1)[1].split(",")[0] in said[0]


def test_serve_fio_warns_about_every_interface(no_exec):
    calls, Exec = no_exec
    said = []
    with pytest.raises(Exec):
        serve_fio("0.0.0.0:8765", echo=said.append)
    assert any("no authentication" in line for line in said)


def test_serve_fio_checks_the_address_before_fio(no_exec, monkeypatch):
    calls, _ = no_exec
    monkeypatch.setattr(server, "fio_version", lambda: pytest.fail("fio checked before the address"))
    with pytest.raises(BindError):
        serve_fio("10.0.0.11:99999", echo=lambda line: None)
    assert calls == []


def test_serve_fio_stops_when_fio_is_missing_or_old(no_exec, monkeypatch):
    calls, _ = no_exec

    def old():
        raise FioError("fio-3.1 is too old; iofleet needs fio >= 3.33")

    monkeypatch.setattr(server, "fio_version", old)
    with pytest.raises(FioError, match="too old"):
        serve_fio("10.0.0.11", echo=lambda line: None)
    assert calls == []


def test_a_failing_exec_is_a_one_line_error(no_exec, monkeypatch):
    def fail(file, args):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(server.os, "execvp", fail)
    with pytest.raises(FioError, match="cannot start /usr/bin/fio"):
        serve_fio("10.0.0.11", echo=lambda line: None)


def test_the_server_is_started_with_the_clock_fio_itself_picks():
    """A listener without --clocksource sets no clock up, and each connection
    calibrates it again; named, it is set up once. The name is fio's own
    choice, read from `fio --debug=time` (real fio here)."""
    assert clock_from_debug("time     30077 gettime: clocksource=3\n") == "cpu"
    assert clock_from_debug("time     1 gettime: clocksource=2") == "clock_gettime"
    assert clock_from_debug("fio: unknown debug flag") is None
    clock = server_clock()
    assert len(clock) == 1 and clock[0].split("=")[1] in CLOCK_NAMES.values()
