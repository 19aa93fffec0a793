"""The regression gate of a comparison (iofleet.analysis.compare.gate) as a
JUnit XML file, the format CI systems (Jenkins, GitLab) read: one test suite
per configuration compared with the baseline, one test case per matched
test and metric, a failure element for each regression, an error element
for each figure worse than the threshold that the samples cannot tell from
noise (the gate is inconclusive: a CI job must not pass it), skipped for a
figure with no value on one side."""

import re
import xml.etree.ElementTree as ET

from ..analysis.compare import INCONCLUSIVE, NOT_JUDGED, REGRESSION, Comparison, GateCheck
from ..results.methodology import count
from ..units import format_value, shown_unit
from .compare import fmt_change

# Characters XML 1.0 cannot hold even escaped (labels come from users).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _case(suite: ET.Element, check: GateCheck, baseline: str, fail_above: float) -> None:
    m, cell = check.metric, check.cell
    case = ET.SubElement(suite, "testcase", name=_text(f"{check.test} {m.label}"),
                         classname=_text(check.config), time="0")
    message = _text(f"{m.label} {fmt_change(cell)} against {baseline}: {check.reason}")
    if check.outcome == REGRESSION:
        failure = ET.SubElement(case, "failure", message=message, type="regression")
        failure.text = _text(f"{check.config}: {format_value(cell.mean, m.unit)} {shown_unit(m.unit)} "
                             f"over {count(cell.n, 'sample')}; --fail-above {fail_above:g} %")
    elif check.outcome == INCONCLUSIVE:
        error = ET.SubElement(case, "error", message=message, type="inconclusive")
        error.text = _text(f"{check.config}: {format_value(cell.mean, m.unit)} {shown_unit(m.unit)} over "
                           f"{count(cell.n, 'sample')}; repeat the runs to judge it against --fail-above {fail_above:g} %")
    elif check.outcome == NOT_JUDGED:
        ET.SubElement(case, "skipped", message=message)


def junit_xml(cmp: Comparison, checks: list[GateCheck], fail_above: float) -> bytes:
    """The gate's checks as a JUnit XML document (UTF-8, with its declaration)."""
    root = ET.Element("testsuites", name=_text(f"iofleet compare against {cmp.baseline}"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for config in (c.name for c in cmp.configs if c.name != cmp.baseline):
        mine = [c for c in checks if c.config == config]
        counts = {"tests": len(mine), "failures": sum(c.outcome == REGRESSION for c in mine),
                  "errors": sum(c.outcome == INCONCLUSIVE for c in mine),
                  "skipped": sum(c.outcome == NOT_JUDGED for c in mine)}
        suite = ET.SubElement(root, "testsuite", name=_text(f"{config} vs {cmp.baseline}"), time="0",
                              **{k: str(v) for k, v in counts.items()})
        props = ET.SubElement(suite, "properties")
        for name, value in (("baseline", cmp.baseline), ("fail_above_pct", f"{fail_above:g}"),
                            ("noise_pct", f"{cmp.noise_pct:g}"), ("match", ",".join(cmp.match))):
            ET.SubElement(props, "property", name=name, value=_text(value))
        for check in mine:
            _case(suite, check, cmp.baseline, fail_above)
        totals = {k: totals[k] + counts[k] for k in totals}
    # The common schema (Jenkins junit-10.xsd) has no `skipped` on testsuites: it stays per suite.
    root.attrib.update(tests=str(totals["tests"]), failures=str(totals["failures"]), errors=str(totals["errors"]),
                       time="0")
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
