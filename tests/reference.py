"""A naive nested loop over scikit-learn: the reference every backend must match."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import get_scorer
from sklearn.model_selection import ParameterGrid, check_cv


def inner_search(
    estimator: Any,
    grid: dict[str, list[Any]],
    X: Any,
    y: Any,
    inner: int,
    scoring: str,
    classifier: bool,
) -> tuple[int, np.ndarray]:
    """Score every candidate by inner CV; return (best index, score matrix)."""
    scorer = get_scorer(scoring)
    candidates = list(ParameterGrid(grid))
    splits = list(check_cv(inner, y, classifier=classifier).split(X, y))
    scores = np.empty((len(candidates), len(splits)))
    for c, params in enumerate(candidates):
        for i, (tr, te) in enumerate(splits):
            model = clone(estimator).set_params(**params).fit(X[tr], y[tr])
            scores[c, i] = scorer(model, X[te], y[te])
    means = scores.mean(axis=1)
    return int(np.flatnonzero(means == means.max())[0]), scores


def nested_reference(
    estimator: Any,
    grid: dict[str, list[Any]],
    X: Any,
    y: Any,
    *,
    outer: int,
    inner: int,
    scoring: str,
    classifier: bool,
) -> dict[str, Any]:
    """Outer scores, choices and the all-data selection, by plain loops."""
    scorer = get_scorer(scoring)
    candidates = list(ParameterGrid(grid))
    outer_scores, chosen = [], []
    for tr, te in check_cv(outer, y, classifier=classifier).split(X, y):
        best, _ = inner_search(estimator, grid, X[tr], y[tr], inner, scoring, classifier)
        model = clone(estimator).set_params(**candidates[best]).fit(X[tr], y[tr])
        outer_scores.append(scorer(model, X[te], y[te]))
        chosen.append(best)
    best_all, scores_all = inner_search(estimator, grid, X, y, inner, scoring, classifier)
    return {
        "outer_scores": np.array(outer_scores),
        "chosen": chosen,
        "final": best_all,
        "final_scores": scores_all,
    }
