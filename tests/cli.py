"""Run the real iofleet CLI the way a user does, and read what it stored."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml


def iofleet(*args, data_dir: Path, timeout: float = 300, check_rc: int | None = 0, columns: int = 200, **kw):
    """Run the real CLI in a subprocess, as a user would (a terminal `columns` wide)."""
    env = dict(os.environ, IOFLEET_DATA=str(data_dir), COLUMNS=str(columns))
    proc = subprocess.run([sys.executable, "-m", "iofleet", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, **kw)
    if check_rc is not None:
        assert proc.returncode == check_rc, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def write_plan(path: Path, **plan) -> Path:
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def show_json(run_id, data_dir: Path) -> dict:
    return json.loads(iofleet("results", "show", run_id, "--format", "json", data_dir=data_dir).stdout)


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    """Poll until `predicate()` is truthy; its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def sampled_while(run, probe, every_s: float = 0.05):
    """`run()` while `probe()` is sampled every `every_s` on a thread (what a
    fault did while a scenario ran): (run's result, the samples)."""
    seen, done = [], threading.Event()

    def sample():
        while not done.is_set():
            seen.append(probe())
            time.sleep(every_s)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        return run(), seen
    finally:
        done.set()
        sampler.join()
