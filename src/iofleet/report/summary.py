"""The HCIBench-style summary: one row per test with its parameters, IOPS,
MB/s, read and write mean latency, p95, p99 and host CPU. A repeated test
is one row, the mean of its runs with their spread, as pyperf shows a
benchmark; `repeat_rows` keeps each run's own row for the report's detail."""

import statistics

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.diagnostics import RULES, SEVERITIES, Finding, diagnose
from ..analysis.host_facts import host_line, recorded_facts
from ..analysis.links import network_check
from ..analysis.methodology import prepare_note
from ..analysis.skew import MIN_OVERLAP_PCT
from ..analysis.stragglers import stragglers
from ..fleet.control.host import NO_SSH
from ..fleet.metrics.records import mean_cpu
from ..fleet.network_check import check_of_links, matrix_lines
from ..plan.units import format_bytes
from ..results.aggregate import aggregate, by_host
from ..results.methodology import PrepareRecord, ResumeRecord, TestMethodology
from ..results.model import Run, TestRecord
from ..units import escaped, format_value, to_ms
from .fit import fit_table, left_out_line

MISSING = "n/a"  # unavailable, never shown as 0


def _cpu(figures: list[dict]) -> str:
    """Host CPU as "avg/max" in whole percent (the mean of each over the
    runs of a repeated test); a window keeps no max: "40/n/a"."""
    avg = _mean([f["cpu avg"] for f in figures])
    if avg is None:
        return MISSING
    peak = _mean([f["cpu max"] for f in figures])
    return f"{avg:.0f}/" + (MISSING if peak is None else f"{peak:.0f}")


def window_cpu(window: dict) -> bool:
    """Whether a window has host CPU of its own (else its row shows the whole test's)."""
    return (window.get("cpu") or {}).get("host_avg_pct") is not None


# Per-host rows are listed under a fleet test up to this many hosts; beyond
# it the stragglers say which hosts stand out.
MAX_HOST_ROWS = 16
WHOLE = "whole test"  # the span of a row whose figures cover the whole measured part


def _steady(test: TestRecord) -> str:
    verdict = test.methodology.verdict("iops") if test.methodology else None
    return verdict.short() if verdict else MISSING


def run_tail(run: Run) -> str:
    """The latency percentile the run's rows show: the plan's `percentile`."""
    return run.methodology.tail if run.methodology else "p99"


def shown_window(methodology: TestMethodology | None) -> dict | None:
    """The measurement window whose figures a test's row shows
    (TestMethodology.shown_window; results stored before the window's
    figures existed hold its IOPS and MB/s only: see `_figures`)."""
    return methodology.shown_window() if methodology else None


def window_span(window: dict) -> str:
    return f"window {_seconds(window['start_s'])}-{_seconds(window['end_s'])} s"


def _seconds(s: float) -> str:
    return f"{round(s, 1):g}"  # fio's status clock: 10.002 s is "10"


def _row_window(test: TestRecord) -> dict | None:
    """The window a test's row takes figures from: an `until: steady` test's
    (an old one's: IOPS and MB/s only); None for a fixed-time test."""
    method = test.methodology
    window = method.window if method else None
    return None if window and "all" in window and not shown_window(method) else window


def _span(window: dict | None) -> str:
    return WHOLE if not window else window_span(window) if "all" in window else window_span(window) + " (IOPS, MB/s)"


# The figures of a row (None: not measured); latency in ms.
FIGURES = ("IOPS", "MB/s", "read ms", "write ms", "p95 ms", "tail ms")
_UNITS = {"IOPS": "IOPS", "MB/s": "MB/s"}  # the rest are latencies, in ms


