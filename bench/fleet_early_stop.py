"""Early stop vs fixed time on a fleet: the four Easy Run profiles on a
4-host fleet of real `fio --server`s (network namespaces on this machine),
each run `until: steady` (rounds of 2 s, at most 60 s) and for a fixed 60 s
after the same warm-up, alternating, N repeats, through `iofleet run --hosts`.
Writes the time ratio (goal <= 0.5), the share of early-stopped tests the
SNIA verdict calls steady (goal 1.0), each profile's IOPS difference and how
far apart the hosts closed a round to BENCHMARKS.md (as bench/early_stop.py
does on one machine).

    make bench                      # or, as root:
    .venv/bin/python bench/fleet_early_stop.py [--hosts 4] [--repeats 2] [--size 64m]
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import command_line, iofleet, progress, run_json, run_timed, write_section  # noqa: E402
from bench.early_stop import measured, plan_of, render  # noqa: E402
from iofleet.plan.easy import PROFILES  # noqa: E402
from tests.fleet.testfleet import TestFleet  # noqa: E402

SECTION = "## Fleet early stop vs fixed time"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2, help="runs of all 8 tests")
    ap.add_argument("--size", default="64m", help="each host's data file (1 job)")
    ap.add_argument("--round", type=int, default=2, help="steady-state round, s")
    ap.add_argument("--ramp", type=int, default=2, help="warm-up, s")
    ap.add_argument("--max-runtime", type=int, default=60, help="until: steady's limit and the fixed runtime, s")
    ap.add_argument("--iodepth", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    n = len(PROFILES)
    progress(f"fleet early stop vs fixed time: {a.hosts} hosts, {a.repeats} repeats of {n} profiles × (until "
             f"steady, fixed {a.max_runtime} s); at most about "
             f"{a.repeats * n * (2 * (a.ramp + a.max_runtime) + 10) / 60:.0f} min")
    tests, walls, spreads = [], [], []
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp, TestFleet(a.hosts) as fleet:
        tmp = Path(tmp)
        inv = fleet.write_inventory(tmp / "inv.yaml")
        for r in range(a.repeats):
            steady_first = r % 2 == 0
            plan = tmp / f"fleet-early-stop-{r + 1}.yaml"
            plan.write_text(yaml.safe_dump(plan_of(a, steady_first), sort_keys=False))
            data = tmp / "data"
            walls.append(run_timed(iofleet("run", str(plan), "--hosts", str(inv), "--data-dir", str(data)),
                                   f"repeat {r + 1}/{a.repeats}: 8 tests on {a.hosts} hosts", tmp / "log.txt"))
            run = run_json(data)
            for t in run["tests"]:
                if t["status"] != "ok":
                    sys.exit(f"test {t['id']} of run {run['id']}: {t['status']} ({t['error']})")
                tests.append(measured(t) | {"repeat": r + 1})
                spread = (t.get("methodology") or {}).get("round_spread_s")
                if spread is not None:
                    spreads.append(spread)
                m = tests[-1]
                progress(f"  {m['profile']} {m['mode']}: {m['seconds']:.1f} s measured, "
                         f"{'ended early, ' if m['early'] else ''}verdict "
                         f"{'steady' if m['steady'] else 'not steady'}, {m['iops']:,.0f} IOPS")
    cmd = command_line("bench/fleet_early_stop.py", ["--hosts", str(a.hosts), "--repeats", str(a.repeats),
                                                     "--size", a.size, "--round", str(a.round), "--ramp", str(a.ramp),
                                                     "--max-runtime", str(a.max_runtime), "--iodepth", str(a.iodepth),
                                                     "--jobs", str(a.jobs)]) + " (as root)"
    extra = (f"\n**Rounds' alignment.** The most seconds between the first and the last host closing the same "
             f"round, per test (`methodology.round_spread_s`): median {statistics.median(spreads):.3f} s, "
             f"highest {max(spreads):.3f} s, over {len(spreads)} tests of {a.round}-s rounds.\n") if spreads else ""
    where = (f"on each of {a.hosts} hosts (real `fio --server`s in network namespaces on this machine, sharing "
             f"its 2 cores and one disk; one fio client for all through iofleet's relay), one {a.size} file per "
             f"host prepared with random data, direct IO")
    text = render(a, tests, walls, section=SECTION, goal_prefix="fleet-", cmd=cmd, where=where, extra=extra)
    write_section(text, SECTION)
    print(text)


if __name__ == "__main__":
    main()
