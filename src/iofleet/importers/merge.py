"""Several imports as one plan, and a plan as YAML text with its notes."""

from pathlib import Path

import yaml

from ..plan.load import parse_plan
from .common import unique
from .notes import ImportResult, one_line


class _FlowListDumper(yaml.SafeDumper):
    pass


def _represent_list(dumper, data):
    flow = all(isinstance(x, (str, int, float, bool)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_FlowListDumper.add_representer(list, _represent_list)


def plan_yaml(plan: dict, header: list[str] = ()) -> str:
    """A plan as YAML text, with comment lines (notes) on top."""
    lines = [f"# {one_line(h)}" for h in header]
    body = yaml.dump(plan, Dumper=_FlowListDumper, sort_keys=False, width=1000, allow_unicode=False)
    return "\n".join(lines + [body.rstrip("\n")]) + "\n"


def merge_results(results: list[ImportResult], sources: list[str]) -> tuple[dict, list[str]]:
    """One plan from several imports: every workload (a clashing name gets a
    -2, -3 suffix), targets merged; and every note, in order."""
    taken: set[str] = set()
    workloads, targets, notes = [], [], []
    for r in results:
        notes += r.notes
        for t in r.plan.get("targets", []):
            if t not in targets:
                targets.append(t)
        for w in r.plan["workloads"]:
            name = unique(w["name"], taken)
            taken.add(name)
            workloads.append({**w, "name": name})
    bare = [Path(s).name for r, s in zip(results, sources) if r.plan.get("targets", []) != targets]
    if targets and bare:
        notes.append(one_line(f"{', '.join(bare)}: targets belong to the whole plan: its workloads also run "
                               f"on {', '.join(targets)}; give --target DIR to choose"))
    if len(results) == 1:
        plan = dict(results[0].plan)
    else:
        listed = ", ".join(Path(s).name for s in sources)
        plan = {"name": "imported", "description": one_line(f"imported from {listed}")[:500]}
    plan.pop("targets", None)
    plan.pop("workloads", None)
    if targets:
        plan["targets"] = targets
    plan["workloads"] = workloads
    parse_plan(plan, "<merged import>")
    return plan, notes