def _figures(agg, cpu, window: dict | None = None, tail: str = "p99") -> dict:
    """The numbers of one row. With a `shown_window`, every figure is the
    window's (CPU too when the window has it); with an old window, only IOPS
    and MB/s are."""
    a = agg.all if agg else None
    whole_cpu = cpu is not None and cpu.samples and cpu.max_pct is not None
    out = {"cpu avg": cpu.avg_pct if whole_cpu else None, "cpu max": cpu.max_pct if whole_cpu else None}
    if agg is None or a.ios <= 0:
        return out | dict.fromkeys(FIGURES)
    if window and "all" in window:
        w, key = window, f"lat_{tail.replace('.', '_')}_us"
        out |= {"IOPS": w["all"]["iops"], "MB/s": w["all"]["bw_bytes_s"] / 1e6,
                "read ms": to_ms(w["read"]["lat_mean_us"], "us"), "write ms": to_ms(w["write"]["lat_mean_us"], "us"),
                "p95 ms": to_ms(w["all"].get("lat_p95_us"), "us"), "tail ms": to_ms(w["all"].get(key), "us")}
        if window_cpu(w):  # host CPU of the samples inside the window (no max stored: n/a)
            out |= {"cpu avg": w["cpu"]["host_avg_pct"], "cpu max": w["cpu"].get("host_max_pct")}
        return out
    iops, bw = (window["iops"], window["bw_bytes_s"]) if window else (a.iops, a.bw_bytes_s)
    return out | {"IOPS": iops, "MB/s": bw / 1e6, "read ms": to_ms(agg.read.lat_mean_ns, "ns"),
                  "write ms": to_ms(agg.write.lat_mean_ns, "ns"), "p95 ms": to_ms(a.percentiles_ns.get("p95"), "ns"),
                  "tail ms": to_ms(a.percentiles_ns.get(tail), "ns")}


def _mean(values: list) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.fmean(got) if got else None


def _cell(values: list, unit: str) -> str:
    """One figure, or the mean of a repeated test's runs with their spread
    (pyperf's way): "75,210 ± 1.8 %", the sample standard deviation as % of the mean."""
    s = spread(values)
    if s is None or s["n"] < 2:
        return format_value(s and s["mean"], unit)
    pct = s["stdev"] / s["mean"] * 100 if s["mean"] else 0.0
    return f"{format_value(s['mean'], unit)} ± {pct:.1f} %"


def _row(name: str, status: str, figures: list[dict], tail: str, steady: str | None = "") -> dict:
    """One row from the figures of one run, or of each run of a repeated test;
    steady None: no steady column (no test of the run used `until: steady`)."""
    row = {"test": name, "status": status}  # the test id spells the parameters: bs, read %, pattern, jobs, qd
    for column in FIGURES:
        row[f"{tail} ms" if column == "tail ms" else column] = _cell([f[column] for f in figures],
                                                                     _UNITS.get(column, "ms"))
    row["CPU % avg/max"] = _cpu(figures)
    if steady is not None:
        row["steady (IOPS)"] = steady
    return row


def uses_until(run: Run) -> bool:
    """Whether some test of the run measured until steady (else a steady
    column would only say "n/a (0 rounds)" on every row)."""
    return any((t.methodology and t.methodology.until == "steady") or t.params.get("until") == "steady"
               for t in run.tests)


SPREAD_FIGURES = ("IOPS", "MB/s", "tail ms")


def spread(values: list) -> dict | None:
    """The mean of some figures and their spread: sample standard deviation
    (0 for one value), lowest and highest; None when none was measured."""
    got = [v for v in values if v is not None]
    if not got:
        return None
    return {"n": len(got), "mean": statistics.fmean(got), "stdev": statistics.stdev(got) if len(got) > 1 else 0.0,
            "min": min(got), "max": max(got)}


def repeat_spread(runs: list[TestRecord], tail: str = "p99") -> dict[str, dict | None]:
    """The runs of one test (its repeats): IOPS, MB/s and the tail latency
    ("tail ms", in ms) as `spread` gives them, over the runs its summary row
    averages (the ok ones when some failed). The summary's "mean ± x %" and
    the charts' error bars both come from these figures."""
    figures = [_figures(t.aggregate, t.host_cpu, _row_window(t), tail) for t in _shown_runs(runs)]
    return {column: spread([f[column] for f in figures]) for column in SPREAD_FIGURES}


def repeat_spreads(run: Run) -> dict[str, dict[str, dict | None]]:
    """`repeat_spread` of every test of the run, by test id."""
    tail = run_tail(run)
    return {test_id: repeat_spread(runs, tail) for test_id, runs in _by_id(run).items()}


def _by_id(run: Run) -> dict[str, list[TestRecord]]:
    """The runs of each test (its repeats), in the run's order."""
    tests: dict[str, list[TestRecord]] = {}
    for t in run.tests:
        tests.setdefault(t.id, []).append(t)
    return tests


def _shown_runs(runs: list[TestRecord]) -> list[TestRecord]:
    """The runs a repeated test's row averages: the ok ones when some are
    ok and some not (its status says how many), else every run."""
    ok = [t for t in runs if t.status == "ok"]
    return ok if ok and len(ok) < len(runs) else runs


