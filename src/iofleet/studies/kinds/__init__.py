"""The studies: each module here declares one (a `studies.study.Study`
subclass), found by listing this package, so a new study is one file here
and its tests, no other file edited. STUDIES: by `order`, then name."""

import importlib
import pkgutil

from ...errors import IofleetError
from ..study import _STUDIES, Study


def _discover() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_discover()
STUDIES: dict[str, Study] = {s.name: s for s in sorted(_STUDIES.values(), key=lambda s: (s.order, s.name))}


def study(name: str) -> Study:
    """The study of that name, or a one-line error listing them."""
    try:
        return STUDIES[name]
    except KeyError:
        raise IofleetError(f"no study {name!r}; the studies: {', '.join(STUDIES)}") from None
