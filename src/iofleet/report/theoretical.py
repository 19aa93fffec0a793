"""The theoretical model shown: the expected IOPS and MB/s per workload with
the bound that applies, and a run's measured share of it, as a terminal
table, Markdown, JSON or CSV (all from the same plain data)."""

import csv
import io
import json

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.theoretical import Comparison, Device, Expected
from ..plan.hardware import HardwareModel
from ..plan.units import format_size
from ..units import format_value

MISSING = "n/a"
UNITS = ["Units: IOPS = client IOs/s of the whole system; MB/s = 10^6 bytes/s; write penalty = device IOs per "
         "client write (r reads + w writes).",
         "bound: what limits the expected figure: devices (their IO budget after the write penalty) or network "
         "(the hosts' NICs, full duplex)."]
ONE_SET = ("One set of device figures serves random and sequential IO: IOPS limit small blocks, MB/s large "
           "ones (min of the two at each block size).")


def _num(x: float | None, digits: int = 0) -> float | None:
    return None if x is None else round(x, digits)


def _expected_data(e: Expected) -> dict:
    return {
        "workload": e.name, "bs": e.bs, "read_pct": e.read_pct, "pattern": e.pattern,
        "penalty": round(e.penalty.total, 3), "penalty_reads": round(e.penalty.reads, 3),
        "penalty_writes": round(e.penalty.writes, 3), "forwarded": round(e.penalty.forwarded, 3),
        "penalty_why": e.penalty.why,
        "device_iops": _num(e.device_iops), "network_iops": _num(e.network_iops),
        "iops": _num(e.iops), "mb_s": _num(e.mb_s, 1), "bound": e.bound,
    }


def model_data(model: HardwareModel, device: Device, expected: list[Expected],
               comparison: Comparison | None = None, run_id: int | None = None) -> dict:
    """Every figure as plain data (the JSON output; the other formats render it)."""
    data = {
        "model": {"name": model.name, "devices_per_host": model.devices_per_host, "hosts": model.hosts,
                  "devices": model.devices, "layout": model.layout, "layout_text": model.layout_text(),
                  "copies": model.mirror_copies if model.layout == "mirror" else None,
                  "k": model.k, "m": model.m, "stripe_unit": model.stripe_unit, "nic_gbps": model.nic_gbps},
        "device": {"read_iops": _num(device.read_iops), "write_iops": _num(device.write_iops),
                   "read_mb_s": _num(device.read_mb_s, 1), "write_mb_s": _num(device.write_mb_s, 1),
                   "read_bs": device.read_bs, "write_bs": device.write_bs, "sources": device.sources},
        "notes": [ONE_SET] + ([] if model.nic_gbps else ["No nic_gbps given: no network cap."]),
        "workloads": [_expected_data(e) for e in expected],
    }
    if comparison is not None:
        data["run"] = {
            "id": run_id,
            "tests": [{"test": r.test, **_expected_data(r.expected),
                       "expected_iops": _num(r.expected.iops), "expected_mb_s": _num(r.expected.mb_s, 1),
                       "measured_iops": _num(r.iops), "measured_mb_s": _num(r.mb_s, 1),
                       "achieved_pct": _num(r.share_pct, 1)} for r in comparison.rows],
            "skipped": comparison.skipped, "notes": comparison.notes,
        }
    return data


def _penalty(w: dict) -> str:
    if w["read_pct"] == 100:
        return MISSING  # no writes: the penalty plays no part
    total = w["penalty"]
    return f"{total:g}" if not w["penalty_reads"] else f"{total:g} ({w['penalty_reads']:g}r+{w['penalty_writes']:g}w)"


def workload_rows(data: dict) -> list[dict]:
    """The model table as strings, one row per workload."""
    return [{"workload": w["workload"], "write penalty": _penalty(w),
             "devices IOPS": format_value(w["device_iops"], "IOPS"),
             "network IOPS": format_value(w["network_iops"], "IOPS"), "expected IOPS": format_value(w["iops"], "IOPS"),
             "expected MB/s": format_value(w["mb_s"], "MB/s"), "bound": w["bound"]} for w in data["workloads"]]


