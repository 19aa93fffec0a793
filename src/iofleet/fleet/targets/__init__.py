"""Target kinds (see base.py), one module each, found by listing this
package: `target_for` builds a host's Target from the kind that claims its
targets' names (plan/target_kinds/); nothing else tells the kinds apart."""

from functools import cache

from ...kinds import import_modules
from ...plan.target_kinds import name_kind
from .base import KINDS, Access, Target

__all__ = ["Access", "Target", "kind_of", "target_for"]


@cache
def _kinds() -> dict[str, type[Target]]:
    """Every kind's class: the package's modules, imported once."""
    import_modules(__name__, __path__)
    return KINDS


def kind_of(name: str) -> type[Target]:
    """The kind's class for a target as written."""
    return _kinds()[name_kind(str(name)).kind]


def target_for(names: list[str], access: Access = Access()) -> Target:
    """One host's targets as one Target (the plan model allows a device or
    an image only alone)."""
    first = str(names[0]) if names else ""
    return kind_of(first)([str(n) for n in names], access)
