"""Result objects of cross_validate, search and nested_cv."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.aggregate import build_cv_results, fold_scores, select_for
from parcv.plan import Plan
from parcv.records import Key, Record
from parcv.summary import ScoreSummary, StabilityRow, selection_stability, summarize_scores

__all__ = ["CVResult", "SearchResult", "NestedResult"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ma.MaskedArray):
        return [
            None if m else _jsonable(v)
            for v, m in zip(value.data, np.ma.getmaskarray(value), strict=True)
        ]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    return repr(value)


def _sorted_records(records: Mapping[Key, Record]) -> list[Record]:
    order = {"fit": 0, "refit": 1, "final": 2}
    return sorted(
        records.values(),
        key=lambda r: (
            order[r.unit.kind],
            -1 if r.unit.outer is None else r.unit.outer,
            r.unit.inner or 0,
            r.unit.candidate,
        ),
    )


class _Exportable:
    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self, path: str | None = None, *, indent: int = 2) -> str:
        """Export as JSON (NaN and infinity become null); write to ``path`` if given."""
        text = json.dumps(_jsonable(self.to_dict()), indent=indent)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        return text


@dataclass(frozen=True)
class CVResult(_Exportable):
    """K-fold cross-validation of one model.

    Attributes
    ----------
    scores : dict of str to ndarray
        The dict ``sklearn.model_selection.cross_validate`` returns
        (``test_score`` or ``test_<metric>``, ``fit_time``, ``score_time``,
        ``train_*`` when asked).
    summaries : dict of str to ScoreSummary
        Mean, std, variance of the mean and standard error per metric.
    records : list of Record
        One record per fold.
    """

    scores: dict[str, NDArray[np.float64]]
    summaries: dict[str, ScoreSummary]
    records: list[Record] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "kind": "cross_validate",
            "scores": self.scores,
            "summaries": self.summaries,
            "records": [r.to_dict() for r in self.records],
        }


@dataclass(frozen=True)
class SearchResult(_Exportable):
    """Architecture A: candidates scored by CV on all data, best refitted.

    Attributes follow ``GridSearchCV``: ``cv_results_``, ``best_index_``,
    ``best_params_``, ``best_score_``, ``best_estimator_`` (``None`` when
    ``refit=False``), ``n_splits_``, plus ``summaries`` (per candidate, per
    metric :class:`ScoreSummary`) and the tidy ``records``.
    """

    cv_results_: dict[str, Any] = field(repr=False)
    best_index_: int
    best_params_: dict[str, Any]
    best_score_: float
    best_estimator_: Any
    n_splits_: int
    refit_metric: str
    summaries: dict[str, list[ScoreSummary]] = field(repr=False)
    records: list[Record] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (the fitted estimator is left out)."""
        return {
            "kind": "search",
            "best_index": self.best_index_,
            "best_params": self.best_params_,
            "best_score": self.best_score_,
            "refit_metric": self.refit_metric,
            "cv_results": self.cv_results_,
            "summaries": self.summaries,
            "records": [r.to_dict() for r in self.records],
        }


@dataclass(frozen=True)
class NestedResult(_Exportable):
    """Nested CV (Architecture C) and, if asked, the all-data search (A).

    Attributes
    ----------
    outer_scores : dict of str to ndarray of shape (n_outer_splits,)
        Score of each outer fold's selected-and-refitted candidate.
    estimate : dict of str to ScoreSummary
        Mean, variance of the mean and standard error of ``outer_scores``:
        the estimate of the whole selection procedure's performance.
    chosen : list of int
        Candidate index selected in each outer fold.
    chosen_params : list of dict
    stability : list of StabilityRow
        How often each candidate was selected over the outer folds.
    inner_cv_results : list of dict
        ``cv_results_`` of the inner search of each outer fold.
    final : SearchResult or None
        The search on all data and its refit: the model to ship.
    records : list of Record
    """

    outer_scores: dict[str, NDArray[np.float64]]
    estimate: dict[str, ScoreSummary]
    chosen: list[int]
    chosen_params: list[dict[str, Any]]
    stability: list[StabilityRow]
    inner_cv_results: list[dict[str, Any]] = field(repr=False)
    final: SearchResult | None
    refit_metric: str
    records: list[Record] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "kind": "nested_cv",
            "refit_metric": self.refit_metric,
            "outer_scores": self.outer_scores,
            "estimate": self.estimate,
            "chosen": self.chosen,
            "chosen_params": self.chosen_params,
            "stability": [vars_of(row) for row in self.stability],
            "inner_cv_results": self.inner_cv_results,
            "final": None if self.final is None else self.final.to_dict(),
            "records": [r.to_dict() for r in self.records],
        }


