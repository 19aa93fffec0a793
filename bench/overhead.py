"""Harness overhead: the same 4k random-read fio job, run through `iofleet run`
and by hand with plain fio on the same file, alternating; writes the median
IOPS ratio (goal >= 0.98) to BENCHMARKS.md.

    make bench                      # or:
    .venv/bin/python bench/overhead.py --target DIR [--pairs 5] [--runtime 10]
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import yaml

from iofleet.results.store import Store

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"
SECTION = "## Harness overhead"


def run_iofleet(plan: Path, target: Path, data: Path) -> tuple[float, str]:
    """IOPS of one `iofleet run`, and the engine its job file used."""
    subprocess.run([sys.executable, "-m", "iofleet", "run", str(plan), "--target", str(target),
                    "--data-dir", str(data)], check=True, capture_output=True)
    with Store.open(data) as store:
        test = store.get_run(store.latest_run_id())["tests"][0]
        jobfile = store.read_artifact(test["pk"], "job.fio").decode()
    return test["aggregate"].all.iops, re.search(r"^ioengine=(\S+)", jobfile, re.M).group(1)


def run_by_hand(datafile: Path, engine: str, a) -> float:
    out = subprocess.run(
        ["fio", "--name=byhand", f"--filename={datafile}", f"--size={a.size}", "--bs=4k",
         "--rw=randread", f"--iodepth={a.iodepth}", f"--ioengine={engine}", "--direct=1",
         "--time_based", f"--runtime={a.runtime}", f"--ramp_time={a.ramp}", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])["jobs"][0]["read"]["iops"]


def write_section(text: str, section: str = SECTION) -> None:
    """Replace (or add) one section of BENCHMARKS.md, keeping the others."""
    old = BENCHMARKS.read_text() if BENCHMARKS.exists() else "# Benchmarks\n\nMeasured with `make bench`; each section gives the command that produced it.\n"
    match = re.search(rf"^{re.escape(section)}$", old, re.M)  # the whole heading: not a longer one it begins
    start = match.start() if match else -1
    if start >= 0:
        end = old.find("\n## ", start + len(section))
        old = old[:start].rstrip() + ("\n" + old[end:] if end >= 0 else "")
    BENCHMARKS.write_text(old.rstrip() + "\n\n" + text.strip() + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, required=True, help="directory on the storage to use")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=10, help="seconds measured per run")
    ap.add_argument("--ramp", type=int, default=2)
    ap.add_argument("--iodepth", type=int, default=16)
    ap.add_argument("--size", default="256m")
    a = ap.parse_args()
    target = a.target.resolve()
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
        for i in range(a.pairs):
            iops, engine = run_iofleet(plan, target, tmp / "data")
            ours.append(iops)
            hand.append(run_by_hand(datafile, engine, a))
            print(f"pair {i + 1}/{a.pairs}: iofleet {ours[-1]:,.0f} IOPS, fio by hand {hand[-1]:,.0f} IOPS",
                  flush=True)
        for f in (target / "iofleet").glob("iofleet-data.*"):
            f.unlink()
    ratio = statistics.median(ours) / statistics.median(hand)
    pair_ratio = statistics.median(o / h for o, h in zip(ours, hand))
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    verdict = "meets" if ratio >= 0.98 else "misses"
    text = f"""{SECTION}

Command: `make bench` (= `.venv/bin/python bench/overhead.py --target scratch --pairs {a.pairs} --runtime {a.runtime} --ramp {a.ramp}`)
Measured {datetime.now(timezone.utc):%Y-%m-%d} on {platform.node()} ({os.cpu_count()} cores, {platform.release()}), {fio_version}.

The same job — 4k random read, iodepth {a.iodepth}, 1 job, {a.size} file, {a.ramp} s warm-up + {a.runtime} s, direct IO,
engine {engine} — run {a.pairs} times through `iofleet run` (status every second, per-second logs,
json+, host CPU sampling) and {a.pairs} times as plain `fio` on the same file, alternating.

| | median IOPS | runs |
| --- | ---: | --- |
| iofleet run | {statistics.median(ours):,.0f} | {", ".join(f"{x:,.0f}" for x in ours)} |
| fio by hand | {statistics.median(hand):,.0f} | {", ".join(f"{x:,.0f}" for x in hand)} |

**Median IOPS ratio iofleet / by hand: {ratio:.3f}** (median of the per-pair ratios: {pair_ratio:.3f});
goal ≥ 0.98: {verdict} it.
"""
    write_section(text)
    print(text)


if __name__ == "__main__":
    main()
