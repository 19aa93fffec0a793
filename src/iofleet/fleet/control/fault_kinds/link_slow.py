"""link-slow: tc tbf on the interface holding the host's address, at
`mbit`; undo deletes the qdisc."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from ..fault_kind import FaultKind, script
from ..fault_records import FACTS, FaultRecord

# The interface holding an address: `ip -o addr` lines read "2: eth0 inet 10.0.0.2/24 ...".
_FIND_DEV = r"""
dev=$(ip -o addr show | awk -v a="$1" '{split($4, p, "/"); if (p[1] == a) {print $2; exit}}')
[ -n "$dev" ] || { echo "no interface has the address $1" >&2; exit 3; }
"""

LINK_SLOW = FACTS + _FIND_DEV + r"""
fact dev "$dev"
tc qdisc replace dev "$dev" root tbf rate "$2mbit" burst "$3" latency 50ms
"""

LINK_UNDO = _FIND_DEV + r"""
tc qdisc show dev "$dev" root | grep -q '^qdisc tbf' || exit 0
tc qdisc del dev "$dev" root
"""

_ADDRESS = re.compile(r"[A-Za-z0-9.:_-]+")


def tbf_burst(mbit: int) -> int:
    """Bytes tbf may send at once: 10 ms at the rate, at least 16 KiB (a
    burst under rate/HZ would cap the rate below the one asked for)."""
    return max(16384, mbit * 1_000_000 // 8 // 100)


class LinkSlow(FaultKind):
    name = "link-slow"
    listed = 2
    fields = {"mbit": Annotated[int, Field(ge=1, le=1_000_000)]}

    def check(self, event) -> None:
        if event.mbit is None:
            raise ValueError("link-slow needs `mbit` (the link's rate, e.g. mbit: 100)")

    def shown(self, event) -> str:
        return f" ({event.mbit} Mbit/s)"

    def apply(self, fault) -> str:
        address, mbit = fault.host.endpoint[0], fault.event.mbit
        fault.undo_command = script(LINK_UNDO, address)  # first: its undo also clears a part-done apply
        return fault.run(script(LINK_SLOW, address, mbit, tbf_burst(mbit)), "applied")

    def detail(self, fault, out: str) -> dict:
        return {k: v for k, _, v in (line.partition("=") for line in out.splitlines()) if k == "dev"}

    def left(self, r: FaultRecord) -> str:
        v = r.values
        return f"tc tbf at {v.get('mbit', '?')} Mbit/s on {self._interface(r)}"

    def left_undo(self, r: FaultRecord) -> str | None:
        address = r.values.get("address", "")
        return script(LINK_UNDO, address) if _ADDRESS.fullmatch(address) else None

    def undone_words(self, r: FaultRecord) -> str:
        return f"tc tbf removed from {self._interface(r)}"

    @staticmethod
    def _interface(r: FaultRecord) -> str:
        return r.values.get("dev") or "the interface of " + r.values.get("address", "?")
