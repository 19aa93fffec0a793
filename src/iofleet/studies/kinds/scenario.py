"""scenario: a load at a fixed rate while hosts, links or devices fail (studies/scenario.py)."""

from ..study import Launch, Study, TextField, Where


class ScenarioStudy(Study):
    name = "scenario"
    order = 50
    after = "curve"
    short_help = "Run a load at a fixed rate while hosts, links or devices fail."
    title = "scenario: faults under a fixed load"
    text = TextField(
        label="Scenario",
        placeholder="name: slow-disk&#10;load: {bs: 4k, read_pct: 0, iodepth: 4, rate_iops: 2000, size: 1g, "
                    "runtime: 2m}&#10;events:&#10;  - {at: 30s, fault: device-slow, iops: 200, for: 30s}",
        note="The scenario file's YAML (docs/scenarios.md). Scenarios that run commands start only from the "
             "terminal (<code>iofleet scenario FILE --yes</code>).",
        missing="give the scenario itself (`yaml`): name, load and events")

    def rows(self) -> dict:
        return {}  # its file says what it runs

    def launch(self, where: Where, settings, text=None, data_dir=None) -> Launch:
        from ...errors import IofleetError
        from ...plan.load import yaml_data
        from ...plan.scenario import parse_scenario
        from ...units import escaped
        from ..scenario import check_scenario, clear_left_faults, run_scenario
        from ..watch import shown
        source, targets, hosts = "scenario", where.targets or [], where.hosts
        scenario = parse_scenario(yaml_data(text, source), source)
        if bool(targets) == bool(hosts):
            raise IofleetError("give where the scenario runs: targets (this host) or the fleet")
        commands = [t for _, _, t in scenario.commands] + shown(scenario.watch)
        if commands:  # the terminal shows them and asks for --yes; a page gets no such say
            raise IofleetError(escaped(f"the scenario runs commands on hosts as root ({'; '.join(commands)}): the "
                                       f"web UI does not run commands; check them and run `iofleet scenario FILE "
                                       f"--yes`"))
        faults = check_scenario(scenario, source, hosts, str(targets[0].resolve()) if targets else None, yes=False)
        preview = scenario.plan(source, [str(t) for t in targets])

        def go(store, observer, stop):
            for line in clear_left_faults(hosts):  # a killed scenario's, undone here (docs/scenarios.md)
                observer.warning(line)
            return run_scenario(scenario, text, source, store, faults, targets=targets, hosts=hosts,
                                label=where.label, observer=observer, stop=stop).run.status
        about = f"scenario {scenario.name}: a load with {len(scenario.events)} events"
        return Launch(self.name, scenario.name, where.label, hosts, preview, go, about, text)
