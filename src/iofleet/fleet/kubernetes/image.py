"""The fio image for clusters without a registry: this machine's own fio in
an OCI image-layout archive.

A cluster that cannot pull (air-gapped, or a test cluster) can still import
an archive into its nodes' runtime (`ctr -n k8s.io image import ARCHIVE`
with containerd). Packing the fio that iofleet runs here, with every shared
library `ldd` names and the dynamic loader, gives the pods exactly the local
fio: fio's client/server protocol refuses a server of another version, and
the engines are the same on both sides. Clusters with a registry can build
containers/fio/Containerfile instead.

The archive is made in pure Python (tarfile, gzip, hashlib, json) with every
mtime 0 and entries sorted, so the same fio always gives the same digest.
`ImageLayer` and `write_oci_archive` also pack other small images (the test
cluster's pause image).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ...errors import IofleetError

FIO_PORT = 8765
PLUGIN_DIR = Path(f"/usr/lib/{platform.machine()}-linux-gnu/fio")  # Debian's split-out ioengines, when present
ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}


@dataclass(frozen=True)
class FioImage:
    name: str  # e.g. localhost/iofleet-fio:3.33
    fio_version: str  # e.g. 3.33
    path: Path  # the OCI archive
    digest: str  # the manifest's, sha256:...


class ImageLayer:
    """The files of a one-layer image, by their path in the image."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tarfile.TarInfo, str | bytes | None]] = {}

    def add_dir(self, path: str, mode: int = 0o755) -> None:
        self._add(path, tarfile.DIRTYPE, mode)

    def add_file(self, path: str, data: bytes | None = None, mode: int = 0o644, source: str | None = None) -> None:
        """A regular file with `data`, or the content of the host file `source`."""
        self._add(path, tarfile.REGTYPE, mode, source if data is None else data)

    def add_symlink(self, path: str, target: str) -> None:
        self._add(path, tarfile.SYMTYPE, 0o777, linkname=target)

    def add_host_path(self, path: str) -> None:
        """Add a host file at the same path, as the host lays it out: a
        symlinked directory or file becomes the same symlink, and the file
        it reaches is added too (/lib -> usr/lib on merged-/usr systems)."""
        directory = self._host_dir(os.path.dirname(os.path.abspath(path)))
        name = os.path.join(directory, os.path.basename(path))
        if os.path.islink(name):
            target = os.readlink(name)
            self.add_symlink(name, target)
            self.add_host_path(os.path.normpath(os.path.join(directory, target)))
        else:
            self.add_file(name, mode=stat.S_IMODE(os.stat(name).st_mode), source=name)

    def _host_dir(self, path: str) -> str:
        """Add the directories of a host path (symlinked ones as symlinks); its real path."""
        current = "/"
        for part in PurePosixPath(path).parts[1:]:
            step = os.path.join(current, part)
            if os.path.islink(step):
                target = os.readlink(step)
                self.add_symlink(step, target)
                current = self._host_dir(os.path.normpath(os.path.join(current, target)))
            else:
                self.add_dir(step)
                current = step
        return current

    def _add(self, path: str, kind: bytes, mode: int, data: str | bytes | None = None, linkname: str = "") -> None:
        name = str(PurePosixPath("/", path).relative_to("/"))
        if name == "." or name in self._entries:
            return
        parent = str(PurePosixPath(name).parent)
        if parent != ".":
            self.add_dir(parent)
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.linkname, info.mtime = kind, mode, linkname, 0
        self._entries[name] = (info, data)

    def tar(self) -> bytes:
        """The layer as an uncompressed tar, entries sorted, every mtime 0."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for name in sorted(self._entries):
                info, data = self._entries[name]
                if info.type != tarfile.REGTYPE:
                    tar.addfile(info)
                    continue
                if isinstance(data, str):
                    data = Path(data).read_bytes()
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
        return buffer.getvalue()


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _json(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_oci_archive(output: Path, name: str, layer: ImageLayer, entrypoint: list[str],
                      exposed_ports: tuple[int, ...] = (), labels: dict[str, str] | None = None) -> str:
    """Write a one-layer image as an OCI image-layout tar archive; the
    manifest's digest. The index names the image `name` both for containerd
    (`io.containerd.image.name`: `ctr image import` keeps it as it is) and
    for OCI tools (`org.opencontainers.image.ref.name`)."""
    layer_tar = layer.tar()
    layer_digest, layer_blob = _blob(gzip.compress(layer_tar, compresslevel=1, mtime=0))
    arch = ARCHITECTURES.get(platform.machine(), platform.machine())
    config_digest, config_blob = _blob(_json({
        "architecture": arch, "os": "linux",
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/",
                   "ExposedPorts": {f"{p}/tcp": {} for p in exposed_ports}, "Labels": labels or {}},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()]},
        "history": [{"created_by": "iofleet (iofleet.fleet.kubernetes.image)"}],
    }))
    manifest_digest, manifest_blob = _blob(_json({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": len(config_blob)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer_digest, "size": len(layer_blob)}],
    }))
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    index = _json({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": manifest_digest, "size": len(manifest_blob),
                       "platform": {"architecture": arch, "os": "linux"},
                       "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag}}],
    })
    files = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": index}
    for digest, blob in ((layer_digest, layer_blob), (config_digest, config_blob), (manifest_digest, manifest_blob)):
        files["blobs/sha256/" + digest.split(":")[1]] = blob
    output = Path(output)
    partial = output.with_name(output.name + ".part")
    with tarfile.open(partial, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    partial.replace(output)
    return manifest_digest


def shared_libraries(binary: str) -> list[str]:
    """Every shared library `ldd` names for `binary`, the dynamic loader included."""
    proc = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise IofleetError(f"`ldd {binary}` failed: {(proc.stderr or proc.stdout).strip()[:200]}")
    libraries = []
    for line in proc.stdout.splitlines():
        if "not found" in line:
            raise IofleetError(f"{binary} needs a library that is not installed: {line.strip()}")
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if match:
            libraries.append(match.group(1))
    return libraries


def fio_version(fio: str) -> str:
    """fio's version as an image tag: fio-3.33 -> 3.33."""
    out = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    return re.sub(r"[^A-Za-z0-9_.-]", "-", out.removeprefix("fio-")) or "unknown"


