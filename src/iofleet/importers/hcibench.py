"""HCIBench's file-name convention: the values a parameter file's name
gives, used for what the file's content leaves out."""

import re
from pathlib import Path

from .common import Workload, check, fmt
from .notes import INFO, Notes, Skip

# HCIBench names its files `[prefix-]vdb-8vmdk-100ws-4k-70rdpct-100randompct-4threads`,
# results `...-<epoch>` and `...-<epoch>-res.txt`, and copies the file into the
# result folder as vdbench.cfg / fio.cfg.
_HCIBENCH_NAME_RE = re.compile(
    r"(?:^|-)(?:vdb|fio)-(?P<disks>\d+)vmdk-(?P<ws>\d+)ws-(?P<bs>\d+[kKmMgG]?)-(?P<rd>\d+)rdpct-"
    r"(?P<rand>\d+)randompct-(?P<threads>\d*)threads(?:-\d{6,})?(?:-res)?(?:\.txt|\.cfg)?$")
# How the file name writes each value.
_NAME_WORDS = {"jobs": "{}vmdk", "working_set_pct": "{}ws", "bs": "{}", "read_pct": "{}rdpct",
               "random_pct": "{}randompct", "iodepth": "{}threads"}


def hcibench_name_values(path: Path) -> tuple[str, dict]:
    """Parameters HCIBench's file-name convention gives, and the name that gave them."""
    for name in (path.name, path.parent.name):
        m = _HCIBENCH_NAME_RE.search(name)
        if m:
            values = {"jobs": int(m["disks"]), "working_set_pct": int(m["ws"]), "bs": m["bs"],
                      "read_pct": int(m["rd"]), "random_pct": int(m["rand"])}
            if m["threads"]:
                values["iodepth"] = int(m["threads"])
            return name, values
    return "", {}


def apply_name_values(w: Workload, file_name: str, values: dict, notes: Notes) -> None:
    """Fill what the content lacks from HCIBench's file name; say so."""
    for name, raw in values.items():
        word = _NAME_WORDS[name].format(raw)
        try:
            value = check(name, raw, f"file name {word}")
        except Skip:
            continue
        if w.has(name):
            given = w.fixed.get(name, w.matrix.get(name))
            if name in w.fixed and given != value:
                notes.add(INFO, w.where, f"the file name says {word} but the file says "
                          f"{name}={fmt(name, given)}; the file's value is used")
            continue
        w.fixed[name] = value
        notes.add(INFO, w.where, f"{name}={fmt(name, value)} taken from the file name "
                  f"({word} in {file_name}); the file itself does not give it")
