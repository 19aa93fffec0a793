"""Harness overhead: the same 4k random-read fio job, run through `iofleet run`
and by hand with plain fio on the same file, alternating; writes the median
of the per-pair IOPS ratios with a 95 % interval (goal >= 0.98) to BENCHMARKS.md.

    make bench                      # or:
    .venv/bin/python bench/overhead.py --target DIR [--repeats 10] [--runtime 10] [--benchmarks FILE]
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import (  # noqa: E402
    BENCHMARKS, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_median_ci, command_line, fio_version, fmt_interval,
    fmt_spread, machine, median, progress, result_line, verdict, write_section,
)
from iofleet.results.store import Store  # noqa: E402

SECTION = "## Harness overhead"
GOAL = 0.98


def run_iofleet(plan: Path, target: Path, data: Path) -> tuple[float, str]:
    """IOPS of one `iofleet run`, and the engine its job file used."""
    subprocess.run([sys.executable, "-m", "iofleet", "run", str(plan), "--target", str(target),
                    "--data-dir", str(data)], check=True, capture_output=True)
    with Store.open(data) as store:
        test = store.get_run(store.latest_run_id()).tests[0]
        jobfile = store.read_artifact(test.pk, "job.fio").decode()
    return test.aggregate.all.iops, re.search(r"^ioengine=(\S+)", jobfile, re.M).group(1)


def run_by_hand(datafile: Path, engine: str, a) -> float:
    out = subprocess.run(
        ["fio", "--name=byhand", f"--filename={datafile}", f"--size={a.size}", "--bs=4k",
         "--rw=randread", f"--iodepth={a.iodepth}", f"--ioengine={engine}", "--direct=1",
         "--time_based", f"--runtime={a.runtime}", f"--ramp_time={a.ramp}", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])["jobs"][0]["read"]["iops"]


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, required=True, help="directory on the storage to use")
    ap.add_argument("--repeats", "--pairs", dest="pairs", type=int, default=10,
                    help="alternating pairs (iofleet run, then fio by hand)")
    ap.add_argument("--runtime", type=int, default=10, help="seconds measured per run")
    ap.add_argument("--ramp", type=int, default=2)
    ap.add_argument("--iodepth", type=int, default=16)
    ap.add_argument("--size", default="256m")
    ap.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file to write the section to")
    a = ap.parse_args(argv)
    target = a.target.resolve()
    per_pair = 2 * (a.ramp + a.runtime) + 5  # + iofleet's start-up, preparation and cache drop
    progress(f"harness overhead: {a.pairs} pairs, about {a.pairs * per_pair / 60:.0f} min")
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp:
        tmp = Path(tmp)
        plan = tmp / "overhead.yaml"
        plan.write_text(yaml.safe_dump({
            "name": "overhead", "keep_files": True,
            "workloads": [{"name": "randread", "bs": "4k", "read_pct": 100, "random_pct": 100,
                           "iodepth": a.iodepth, "jobs": 1, "size": a.size,
                           "runtime": a.runtime, "ramp": a.ramp}]}))
        ours, hand = [], []
        datafile = target / "iofleet" / "iofleet-data.0.0"
        try:
            for i in range(a.pairs):
                start = time.monotonic()
                iops, engine = run_iofleet(plan, target, tmp / "data")
                ours.append(iops)
                hand.append(run_by_hand(datafile, engine, a))
                progress(f"pair {i + 1}/{a.pairs}: iofleet {ours[-1]:,.0f} IOPS, fio by hand {hand[-1]:,.0f} IOPS, "
                         f"ratio {ours[-1] / hand[-1]:.3f} ({time.monotonic() - start:.0f} s)")
        finally:
            for f in (target / "iofleet").glob("iofleet-data.*"):  # keep_files: ours to remove
                f.unlink()
    ratios = [o / h for o, h in zip(ours, hand)]
    ratio = median(ratios)
    ci = bootstrap_median_ci(ratios)
    text = f"""{SECTION}

Command: `make bench` (= `{command_line("bench/overhead.py", ["--target", "scratch", "--repeats", str(a.pairs),
                                                         "--runtime", str(a.runtime), "--ramp", str(a.ramp)])}`)
Measured {machine()}, {fio_version()}.

The same job — 4k random read, iodepth {a.iodepth}, 1 job, {a.size} file, {a.ramp} s warm-up + {a.runtime} s, direct IO,
engine {engine} — run {a.pairs} times through `iofleet run` (status every second, per-second logs,
json+, host CPU sampling) and {a.pairs} times as plain `fio` on the same file, alternating (iofleet first
in each pair).

| pair | iofleet run (IOPS) | fio by hand (IOPS) | ratio |
| ---: | ---: | ---: | ---: |
""" + "".join(f"| {i + 1} | {o:,.0f} | {h:,.0f} | {r:.3f} |\n" for i, (o, h, r) in enumerate(zip(ours, hand, ratios))) + f"""
Medians: iofleet {median(ours):,.0f} IOPS, fio by hand {median(hand):,.0f} IOPS (ratio of medians
{median(ours) / median(hand):.3f}). Per-pair ratios: median {ratio:.3f}, min–max {fmt_spread(ratios)},
95 % interval of the median {fmt_interval(ci)} (percentile bootstrap of the median of the per-pair
ratios, {BOOTSTRAP_RESAMPLES:,} resamples, seed {BOOTSTRAP_SEED}).

{result_line("overhead-ratio", ratio)}

Goal ≥ {GOAL}: the median {verdict(ratio, GOAL)}{_ci_note(ci)}.
"""
    write_section(text, SECTION, a.benchmarks)
    print(text)


def _ci_note(ci) -> str:
    if ci is None:
        return ""
    if ci[0] >= GOAL:
        return "; the whole 95 % interval is above it"
    if ci[1] < GOAL:
        return "; the whole 95 % interval is below it"
    return "; the 95 % interval straddles it, so these pairs cannot tell"


if __name__ == "__main__":
    main()
