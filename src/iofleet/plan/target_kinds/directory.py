"""Directories: iofleet's data files in its own sub-directory of each; fio
spreads the jobs' files over them. Any path no other kind claims."""

from ..names import check_path
from . import TargetName


class DirectoryName(TargetName):
    kind = "directory"
    order = 0
    fallback = True
    what = "a directory path"
    short = "directory"

    @classmethod
    def check(cls, value):
        return check_path(value)
