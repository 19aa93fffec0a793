"""Fixtures for the fleet tests: real `fio --server` hosts in network
namespaces (see testfleet.py). They need root; elsewhere the tests are skipped.

- `make_fleet(n, metrics=False, **kw)`: start a fleet of n hosts (a
  TestFleet), removed after the test; may be called more than once.
- `fleet4`: four hosts h1..h4, one fresh fleet per test (starting one takes
  about 0.2 s, so tests stay isolated: a killed host never leaks into the
  next test).

Every fleet first removes what crashed earlier runs left behind
(`cleanup_stale`), so a killed pytest never breaks the next run.
"""

import pytest

from .network import FleetError
from .prerequisites import unavailable_reason
from .processes import sigterm_as_interrupt
from .testfleet import TestFleet


@pytest.fixture
def make_fleet():
    fleets: list[TestFleet] = []

    def make(n: int, metrics: bool = False, **kw) -> TestFleet:
        reason = unavailable_reason(metrics)
        if reason:
            pytest.skip(reason)
        fleet = TestFleet(n, metrics=metrics, **kw)
        fleets.append(fleet)
        return fleet.__enter__()  # cleans up after itself if it fails to start

    with sigterm_as_interrupt():
        try:
            yield make
        finally:
            problems = []
            for fleet in reversed(fleets):
                try:
                    fleet.close()
                except FleetError as exc:
                    problems.append(str(exc))
            if problems:
                pytest.fail("; ".join(problems), pytrace=False)


@pytest.fixture
def fleet4(make_fleet) -> TestFleet:
    return make_fleet(4)
