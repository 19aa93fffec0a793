"""Errors a user can cause. Each carries a one-line message that names the
file, field or host and says how to fix it; the CLI prints it without a
traceback and exits non-zero."""


class IofleetError(Exception):
    """Base for every error caused by input or environment, not by a bug."""

    exit_code = 2


class PlanError(IofleetError):
    """A plan file is unreadable or invalid. `problems` holds one line each."""

    def __init__(self, problems: list[str], fields: list[tuple[str, str]] | None = None):
        self.problems = problems
        self.fields = fields or []  # (field path, message) when the problems are per field
        super().__init__("\n".join(problems))


class FioError(IofleetError):
    """fio is missing, too old, or refused a job."""


class StoreError(IofleetError):
    """The results store cannot be opened or does not hold what was asked."""


class StoreDamagedError(IofleetError):
    """The results database file is damaged (not a StoreError: "no such run"
    handlers must not hide it); `iofleet results check` says what is
    damaged, `iofleet results recover` copies the intact runs to a new store."""


class ImportFormatError(IofleetError):
    """A file given to `results import` is not fio JSON output."""


class DeviceError(IofleetError):
    """A device target is refused: not a block device, in use, or holding
    data that was not named in destroy_data. One line per problem."""
