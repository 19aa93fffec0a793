"""A Ceph RBD image (rbd:POOL/IMAGE), driven through fio's rbd engine
(librbd): its name, the plan's `ceph:` section, the rbd_cache row, and an
imported ioengine=rbd job. What iofleet does with one: fleet/targets/rbd.py."""

import re
from typing import Annotated, Any, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict

from ..names import check_name, check_path
from ..param import Param
from . import TargetName

# Pool and image names go to fio's `pool=`/`rbdname=` and to the `rbd`
# command as arguments: plain names only.
RBD_PREFIX = "rbd:"
RBD_RE = re.compile(r"^rbd:([A-Za-z0-9][A-Za-z0-9_.-]{0,62})/([A-Za-z0-9][A-Za-z0-9_.-]{0,62})\Z")


def _conf_path(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the path of a ceph.conf")
    return check_path(value)


class CephSettings(BaseModel):
    """How iofleet reaches a Ceph cluster (RBD targets). Each default is
    Ceph's own: its config file search (CEPH_CONF, /etc/ceph/ceph.conf)
    and client.admin."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    conf: Optional[Annotated[str, BeforeValidator(_conf_path)]] = None
    client: Annotated[str, BeforeValidator(check_name)] = "admin"
    # On a fleet, hosts naming the same image each get their own
    # (IMAGE-HOST); true: they share it.
    shared_image: bool = False


class RbdName(TargetName):
    kind = "rbd"
    order = 2
    what, example = "an RBD image", "rbd:POOL/IMAGE"
    short = "RBD image"
    client = "librbd"
    alone = True
    destroyable = True
    engines = ("rbd",)
    section, settings = "ceph", CephSettings
    fio_options = ("pool", "rbdname", "clientname")
    rows = (
        Param("rbd_cache", "bool", None,
              "RBD targets: librbd's client cache on or off for the test's image (none = the cluster's "
              "setting)", "(rbd config image set IMAGE rbd_cache)", label="rbd cache", column="rbd_cache",
              id_part=lambda v: "rbdcache" if v else "norbdcache"),
    )

    @classmethod
    def claims(cls, value):
        return value.startswith(RBD_PREFIX)

    @classmethod
    def check(cls, value):
        if not isinstance(value, str) or not RBD_RE.match(value):
            raise ValueError("an RBD image is rbd:POOL/IMAGE, each 1-63 letters, digits, '.', '_' or '-' "
                             "starting with a letter or digit, e.g. rbd:rbd/iofleet")
        return value

    @classmethod
    def from_fio(cls, options):
        """pool=, rbdname= and clientname= (client.NAME or NAME)."""
        if "rbdname" not in options and "pool" not in options:
            return None
        client = (options.get("clientname") or "admin").removeprefix("client.")
        target = f"rbd:{options.get('pool') or ''}/{options.get('rbdname') or ''}"
        return target, ({"client": client} if client != "admin" else {})

    @classmethod
    def check_settings(cls, settings):
        check_name(settings.get("client", "admin"))

    @classmethod
    def imported(cls, target, settings):
        return (f"an RBD image target {target} through fio's rbd engine (client.{settings.get('client', 'admin')}): "
                f"iofleet creates it if it does not exist and removes it after; an existing image is written only "
                f"when the plan's destroy_data names it")
