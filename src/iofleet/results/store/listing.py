"""Which stored runs a listing keeps (Store.list_runs)."""

import datetime
import re
from dataclasses import dataclass

from ...errors import IofleetError
from ..model import RunInfo
from .schema import RUN_STATUSES


def is_day(text: str) -> bool:
    """YYYY-MM-DD and a real day (fromisoformat alone also takes 20250131 and week dates)."""
    try:
        return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text)) and bool(datetime.date.fromisoformat(text))
    except ValueError:
        return False


@dataclass
class RunFilter:
    """The runs a listing keeps: label and plan contain the text (any case),
    status is exact, dates are the run's UTC start day (both inclusive);
    `limit`: the newest that many of them. Empty fields keep every run."""

    label: str = ""
    plan: str = ""
    status: str = ""
    since: str = ""
    until: str = ""
    limit: int | None = None

    def __post_init__(self):
        # An empty form field means "any", as the web page's GET form sends them all.
        for name in ("label", "plan", "status", "since", "until"):
            setattr(self, name, (getattr(self, name) or "").strip())
        if self.status and self.status not in RUN_STATUSES:
            raise IofleetError(f"status {self.status!r}: use one of {', '.join(RUN_STATUSES)}")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value and not is_day(value):
                raise IofleetError(f"{name} {value!r}: give a day as YYYY-MM-DD, e.g. 2025-01-31")
        if self.limit is not None and self.limit < 1:
            raise IofleetError(f"limit {self.limit}: give a number of runs, 1 or more")

    def keep(self, run: RunInfo) -> bool:
        day = run.created_at[:10]  # ISO-8601 UTC: the day sorts as text
        return ((not self.label or self.label.lower() in (run.label or "").lower())
                and (not self.plan or self.plan.lower() in run.plan_name.lower())
                and (not self.status or run.status == self.status)
                and (not self.since or day >= self.since) and (not self.until or day <= self.until))
