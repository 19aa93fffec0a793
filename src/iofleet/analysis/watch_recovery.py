"""What the storage said of itself around each fault: a scenario's `watch:`
samples (studies/watch.py) read as states, and each event's recovery in
the storage's own account, beside the load's (analysis/impact.py).

A sample's state is one short line:

- the command failed: `exit N: ` and the first line of its stderr (of its
  stdout when stderr is empty); no answer at all (timed out, SSH down):
  `no answer: ` and why;
- its output is a JSON object with a string `status` (Ceph's `ceph health
  --format json`: {"status": "HEALTH_WARN", "checks": {"OSD_DOWN": …}}):
  that status, then the names of its `checks`, sorted (their order in
  Ceph's output is not stable): `HEALTH_WARN OSD_DOWN, PG_DEGRADED`;
- otherwise the first non-blank line of its output.

Each event, on fio's clock like its impact, is read from the samples from
its start until the next event starts (or the end):

- before: the state of the last sample before the event began;
- changed: the first sample after it began whose state differs;
- back: the first sample from which the state is the one before again and
  stays so to the end of that span (None: not back by then); also counted
  from the fault's end (from its start when it has no end).
"""

from __future__ import annotations

import json

from ..results.watch import StorageAccount, WatchSample

MAX_STATE = 200  # characters of a state: a line, not a document


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _short(text: str) -> str:
    return text if len(text) <= MAX_STATE else text[:MAX_STATE - 1] + "…"


def state_of(exit_code: int | None, stdout: str, stderr: str = "", no_answer: str = "") -> str:
    """A sample's state (see the module's docstring). `exit_code` None: no
    answer, `no_answer` says why."""
    if exit_code is None:
        return _short(f"no answer: {no_answer or 'unknown reason'}")
    if exit_code != 0:
        why = _first_line(stderr) or _first_line(stdout)
        return _short(f"exit {exit_code}" + (f": {why}" if why else ""))
    try:
        data = json.loads(stdout)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("status"), str):
        checks = data.get("checks")
        names = sorted(str(k) for k in checks) if isinstance(checks, dict) else []
        return _short(data["status"] + (" " + ", ".join(names) if names else ""))
    return _short(_first_line(stdout))


def storage_recovery(samples: list[WatchSample], events: list[dict]) -> list[StorageAccount]:
    """Per event, the storage's account of it. `samples` in time order;
    `events`: dicts with `at_s` and `end_s` (None: no end of its own), and
    `index` (kept), in time order, on the samples' clock."""
    out = []
    for i, e in enumerate(events):
        at = e["at_s"]
        until = min((x["at_s"] for x in events[i + 1:] if x["at_s"] > at), default=None)
        prior = [s for s in samples if s.t_s < at]
        span = [s for s in samples if s.t_s >= at and (until is None or s.t_s < until)]
        account = StorageAccount(e.get("index"), at, e["end_s"], until, len(span))
        if prior:
            account.before, account.before_t_s = prior[-1].state, prior[-1].t_s
            other = [k for k, s in enumerate(span) if s.state != account.before]
            if other:
                account.changed_s, account.changed_to = span[other[0]].t_s, span[other[0]].state
                if other[-1] + 1 < len(span):
                    back = span[other[-1] + 1].t_s
                    since = e["end_s"] if e["end_s"] is not None else at
                    account.back_s, account.back_after_s = back, round(back - since, 2)
        out.append(account)
    return out
