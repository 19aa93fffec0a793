"""Early stop vs fixed time: the four Easy Run profiles (4k r100, 4k r70, 8k
r50 random; 256k sequential write), each run `until: steady` (rounds of 2 s,
at most 60 s) and for a fixed 60 s after the same warm-up, alternating, N
repeats. Writes the time ratio (steady / fixed measured seconds, goal <= 0.5),
the share of early-stopped tests that iofleet's SNIA verdict calls steady
(goal 1.0) and each profile's IOPS difference to BENCHMARKS.md.

    make bench                      # or:
    .venv/bin/python bench/early_stop.py --target DIR [--repeats 2] [--size 256m] [--benchmarks FILE]
"""

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import (  # noqa: E402
    BENCHMARKS, command_line, fio_version, fmt_interval, fmt_spread, iofleet, iso_seconds, log_t_interval,
    machine, median, no_data_files, progress, result_line, run_json, run_timed, verdict, write_section,
)
from iofleet.plan.easy import PROFILES  # noqa: E402

SECTION = "## Early stop vs fixed time"
GOAL_SHARE = 1.0
GOAL_TIME = 0.5


def plan_of(a, steady_first: bool) -> dict:
    """One run of a repeat: per profile its until: steady test and its fixed-time
    test next to each other (which comes first alternates between repeats)."""
    steady = {"until": "steady", "round": f"{a.round}s", "max_runtime": f"{a.max_runtime}s"}
    # The same round for the fixed test: its window (last 5 rounds) is then comparable.
    fixed = {"until": "time", "runtime": f"{a.max_runtime}s", "round": f"{a.round}s"}
    workloads = []
    for p in PROFILES:
        base = {k: v for k, v in p.items() if k != "description"}
        pair = [("steady", steady), ("fixed", fixed)]
        for mode, extra in (pair if steady_first else pair[::-1]):
            workloads.append({**base, "name": f"{p['name']}-{mode}", **extra})
    return {"name": "bench-early-stop", "prepare": "random",
            "defaults": {"jobs": a.jobs, "iodepth": a.iodepth, "size": a.size, "direct": True, "ramp": f"{a.ramp}s"},
            "workloads": workloads}


def measured(test: dict) -> dict:
    """What the bench needs of one exported test."""
    m = test.get("methodology") or {}
    verdict_ = ((m.get("steady") or {}).get("iops") or {})
    window = m.get("window") or {}
    return {
        "profile": test["workload"].rsplit("-", 1)[0],
        "mode": test["workload"].rsplit("-", 1)[1],
        "seconds": (test["all"]["runtime_ms"] or 0) / 1000,  # measured (after warm-up)
        "wall": iso_seconds(test["started_at"], test["ended_at"]),
        "early": m.get("early_stop") is not None,
        "stopped_at_s": (m.get("early_stop") or {}).get("stopped_at_s"),
        "steady": bool(verdict_.get("steady")),
        "reason": verdict_.get("reason"),
        "iops": test["all"]["iops"],
        "window_iops": ((window.get("all") or {}).get("iops") if (window.get("all") or {}).get("ios") else None),
    }


def summarise(tests: list[dict]) -> dict:
    """The goals' figures from every measured test (see measured())."""
    steady = [t for t in tests if t["mode"] == "steady"]
    fixed = [t for t in tests if t["mode"] == "fixed"]
    early = [t for t in steady if t["early"]]
    share = sum(t["steady"] for t in early) / len(early) if early else float("nan")
    time_ratio = sum(t["seconds"] for t in steady) / sum(t["seconds"] for t in fixed)
    wall_ratio = sum(t["wall"] for t in steady) / sum(t["wall"] for t in fixed)
    return {"share": share, "early": len(early), "early_steady": sum(t["steady"] for t in early),
            "time_ratio": time_ratio, "wall_ratio": wall_ratio,
            "steady_seconds": sum(t["seconds"] for t in steady), "fixed_seconds": sum(t["seconds"] for t in fixed),
            "steady_wall": sum(t["wall"] for t in steady), "fixed_wall": sum(t["wall"] for t in fixed)}


