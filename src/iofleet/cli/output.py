"""Writing a command's output file, with a one-line error naming it."""

import os
import tempfile
from pathlib import Path

from ..errors import IofleetError


def write_output(path: Path, data: str | bytes, option: str = "-o") -> None:
    """Write the whole file beside its place, then move it there: a reader
    never sees half of it, and a symlink at `path` is replaced, never
    written through (its target is left as it was)."""
    raw = data if isinstance(data, bytes) else data.encode()
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise IofleetError(f"{option} {path}: cannot write ({exc.strerror or exc}); check the directory exists "
                           f"and is writable") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
