"""Compare: configurations (run ids or labels) against a baseline, through
the same study as `iofleet compare` (iofleet.studies.compare); the page shows
the comparison page of `iofleet compare --html` inside the web layout."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from ..analysis.compare import DEFAULT_MATCH, DEFAULT_NOISE_PCT, Comparison, NothingMatched, compare
from ..errors import IofleetError, StoreDamagedError
from ..report.compare import comparison_json
from ..report.html import compare_context
from ..results.model import ListedRun
from ..results.store import Store
from ..studies.compare import load_configs
from .render import render
from .render import open_store

router = APIRouter()

Configs = Annotated[list[str], Query(description="Run ids or labels (a label = every run with it); two or more.")]
Baseline = Annotated[str, Query(description="Run id or label to compare against (default: the first of `runs`; "
                                            "added if not among them).")]
Noise = Annotated[float, Query(ge=0, lt=100, description="Differences whose 95 % interval reaches inside "
                                                         "±noise % are within noise.")]
Match = Annotated[str, Query(description="Test parameters that must be equal for tests to be compared, "
                                         "comma-separated.")]


def comparison(store: Store, runs: list[str], baseline: str, noise: float, match: str) -> Comparison:
    """No baseline given: the oldest configuration picked (its first run's id
    the lowest), as a before-and-after reads, whatever order the page sent."""
    configs = [r.strip() for r in runs if r.strip()]
    if not configs:
        raise IofleetError("compare needs at least two configurations: pick two or more runs or labels")
    keys = tuple(k.strip() for k in match.split(",") if k.strip())
    named = baseline.strip() or None
    loaded, base = load_configs(store, configs, named)
    if named is None:
        base = min(loaded, key=lambda c: min(r.id for r in c.runs)).name
    cmp = compare(loaded, base, noise_pct=noise, match=keys)
    cmp.baseline_named, cmp.baseline_note = named is not None, "the oldest picked"
    return cmp


@router.get("/api/compare", tags=["compare"])
def compare_api(request: Request, runs: Configs = [], baseline: Baseline = "", noise: Noise = DEFAULT_NOISE_PCT,
                match: Match = ",".join(DEFAULT_MATCH)):
    """Compare configurations test by test, as `iofleet compare --format json`: per matched test and
    metric the % change against the baseline, 95 % bootstrap interval, Welch p-value and verdict
    (≥ 3 repeats per side), rankings and winners. An unknown run or label is a 400 naming it."""
    with open_store(request) as store:
        cmp = comparison(store, runs, baseline, noise, match)
    return Response(comparison_json(cmp), media_type="application/json")


def pick_choices(store: Store) -> tuple[list[ListedRun], list[str]]:
    """The store's runs (newest first) and its labels, to pick configurations from."""
    runs = store.list_runs()
    labels = sorted({r.label for r in runs if r.label})
    return runs, labels


@router.get("/compare", include_in_schema=False)
def compare_page(request: Request, runs: Configs = [], baseline: str = "", noise: Noise = DEFAULT_NOISE_PCT,
                 match: str = ",".join(DEFAULT_MATCH)):
    context, error = {"title": "Compare"}, None
    with open_store(request) as store:
        choices, labels = pick_choices(store)
        if runs:
            try:
                context = compare_context(comparison(store, runs, baseline, noise, match))
            except StoreDamagedError:
                raise  # a page of its own, not a message under the form
            except NothingMatched as exc:
                error = str(exc)
                match = ",".join(exc.suggestion or ()) or match  # one click on Compare pairs the tests
            except IofleetError as exc:
                error = str(exc)
    pick = dict(choices=choices, labels=labels, picked=set(runs), baseline=baseline, noise=noise, match=match)
    return render(request, "compare_page.html.j2", pick=pick, charts=True, error=error, compared="cmp" in context, **context)
