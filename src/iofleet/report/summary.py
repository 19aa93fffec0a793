"""The HCIBench-style summary: one row per test with its parameters, IOPS,
MB/s, read and write mean latency, p95, p99 and host CPU."""

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.diagnostics import RULES, SEVERITIES, Finding, diagnose
from ..analysis.skew import MIN_OVERLAP_PCT
from ..analysis.steady import SteadyVerdict
from ..analysis.stragglers import stragglers
from ..fleet.metrics import mean_cpu
from ..plan.units import format_bytes
from ..results.aggregate import aggregate, by_host
from ..results.model import Run, TestRecord

MISSING = "n/a"  # unavailable, never shown as 0


def _ms(ns) -> str:
    return MISSING if ns is None else f"{ns / 1e6:.3f}"


def _ms_us(us) -> str:
    return MISSING if us is None else f"{us / 1e3:.3f}"


def _cpu(avg, peak) -> str:
    return MISSING if avg is None or peak is None else f"{avg:.0f}/{peak:.0f}"


def window_cpu(window: dict) -> bool:
    """Whether a window has host CPU of its own (else its row shows the whole test's)."""
    return (window.get("cpu") or {}).get("host_avg_pct") is not None


# Per-host rows are listed under a fleet test up to this many hosts; beyond
# it the stragglers say which hosts stand out.
MAX_HOST_ROWS = 16
WHOLE = "whole test"  # the span of a row whose figures cover the whole measured part


def _steady(test: TestRecord) -> str:
    verdict = ((test.methodology or {}).get("steady") or {}).get("iops")
    return SteadyVerdict.from_dict(verdict).short() if verdict else MISSING


def shown_window(methodology: dict | None) -> dict | None:
    """The measurement window whose figures a test's row shows: that of an
    `until: steady` test, stored with its read/write/all figures. Results
    stored before those figures existed hold the window's IOPS and MB/s
    only (see `_row`); fixed-time tests show the whole test."""
    m = methodology or {}
    window = m.get("window")
    return window if window and "all" in window and m.get("until") == "steady" else None


def window_span(window: dict) -> str:
    return f"window {_seconds(window['start_s'])}-{_seconds(window['end_s'])} s"


def _seconds(s: float) -> str:
    return f"{round(s, 1):g}"  # fio's status clock: 10.002 s is "10"


def _row(name: str, status: str, agg, cpu, steady: str = "", window: dict | None = None, tail: str = "p99") -> dict:
    """One row. With a `shown_window`, every figure is the window's (CPU too
    when the window has it); with an old window, only IOPS and MB/s are."""
    a = agg.all if agg else None
    measured = agg is not None and a.ios > 0
    cpu_text = _cpu(cpu.avg_pct, cpu.max_pct) if cpu and cpu.samples else MISSING
    if not measured:
        iops = bw = read_ms = write_ms = p95 = tail_ms = None
    elif window and "all" in window:
        w, key = window, f"lat_{tail.replace('.', '_')}_us"
        iops, bw = w["all"]["iops"], w["all"]["bw_bytes_s"]
        read_ms, write_ms = _ms_us(w["read"]["lat_mean_us"]), _ms_us(w["write"]["lat_mean_us"])
        p95, tail_ms = _ms_us(w["all"].get("lat_p95_us")), _ms_us(w["all"].get(key))
        if window_cpu(w):  # host CPU of the samples inside the window (no max stored: n/a)
            cpu_text = f"{w['cpu']['host_avg_pct']:.0f}/" + (
                MISSING if w["cpu"].get("host_max_pct") is None else f"{w['cpu']['host_max_pct']:.0f}")
    else:
        iops, bw = (window["iops"], window["bw_bytes_s"]) if window else (a.iops, a.bw_bytes_s)
        read_ms, write_ms = _ms(agg.read.lat_mean_ns), _ms(agg.write.lat_mean_ns)
        p95, tail_ms = _ms(a.percentiles_ns.get("p95")), _ms(a.percentiles_ns.get(tail))
    return {
        # The test id spells the parameters: bs, read %, pattern, jobs, qd.
        "test": name,
        "status": status,
        "IOPS": f"{iops:,.0f}" if measured else MISSING,
        "MB/s": f"{bw / 1e6:,.1f}" if measured else MISSING,
        "read ms": read_ms or MISSING,
        "write ms": write_ms or MISSING,
        "p95 ms": p95 or MISSING,
        f"{tail} ms": tail_ms or MISSING,
        "CPU % avg/max": cpu_text,
        "steady (IOPS)": steady,
    }


