"""host-down: kill -9 the host's fio server (the process listening on its
port) and its children; undo starts it again with its own command line,
once the run is over (a host lost mid-test does not rejoin it)."""

from __future__ import annotations

from ..fault_kind import SERVER_TREE, FaultKind, script
from ..fault_records import FACTS, FaultRecord

HOST_DOWN = "PORT=$1" + FACTS + SERVER_TREE + r"""
fact server_pid "$server"
fact exe "$(readlink "/proc/$server/exe")"
tr '\0' '\n' < "/proc/$server/cmdline" | sed 's/^/arg=/' | facts
kill -9 $(tree "$server")
"""

# Starts the server again only if nothing listens on its port.
HOST_UP = r"""
port=$1; shift
ss -Hltn "sport = :$port" | grep -q . && exit 0
[ $# -gt 0 ] || { echo "no fio server listens on port $port and its command line is not known; start it with \`iofleet hosts deploy\`" >&2; exit 3; }
setsid "$@" < /dev/null > /dev/null 2>&1 &
i=0; while ! ss -Hltn "sport = :$port" | grep -q . && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
"""


class HostDown(FaultKind):
    name = "host-down"
    listed = 1
    undo_at_end = True
    loses_host = True

    def check(self, event) -> None:
        if event.for_s is not None:
            raise ValueError("host-down takes no `for`: a host lost mid-test does not rejoin it "
                             "(its fio server is started again at the end of the run)")

    def apply(self, fault) -> str:
        port = fault.host.endpoint[1]
        out = fault.run(script(HOST_DOWN, port), "applied")
        argv = [line[4:] for line in out.splitlines() if line.startswith("arg=")]
        exe = next((line[4:] for line in out.splitlines() if line.startswith("exe=")), "")
        if argv:
            fault.undo_command = script(HOST_UP, port, exe or argv[0], *argv[1:])
        return out

    def left(self, r: FaultRecord) -> str:
        v = r.values
        return (f"fio server on port {v.get('port', '?')} killed (pid {v.get('server_pid', '?')})"
                + ("" if r.args else "; its command line is not recorded: `iofleet hosts deploy` starts it"))

    def left_undo(self, r: FaultRecord) -> str | None:
        v = r.values
        if not v.get("port", "").isdigit():
            return None
        return script(HOST_UP, v["port"], *([v.get("exe") or r.args[0], *r.args[1:]] if r.args else []))

    def undone_words(self, r: FaultRecord) -> str:
        return f"fio server on port {r.values['port']} listening again"
