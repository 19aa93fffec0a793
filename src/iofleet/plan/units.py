"""Human units for sizes and durations: `4k`, `128KiB`, `20GiB`, `90s`, `2h`.

Sizes are binary, as in fio's default (kb_base=1024): `4k` = `4KiB` = `4KB`
= 4096 bytes. Durations are whole seconds: `90s`, `5m`, `2h`, `1h30m`, or a
bare number of seconds. Values handed to fio are always plain integers, so
fio never has to interpret a unit.
"""

import math
import re

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_SIZE_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|min|s|m|h|d)", re.IGNORECASE)
_DURATION_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def shown(value) -> str:
    """A value as an error message shows it: its repr, cut short (the repr
    of an int of thousands of digits raises ValueError)."""
    try:
        text = repr(value)
    except ValueError:
        return "a number too long to show"
    return text if len(text) <= 200 else text[:197] + "..."


def _plain_number(value, what: str) -> int | None:
    """A bare YAML number given for a size or duration, or None if text."""
    if isinstance(value, bool):
        raise ValueError(f"expected a {what}")
    if isinstance(value, (int, float)):
        if (isinstance(value, float) and not math.isfinite(value)) or value < 0 or value != int(value):
            raise ValueError(f"a {what} is a whole, non-negative number")
        return int(value)
    return None


def parse_size(value) -> int:
    """Bytes from `4k`, `128KiB`, `20GiB`, `1.5g` or an integer."""
    number = _plain_number(value, "size such as 4k, 128KiB or 20GiB")
    if number is not None:
        return number
    m = _SIZE_RE.match(str(value)) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"{shown(value)} is not a size; use e.g. 4k, 128KiB, 20GiB")
    number, prefix, suffix = m.groups()
    if suffix and not prefix and suffix.lower() == "ib":
        raise ValueError(f"{shown(value)} is not a size; use e.g. 4k, 128KiB, 20GiB")
    size = float(number) * 1024 ** _SIZE_POWER[prefix.lower()]
    if not math.isfinite(size):
        raise ValueError(f"{shown(value)} is far too large for a size")
    if not size.is_integer():
        raise ValueError(f"{shown(value)} is not a whole number of bytes")
    return int(size)


def whole_number(text: str | None) -> int | None:
    """A plain whole number written in ASCII digits, 64 bits at most (as fio's
    and the kernel's), else None: never a conversion of thousands of digits,
    which Python refuses with an error past 4,300."""
    return int(text) if text and text.isascii() and text.isdigit() and len(text) <= 19 else None


def parse_duration(value) -> int:
    """Whole seconds from `90s`, `5m`, `2h`, `1h30m` or an integer."""
    number = _plain_number(value, "duration such as 90s, 5m or 2h")
    if number is not None:
        return number
    text = str(value).strip().replace(" ", "") if isinstance(value, str) else ""
    if text.isascii() and text.isdigit():  # not '²', which int() refuses
        if len(text) > 30:  # (nor thousands of digits)
            raise ValueError(f"{shown(value)} is far too long for a duration")
        return int(text)
    parts = _DURATION_PART.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{shown(value)} is not a duration; use e.g. 90s, 5m, 2h, 1h30m")
    seconds = sum(float(n) * _DURATION_SECONDS[u.lower()] for n, u in parts)
    if not math.isfinite(seconds):
        raise ValueError(f"{shown(value)} is far too long for a duration")
    if not float(seconds).is_integer():
        raise ValueError(f"{shown(value)} is not a whole number of seconds")
    return int(seconds)


def format_size(nbytes: int) -> str:
    """Shortest exact binary form: 4096 → `4k`, 3 GiB → `3g`."""
    for suffix, power in (("p", 5), ("t", 4), ("g", 3), ("m", 2), ("k", 1)):
        unit = 1024**power
        if nbytes and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


def format_bytes(nbytes: float) -> str:
    """Readable binary size for totals: `1.5 GiB`."""
    for suffix, power in (("PiB", 5), ("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if nbytes >= 1024**power:
            return f"{nbytes / 1024**power:.1f} {suffix}"
    return f"{int(nbytes)} B"


def exact_duration(seconds: int) -> str:
    """A duration as a plan writes it, in its largest exact unit: 30s, 5m, 2h, 30d."""
    for suffix, unit in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % unit == 0:
            return f"{seconds // unit}{suffix}"
    return f"{seconds}s"


def format_duration(seconds: float) -> str:
    """`2h`, `1h30m`, `90s` → readable `1h 30m 0s` style, compact."""
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m{s:02d}s"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"
