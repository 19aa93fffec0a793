"""fio itself: where it is, which version, and the command lines iofleet uses."""

import re
import shutil
import subprocess

from ..errors import FioError

MIN_VERSION = (3, 33)
INSTALL_HINT = "install it with `sudo apt-get install fio` (Debian/Ubuntu) or `sudo dnf install fio` (Fedora/RHEL)"
NEWER_HINT = ("install a newer one: Debian 12 and Ubuntu 24.04 ship fio 3.33 or later; elsewhere build it from "
              "https://github.com/axboe/fio (`./configure && make && sudo make install`)")


def fio_binary() -> str:
    path = shutil.which("fio")
    if not path:
        raise FioError(f"fio not found (not on PATH): {INSTALL_HINT}")
    return path


def parse_version(text: str) -> tuple[int, ...]:
    """'fio-3.33' → (3, 33); 'fio-3.36-12-gabc' → (3, 36)."""
    m = re.search(r"fio-(\d+)\.(\d+)", text)
    if not m:
        raise FioError(f"cannot read fio's version from {text.strip()!r}; {INSTALL_HINT}")
    return int(m.group(1)), int(m.group(2))


def fio_version() -> str:
    """fio's version string, after checking it is recent enough."""
    try:
        out = subprocess.run(
            [fio_binary(), "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FioError(f"fio does not run ({exc}); {INSTALL_HINT}") from None
    if parse_version(out) < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        raise FioError(f"{out} is too old: iofleet needs fio >= {need}; {NEWER_HINT}")
    return out


def run_command(jobfile: str, status_interval: int | None = 1) -> list[str]:
    """Command for a test: json+ on stdout, with a full JSON status document
    every `status_interval` seconds (parsed for live progress)."""
    cmd = [fio_binary(), "--output-format=json+", "--eta=never"]
    if status_interval:
        cmd.append(f"--status-interval={status_interval}")
    cmd.append(jobfile)
    return cmd


# The clock of a fio client that runs no measured test: a fio process calibrates
# its clock at start, and fio's default then also tests the TSC (~65 ms more
# CPU per client, so per host). A client does no IO: its clock only times its
# waits. Not for a test: such a client sends its RUN command sooner, before
# some servers start waiting for it (up to 1 s) and after others, and the
# hosts' starts would spread over a second; with fio's default all wait alike.
# (Measured with a client per host and the servers' clock named: at 64 hosts the
# quick clock started them 1.3 s sooner, as spread; at 4 hosts a 2-s test overlapped
# 33 %. The test's one client for every host keeps fio's clock: 0.13 s, once.)
QUICK_CLOCK = "--clocksource=clock_gettime"
# What a fio server's answer says: its version (each server's "fio=..."),
# and a target directory that is not there.
SERVER_VERSION_RE = re.compile(r"\bfio=(fio-[^\s,]+)")
NOT_A_DIR_RE = re.compile(r"fio: (\S+) is not a directory")


# fio's clocks as `--debug=time` numbers them (gettime.h enum fio_cs).
CLOCK_NAMES = {"1": "gettimeofday", "2": "clock_gettime", "3": "cpu"}
CLOCK_PROBE = ["--debug=time", "--name=clock", "--ioengine=null", "--size=4k"]


def clock_from_debug(text: str) -> str | None:
    """The clock fio chose, from the output of `fio CLOCK_PROBE`."""
    m = re.search(r"gettime: clocksource=(\d)", text)
    return CLOCK_NAMES.get(m.group(1)) if m else None


def server_clock() -> list[str]:
    """`--clocksource=` with the clock fio itself picks on this machine, for a
    `fio --server`: a listener started without one never sets its clock up,
    so each connection calibrates it again (~0.13 s of CPU per host and
    round; measured 0.1 s vs 0.004 s here). Named on the listener's command
    line, it is set up once and every connection inherits it: the same clock
    fio would use, once. Nothing when fio cannot say (built without debug)."""
    try:
        out = subprocess.run([fio_binary(), *CLOCK_PROBE], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    clock = clock_from_debug(out)
    return [f"--clocksource={clock}"] if clock else []


def client_command(jobs: list[tuple[str, str]], status_interval: int | None = None,
                   quick_clock: bool = False) -> list[str]:
    """Command for one test on many fio servers: (client argument, job file)
    pairs. With `status_interval` (an option of each server's, so after its
    --client and job file), each server sends its status that often; fio's client holds
    them until the end, then prints them all in its one document
    (client_stats), the final status last (iofleet's relay reads them live). ETA requests on: they are the fio
    client's only liveness check of its servers, so a host that vanishes
    mid-test (no reset, e.g. powered off) is dropped after a few missed
    replies (about 40 s) and the other hosts' results are kept; with
    --eta=never the client would wait for it forever. (With JSON output fio
    prints no ETA lines.)"""
    cmd = [fio_binary(), *([QUICK_CLOCK] if quick_clock else []), "--output-format=json+", "--eta=always"]
    for client, jobfile in jobs:
        # The job file right after its --client: fio gives a file that comes after an
        # option to every server (getopt moves it to the end), which the first such file wins.
        cmd += [f"--client={client}", jobfile, *([f"--status-interval={status_interval}"] if status_interval else [])]
    return cmd


# error_line's answer when fio printed nothing.
NO_MESSAGE = "fio failed without a message"


def error_line(stderr: str, stdout: str = "") -> str:
    """fio's own error line, for a failed test's message."""
    lines = [l.strip() for l in (stderr + "\n" + stdout).splitlines() if l.strip()]
    for line in lines:
        # fio's client prefixes a server's lines with "<hostname> ".
        if re.sub(r"^<[^>]*> ", "", line).startswith("fio:") or "error" in line.lower() or "err=" in line:
            return line
    return lines[0] if lines else NO_MESSAGE