def summary_rows(run: Run) -> list[dict]:
    """Plain rows (strings) for any front end: one per test and, under a
    fleet test of a few hosts, one per host. When a test shows the figures
    of its measurement window, every row gets a `span` column saying which
    seconds its figures cover."""
    rows = []
    tail = (run.methodology or {}).get("percentile") or "p99"  # the plan's `percentile`
    windowed = any(shown_window(t.methodology) for t in run.tests)
    for t in run.tests:
        name = t.id if t.repeat == 1 and not _repeated(run, t) else f"{t.id} #{t.repeat}"
        method = t.methodology or {}
        window = method.get("window")
        if window and "all" in window and not shown_window(method):
            window = None  # a fixed-time test: its row shows the whole test (old windows: IOPS and MB/s only)
        test_rows = [_row(name, t.status, t.aggregate, t.host_cpu, _steady(t), window, tail)]
        if windowed:
            test_rows[0]["span"] = (WHOLE if not window else window_span(window) if "all" in window
                                    else window_span(window) + " (IOPS, MB/s)")
        cpu = {m.host: m.cpu for m in t.host_metrics}
        for group, members in t.jobs_by_group().items():
            test_rows.append(_row(f"  {group}: {t.fleet['groups'][group]['test']}", "group",
                                  aggregate(members) if members else None,
                                  mean_cpu([cpu[h] for h in t.fleet["groups"][group]["hosts"] if h in cpu]),
                                  tail=tail))
        hosts = by_host(t.jobs)
        if t.fleet and 1 < len(hosts) <= MAX_HOST_ROWS:
            order = t.fleet["hosts"]
            for host in sorted(hosts, key=lambda h: order.index(h) if h in order else len(order)):
                test_rows.append(_row(f"  {host}", "host", hosts[host], cpu.get(host), tail=tail))
        if windowed:  # groups and hosts have no window figures of their own
            for row in test_rows[1:]:
                row["span"] = WHOLE
        rows += test_rows
    return rows


