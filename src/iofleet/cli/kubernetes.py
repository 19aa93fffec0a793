"""`iofleet kubernetes image`: this machine's fio as an OCI image archive,
for clusters that pull from no registry (loaded on each node with
`ctr -n k8s.io image import`)."""

from pathlib import Path
from typing import Optional

import typer

from .common import console, user_errors

kubernetes_app = typer.Typer(help="Kubernetes: the fio server image for a cluster's pods.", no_args_is_help=True)


@kubernetes_app.command("image")
@user_errors
def image_command(
    output: Path = typer.Option(Path("iofleet-fio.oci.tar"), "--output", "-o", help="Archive to write."),
    name: Optional[str] = typer.Option(None, "--name", help="Image name (default localhost/iofleet-fio:FIO_VERSION, "
                                                              "what an inventory's kubernetes.image defaults to)."),
):
    """Write this machine's fio and its libraries as an OCI image."""
    from ..fleet.kubernetes.image import write_fio_image
    from ..fleet.kubernetes.settings import check_image
    try:
        checked = check_image(name) if name is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--name") from None
    image = write_fio_image(output, checked)
    console.print(f"Wrote {image.path} ({image.path.stat().st_size / 2**20:.1f} MiB): {image.name}, fio "
                  f"{image.fio_version}, {image.digest}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"Load it on every node:  ctr -n k8s.io image import {image.path.name}", markup=False,
                  highlight=False, soft_wrap=True)
