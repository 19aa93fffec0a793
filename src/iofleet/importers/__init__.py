"""Import HCIBench/vdbench parameter files and fio job files as iofleet plans.

`import_file(path)` reads one file and returns an `ImportResult`: the plan as
plain data (valid for `parse_plan`), one note per thing that was assumed or
could not be carried over (notes.py: refused, unsupported, info), and the
kind of file it was. Nothing in the file is ever executed, included or
expanded: options that would run a command, read another file, or expand
`${VAR}`/`$expr` are *refused* (noted, never carried). The mapping tables
are in docs/import.md.

`import_file` only notes; `load_plan_source` (used to *run* a fio job file)
raises `PlanError` on any refused or unsupported option, because the IO run
would then differ from the job file's.

Modules: notes (notes and the result), common (reading, values, names,
the finished plan), hcibench (file-name values), vdbench, fio_jobs (fio job
files, lexed by iofleet.fio.joblex), load (entry points), merge.
"""

from .load import detect_kind, import_file, load_plan_source
from .merge import merge_results, plan_yaml
from .notes import ImportResult

__all__ = ["ImportResult", "detect_kind", "import_file", "load_plan_source", "merge_results", "plan_yaml"]
