"""What a name or a path in a plan may hold: checked before anything of it
reaches a fio job file, a command line or a file name."""

import re
from typing import Any

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")  # \Z: `$` would pass "name\n"
# Characters a target path may hold. Excludes what fio or a shell would
# interpret: ':' (fio's directory separator), '$' (fio expands ${VAR}),
# ';', '`', quotes, '%', newlines and other control characters.
PATH_RE = re.compile(r"^[A-Za-z0-9_./+@,=~ -]+\Z")


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise ValueError(
            "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return value


def check_path(value: str) -> str:
    if not PATH_RE.match(value) or value != value.strip():
        raise ValueError(
            "a target path may hold only letters, digits, spaces and _ . / + @ , = ~ - "
            "(no ':', '$', ';', quotes or control characters)"
        )
    return value
