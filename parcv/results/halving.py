"""Searches in rounds joined into one result: halving's rungs, Hyperband's brackets, nested CV."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parcv.plan.halving import HalvingSchedule
from parcv.plan.records import Record
from parcv.plan.space import Candidate
from parcv.results.aggregate import FailureSummary, param_columns
from parcv.results.labels import readable_failures
from parcv.results.objects import CVResult, NestedResult, SearchResult
from parcv.results.summary import rank_means, selection_stability, summarize_scores

__all__ = [
    "HalvingResult",
    "HyperbandResult",
    "NestedHalvingResult",
    "NestedRoundsResult",
    "make_halving_result",
    "make_hyperband_result",
    "make_nested_rounds_result",
]


@dataclass(frozen=True, repr=False)
class _JoinedSearch(SearchResult):
    """Searches joined into one ``cv_results_``: paired tests run within one of them."""

    def _where(self, row: int) -> str:
        """Where a row of ``cv_results_`` was scored: its bracket, rung and resource."""
        bracket = self.cv_results_.get("bracket")
        where = "" if bracket is None else f"bracket {bracket[row]} "
        return (
            f"{where}rung {self.cv_results_['iter'][row]} ({self.cv_results_['n_resources'][row]})"
        )

    def _lines(self, limit: int | None) -> list[str]:
        suffix = self.refit_metric if self.multimetric else "score"
        ranks = self.cv_results_[f"rank_test_{suffix}"]
        order = sorted(range(len(self.candidates)), key=lambda c: (ranks[c], c))
        lines = [
            f"{type(self).__name__}: {len(self.candidates)} (rung, candidate) rows x "
            f"{self.n_splits_} folds, selected {self.readable_label(self.best_index_)} "
            f"({self.refit_metric} {self.best_score_:.6g}, {self._where(self.best_index_)})",
            f"rank  mean ± se ({self.refit_metric})  where (resource)  candidate",
        ]
        for c in order[:limit]:
            s = self.summaries[self.refit_metric][c]
            lines.append(f"{ranks[c]:>4}  {s.mean:.6g} ± {s.se:.3g}  {self._where(c)}  "
                         f"{self.readable_label(c)}")  # fmt: skip
        if limit is not None and len(order) > limit:
            lines.append(f"... {len(order) - limit} more rows: to_text() or to_frame()")
        return lines

    def __repr__(self) -> str:
        """A few lines: the selection and the best-ranked rows, with their rung."""
        return "\n".join(self._lines(5))

    def to_text(self) -> str:
        """Every row by rank, with its rung; the failures."""
        failures = readable_failures(self.failures, self.readable_labels)
        return "\n".join([*self._lines(None), "", *self.notes, failures.text])

    def _across_rungs(self, what: str) -> ValueError:
        return ValueError(
            f"{what} compares candidates scored on the same folds; the rungs of a halving "
            "search (and the brackets of a Hyperband search) use different rows or "
            f"resources. Compare within one rung: e.g. result.rungs[-1].{what}(...) (of a "
            f"Hyperband result: result.brackets[b].rungs[-1].{what}(...))."
        )

    def compare(self, *args: Any, **kwargs: Any) -> Any:
        """Refused across rungs: use ``rungs[i].compare``."""
        raise self._across_rungs("compare")

    def compare_all(self, *args: Any, **kwargs: Any) -> Any:
        """Refused across rungs: use ``rungs[i].compare_all``."""
        raise self._across_rungs("compare_all")

    def best_vs_rest(self, *args: Any, **kwargs: Any) -> Any:
        """Refused across rungs: use ``rungs[i].best_vs_rest``."""
        raise self._across_rungs("best_vs_rest")

    def cochran_q(self, *args: Any, **kwargs: Any) -> Any:
        """Refused across rungs: use ``rungs[i].cochran_q``."""
        raise self._across_rungs("cochran_q")

    def out_of_fold(self, *args: Any, **kwargs: Any) -> Any:
        """Refused across rungs: use ``rungs[i].out_of_fold``."""
        raise self._across_rungs("out_of_fold")

    def _comparison_table(self) -> dict[str, Any]:
        return {"rows": [], "note": "halving: candidates are compared within a rung (rungs[i])"}


@dataclass(frozen=True, repr=False)
class HalvingResult(_JoinedSearch):
    """A successive-halving search: every rung's candidates, the last rung's winner.

    A :class:`SearchResult` whose ``cv_results_`` holds one row per
    (rung, candidate), rung after rung, with scikit-learn's ``iter`` and
    ``n_resources`` columns and ranks over every row, as
    ``HalvingGridSearchCV.cv_results_``; ``best_index_``, ``best_params_``
    and ``best_score_`` are the best of the last rung's candidates, and
    ``best_estimator_`` that candidate refitted on all data. ``rungs`` holds
    each rung's own :class:`SearchResult` (its records and folds);
    ``n_resources_``, ``n_candidates_``, ``n_remaining_candidates_``,
    ``min_resources_``, ``max_resources_``, ``n_iterations_``,
    ``n_possible_iterations_`` and ``n_required_iterations_`` are
    scikit-learn's attributes. The paired tests between candidates
    (``compare`` and kin) run within one rung: ``result.rungs[i].compare(...)``.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> from parcv import Halving, search
    >>> X, y = make_regression(n_samples=90, n_features=3, noise=5.0, random_state=0)
    >>> r = search(Ridge(), {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]}, X, y, cv=3,
    ...            halving=Halving(random_state=0), backend="serial")
    >>> r.n_candidates_, r.n_resources_, r.cv_results_["iter"].tolist()
    ([6, 2], [30, 90], [0, 0, 0, 0, 0, 0, 1, 1])
    >>> r.best_params_
    {'alpha': 0.1}
    """

    rungs: tuple[SearchResult, ...] = field(default=(), repr=False)
    resource: str = "n_samples"
    n_resources_: list[int] = field(default_factory=list)
    n_candidates_: list[int] = field(default_factory=list)
    n_remaining_candidates_: int = 0
    min_resources_: int = 0
    max_resources_: int = 0
    n_iterations_: int = 0
    n_possible_iterations_: int = 0
    n_required_iterations_: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: the search's, with the rungs' schedule."""
        return {
            **super().to_dict(),
            "kind": "halving",
            "resource": self.resource,
            "n_resources": list(self.n_resources_),
            "n_candidates": list(self.n_candidates_),
            "n_iterations": self.n_iterations_,
        }