def _status(runs: list[TestRecord]) -> str:
    statuses = {t.status for t in runs}
    return runs[0].status if len(statuses) == 1 else f"{sum(t.status == 'ok' for t in runs)}/{len(runs)} ok"


def _verdicts(texts: list[str], runs: list[TestRecord]) -> str:
    """A repeated test's steady verdicts: one when they agree, else how many runs were steady."""
    if len(set(texts)) == 1:
        return texts[0]
    return f"steady {sum(x.startswith('steady') for x in texts)}/{len(runs)}"


def _test_rows(runs: list[TestRecord], tail: str, windowed: bool, repeated: bool, steady: bool) -> list[dict]:
    """A test's row (the mean of its runs when repeated), then its host
    groups and, under a fleet test of a few hosts, its hosts."""
    shown = _shown_runs(runs)
    first = shown[0]
    row = _row(first.id, _status(runs), [_figures(t.aggregate, t.host_cpu, _row_window(t), tail) for t in shown],
               tail, _verdicts([_steady(t) for t in shown], shown) if steady else None)
    if repeated:
        row = {"test": row.pop("test"), "status": row.pop("status"), "runs": str(len(runs))} | row
    if windowed:
        row["span"] = "; ".join(dict.fromkeys(_span(_row_window(t)) for t in shown))
    rows = [row]
    for group, info in ((first.fleet.groups if first.fleet else None) or {}).items():
        figures = []
        for t in shown:
            members = t.jobs_by_group().get(group)
            cpu = {m.host: m.cpu for m in t.host_metrics}
            hosts = t.fleet.groups[group].hosts
            figures.append(_figures(aggregate(members) if members else None,
                                    mean_cpu([cpu[h] for h in hosts if h in cpu]), tail=tail))
        rows.append(_row(f"  {group}: {info.test}", "group", figures, tail))
    per_run = [(by_host(t.jobs), {m.host: m.cpu for m in t.host_metrics}) for t in shown]
    hosts = list(dict.fromkeys(h for jobs, _ in per_run for h in jobs))
    if first.fleet and 1 < len(hosts) <= MAX_HOST_ROWS:
        order = first.fleet.hosts
        for host in sorted(hosts, key=lambda h: order.index(h) if h in order else len(order)):
            windows = [_host_window(t, host) for t, (jobs, _) in zip(shown, per_run) if host in jobs]
            figures = [_figures(jobs.get(host), cpu.get(host), w, tail=tail)
                       for (jobs, cpu), w in zip([p for p in per_run if host in p[0]], windows)]
            span = "; ".join(dict.fromkeys(map(_span, windows)))
            rows.append(_row(f"  {host}", "host", figures, tail) | {"span": span})
    # Groups and hosts: no runs count; a host shows its own part of the test's window, a group the whole test.
    return [row] + [{c: r.get(c, "") for c in row} | ({"span": r.get("span", WHOLE)} if windowed else {})
                    for r in rows[1:]]


def _host_window(test: TestRecord, host: str) -> dict | None:
    """A host's own figures over its test's measurement window (stored
    since fleet tests have their rounds live), else None: the whole test."""
    window = shown_window(test.methodology)
    part = ((window or {}).get("hosts") or {}).get(host)
    return part and {"start_s": window["start_s"], "end_s": window["end_s"], **part}


def summary_rows(run: Run) -> list[dict]:
    """Plain rows (strings) for any front end: one per test (a repeated
    test's runs are one row, the mean of their figures with the spread and
    a `runs` column) and, under a fleet test of a few hosts, one per host.
    When a test shows the figures of its measurement window, every row gets
    a `span` column saying which seconds its figures cover. The steady
    column is there when some test measured `until: steady`."""
    tail = run_tail(run)  # the plan's `percentile`
    windowed = any(shown_window(t.methodology) for t in run.tests)
    tests = _by_id(run)
    repeated = any(len(runs) > 1 for runs in tests.values())
    steady = uses_until(run)
    return [row for runs in tests.values() for row in _test_rows(runs, tail, windowed, repeated, steady)]


