"""Kinds that register themselves (target kinds, places, studies, fault
kinds): a registry finds its kinds by importing every module of its
package, each of which registers its kind as it is imported — so adding a
kind is adding a file, and no list is edited (docs/architecture.md)."""

import importlib
import pkgutil
from collections.abc import Iterable


def import_modules(package: str, path: Iterable[str]) -> None:
    """Import every module of `package` (`path`: its __path__), except
    those whose name starts with `_` (what its kinds share)."""
    for module in pkgutil.iter_modules(path):
        if not module.name.startswith("_"):
            importlib.import_module(f"{package}.{module.name}")
