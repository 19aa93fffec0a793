"""The studies: each module here declares one (a `studies.study.Study`
subclass), found by listing this package, so a new study is one file here
and its tests, no other file edited. STUDIES: by `order`, then name."""

from ...errors import IofleetError
from ...kinds import import_modules
from ..study import _STUDIES, Study

import_modules(__name__, __path__)
STUDIES: dict[str, Study] = {s.name: s for s in sorted(_STUDIES.values(), key=lambda s: (s.order, s.name))}


def study(name: str) -> Study:
    """The study of that name, or a one-line error listing them."""
    try:
        return STUDIES[name]
    except KeyError:
        raise IofleetError(f"no study {name!r}; the studies: {', '.join(STUDIES)}") from None