def repeat_rows(run: Run) -> list[dict]:
    """Each run of the repeated tests on a row of its own ("ID #2"), as the
    summary showed them before it showed their mean: the report's per-run detail."""
    tail = run_tail(run)
    windowed = any(shown_window(t.methodology) for t in run.tests)
    rows, steady = [], uses_until(run)
    for runs in _by_id(run).values():
        if len(runs) < 2:
            continue
        for t in runs:
            row = _row(f"{t.id} #{t.repeat}", t.status, [_figures(t.aggregate, t.host_cpu, _row_window(t), tail)],
                       tail, _steady(t) if steady else None)
            rows.append(row | ({"span": _span(_row_window(t))} if windowed else {}))
    return rows


def prepare_line(prepared: PrepareRecord) -> str:
    """The run's preparation in words (analysis.methodology.prepare_note),
    with what it wrote in all and how fast, from its stored record."""
    text = prepare_note(prepared)
    written, seconds = prepared.written_per_host or {}, prepared.seconds or 0
    total = sum(written.values())
    if total and seconds > 0:
        rate = total / seconds / 1e6
        each = f" ({format_value(rate / len(written), 'MB/s')} MB/s per host)" if len(written) > 1 else ""
        text += f" Written: {format_bytes(total)} at {format_value(rate, 'MB/s')} MB/s{each}."
    return text


def resume_note(r: ResumeRecord) -> str:
    """What one `run --resume` did, in plain sentences."""
    ran = ", ".join(r.tests)
    line = f"Resumed at {r.at}: " + (f"ran {ran}." if ran else "no test was left to run.")
    for test, status in r.replaced.items():
        line += f" {test} was run again; its {status} result was replaced."
    prepared = r.prepare
    if prepared and prepared.extended:
        line += f" Data a run kept was extended first: only each file's missing end written ({prepared.seconds:.1f} s)."
    elif prepared and (prepared.written_per_host or not prepared.reused):
        line += f" The data files were written again first ({prepared.seconds:.1f} s)."
    if prepared and prepared.reused:
        line += " Data a run kept (keep_files) was used as it is, not written again."
    return line


def host_facts_notes(run: Run) -> list[tuple[str, str | None]]:
    """One line per set of fleet hosts with the same facts (read through
    SSH), when the run has any: where hosts differ, the lines say which."""
    recorded = recorded_facts(run.host_facts)
    if not any(recorded.values()):
        return []
    hosts_of: dict[str, list[str]] = {}
    for host, facts in recorded.items():
        hosts_of.setdefault(host_line(facts) if facts else f"no facts ({NO_SSH})", []).append(host)
    return [(f"Host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)}: {text}.", None)
            for text, hosts in hosts_of.items()]


# Hosts closing the same status round further apart than this share of a
# round: the fleet's summed rounds mix different seconds (said in yellow).
ROUND_SPREAD_SHARE = 0.25


def _round_s(test: TestRecord) -> float | None:
    verdict = test.methodology.verdict("iops")
    return verdict.round_s if verdict else None


