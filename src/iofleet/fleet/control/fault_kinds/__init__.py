"""The fault kinds, one module each (fault_kind.py says what one declares):
a new kind is a new file here. Modules whose name starts with `_` hold
what kinds share, and are no kind."""

from __future__ import annotations

import importlib
from types import ModuleType

from ....kinds import import_modules

_loaded: set[str] = set()


def load(package: ModuleType | None = None) -> None:
    """Import every kind module of `package` (this one by default): each
    registers its kind as it is imported. Once per package."""
    package = package or importlib.import_module(__name__)
    if package.__name__ in _loaded:
        return
    import_modules(package.__name__, package.__path__)
    _loaded.add(package.__name__)
