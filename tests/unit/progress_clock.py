"""A run's progress model fed at chosen instants: a clock the test sets, and
a model whose run has started with the tests of a small plan."""

from iofleet.plan.expand import expand
from iofleet.plan.load import parse_plan_text
from iofleet.studies.progress import RunProgress
from iofleet.studies.run import estimate_seconds

PLAN = """name: p
targets: [/tmp]
defaults: {size: 16m, ramp: 5s, runtime: 20s}
workloads:
  - name: w
    matrix: {iodepth: [1, 4]}
"""
STEADY = """name: s
targets: [/tmp]
defaults: {size: 16m, ramp: 5s, until: steady, round: 10s, max_runtime: 100s}
workloads: [{name: w}]
"""


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def specs(text=PLAN):
    return expand(parse_plan_text(text))


def started(text=PLAN, **kw):
    clock = Clock()
    m = RunProgress(clock=clock, **kw)
    tests = specs(text)
    m.run_started(7, tests, estimate_seconds(tests))
    return m, clock, tests