def methodology_notes(run: Run) -> list[tuple[str, str | None]]:
    """(line, style) pairs: preparation, caches, measurement windows and
    cache vs capacity tests, said once for the run where they agree."""
    notes: list[tuple[str, str | None]] = []
    method = run.methodology or {}
    tests = [t for t in run.tests if t.methodology]
    prepared = method.get("prepare")
    if prepared:
        per_host = prepared["working_set_per_host"]
        sizes = {format_bytes(b) for b in per_host.values()}
        notes.append((f"Preparation: {prepared['mode']} data written sequentially over {' / '.join(sorted(sizes))} "
                      f"per host ({prepared['passes']} passes of {format_bytes(prepared['bs'])} writes) on "
                      f"{len(per_host)} host{'s' if len(per_host) > 1 else ''} in {prepared['seconds']:.1f} s.", None))
    elif method:  # reads of the unwritten data are a diagnostics finding (unprepared_reads)
        notes.append(("Preparation: none (prepare: none); the data files were not written before the tests.", None))
    for r in method.get("resumes") or []:  # `run --resume`: when, and what ran then
        replaced = "".join(f"; {test} replaces its {status} result" for test, status in r["replaced"].items())
        again = (f"; preparation written again in {r['prepare']['seconds']:.1f} s" if r.get("prepare") else "")
        notes.append((f"Resumed at {r['at']}: {', '.join(r['tests']) or 'no test'} ran then{replaced}{again}.",
                      None))
    caches: dict[str, set[str]] = {}
    for t in tests:
        for host, text in (t.methodology.get("cache") or {}).items():
            caches.setdefault(text, set()).add(host)
    for text, hosts in caches.items():
        notes.append((f"Caches before each test on {', '.join(sorted(hosts))}: {text}.", None))
    shown = [t for t in tests if shown_window(t.methodology)]
    if shown:
        whole_cpu = list(dict.fromkeys(t.id for t in shown if not window_cpu(shown_window(t.methodology))))
        cpu = (" and CPU" if not whole_cpu else
               f"; CPU of {', '.join(whole_cpu)} cover{'s' if len(whole_cpu) == 1 else ''} the whole measured part")
        notes.append((f"until: steady tests show every figure of their row (IOPS, MB/s, latency, percentiles"
                      f"{cpu}) from their measurement window of 5 rounds (column span); fixed-time tests and "
                      f"host rows cover the whole measured part.", None))
    old = [t for t in tests if t.methodology.get("window") and "all" not in t.methodology["window"]]
    if old:  # stored before the windows had their own percentiles
        notes.append(("until: steady tests show IOPS and MB/s of their measurement window (5 rounds); their "
                      "latency, percentiles and CPU cover the whole measured part.", None))
    for t in tests:
        window = t.methodology.get("window")
        if t.methodology.get("until") == "steady" and not (window and window["steady"]):
            reason = ((t.methodology.get("steady") or {}).get("iops") or {}).get("reason") or "too few rounds"
            stopped = t.methodology.get("fio_steady") and all(t.methodology["fio_steady"].values())
            when = "fio's slope check ended it, but" if stopped else "ran to max_runtime:"
            what = ("its figures cover the whole measured part (fewer than 5 whole rounds)" if not window else
                    f"its figures are from the last 5 rounds ({window_span(window).removeprefix('window ')})"
                    if "all" in window else "its IOPS and MB/s are from the last 5 rounds")
            notes.append((f"{t.id}: {when} iofleet's SNIA check found no steady window ({reason}); {what}.",
                          "yellow"))
    kinds: dict[str, list[str]] = {}
    for t in tests:
        verdicts = [v for v in t.methodology.get("working_set", {}).values() if v.get("kind")]
        if not verdicts:
            continue
        v = max(verdicts, key=lambda v: v["working_set_bytes"])
        kinds.setdefault(v["kind"], []).append(
            f"{t.id} ({format_bytes(v['working_set_bytes'])} in {format_bytes(v['cache_bytes'])} {v['source']})")
    for kind, listed in kinds.items():
        what = "the working set fits in the cache" if kind == "cache test" else "the working set exceeds the cache"
        notes.append((f"{kind.capitalize()}s ({what}): {'; '.join(listed)}.", None))
    return notes


# A collapsed diagnostics line names this many tests and counts the rest.
MAX_NAMED_TESTS = 4
_SEVERITY_STYLE = {"critical": "red", "warning": "yellow", "info": None}


def diagnostics_lines(findings: list[Finding]) -> list[tuple[str, str | None]]:
    """(line, style) pairs, one per finding, critical first; the same advice
    (rule and change) for several tests is one line naming the tests, with
    the first one's evidence."""
    titles = {r.name: r.title for r in RULES}
    same_advice: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        same_advice.setdefault((f.rule, f.change), []).append(f)
    lines = []
    for (rule, change), group in sorted(same_advice.items(), key=lambda kv: SEVERITIES.index(kv[1][0].severity)):
        places = list(dict.fromkeys(" on ".join(filter(None, (f.test, f.host))) or "run" for f in group))
        where = ", ".join(places[:MAX_NAMED_TESTS])
        if len(places) > MAX_NAMED_TESTS:
            where += f" and {len(places) - MAX_NAMED_TESTS} more"
        first = group[0]
        evidence = first.evidence if all(f.evidence == first.evidence for f in group) else \
            f"e.g. {places[0]}: {first.evidence}"
        lines.append((f"[{first.severity}] {where}: {titles[rule]} — {evidence} → {change}",
                      _SEVERITY_STYLE[first.severity]))
    return lines


