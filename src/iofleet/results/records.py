"""The base of a stored record: a dataclass whose `to_dict` is its JSON in
the export (docs/results-format.md) and whose `from_dict` reads that JSON
back, from this iofleet or an older one.

A record read from stored JSON keeps the keys it was stored with, in their
order, and any key this iofleet no longer knows: an old run exports as it
was stored (no key appears that it never had), byte for byte.
"""

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self


@dataclass
class Record:
    """A stored record: its fields, in their order, are its JSON's keys in
    the export's order (nested records as theirs); a subclass overrides
    `_dict` where a value is written otherwise, and `_from` (fields from a
    stored dict, missing keys tolerated) where one is read otherwise."""

    # Keys left out of a new record's JSON while None (they came later, or
    # belong to one study only).
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    # Read from stored JSON: its keys in their order, those unknown here,
    # and what the keys it lacked held as read (left out unless set since).
    stored_keys: tuple[str, ...] | None = field(default=None, kw_only=True, repr=False, compare=False)
    unknown: dict[str, Any] = field(default_factory=dict, kw_only=True, repr=False, compare=False)
    lacked: dict[str, Any] = field(default_factory=dict, kw_only=True, repr=False, compare=False)

    def _dict(self) -> dict:
        return {name: _plain(getattr(self, name)) for name in self._known()}

    @classmethod
    def _from(cls, d: dict) -> dict:
        """The constructor's arguments from a stored dict; by default each
        known key as it is (plain JSON values)."""
        names = set(cls._known())
        return {k: v for k, v in d.items() if k in names}

    def __bool__(self) -> bool:
        # As its JSON's dict is: a record stored as {} is nothing recorded.
        return self.stored_keys != () or bool(self.to_dict())

    def to_dict(self) -> dict:
        full = self._dict()
        if self.stored_keys is None:
            return {k: v for k, v in full.items() if not (v is None and k in self.OPTIONAL)}
        out = {k: full[k] if k in full else self.unknown[k] for k in self.stored_keys}
        # Set since it was read (a resume's entry): at the end, as a dict update puts it.
        return out | {k: v for k, v in full.items() if k not in out and v != self.lacked.get(k)}

    def has(self, name: str) -> bool:
        """Whether the record's JSON holds this key: one stored before the
        field existed does not (some readers take the old default then)."""
        return name in self.to_dict()

    @classmethod
    def from_dict(cls, d: dict) -> Self:
        known = set(cls._known())
        record = cls(**cls._from(d), stored_keys=tuple(d), unknown={k: v for k, v in d.items() if k not in known})
        record.lacked = {k: v for k, v in record._dict().items() if k not in d}
        return record

    @classmethod
    def _known(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name not in ("stored_keys", "unknown", "lacked"))


def _plain(value):
    """A field's value as JSON: records as their dicts, within lists and dicts too."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def from_optional(cls, d: dict | None):
    """A record from a stored value that may be null."""
    return None if d is None else cls.from_dict(d)


def to_optional(record) -> dict | None:
    return None if record is None else record.to_dict()
