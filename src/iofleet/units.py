"""Measured figures as iofleet shows them, one rule per unit, for every stage
and both front doors: latency in ms to the µs, IOPS whole, MB/s to a tenth.

Latency is stored in ns (fio's records, the live progress) or µs (the
exported run); it is always shown in ms. Sizes and durations of a plan
(`4k`, `90s`) are written by `plan.units`.

Text a user wrote (a scenario's command, a label, a host's name) is shown
through `escaped`: its control characters cannot move the cursor or clear
the line that shows them.
"""

MISSING = "n/a"  # a figure not measured is shown as such, never as 0

# fio's latency histogram (stat.h: FIO_IO_U_PLAT_BITS 6, 29 groups of 64
# buckets) ends here: its top bucket holds every IO from this lower edge up
# (17.046 s), and fio shows it as its middle (17,112.76 ms). A latency there
# is a lower bound, shown "≥ 17045.651".
LATENCY_CEILING_NS = (1 << 33) + 63 * (1 << 27)

# stored unit -> (shown unit, divisor to it, decimals); a divisor, not a
# factor: ns / 1e6 and ns * 1e-6 can round differently at the last decimal.
_SHOWN = {
    "ns": ("ms", 1e6, 3),
    "us": ("ms", 1e3, 3),
    "ms": ("ms", 1, 3),
    "IOPS": ("IOPS", 1, 0),
    "MB/s": ("MB/s", 1, 1),
    "%": ("%", 1, 1),
    "Gbit/s": ("Gbit/s", 1, 3),
}
_LATENCY = ("ns", "us", "ms")


def shown_unit(unit: str) -> str:
    """The unit a figure stored in `unit` is shown in: "us" -> "ms"."""
    return _SHOWN[unit][0]


def to_ms(value: float | None, unit: str) -> float | None:
    """A latency stored in ns, µs or ms as a number of ms (charts, JSON)."""
    if unit not in _LATENCY:
        raise ValueError(f"{unit!r} is not a latency unit; use one of {', '.join(_LATENCY)}")
    return None if value is None else value / _SHOWN[unit][1]


def at_ceiling(value: float | None, unit: str) -> bool:
    """A latency (stored in ns, µs or ms) in fio's top histogram bucket: a lower bound."""
    return value is not None and value * 1e6 / _SHOWN[unit][1] >= LATENCY_CEILING_NS


def format_value(value: float | None, unit: str, *, with_unit: bool = False, short: bool = False,
                 missing: str = MISSING) -> str:
    """A figure stored in `unit` ("ns", "us", "ms", "IOPS", "MB/s", "%") as
    shown: 1234567 ns -> "1.235", with_unit -> "1.235 ms". Tables use the
    fixed decimals so a column lines up; `short` gives a latency about three
    significant digits for prose ("12.3 ms" rather than "12.346 ms")."""
    if value is None:
        return missing
    shown, divisor, decimals = _SHOWN[unit]
    number = value / divisor
    bound = ""
    if unit in _LATENCY and at_ceiling(value, unit):
        bound, number = "≥ ", LATENCY_CEILING_NS / 1e6
    if unit in _LATENCY:
        if short:
            decimals = 3 if number < 1 else 2 if number < 10 else 1 if number < 100 else 0
        text = f"{bound}{number:.{decimals}f}"  # no thousands separator: "1234.500" as every table shows it
    else:
        text = f"{number:,.{decimals}f}"
    return f"{text} {shown}" if with_unit else text


# C0 (ESC among them), DEL, C1 (0x9b is a one-byte CSI) and the bidi controls that
# reorder what follows them ("Trojan source"): shown as escapes, never sent to a terminal.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_CONTROLS |= {c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def escaped(text: str) -> str:
    """User text as a terminal shows it: each control character written as
    its escape ("\\x1b[2K" for ESC [2K, "\\r" as "\\x0d"), the rest as is."""
    return text.translate(_CONTROLS)