def _repeated(run: Run, test: TestRecord) -> bool:
    return sum(1 for t in run.tests if t.id == test.id) > 1


def summary_notes(run: Run) -> list[tuple[str, str | None]]:
    """(line, style) pairs under the table: failed tests, start skew,
    stragglers, hosts without metrics, methodology, a partial run."""
    notes = [(f"{t.id}: {t.status}: {t.error}", "red") for t in run.tests if t.status != "ok" and t.error]
    for t in run.tests:
        skew = (t.fleet or {}).get("skew")
        if skew and skew["overlap_pct"] < MIN_OVERLAP_PCT:
            notes.append((
                f"{t.id}: hosts measured at different times: starts {skew['start_spread_ms'] / 1000:.1f} s "
                f"apart, ends {skew['end_spread_ms'] / 1000:.1f} s apart; their windows overlap "
                f"{skew['overlap_pct']:.0f}% (< {MIN_OVERLAP_PCT:.0f}%), so the fleet figures are not a "
                f"sum over one period", "yellow"))
        # Hosts are only comparable when they ran the same workload: per group in a mixed test.
        for group, jobs in (t.jobs_by_group() or {None: t.jobs}).items():
            slow = stragglers(by_host(jobs))
            if slow:
                names = ", ".join(f"{h} ({share:.0%} of the median host)" for h, share in slow)
                where = t.id + (f" (group {group})" if group else "")
                notes.append((f"{where}: straggler{'s' if len(slow) > 1 else ''}: {names}", "yellow"))
    blind = sorted({m.host for t in run.tests for m in t.host_metrics if m.source == "none"})
    if blind and any(t.fleet for t in run.tests):
        notes.append((f"Host CPU: n/a for {', '.join(blind)} (no `metrics:` endpoint in the inventory)"
                      f"; a test's CPU covers the hosts with metrics.", None))
    notes += methodology_notes(run)
    if run.status not in ("complete", "running"):
        notes.append((f"This run is {run.status}: {len(run.tests)} of "
                      f"{run.tests_planned} planned tests were stored.", "yellow"))
    return notes


SUMMARY_CAPTION = ("read/write ms: mean total latency (submit + complete); percentiles: all IO, from merged "
                   "histograms; warm-up excluded; MB/s = 10^6 bytes/s; CPU: host, while measuring.")


def run_title(run: Run) -> str:
    host = run.host_facts.get("hostname") or ", ".join(run.host_facts.get("hosts", []))
    return f"Run {run.id} · {run.plan_name} · {run.status} · {run.fio_version or 'fio ?'} · {host}"


def summary_table(run: Run):
    """A rich renderable: the table, one line per failed test, notes on the
    fleet and methodology, then the diagnostics."""
    table = Table(title=run_title(run), title_justify="left", box=box.SIMPLE_HEAD, caption=SUMMARY_CAPTION,
                  caption_justify="left")
    rows = summary_rows(run)
    columns = list(rows[0]) if rows else ["test"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("test", "status") else "right", no_wrap=col == "test")
    for row in rows:
        style = None if row["status"] in ("ok", "host", "group") else "yellow" if row["status"] in ("interrupted", "partial") else "red"
        table.add_row(*row.values(), style=style)
    notes = [Text(line, style=style or "") for line, style in summary_notes(run)]
    findings = diagnose(run.to_dict())
    if findings:
        notes.append(Text("Diagnostics:", style="bold"))
        notes += [Text(line, style=style) for line, style in diagnostics_lines(findings)]
    return Group(table, *notes)