def _concatenate(values: list[Any]) -> Any:
    if isinstance(values[0], list):
        return [v for part in values for v in part]
    return np.concatenate([np.asarray(v) for v in values])


def _joined_cv_results(tables: Sequence[dict[str, Any]], leading: dict[str, Any]) -> dict[str, Any]:
    """Several ``cv_results_`` as one, in scikit-learn's layout, ranked over every row.

    ``leading`` columns (``iter``, ``n_resources``, ``bracket``) come first, as
    scikit-learn puts its extra columns.
    """
    results: dict[str, Any] = dict(leading)
    params = [p for table in tables for p in table["params"]]
    for key in tables[0]:
        if key.startswith("param_"):
            continue
        if key == "params":
            results.update(param_columns(params))
            results["params"] = params
        elif key.startswith("rank_"):
            results[key] = rank_means(results["mean_" + key.removeprefix("rank_")])
        else:
            results[key] = _concatenate([table[key] for table in tables])
    return results


def _joined_fields(
    parts: Sequence[SearchResult], cv_results: dict[str, Any], best: int, chosen: SearchResult
) -> dict[str, Any]:
    """The SearchResult fields of searches joined in order; ``chosen`` selected ``best``."""
    params = cv_results["params"]
    return dict(
        cv_results_=cv_results,
        best_index_=best,
        best_params_=dict(params[best]),
        best_score_=chosen.best_score_,
        final_model=chosen.final_model,
        n_splits_=chosen.n_splits_,
        refit_metric=chosen.refit_metric,
        summaries={m: [s for r in parts for s in r.summaries[m]] for m in chosen.summaries},
        records=[record for r in parts for record in r.records],
        failures=_joined_failures(parts),
        warning_counts=_joined_warnings(parts),
        candidates=tuple(Candidate(i, dict(p)) for i, p in enumerate(params)),
        metrics=chosen.metrics,
        multimetric=chosen.multimetric,
        fast_cv=any(r.fast_cv for r in parts),
        splits=chosen.splits,
    )


def _joined_failures(rungs: Sequence[SearchResult]) -> FailureSummary:
    by_candidate: Counter[str] = Counter()
    for r in rungs:
        by_candidate.update(r.failures.by_candidate)
    first = next((r.failures.first_error for r in rungs if r.failures.first_error), None)
    return FailureSummary(
        sum(r.failures.n_failed for r in rungs),
        sum(r.failures.n_total for r in rungs),
        dict(by_candidate),
        first,
    )


def _joined_warnings(rungs: Sequence[SearchResult]) -> dict[str, dict[str, int]]:
    joined: dict[str, Counter[str]] = {}
    for r in rungs:
        for label, counts in r.warning_counts.items():
            joined.setdefault(label, Counter()).update(counts)
    return {label: dict(counts) for label, counts in joined.items()}


