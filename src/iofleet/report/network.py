"""The report's network section: a network check's round-trip matrix, each
link's bandwidth (a chart, a slow link in its own colour) and the problems
named; in a fleet run's report, the last check of its hosts, which its
diagnostics used."""

import statistics
from collections.abc import Mapping

import plotly.graph_objects as go

from ..fio.records import Series
from ..fleet.network_check import OUTLIER, NetworkCheck, check_of_links
from ..results.model import Run
from .charts import PALETTE, _figure

SLOW = "#D55E00"  # a link below 1/OUTLIER of the median: the check names it


def network_view(check: NetworkCheck) -> dict:
    """A check as the API and the network tables show it (rtt_ms -1: all pings lost)."""
    rtt = {a: {b: None if p is None else -1.0 if p.received == 0 else p.rtt_avg_ms for b, p in row.items()}
           for a, row in check.pings.items()}
    links = [{"from": a, "to": b, "gbps": None if bw is None else round(bw.bits_per_s / 1e9, 3)}
             for a, row in check.bandwidth.items() for b, bw in row.items()]
    return {"hosts": check.hosts, "rtt_ms": rtt, "bandwidth": links, "errors": check.errors,
            "problems": check.problems}


def bandwidth_chart(links: list[dict]) -> go.Figure | None:
    measured = [link for link in links if link["gbps"] is not None]
    if not measured:
        return None
    median = statistics.median(link["gbps"] for link in measured)
    fig = _figure("Bandwidth of each link (iperf3, from → to)")
    fig.add_trace(go.Bar(x=[f"{link['from']} → {link['to']}" for link in measured],
                         y=[link["gbps"] for link in measured], name="Gbit/s",
                         marker=dict(color=[SLOW if link["gbps"] < median / OUTLIER else PALETTE[0]
                                            for link in measured]),
                         hovertemplate="%{x}: %{y:.3f} Gbit/s<extra></extra>"))
    fig.add_hline(y=median, line_dash="dash", annotation_text=f"median {median:.2f} Gbit/s",
                  annotation_position="top left")
    fig.update_xaxes(title_text="link", type="category")
    fig.update_yaxes(title_text="Gbit/s", rangemode="tozero")
    return fig


def network_section(run: Run, series: Mapping[int, list[Series]]) -> dict | None:
    """None for a run without a network check (its own, or a fleet run's last one)."""
    net = run.methodology.network if run.methodology is not None else None
    if not net:
        return None
    view = network_view(check_of_links(net.hosts, net.links, net.errors, net.problems))
    chart = bandwidth_chart(view["bandwidth"])
    title = ("Network" if net.run is None else
             f"Network: the last check of these hosts before this run (run {net.run}, "
             f"{(net.at or '')[:19].replace('T', ' ')} UTC), which the diagnostics use")
    return view | {"title": title, "own": net.run is None, "pairs": net.pairs,
                   "chart": chart.to_json() if chart else None}
