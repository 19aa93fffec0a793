"""`iofleet serve`: the web UI and REST API over the same store and studies."""

from pathlib import Path
from typing import Optional

import typer

from ..web.bind import DEFAULT_WEB_BIND
from .common import DataDir

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.


def serve_command(
    bind: str = typer.Option(DEFAULT_WEB_BIND, "--bind", help="ADDRESS:PORT to listen on; beyond loopback "
                                                              "it needs --token."),
    token: Optional[str] = typer.Option(None, "--token", envvar="IOFLEET_TOKEN",
                                        help="Require this token (Bearer header or /login); also $IOFLEET_TOKEN."),
    data_dir: Optional[str] = DataDir,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers that plans may run on."),
):
    """Serve the web UI: plans, fleet, live runs, results and comparisons (REST API at /api/docs)."""
    from ..fleet.inventory import load_inventory
    from ..results.store import Store, default_data_dir
    from ..web.bind import parse_web_bind
    import uvicorn

    from ..web.app import create_app
    from ..web.render import Settings

    host, port = parse_web_bind(bind, token)
    inventory = load_inventory(hosts) if hosts else None
    directory = default_data_dir(data_dir)
    with Store.open(directory):  # a store that cannot be opened fails here, in one line
        pass
    app = create_app(Settings(data_dir=directory, token=token, inventory=inventory, inventory_path=hosts))
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"iofleet serve: results in {directory}; open http://{shown}:{port}/ "
               f"(API docs at /api/docs){'; token required' if token else ''}. Stop with Ctrl-C.")
    uvicorn.run(app, host=host, port=port, log_level="warning")