def make_halving_result(
    rungs: Sequence[SearchResult], schedule: HalvingSchedule, resource: str
) -> HalvingResult:
    """Join the rungs' search results into one :class:`HalvingResult`.

    Parameters
    ----------
    rungs : sequence of SearchResult
        One per rung, in order; the last selects (and refits) the winner.
    schedule : HalvingSchedule
    resource : str

    Returns
    -------
    HalvingResult
    """
    last = rungs[-1]
    offset = sum(len(r.candidates) for r in rungs[:-1])
    counts = [len(r.candidates) for r in rungs]
    leading = {
        "iter": np.repeat(np.arange(len(rungs)), counts),
        "n_resources": np.repeat(np.asarray(schedule.n_resources[: len(rungs)]), counts),
    }
    cv_results = _joined_cv_results([r.cv_results_ for r in rungs], leading)
    return HalvingResult(
        **_joined_fields(rungs, cv_results, offset + last.best_index_, last),
        rungs=tuple(rungs),
        resource=resource,
        n_resources_=list(schedule.n_resources[: len(rungs)]),
        n_candidates_=list(schedule.n_candidates[: len(rungs)]),
        n_remaining_candidates_=schedule.n_remaining_candidates,
        min_resources_=schedule.min_resources,
        max_resources_=schedule.max_resources,
        n_iterations_=schedule.n_iterations,
        n_possible_iterations_=schedule.n_possible_iterations,
        n_required_iterations_=schedule.n_required_iterations,
    )


