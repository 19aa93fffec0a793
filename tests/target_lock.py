"""What the target-ownership tests (the CLI's and the web's) share: short
plans, the runs a results directory holds, and what a target's lock file
says of its holder."""

import json
import sqlite3

DEFAULTS = {"size": "16m", "runtime": "1s", "ramp": "0s", "iodepth": 2}
ONE = [{"name": "w", "bs": "4k", "read_pct": 100}]
TWO = [{"name": "w", "bs": "4k", "matrix": {"read_pct": [100, 0]}}]


def runs_in(data_dir) -> list[tuple]:
    db = data_dir / "results.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, status FROM runs").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def holder(lock) -> dict:
    """What a target's lock file says of its holder (empty while written)."""
    try:
        return json.loads(lock.read_text())
    except (OSError, ValueError):
        return {}