def methodology_notes(run: Run) -> list[tuple[str, str | None]]:
    """(line, style) pairs: preparation, caches, measurement windows and
    cache vs capacity tests, said once for the run where they agree."""
    notes: list[tuple[str, str | None]] = []
    method = run.methodology
    tests = [t for t in run.tests if t.methodology]
    prepared = method.prepare if method else None
    if prepared:
        notes.append((prepare_line(prepared), None))
    elif method:  # reads of the unwritten data are a diagnostics finding (unprepared_reads)
        notes.append(("Preparation: none (prepare: none); the data files were not written before the tests.", None))
    for r in (method.resumes if method else None) or []:  # `run --resume`: when, and what ran then
        notes.append((resume_note(r), None))
    caches: dict[str, set[str]] = {}
    for t in tests:
        for host, text in (t.methodology.cache or {}).items():
            caches.setdefault(text, set()).add(host)
    for text, hosts in caches.items():
        notes.append((f"Caches before each test on {', '.join(sorted(hosts))}: {text}.", None))
    shown = [t for t in tests if shown_window(t.methodology)]
    if shown:
        whole_cpu = list(dict.fromkeys(t.id for t in shown if not window_cpu(shown_window(t.methodology))))
        cpu = (" and CPU" if not whole_cpu else
               f"; CPU of {', '.join(whole_cpu)} cover{'s' if len(whole_cpu) == 1 else ''} the whole measured part")
        fleets = [t for t in shown if t.fleet]
        hosts = ("" if not fleets else "; host rows show each host's own part of it" if all(
            "hosts" in t.methodology.window for t in fleets) else "; host rows cover the whole measured part")
        notes.append((f"until: steady tests show every figure of their row (IOPS, MB/s, latency, percentiles"
                      f"{cpu}) from their measurement window of 5 rounds (column span){hosts}; fixed-time tests "
                      f"cover the whole measured part.", None))
    spread = {t.id: (t.methodology.round_spread_s, _round_s(t)) for t in tests
              if t.methodology.round_spread_s is not None}
    if spread:  # each fio server's status timer starts with its own fio
        worst = max(s for s, _ in spread.values())
        notes.append((f"Fleet rounds: each host's from its own fio server's status; the hosts closed the same "
                      f"round at most {worst:.2f} s apart.", None))
        apart = [f"{i} ({s:.1f} s of {r:g} s)" for i, (s, r) in spread.items() if r and s > ROUND_SPREAD_SHARE * r]
        if apart:
            notes.append((f"Fleet rounds far apart: {', '.join(apart)}; a fleet round sums seconds that differ "
                          f"from host to host by more than {ROUND_SPREAD_SHARE:.0%} of a round (hosts whose fio "
                          f"started apart: see the start skew).", "yellow"))
    old = [t for t in tests if t.methodology.window and "all" not in t.methodology.window]
    if old:  # stored before the windows had their own percentiles
        notes.append(("until: steady tests show IOPS and MB/s of their measurement window (5 rounds); their "
                      "latency, percentiles and CPU cover the whole measured part.", None))
    for t in tests:
        window = t.methodology.window
        if t.methodology.until == "steady" and not (window and window["steady"]):
            verdict = t.methodology.verdict("iops")
            reason = (verdict.reason if verdict else None) or "too few rounds"
            stopped = t.methodology.fio_steady and all(t.methodology.fio_steady.values())
            when = "fio's slope check ended it, but" if stopped else "ran to max_runtime:"
            what = ("its figures cover the whole measured part (fewer than 5 whole rounds)" if not window else
                    f"its figures are from the last 5 rounds ({window_span(window).removeprefix('window ')})"
                    if "all" in window else "its IOPS and MB/s are from the last 5 rounds")
            notes.append((f"{t.id}: {when} iofleet's SNIA check found no steady window ({reason}); {what}.",
                          "yellow"))
    kinds: dict[str, list[str]] = {}
    for t in tests:
        verdicts = [v for v in t.methodology.working_set.values() if v.kind]
        if not verdicts:
            continue
        v = max(verdicts, key=lambda v: v.working_set_bytes)
        kinds.setdefault(v.kind, []).append(
            f"{t.id} ({format_bytes(v.working_set_bytes)} in {format_bytes(v.cache_bytes)} {v.source})")
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


def summary_notes(run: Run) -> list[tuple[str, str | None]]:
    """(line, style) pairs under the table: failed tests, start skew,
    stragglers, hosts without metrics, methodology, a partial run."""
    tests = _by_id(run)
    notes = [(f"{t.id}{f' #{t.repeat}' if len(tests[t.id]) > 1 else ''}: {t.status}: {t.error}", "red")
             for t in run.tests if t.status != "ok" and t.error]
    for test_id, runs in tests.items():
        ok = sum(t.status == "ok" for t in runs)
        if 0 < ok < len(runs):  # its row's status says "2/3 ok"
            notes.append((f"{test_id}: {ok} of {len(runs)} runs ok; its row shows the mean of the ok "
                          f"run{'s' if ok > 1 else ''} only.", "yellow"))
    for t in run.tests:
        skew = t.fleet.skew if t.fleet else None
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
    notes += host_facts_notes(run) + methodology_notes(run) + network_notes(run)
    if run.status not in ("complete", "running"):
        notes.append((f"This run is {run.status}: {len(run.tests)} of "
                      f"{run.tests_planned} planned tests were stored" + (f"; {run.note}" if run.note else "") + ".",
                      "yellow"))
    return notes


def network_notes(run: Run) -> list[tuple[str, str | None]]:
    """A fleet run's last network check of its hosts: when, and what it found."""
    net = run.methodology.network if run.methodology is not None else None
    if not net or net.run is None:
        return []
    found = len(net.errors) + len(net.problems)
    what = "no problem" if not found else f"{found} problem{'s' if found > 1 else ''} (`iofleet results show {net.run}`)"
    return [(f"Network: the last check of these hosts, run {net.run} at {(net.at or '?')[:16].replace('T', ' ')} "
             f"UTC, found {what}.", "yellow" if found else None)]


