"""Each study's command (studies/kinds/): the one its own cli module gives
(cli.common.study_command), else one made from its declaration: --target, --hosts,
the parameter table's rows it offers, its own settings, then --data-dir,
--label, --destroy-data and --wide; it runs the study with a live progress
line, prints the study's closing lines and the run's."""

import inspect
from pathlib import Path
from typing import Callable, List, Optional

import typer

from ..studies.study import Study, Where
from .common import (STUDY_COMMANDS, DataDir, DestroyOpt, TargetOpt, WideOpt, check_label, checked_targets, console,
                     stop_on_signals, user_errors)
from .run import finish
from .table_options import own_options, table_options

def command_of(study: Study) -> Callable:
    return STUDY_COMMANDS.get(study.name) or _generic(study)


def _generic(study: Study) -> Callable:
    def command(
        target: Optional[List[Path]] = TargetOpt,
        hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers: run on all at once."),
        data_dir: Optional[str] = DataDir,
        label: Optional[str] = typer.Option(None, help=f"Label stored with the run (default {study.name})."),
        destroy_data: Optional[List[str]] = DestroyOpt,
        wide: bool = WideOpt,
        params: Optional[dict] = None,
        own: Optional[dict] = None,
    ):
        from ..fleet.inventory import load_inventory
        from ..results.store import Store, default_data_dir
        from .progress import EachRunProgress
        check_label(label)
        settings = study.parse({**(own or {}), **(params or {})})
        fleet = load_inventory(hosts).hosts if hosts else None
        progress = EachRunProgress(console)
        with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
            try:
                outcome = study.start(Where(checked_targets(target), fleet, label or study.name, store, progress,
                                          stop, destroy_data), settings)
            finally:
                progress.close()
            db = store.path
        for line in study.lines(outcome):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        finish(outcome.run, db, fleet)

    command.__doc__ = study.about_help or study.title
    if not study.rows():  # no table option: the parameter is not a command-line one
        command.__signature__ = inspect.signature(command).replace(
            parameters=[p for p in inspect.signature(command).parameters.values() if p.name != "params"])
    decorated = own_options(study, after="hosts")(command)
    if study.rows():
        decorated = table_options(study.name, *study.defaults_from(), after="hosts")(decorated)
    return user_errors(decorated)