def write_fio_image(output: Path, name: str | None = None) -> FioImage:
    """Write this machine's fio as an OCI image archive at `output`, named
    `name` (default localhost/iofleet-fio:<version>: a registry host keeps
    the CRI from rewriting the name to docker.io/...). It runs `fio
    --server` (port 8765) as root; /data is an empty mount point, /tmp is
    there for fio's scratch files."""
    fio = shutil.which("fio")
    if fio is None:
        raise IofleetError("fio is not installed here: the image packs this machine's fio (apt-get install fio)")
    version = fio_version(fio)
    name = name or f"localhost/iofleet-fio:{version}"
    layer = ImageLayer()
    layer.add_file("usr/bin/fio", mode=0o755, source=os.path.realpath(fio))
    binaries = [fio]
    if PLUGIN_DIR.is_dir():
        for plugin in sorted(PLUGIN_DIR.glob("*.so")):
            layer.add_host_path(str(plugin))
            binaries.append(str(plugin))
    for binary in binaries:
        for library in shared_libraries(binary):
            layer.add_host_path(library)
    layer.add_file("etc/passwd", b"root:x:0:0:root:/root:/usr/bin/fio\n")
    layer.add_file("etc/group", b"root:x:0:\n")
    layer.add_dir("root", 0o700)
    layer.add_dir("tmp", 0o1777)
    layer.add_dir("data")
    digest = write_oci_archive(output, name, layer, ["/usr/bin/fio", "--server"], exposed_ports=(FIO_PORT,),
                               labels={"org.opencontainers.image.version": version,
                                       "org.opencontainers.image.title": "fio --server (iofleet)"})
    return FioImage(name=name, fio_version=version, path=Path(output), digest=digest)
