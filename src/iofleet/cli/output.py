"""Writing a command's output file, with a one-line error naming it."""

from pathlib import Path

from ..errors import IofleetError


def write_output(path: Path, data: str | bytes, option: str = "-o") -> None:
    try:
        path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data)
    except OSError as exc:
        raise IofleetError(f"{option} {path}: cannot write ({exc.strerror or exc}); check the directory exists "
                           f"and is writable") from None
