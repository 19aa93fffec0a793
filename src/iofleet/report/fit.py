"""Fitting a table to the terminal's width without ever cutting a figure.

rich squeezes a table that is too wide by cutting cells with an ellipsis,
so "75,210" could read "75…": a wrong number. Instead, columns that are
not essential are left out (the caller says which ones, and says so under
the table), and only then are test names shortened, in the middle with a
visible "…", never a figure."""

import textwrap
from collections.abc import Collection, Sequence

from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

MIN_NAME = 12  # a shortened name keeps at least this many characters
ELLIPSIS = "…"


def natural_width(table: Table) -> int:
    """The width the table takes with no cell wrapped."""
    console = Console(width=100_000)
    return Measurement.get(console, console.options, table).maximum


def print_wide(console: Console, renderable) -> None:
    """Print with every table at its full width (--wide): wider than the
    terminal, the terminal wraps its lines; no cell is squeezed or cut."""
    items = renderable.renderables if isinstance(renderable, Group) else [renderable]
    widest = max((natural_width(t) for t in items if isinstance(t, Table)), default=0)
    saved = console.width
    console.width = max(saved, widest)
    try:
        console.print(renderable)
    finally:
        console.width = saved


def middle_ellipsis(text: str, width: int) -> str:
    """text in at most width characters: its start and end around "…"
    (test ids differ at both ends: 4k-r100-…-qd8)."""
    if len(text) <= width:
        return text
    head = width // 2
    return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head):]


def _column(table: Table, header: str):
    return next((c for c in table.columns if str(c.header) == header), None)


def fit_table(table: Table, width: int | None, keep: Collection[str], drop_first: Sequence[str] = (),
              name: str | None = "test") -> tuple[list[str], bool]:
    """Make the table (in place) fit `width` columns: leave out the columns in
    `drop_first` order, then the other columns not in `keep` from the right,
    until it fits; then shorten the cells of the `name` column in the middle.
    Cells that still do not fit wrap (fold), never end in an ellipsis.
    Returns the headers left out (in the order left out) and whether names
    were shortened. width None: every column, nothing shortened."""
    for column in table.columns:
        column.overflow, column.no_wrap = "fold", False
    if width is None:
        return [], False
    order = list(drop_first) + [str(c.header) for c in reversed(table.columns)
                                if str(c.header) not in keep and str(c.header) not in drop_first]
    dropped = []
    for header in order:
        column = _column(table, header)
        if natural_width(table) <= width:
            break
        if column is not None:
            table.columns.remove(column)
            dropped.append(header)
    for i, column in enumerate(table.columns):
        column._index = i  # rich pads the first and last column by their index
    return dropped, _shorten(table, width, name)


def _shorten(table: Table, width: int, name: str | None) -> bool:
    column = _column(table, name) if name else None
    excess = natural_width(table) - width
    if column is None or excess <= 0:
        return False
    longest = max((len(c) for c in column._cells if isinstance(c, str)), default=0)
    room = max(MIN_NAME, longest - excess, len(str(column.header)))
    if room >= longest:
        return False
    column._cells = [middle_ellipsis(c, room) if isinstance(c, str) else c for c in column._cells]
    return True


def left_out_line(dropped: list[str], shortened: bool, width: int) -> str | None:
    """The line under a fitted table saying what it does not show, or None."""
    parts = []
    if dropped:
        parts.append(f"left out {', '.join(dropped)}")
    if shortened:
        parts.append("test names shortened in the middle (…)")
    if not parts:
        return None
    return f"To fit {width} columns: {'; '.join(parts)}. --wide shows every column in full."


def fit_group(group: Group, width: int | None, keep: Collection[str], drop_first: Sequence[str] = (),
              only_first: bool = False) -> Group:
    """A renderable made elsewhere (a saturation or model report): each of its
    tables fitted (fit_table, no name shortened) with its left-out line after
    it; with only_first, the later tables only fold, never cut."""
    items, first = [], True
    for item in group.renderables:
        items.append(item)
        if not isinstance(item, Table):
            continue
        fitted = width if first or not only_first else None
        dropped, _ = fit_table(item, fitted, keep, drop_first, name=None)
        if dropped:
            items.append(Text(left_out_line(dropped, False, width), style="dim"))
        first = False
    return Group(*items)


def wrapped(text: str, width: int, first: str = "  ", then: str = "  ") -> list[str]:
    """A paragraph's lines within `width` columns, broken between words only
    (a word longer than the width stays whole): `first` and `then` indent them."""
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=then, break_long_words=False,
                         break_on_hyphens=False)
