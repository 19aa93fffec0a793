"""`iofleet hosts check|clean|deploy|undeploy` and `iofleet server`: the
fleet's hosts and the fio server each of them runs."""

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table
from rich.text import Text

from ..plan.units import format_bytes
from ..units import escaped
from .common import EXIT_FAILED, DataDir, console, err_console, user_errors
from .server import DEFAULT_BIND, serve_fio

if TYPE_CHECKING:  # annotations only
    from ..fleet.control.deploy import HostOutcome
    from ..studies.hosts import FleetCheck

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.

hosts_app = typer.Typer(help="The fleet's hosts (fio servers).", no_args_is_help=True)


@user_errors
def server(
    bind: str = typer.Option(DEFAULT_BIND, "--bind", help="ADDRESS[:PORT] to listen on (fio's default port 8765)."),
):
    """Start `fio --server` the way iofleet expects, on a host of the fleet."""
    serve_fio(bind, echo=lambda line: err_console.print(line, markup=False, highlight=False, soft_wrap=True))


@hosts_app.command("check")
@user_errors
def hosts_check(
    inventory: Path = typer.Argument(..., metavar="INVENTORY", help="Inventory file (YAML)."),
    network: bool = typer.Option(False, "--network", help="Also check the links between the hosts (as `hosts "
                                                          "network`; every host needs `ssh:`)."),
    data_dir: Optional[str] = DataDir,
):
    """Check every host: fio server, fio version, targets and space."""
    from ..fleet.inventory import load_inventory
    from ..studies.hosts import check_fleet
    hosts = load_inventory(inventory).hosts
    with console.status(f"Checking {len(hosts)} host{'s' if len(hosts) > 1 else ''}…"):
        fleet = check_fleet(hosts, inventory)
    console.print(_check_table(fleet, inventory))
    for line in fleet.problems:
        err_console.print(Text.assemble(("error:", "red"), " ", escaped(line)), highlight=False, soft_wrap=True)
    for line in fleet.notes:
        err_console.print(f"note: {escaped(line)}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"{fleet.ready} of {len(fleet.checks)} hosts ready.")
    links_ok = _network(hosts, "ring", inventory, None, data_dir) if network else True
    if fleet.problems or not links_ok:
        raise typer.Exit(EXIT_FAILED)


def _check_table(fleet: "FleetCheck", inventory: Path) -> Table:
    """One row per target, the host's own columns on its first row."""
    version = fleet.controller_fio
    table = Table(title=f"{inventory}: {len(fleet.checks)} hosts · controller {version}", title_justify="left")
    for col in ("host", "address", "fio server", "fio", "target", "writable", "free", "metrics"):
        table.add_column(col)
    for c in fleet.checks:
        server = "[green]reachable[/]" if c.reachable else "[red]unreachable[/]"
        fio = c.fio_version or "?"
        if c.fio_version and c.fio_version != version:
            fio = f"[red]{fio}[/]"
        metrics = {"none": "none", "ok": "[green]ok[/]"}.get(c.metrics, "[red]unreachable[/]")
        for i, t in enumerate(c.targets):
            writable = "?" if not c.fio_version or c.fio_version != version or not t.checked else (
                "[green]yes[/]" if not t.problem else "[red]no[/]")
            if t.device:
                writable = t.device.summary
            free = format_bytes(t.free_bytes) if t.free_bytes is not None else "n/a"
            first = i == 0
            table.add_row(c.host.name if first else "", c.host.address if first else "",
                          server if first else "", fio if first else "", t.path, writable, free,
                          metrics if first else "")
    return table


@hosts_app.command("network")
@user_errors
def hosts_network(
    inventory: Path = typer.Argument(..., metavar="INVENTORY", help="Inventory file (YAML); every host needs `ssh:`."),
    pairs: str = typer.Option("ring", "--pairs", help="Bandwidth of each host to the next (ring) or of every pair "
                                                       "(all), each direction."),
    label: Optional[str] = typer.Option(None, "--label", help="Label the stored check (e.g. before-switch-upgrade)."),
    data_dir: Optional[str] = DataDir,
):
    """Check the network between the hosts: round trip and loss of every
    pair, the expected MTU, bandwidth (iperf3); exit 1 on a problem.

    The check is stored as a run (`results show`, `compare`, the web UI);
    the next fleet run's diagnostics use it to explain a host that lags."""
    from ..errors import IofleetError
    from ..fleet.inventory import load_inventory
    if pairs not in ("ring", "all"):
        raise IofleetError(f"--pairs {pairs!r}: give ring (each host to the next) or all (every pair)")
    hosts = load_inventory(inventory).hosts
    if not _network(hosts, pairs, inventory, label, data_dir):
        raise typer.Exit(EXIT_FAILED)


def _network(hosts: list, pairs: str, inventory: Path, label: Optional[str], data_dir: Optional[str]) -> bool:
    """Measure, store and print the links between the hosts; False when a problem was found."""
    from ..errors import IofleetError
    from ..fleet.network_check import matrix_lines
    from ..results.store import Store, default_data_dir
    from ..studies.network import check_and_store
    if len(hosts) < 2:
        raise IofleetError("the network check needs at least two hosts in the inventory")
    with Store.open(default_data_dir(data_dir)) as store, \
            console.status(f"Measuring the links between {len(hosts)} hosts…"):
        run_id, check = check_and_store(store, hosts, pairs, label, inventory)
    for line in matrix_lines(check, console.width):
        console.print(line, markup=False, highlight=False)
    for line in check.errors + check.problems:
        err_console.print(Text.assemble(("problem:", "red"), " ", escaped(line)), highlight=False)
    if not (check.errors or check.problems):
        console.print(f"No problem found on the links between {len(hosts)} hosts.")
    console.print(f"Stored as run {run_id} (`iofleet results show {run_id}`).", highlight=False)
    return not (check.errors or check.problems)


@hosts_app.command("clean")
@user_errors
def hosts_clean(
    inventory: Path = typer.Argument(..., metavar="INVENTORY", help="Inventory file (YAML)."),
    yes: bool = typer.Option(False, "--yes", help="Also run the undo commands a scenario's file gave (your "
                                                  "shell text, run as root; listed without --yes)."),
):
    """Undo a killed scenario's faults; remove data files runs left."""
    from ..fleet.inventory import load_inventory
    from ..studies.hosts import clean_fleet
    hosts = load_inventory(inventory).hosts
    with console.status(f"Cleaning {len(hosts)} host{'s' if len(hosts) > 1 else ''}…"):
        cleaned = clean_fleet(hosts, inventory, yes)
    for line in cleaned.undone:
        console.print(escaped(line), highlight=False, markup=False, soft_wrap=True)
    for name, count in cleaned.removed.items():
        console.print(f"{name}: {count} data file{'s' if count != 1 else ''} removed", highlight=False, markup=False)
    for line in cleaned.problems:
        err_console.print(Text.assemble(("error:", "red"), " ", escaped(line)), highlight=False, soft_wrap=True)
    if cleaned.problems:
        raise typer.Exit(EXIT_FAILED)


def _outcome_line(outcome: "HostOutcome") -> None:
    if outcome.ok:
        console.print(outcome.line, markup=False, highlight=False, soft_wrap=True)
    else:
        err_console.print(Text.assemble(("error:", "red"), " ", outcome.line), highlight=False, soft_wrap=True)


def _summary(outcomes: "list[HostOutcome]", done: str) -> None:
    failed = sum(not o.ok for o in outcomes)
    console.print(f"{len(outcomes) - failed} of {len(outcomes)} hosts {done}.", highlight=False)
    if failed:
        raise typer.Exit(EXIT_FAILED)


@hosts_app.command("deploy")
@user_errors
def hosts_deploy(
    inventory: Path = typer.Argument(..., metavar="INVENTORY", help="Inventory file (YAML) with `ssh:` settings."),
    install: bool = typer.Option(False, "--install", help="Install fio (and the network check's iperf3 and ping) "
                                 "with the host's package manager (apt-get, dnf, zypper) where missing."),
    metrics: bool = typer.Option(False, "--metrics", help="Also start node_exporter on each host's address, port 9100."),
):
    """Start `fio --server` on every host over SSH, then check it."""
    from ..fleet.inventory import load_inventory
    from ..studies.hosts import deploy_fleet
    hosts = load_inventory(inventory).hosts
    _summary(deploy_fleet(hosts, inventory, install, metrics, progress=_outcome_line), "deployed")


@hosts_app.command("undeploy")
@user_errors
def hosts_undeploy(
    inventory: Path = typer.Argument(..., metavar="INVENTORY", help="Inventory file (YAML) with `ssh:` settings."),
    force: bool = typer.Option(False, "--force", help="Also stop the fio server of a host a run of this machine "
                                                      "is testing (that run loses the host)."),
):
    """Stop what `hosts deploy` started and remove its files."""
    from ..fleet.inventory import load_inventory
    from ..studies.hosts import undeploy_fleet
    hosts = load_inventory(inventory).hosts
    _summary(undeploy_fleet(hosts, inventory, progress=_outcome_line, force=force), "clean")