def iops_difference_pct(steady: dict, fixed: dict) -> float:
    """Steady test's window IOPS (whole test when it has no window) vs the
    fixed test's whole measured IOPS, in %."""
    ours = steady["window_iops"] if steady["window_iops"] is not None else steady["iops"]
    return (ours / fixed["iops"] - 1) * 100


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, required=True, help="scratch directory on the storage to use")
    ap.add_argument("--repeats", type=int, default=2, help="runs of all 8 tests")
    ap.add_argument("--size", default="256m", help="the data file (1 job)")
    ap.add_argument("--round", type=int, default=2, help="steady-state round, s")
    ap.add_argument("--ramp", type=int, default=2, help="warm-up, s")
    ap.add_argument("--max-runtime", type=int, default=60, help="until: steady's limit and the fixed runtime, s")
    ap.add_argument("--iodepth", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file to write the section to")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats: at least 1")
    target = a.target.resolve()
    n = len(PROFILES)
    longest = a.repeats * n * (2 * (a.ramp + a.max_runtime) + 6)
    progress(f"early stop vs fixed time: {a.repeats} repeats of {n} profiles × (until steady, fixed "
             f"{a.max_runtime} s); at most about {longest / 60:.0f} min (less when tests stop early)")
    tests: list[dict] = []
    walls: list[float] = []
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp:
        tmp = Path(tmp)
        for r in range(a.repeats):
            steady_first = r % 2 == 0
            plan = tmp / f"early-stop-{r + 1}.yaml"
            plan.write_text(yaml.safe_dump(plan_of(a, steady_first), sort_keys=False))
            data = tmp / "data"
            walls.append(run_timed(iofleet("run", str(plan), "--target", str(target), "--data-dir", str(data)),
                                   f"repeat {r + 1}/{a.repeats}: 8 tests ({'steady' if steady_first else 'fixed'} "
                                   f"first in each pair)", tmp / "log.txt"))
            run = run_json(data)
            for t in run["tests"]:
                if t["status"] != "ok":
                    sys.exit(f"test {t['id']} of run {run['id']}: {t['status']} ({t['error']})")
                m = measured(t) | {"repeat": r + 1}
                tests.append(m)
                progress(f"  {m['profile']} {m['mode']}: {m['seconds']:.1f} s measured, {m['wall']:.0f} s wall, "
                         f"{'ended early, ' if m['early'] else ''}verdict {'steady' if m['steady'] else 'not steady'}, "
                         f"{m['iops']:,.0f} IOPS" + (f" (window {m['window_iops']:,.0f})"
                                                     if m["mode"] == "steady" and m["window_iops"] else ""))
    left = no_data_files(target)
    if left:
        sys.exit(f"data files left behind: {', '.join(map(str, left))}")
    text = render(a, tests, walls)
    write_section(text, SECTION, a.benchmarks)
    print(text)