@dataclass(frozen=True, repr=False)
class HyperbandResult(_JoinedSearch):
    """A Hyperband search: every bracket's halving search, the best bracket's winner.

    A :class:`SearchResult` whose ``cv_results_`` holds one row per
    (bracket, rung, candidate), bracket after bracket, with the columns
    ``bracket`` (dask-ml's bracket id), ``iter`` and ``n_resources``, ranked
    over every row; ``best_*`` are those of the bracket whose last-rung
    winner scores best (the first on ties), whose refitted model is
    ``best_estimator_``. ``brackets`` holds each bracket's
    :class:`HalvingResult`; ``metadata_`` says, as dask-ml's, how many
    models (candidates) and resources (iterations summed over the
    candidates of every rung, per CV fold) each bracket used.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import SGDClassifier
    >>> from parcv import Hyperband, RandomSpace, search
    >>> X, y = make_classification(n_samples=90, random_state=0)
    >>> space = RandomSpace({"alpha": loguniform(1e-4, 1e-1)}, random_state=0)
    >>> r = search(SGDClassifier(tol=None, random_state=0), space, X, y, cv=3,
    ...            halving=Hyperband("max_iter", 9), backend="serial")
    >>> [b["n_models"] for b in r.metadata_["brackets"]], r.best_params_["max_iter"]
    ([9, 5, 3], 9)
    """

    brackets: tuple[HalvingResult, ...] = field(default=(), repr=False)
    best_bracket_: int = 0
    resource: str = ""
    max_resources_: int = 0
    metadata_: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: the search's, with the brackets' sizes."""
        return {**super().to_dict(), "kind": "hyperband", "metadata": self.metadata_}


def make_hyperband_result(
    brackets: Sequence[HalvingResult], ids: Sequence[int], max_resources: int
) -> HyperbandResult:
    """Join the brackets' halving searches; the best last-rung winner is the best.

    Parameters
    ----------
    brackets : sequence of HalvingResult
        In the order they ran.
    ids : sequence of int
        Each bracket's id (dask-ml's ``s``).
    max_resources : int

    Returns
    -------
    HyperbandResult
    """
    scores = np.array([b.best_score_ for b in brackets], dtype=np.float64)
    chosen = 0 if np.isnan(scores).all() else int(np.nanargmax(scores))
    offset = sum(len(b.candidates) for b in brackets[:chosen])
    counts = [len(b.candidates) for b in brackets]
    leading = {"bracket": np.repeat(np.asarray(ids), counts)}
    cv_results = _joined_cv_results([b.cv_results_ for b in brackets], leading)
    best = offset + brackets[chosen].best_index_
    per_bracket = [
        {
            "bracket": int(s),
            "n_models": b.n_candidates_[0],
            "resources": int(np.dot(b.n_candidates_, b.n_resources_)),
            "n_resources": list(b.n_resources_),
            "n_candidates": list(b.n_candidates_),
        }
        for s, b in zip(ids, brackets, strict=True)
    ]
    return HyperbandResult(
        **_joined_fields(brackets, cv_results, best, brackets[chosen]),
        brackets=tuple(brackets),
        best_bracket_=int(ids[chosen]),
        resource=brackets[0].resource,
        max_resources_=max_resources,
        metadata_={
            "n_models": sum(m["n_models"] for m in per_bracket),
            "resources": sum(m["resources"] for m in per_bracket),
            "brackets": per_bracket,
        },
    )


@dataclass(frozen=True, repr=False)
class NestedRoundsResult(NestedResult):
    """Nested CV of a search in rounds (halving, Hyperband, a sampler): a :class:`NestedResult`.

    For each outer fold, the search (its strategy's rounds) on the outer-train
    rows chose ``chosen_params[o]`` (``inner[o]``, the whole search's result),
    which was fitted on those rows and scored on the outer-test rows
    (``outer[o]``, one unit each); ``outer_scores`` holds those scores per
    metric, ``estimate`` their summary, and the comparisons and report read it
    as any nested CV's. The outer folds' searches have no common table of
    candidates: ``chosen[o]`` numbers the distinct winners (``stability``'s
    candidates), and ``inner[o].best_index_`` is the winner's row in its own
    search. ``final`` is the search on all data (with ``refit``): the model to ship.
    ``records`` keep each outer fold's refit as ``("refit", o)`` (``compare`` reads
    their sizes); with ``interval="ncv"``, ``interval`` is that of the whole
    procedure, each of its selections one more search of the strategy.
    ``NestedHalvingResult`` is another name of this class (its name before
    samplers and other strategies ran in rounds).

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> from parcv import Halving, nested_cv
    >>> X, y = make_regression(n_samples=90, n_features=3, noise=5.0, random_state=0)
    >>> r = nested_cv(Ridge(), {"alpha": [0.01, 1.0, 100.0]}, X, y, outer=3, inner=3,
    ...               halving=Halving(random_state=0), backend="serial")
    >>> r.outer_scores["score"].shape, r.chosen_params[0]
    ((3,), {'alpha': 0.01})
    """

    inner: tuple[SearchResult, ...] = field(default=(), repr=False)
    outer: tuple[CVResult, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: the nested CV's, with each outer fold's search."""
        return {**super().to_dict(), "kind": "nested_rounds",
                "inner": [r.to_dict() for r in self.inner]}  # fmt: skip


# Its name until the strategies (a sampler's trials) joined halving: kept for the code that uses it.
NestedHalvingResult = NestedRoundsResult


def make_nested_rounds_result(
    inner: Sequence[SearchResult],
    outer: Sequence[CVResult],
    final: SearchResult | None,
    outer_folds_digest: str = "",
    *,
    refits: Sequence[Record] | None = None,
) -> NestedRoundsResult:
    """Join each outer fold's search in rounds and outer score into one result.

    Parameters
    ----------
    inner : sequence of SearchResult
        The search on each outer-train part (a HalvingResult, HyperbandResult ...).
    outer : sequence of CVResult
        The chosen candidate fitted on each outer-train part, scored on its test part.
    final : SearchResult or None
        The search on all data.
    outer_folds_digest : str, default=""
        Token of the outer folds (two results are compared fold by fold only when equal).
    refits : sequence of Record or None, default=None
        The outer folds' refits as the run stored them, ``("refit", o)`` units
        as a grid nested CV's (their fold sizes are what ``compare`` reads);
        None: the records of ``outer``.

    Returns
    -------
    NestedRoundsResult
    """
    names = [k.removeprefix("test_") for k in outer[0].scores if k.startswith("test_")]
    scores = {name: np.array([float(r.scores["test_" + name][0]) for r in outer]) for name in names}
    parts = [*inner, *([] if final is None else [final])]
    scored = [r for o in outer for r in o.records] if refits is None else list(refits)
    records = [r for part in parts for r in part.records] + scored
    labels = [r.candidates[r.best_index_].label for r in inner]
    distinct = list(dict.fromkeys(labels))  # one candidate however many folds chose it
    chosen = [distinct.index(x) for x in labels]
    return NestedRoundsResult(
        outer_scores=scores,
        estimate={name: summarize_scores(values) for name, values in scores.items()},
        chosen=chosen,
        chosen_params=[dict(r.best_params_) for r in inner],
        stability=selection_stability(chosen, distinct),
        inner_cv_results=[r.cv_results_ for r in inner],
        final=final,
        refit_metric=inner[0].refit_metric,
        records=records,
        failures=_joined_failures(parts),
        warning_counts=_joined_warnings(parts),
        outer_folds_digest=outer_folds_digest,
        inner=tuple(inner),
        outer=tuple(outer),
    )