SUMMARY_CAPTION = ("read/write ms: mean total latency (submit + complete); percentiles: all IO, from merged "
                   "histograms; warm-up excluded; MB/s = 10^6 bytes/s; CPU: host, while measuring.")
REPEATS_CAPTION = ("A repeated test is one row, the mean of its runs (column runs): ± = standard deviation of "
                   "the runs, as % of the mean; CPU: the mean of the runs.")


def summary_caption(run: Run) -> str:
    """The table's caption; with repeated tests, what their ± means."""
    repeated = any(len(runs) > 1 for runs in _by_id(run).values())
    return f"{SUMMARY_CAPTION} {REPEATS_CAPTION}" if repeated else SUMMARY_CAPTION


def row_style(status: str) -> str | None:
    """A row's colour: failed red; interrupted, partial or some runs ok ("2/3 ok") yellow."""
    if status in ("ok", "host", "group"):
        return None
    return "yellow" if status in ("interrupted", "partial") or status.endswith(" ok") else "red"


def run_title(run: Run) -> str:
    hosts = run.host_facts.get("hosts") or []  # a fleet's: {name, ...}; an import's: names
    host = run.host_facts.get("hostname") or ", ".join(h.get("name", "?") if isinstance(h, dict) else str(h)
                                                       for h in hosts)
    fio = "" if network_check(run) else f"{run.fio_version or 'fio ?'} · "  # a network check runs no fio
    return escaped(f"Run {run.id} · {run.plan_name} · {run.status} · {fio}{host}")


# Below the full width, the terminal keeps these columns (and the tail
# percentile's) and leaves out the others in this order.
NARROW_KEEP = ("test", "status", "IOPS", "MB/s")
NARROW_DROP = ("span", "steady (IOPS)", "CPU % avg/max", "write ms", "read ms", "p95 ms", "runs")


def summary_table(run: Run, width: int | None = None):
    """A rich renderable: the table, one line per failed test, notes on the
    fleet and methodology, then the diagnostics. With a width (a terminal's),
    the table leaves out columns to fit it (report.fit) and says which.
    A network check: its matrix, bandwidth and problems."""
    net = network_check(run)
    if net:
        return network_summary(run, net, width)
    table = Table(title=Text(run_title(run)), title_justify="left", box=box.SIMPLE_HEAD, caption=summary_caption(run),
                  caption_justify="left")
    rows = summary_rows(run)
    columns = list(rows[0]) if rows else ["test"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("test", "status") else "right")
    for row in rows:
        table.add_row(*row.values(), style=row_style(row["status"]))
    tail = run_tail(run)
    # A direction's mean latency stays while a test has IO that way (a write test shows its write ms).
    measured = tuple(col for col in ("read ms", "write ms") if any(row.get(col) not in (None, "", MISSING)
                                                                   for row in rows))
    keep = (*NARROW_KEEP, f"{tail} ms", *measured)
    dropped, shortened = fit_table(table, width, keep, [c for c in NARROW_DROP if c not in keep])
    left_out = left_out_line(dropped, shortened, width) if width else None
    notes = [Text(left_out, style="dim")] if left_out else []
    notes += [Text(line, style=style or "") for line, style in summary_notes(run)]
    findings = diagnose(run)
    if findings:
        notes.append(Text("Diagnostics:", style="bold"))
        notes += [Text(line, style=style) for line, style in diagnostics_lines(findings)]
    return Group(table, *notes)


def network_lines(net, width: int) -> tuple[list[str], list[str]]:
    """A check's matrix and bandwidth lines as `iofleet hosts network`
    printed them, and its problem lines (or the line saying there is none)."""
    check = check_of_links(net.hosts, net.links, net.errors, net.problems)
    found = [f"problem: {line}" for line in net.errors + net.problems]
    return matrix_lines(check, width), found or [f"No problem found on the links between {len(net.hosts)} hosts."]


def network_summary(run: Run, net, width: int | None) -> Group:
    """A network check's run as `iofleet hosts network` printed it."""
    matrix, found = network_lines(net, width or 200)
    return Group(Text(run_title(run), style="bold"), *map(Text, matrix),
                 *(Text(escaped(line), style="red" if line.startswith("problem") else "") for line in found))
