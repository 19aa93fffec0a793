"""The `compare` study: resolve run ids and labels from the store into
configurations, then compare them (iofleet.analysis.compare)."""

from ..analysis.compare import (DEFAULT_MATCH, DEFAULT_NOISE_PCT, DEFAULT_RESAMPLES, DEFAULT_SEED, Comparison,
                                Config, compare)
from ..errors import IofleetError, StoreError
from ..results.store import RunFilter, Store


def resolve(store: Store, arg: str, what: str = "CONFIG") -> Config:
    """A run id (an integer: that run) or a label (every run with it)."""
    text = str(arg).strip()
    if text.isdigit():
        try:
            run = store.get_run(int(text))
        except StoreError:
            raise IofleetError(f"{what} {text}: no run {text} in {store.path}; "
                               f"see `iofleet results list` for run ids and labels") from None
        return Config(f"run {text}", [run])
    ids = sorted(r.id for r in store.list_runs(RunFilter(label=text)) if r.label == text)
    if not ids:
        raise IofleetError(f"{what} {text!r}: no run has this label or id in {store.path}; "
                           f"see `iofleet results list`, or label runs with `iofleet run PLAN --label NAME`")
    return Config(text, [store.get_run(i) for i in ids])


def load_configs(store: Store, args: list[str], baseline: str | None) -> tuple[list[Config], str]:
    """The configurations named on the command line and the baseline's name;
    a baseline that is not among them is added as one; None: the first."""
    configs = [resolve(store, a) for a in args]
    if baseline is None and len(configs) < 2:
        raise IofleetError("compare needs at least two configurations: give another run or label")
    base = configs[0] if baseline is None else resolve(store, baseline, "--baseline")
    names = [c.name for c in configs]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise IofleetError(f"CONFIG {dup}: given twice; name each configuration once")
    if base.name not in names:
        configs.insert(0, base)
    owner: dict[int, str] = {}
    for c in configs:
        for r in c.runs:
            if owner.setdefault(r.id, c.name) != c.name:
                raise IofleetError(f"CONFIG {owner[r.id]} and {c.name} share run {r.id}; "
                                   f"give each run to one configuration only")
    return configs, base.name


def run_compare(store: Store, args: list[str], baseline: str | None, match: tuple[str, ...] = DEFAULT_MATCH,
                noise_pct: float = DEFAULT_NOISE_PCT, resamples: int = DEFAULT_RESAMPLES,
                seed: int = DEFAULT_SEED) -> Comparison:
    """Compare the configurations `args` against `baseline` (None: the first of them)."""
    configs, base = load_configs(store, args, baseline)
    cmp = compare(configs, base, noise_pct=noise_pct, match=match, resamples=resamples, seed=seed)
    cmp.baseline_named = baseline is not None
    return cmp
