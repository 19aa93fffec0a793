"""Reading a file a user names (plan, inventory, model, job file to import,
fio output): a regular file of bounded size, or one clear line.

A FIFO, device, socket or directory is refused without reading it: the file
is opened with O_NONBLOCK (so a FIFO with no writer cannot block) and the
opened descriptor is checked, so what is read is what was checked. The size
is bounded before and while reading (`validate /dev/zero` must not fill the
memory).
"""

import os
import stat
from pathlib import Path
from typing import Callable

from .errors import IofleetError

MiB = 1024**2
# Plans, inventories, models, parameter and job files are a few KiB.
MAX_TEXT_BYTES = 1 * MiB
# fio json+ outputs are bigger: 20-40 KiB per job with its latency bins
# (a client/server output of 64 hosts × 16 jobs is about 30 MiB).
MAX_FIO_OUTPUT_BYTES = 256 * MiB

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def size_text(n: int) -> str:
    if n >= MiB:
        return f"{n // MiB:,} MiB" if n % MiB == 0 else f"{n / MiB:,.1f} MiB"
    return f"{n / 1024:,.0f} KiB"


def read_input(path: str | Path, what: str, limit: int = MAX_TEXT_BYTES,
               error: Callable[[str], Exception] = IofleetError) -> bytes:
    """The bytes of the regular file `path` (a `what`, e.g. "plan"), at most
    `limit`; `error(line)` raised otherwise, the line naming the file."""
    path = Path(path)
    try:
        _check_regular(path, os.stat(path).st_mode, what, error)  # before opening: opening a device can act
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        _check_regular(path, st.st_mode, what, error)  # what was opened is what is read
        if st.st_size > limit:
            raise error(_too_big(path, what, st.st_size, limit))
        chunks, total = [], 0
        while True:  # read to the end, never past the limit (a file may grow while read)
            chunk = os.read(fd, min(limit + 1 - total, 4 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise error(_too_big(path, what, total, limit, growing=True))
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_input_text(path: str | Path, what: str, limit: int = MAX_TEXT_BYTES,
                    error: Callable[[str], Exception] = IofleetError) -> str:
    """`read_input` as UTF-8 text."""
    data = read_input(path, what, limit, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: byte {exc.start} is not UTF-8 text; save the {what} as UTF-8") from None


def _too_big(path: Path, what: str, size: int, limit: int, growing: bool = False) -> str:
    more = "more than " if growing else ""
    return (f"{path}: {more}{size_text(size)} is too large for a {what} (limit {size_text(limit)}); "
            f"check that this is the {what} file")


def _check_regular(path: Path, mode: int, what: str, error) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        article = "an" if what[:1] in "aeiou" else "a"
        raise error(f"{path}: is {kind}, not {article} {what} file; give the {what} file itself")