def comparison_rows(data: dict) -> list[dict]:
    """The --run table as strings, one row per compared test."""
    return [{"test": t["test"], "as": t["workload"], "measured IOPS": format_value(t["measured_iops"], "IOPS"),
             "expected IOPS": format_value(t["expected_iops"], "IOPS"),
             "measured MB/s": format_value(t["measured_mb_s"], "MB/s"),
             "expected MB/s": format_value(t["expected_mb_s"], "MB/s"), "achieved": f"{t['achieved_pct']:.1f} %",
             "bound": t["bound"]} for t in data["run"]["tests"]]


def _device(d: dict, direction: str) -> str:
    """e.g. "read 90,000 IOPS at 4k, 351.6 MB/s": the device's datasheet figures."""
    return (f"{direction} {format_value(d[f'{direction}_iops'], 'IOPS')} IOPS at {format_size(d[f'{direction}_bs'])}, "
            f"{format_value(d[f'{direction}_mb_s'], 'MB/s')} MB/s")


def header_lines(data: dict) -> list[str]:
    m, d = data["model"], data["device"]
    nic = f"NIC {m['nic_gbps']:g} Gbit/s per host" if m["nic_gbps"] else "no NIC speed (no network cap)"
    lines = [f"Model {m['name']}: {m['devices']} device{'s' if m['devices'] > 1 else ''} ({m['devices_per_host']} per host × {m['hosts']} "
             f"host{'s' if m['hosts'] > 1 else ''}), {m['layout_text']}, {nic}",
             f"Device: {_device(d, 'read')}; {_device(d, 'write')}"]
    for figure, source in d["sources"].items():
        lines.append(f"  {figure} from {source}")
    return lines


def footer_lines(data: dict) -> list[str]:
    lines = UNITS + data["notes"]
    whys = dict.fromkeys(w["penalty_why"] for w in data["workloads"])
    lines += [f"Write penalty: {why}." for why in whys]
    run = data.get("run")
    if run:
        lines.append("achieved: measured IOPS as a share of the expected IOPS (the portion of the hardware's "
                     "capability the run reached); random_pct 0 is modelled as sequential.")
        lines += run["notes"]
        lines += [f"not compared: {s}" for s in run["skipped"]]
    return lines


def _table(rows: list[dict], title: str) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for i, col in enumerate(rows[0] if rows else ["(none)"]):
        table.add_column(col, justify="left" if i == 0 or col in ("as", "bound") else "right", no_wrap=True)
    for r in rows:
        table.add_row(*r.values())
    return table


def terminal_report(data: dict):
    """Rich renderable: header, the model table, the --run table, notes."""
    parts = [Text(line) for line in header_lines(data)]
    parts.append(_table(workload_rows(data), "Theoretical figures per workload"))
    if data.get("run"):
        parts.append(_table(comparison_rows(data), f"Run {data['run']['id']}: measured vs theoretical"))
    parts += [Text(line, style="dim") for line in footer_lines(data)]
    return Group(*parts)


def _markdown_table(rows: list[dict]) -> list[str]:
    if not rows:
        return ["(no rows)"]
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |",
           "| " + " | ".join("---" if c in ("workload", "test", "as", "bound") else "---:" for c in cols) + " |"]
    out += ["| " + " | ".join(r.values()) + " |" for r in rows]
    return out


def markdown_report(data: dict) -> str:
    lines = [f"## Theoretical model: {data['model']['name']}", ""]
    lines += [line.strip() + "  " for line in header_lines(data)] + [""]
    lines += _markdown_table(workload_rows(data)) + [""]
    if data.get("run"):
        lines += [f"### Run {data['run']['id']}: measured vs theoretical", ""]
        lines += _markdown_table(comparison_rows(data)) + [""]
    lines += [f"- {line}" for line in footer_lines(data)]
    return "\n".join(lines) + "\n"


def json_report(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def csv_report(data: dict) -> str:
    """One row per workload, or with --run one row per compared test."""
    rows = data["run"]["tests"] if data.get("run") else data["workloads"]
    out = io.StringIO()
    fields = list(rows[0]) if rows else ["workload"]
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: "" if v is None else v for k, v in r.items()})
    return out.getvalue()


RENDERERS = {"md": markdown_report, "json": json_report, "csv": csv_report}