def vars_of(row: StabilityRow) -> dict[str, Any]:
    """Plain dict of a stability row."""
    return {
        "candidate": row.candidate,
        "label": row.label,
        "count": row.count,
        "frequency": row.frequency,
        "folds": list(row.folds),
    }


def make_cv_result(plan: Plan, records: Mapping[Key, Record]) -> CVResult:
    """Assemble a :class:`CVResult` from the records of a one-candidate plan."""
    folds = [records[("fit", None, i, 0)] for i in range(len(plan.inner_folds[None]))]
    scores: dict[str, NDArray[np.float64]] = {
        "fit_time": np.array([r.fit_time for r in folds]),
        "score_time": np.array([r.score_time for r in folds]),
    }
    for name in plan.scoring.scorers:
        suffix = plan.scoring.suffix(name)
        scores[f"test_{suffix}"] = np.array([r.test_scores[name] for r in folds])
        if plan.return_train_score:
            scores[f"train_{suffix}"] = np.array([r.train_scores[name] for r in folds])
    summaries = {
        name: summarize_scores(scores[f"test_{plan.scoring.suffix(name)}"])
        for name in plan.scoring.scorers
    }
    return CVResult(scores, summaries, _sorted_records(records))


def make_search_result(plan: Plan, records: Mapping[Key, Record]) -> SearchResult:
    """Assemble a :class:`SearchResult` from the all-data records of a plan."""
    cv_results = build_cv_results(plan, records, None)
    best = select_for(plan, records, None)
    metric = plan.scoring.refit
    final = records.get(("final",))
    summaries = {
        name: [summarize_scores(row) for row in fold_scores(plan, records, None, name)]
        for name in plan.scoring.scorers
    }
    return SearchResult(
        cv_results_=cv_results,
        best_index_=best,
        best_params_=dict(plan.candidates[best].params),
        best_score_=float(cv_results[f"mean_test_{plan.scoring.suffix(metric)}"][best]),
        best_estimator_=None if final is None else final.estimator,
        n_splits_=len(plan.inner_folds[None]),
        refit_metric=metric,
        summaries=summaries,
        records=[r for r in _sorted_records(records) if r.unit.outer is None],
    )


def make_nested_result(plan: Plan, records: Mapping[Key, Record]) -> NestedResult:
    """Assemble a :class:`NestedResult` from every record of a nested plan."""
    refits = [records[("refit", o)] for o in plan.refit_outers]
    outer_scores = {
        name: np.array([r.test_scores[name] for r in refits]) for name in plan.scoring.scorers
    }
    chosen = [r.unit.candidate for r in refits]
    labels = [c.label for c in plan.candidates]
    return NestedResult(
        outer_scores=outer_scores,
        estimate={name: summarize_scores(s) for name, s in outer_scores.items()},
        chosen=chosen,
        chosen_params=[dict(plan.candidates[c].params) for c in chosen],
        stability=selection_stability(chosen, labels),
        inner_cv_results=[build_cv_results(plan, records, o) for o in plan.refit_outers],
        final=make_search_result(plan, records) if plan.final else None,
        refit_metric=plan.scoring.refit,
        records=_sorted_records(records),
    )