def render(a, tests: list[dict], walls: list[float], section: str = SECTION, goal_prefix: str = "",
           cmd: str | None = None, where: str | None = None, extra: str = "") -> str:
    """The section; the fleet's bench (fleet_early_stop.py) gives its own
    `section`, goal ID prefix, command, set-up sentence and `extra` lines."""
    n = len(PROFILES)
    s = summarise(tests)
    per_repeat = [summarise([t for t in tests if t["repeat"] == r + 1]) for r in range(a.repeats)]
    ratios = [p["time_ratio"] for p in per_repeat]

    rows = []
    for t in tests:
        rows.append(f"| {t['repeat']} | {t['profile']} | {t['mode']} | {t['seconds']:.1f} | {t['wall']:.0f} | "
                    f"{'yes, at ' + format(t['stopped_at_s'], '.1f') + ' s' if t['early'] else 'no'} | "
                    f"{'steady' if t['steady'] else 'not steady'} | {t['iops']:,.0f} | "
                    f"{'' if t['window_iops'] is None else format(t['window_iops'], ',.0f')} |")
    diffs = []
    for p in PROFILES:
        pairs = [[next(t for t in tests if t["repeat"] == r + 1 and t["profile"] == p["name"] and t["mode"] == mode)
                  for mode in ("steady", "fixed")] for r in range(a.repeats)]
        d = [iops_difference_pct(st, fx) for st, fx in pairs]
        diffs.append(f"| {p['name']} ({p['description']}) | {', '.join(f'{x:+.1f}' for x in d)} | "
                     f"{median(d):+.1f} | {fmt_spread(d, '{:+.1f}', ' to ')} |")
    cmd = cmd or command_line("bench/early_stop.py", ["--target", "scratch", "--repeats", str(a.repeats), "--size", a.size,
                                               "--round", str(a.round), "--ramp", str(a.ramp),
                                               "--max-runtime", str(a.max_runtime), "--iodepth", str(a.iodepth),
                                               "--jobs", str(a.jobs)])
    steady_not_early = sum(1 for t in tests if t["mode"] == "steady" and not t["early"] and t["steady"])
    where = where or f"one {a.size} file prepared with random data, direct IO"
    return f"""{section}

Command: `make bench` (= `{cmd}`)
Measured {machine()}, {fio_version()}.

The four Easy Run profiles (iofleet.plan.easy.PROFILES), {a.jobs} job × iodepth {a.iodepth}, {where},
{a.ramp} s warm-up, each run twice per repeat and side by side:
`until: steady` (rounds of {a.round} s, window of 5 rounds, at most {a.max_runtime} s) and a fixed
`runtime: {a.max_runtime}s`; which of the two comes first alternates between repeats. Repeats: {a.repeats}
(one `iofleet run` each: {", ".join(f"{w:.0f} s" for w in walls)} wall time). "Measured s" is the test's
measured time after warm-up (`all.runtime_ms`), "wall s" its start to end (warm-up, start-up and stop
included; whole seconds, as stored). "Early" is `methodology.early_stop`, "verdict" the SNIA verdict on
IOPS (`methodology.steady.iops.steady`), "window IOPS" the figures of the measurement window
(`methodology.window.all.iops`).

| repeat | profile | mode | measured s | wall s | early | verdict | IOPS (whole test) | window IOPS |
| ---: | --- | --- | ---: | ---: | --- | --- | ---: | ---: |
""" + "\n".join(rows) + f"""

**Steady share.** {s['early']} of {a.repeats * n} `until: steady` tests ended early; {s['early_steady']} of those
the verdict calls steady{"" if s['early'] else " (none ended early: the share is not defined, written as nan)"}.
{steady_not_early} more were judged steady only after running to max_runtime.

{result_line(goal_prefix + "early-stop-steady-share", s["share"])}

Goal {GOAL_SHARE:.1f}: {verdict(s["share"], GOAL_SHARE)}.

**Time.** Measured seconds of all `until: steady` tests / of all fixed tests: {s['steady_seconds']:.1f} /
{s['fixed_seconds']:.1f} s = {s['time_ratio']:.3f}; wall time {s['steady_wall']:.0f} / {s['fixed_wall']:.0f} s =
{s['wall_ratio']:.3f}. Per repeat (measured): {", ".join(f"{x:.3f}" for x in ratios)}; median {median(ratios):.3f},
min–max {fmt_spread(ratios)}, 95 % interval {fmt_interval(log_t_interval(ratios))} (Student t on the mean of
the log ratios, back-transformed).

{result_line(goal_prefix + "early-stop-time-ratio", s["time_ratio"])}

Goal ≤ {GOAL_TIME:g} (for these settings: {a.round} s rounds, at most {a.max_runtime} s): {verdict(s["time_ratio"], GOAL_TIME, at_least=False)}.

**IOPS difference**, until: steady (window figures) vs fixed time (whole test), per repeat, %:

| profile | per repeat | median | min–max |
| --- | --- | ---: | ---: |
""" + "\n".join(diffs) + """

This machine's run-to-run noise is about ±8 %: a difference inside that cannot be told from noise.
""" + extra


if __name__ == "__main__":
    main()
