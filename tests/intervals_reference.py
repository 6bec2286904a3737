"""Reference driver: the fits of issue 23's intervals done directly with scikit-learn.

parcv will run the same fits as units of its task graph; for the same plan (fold ids,
bootstrap seed) its intervals must equal the ones computed here. Every fit is
``clone(estimator).fit(X[train], y[train])`` followed by a per-sample loss on the test rows.

Examples
--------
>>> from sklearn.linear_model import LinearRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(40, 3)); y = X @ [1.0, 0.0, -1.0] + rng.normal(size=40)
>>> iv = ncv_reference(LinearRegression(), X, y, n_folds=4, n_repetitions=2, random_state=0)
>>> iv.method, iv.n_fits, iv.naive.n_fits
('ncv', 20, 4)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils import _safe_indexing

from parcv.stats.intervals import (
    CVInterval,
    NestedCVLosses,
    RandomState,
    bbc_cv,
    ncv_interval,
    plan_nested_cv,
)

__all__ = [
    "NestedSearchResult",
    "SelectionInterval",
    "accuracy_per_sample",
    "bbc_reference",
    "nested_cv_losses",
    "nested_search_reference",
    "selection_interval_reference",
    "ncv_reference",
    "oof_values",
    "squared_error",
    "zero_one_loss",
]

FloatArray = NDArray[np.float64]
PerSample = Callable[[Any, Any], ArrayLike]


def squared_error(y_true: ArrayLike, y_pred: ArrayLike) -> FloatArray:
    """Return the per-sample squared error ``(y - y_hat)^2``."""
    diff = np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64)
    return diff**2


def zero_one_loss(y_true: ArrayLike, y_pred: ArrayLike) -> FloatArray:
    """Return the per-sample misclassification indicator ``y != y_hat`` as floats."""
    return np.asarray(np.not_equal(np.asarray(y_true), np.asarray(y_pred)), dtype=np.float64)


def accuracy_per_sample(y_true: ArrayLike, y_pred: ArrayLike) -> FloatArray:
    """Return the per-sample correctness ``y == y_hat`` as floats (a score)."""
    return np.asarray(np.equal(np.asarray(y_true), np.asarray(y_pred)), dtype=np.float64)


def _take(data: Any, idx: NDArray[np.intp]) -> Any:
    """Return rows ``idx`` of an array, DataFrame or list (numpy fast path: fits are tiny)."""
    return data[idx] if isinstance(data, np.ndarray) else _safe_indexing(data, idx)


def _fit_and_score(
    estimator: Any,
    X: Any,
    y: Any,
    train: NDArray[np.intp],
    test: NDArray[np.intp],
    per_sample: PerSample,
) -> FloatArray:
    """Fit a clone on ``train``; return its per-sample loss on ``test`` (in test order)."""
    model = clone(estimator).fit(_take(X, train), _take(y, train))
    values = np.asarray(per_sample(_take(y, test), model.predict(_take(X, test))), dtype=float)
    if values.shape != (test.size,):
        raise ValueError(
            f"per-sample loss {per_sample!r} must return one value per test sample, shape "
            f"({test.size},); got shape {values.shape}. These intervals need per-sample "
            "losses (squared error, 0-1); a fold-level metric (ROC AUC, R^2) has no "
            "per-sample form, so the interval is not available for it."
        )
    return values


def nested_cv_losses(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    loss: PerSample = squared_error,
    n_folds: int = 10,
    n_repetitions: int = 50,
    random_state: RandomState = None,
) -> NestedCVLosses:
    """Run every fit of :func:`intervals.plan_nested_cv` and return their losses.

    Fits ``n_repetitions * n_folds * (n_folds + 1) / 2`` clones of ``estimator``.
    """
    plan = plan_nested_cv(len(y), n_folds, n_repetitions, random_state)
    unit_losses = {
        unit: _fit_and_score(
            estimator, X, y, plan.train_indices(unit), plan.test_indices(unit), loss
        )
        for unit in plan.units
    }
    return plan.assemble(unit_losses)


def ncv_reference(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    loss: PerSample = squared_error,
    confidence: float = 0.9,
    n_folds: int = 10,
    n_repetitions: int = 50,
    random_state: RandomState = None,
    bias_correction: bool = True,
) -> CVInterval:
    """Return the BHT nested-CV interval of ``estimator``'s error ``Err_XY`` on (X, y)."""
    losses = nested_cv_losses(
        estimator,
        X,
        y,
        loss=loss,
        n_folds=n_folds,
        n_repetitions=n_repetitions,
        random_state=random_state,
    )
    return ncv_interval(losses, confidence, bias_correction=bias_correction)


def oof_values(
    candidates: Sequence[Any],
    X: Any,
    y: Any,
    *,
    per_sample: PerSample,
    n_folds: int = 10,
    random_state: int | None = None,
) -> tuple[FloatArray, NDArray[np.intp]]:
    """Return out-of-fold per-sample values (n_samples, n_candidates) and the fold ids.

    One ``KFold(n_folds, shuffle=True)`` split shared by every candidate:
    ``n_candidates * n_folds`` fits -- the cost of the grid search itself.
    """
    n = len(y)
    values = np.empty((n, len(candidates)))
    fold_ids = np.empty(n, dtype=np.intp)
    splits = KFold(n_folds, shuffle=True, random_state=random_state).split(np.zeros((n, 1)))
    for f, (train, test) in enumerate(splits):
        fold_ids[test] = f
        for c, est in enumerate(candidates):
            values[test, c] = _fit_and_score(est, X, y, train, test, per_sample)
    return values, fold_ids


def bbc_reference(
    candidates: Sequence[Any],
    X: Any,
    y: Any,
    *,
    per_sample: PerSample,
    greater_is_better: bool,
    n_folds: int = 10,
    n_bootstrap: int = 1000,
    confidence: float = 0.9,
    random_state: int | None = None,
) -> CVInterval:
    """Return BBC-CV of a search over ``candidates`` (no fits beyond the search's own)."""
    values, fold_ids = oof_values(
        candidates, X, y, per_sample=per_sample, n_folds=n_folds, random_state=random_state
    )
    return bbc_cv(
        values,
        greater_is_better=greater_is_better,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        random_state=random_state,
        fold_ids=fold_ids,
    )


@dataclass(frozen=True)
class NestedSearchResult:
    """Nested CV of a search: pooled outer-test performance and its cost in fits."""

    estimate: float
    n_fits: int
    chosen: tuple[int, ...]


def nested_search_reference(
    candidates: Sequence[Any],
    X: Any,
    y: Any,
    *,
    per_sample: PerSample,
    greater_is_better: bool,
    outer_folds: int = 5,
    inner_folds: int = 5,
    random_state: int | None = None,
) -> NestedSearchResult:
    """Return nested CV of the search: inner CV picks, outer fold scores the refit pick.

    Costs ``outer_folds * (n_candidates * inner_folds + 1)`` fits.
    """
    n = len(y)
    sign = 1.0 if greater_is_better else -1.0
    outer = KFold(outer_folds, shuffle=True, random_state=random_state)
    total, fits, chosen = 0.0, 0, []
    for train, test in outer.split(np.zeros((n, 1))):
        X_tr, y_tr = _take(X, train), _take(y, train)
        inner, _ = oof_values(
            candidates,
            X_tr,
            y_tr,
            per_sample=per_sample,
            n_folds=inner_folds,
            random_state=random_state,
        )
        best = int(np.argmax(sign * inner.mean(axis=0)))
        total += float(_fit_and_score(candidates[best], X, y, train, test, per_sample).sum())
        fits += len(candidates) * inner_folds + 1
        chosen.append(best)
    return NestedSearchResult(total / n, fits, tuple(chosen))


@dataclass(frozen=True)
class SelectionInterval:
    """The NCV interval of a select-then-refit procedure, and the fits it took."""

    interval: CVInterval
    n_fits: int
    chosen: tuple[dict[str, Any], ...]


def selection_interval_reference(
    estimator: Any,
    grid: Any,
    X: Any,
    y: Any,
    *,
    inner: Any,
    scoring: str,
    loss: PerSample,
    confidence: float = 0.9,
    n_folds: int = 5,
    n_repetitions: int = 2,
    random_state: RandomState = None,
) -> SelectionInterval:
    """Return the BHT nested-CV interval of "GridSearchCV, then its refit" on (X, y).

    The "model" of Bates, Hastie & Tibshirani's Algorithm 1 is the whole search: on
    every (train, test) pair of :func:`intervals.plan_nested_cv` a fresh
    ``GridSearchCV(estimator, grid, cv=inner, scoring=scoring)`` is fitted on the train
    rows (inner CV, select, refit), and its refitted winner's per-sample losses on the
    test rows are kept. A plain loop: no parcv engine, plan or result is involved.
    """
    plan = plan_nested_cv(len(y), n_folds, n_repetitions, random_state)
    unit_losses, n_fits, chosen = {}, 0, []
    for unit in plan.units:
        train, test = plan.train_indices(unit), plan.test_indices(unit)
        search = GridSearchCV(clone(estimator), grid, cv=inner, scoring=scoring)
        search.fit(_take(X, train), _take(y, train))
        predicted = search.best_estimator_.predict(_take(X, test))
        unit_losses[unit] = np.asarray(loss(_take(y, test), predicted), dtype=np.float64)
        n_fits += len(search.cv_results_["params"]) * search.n_splits_ + 1
        chosen.append(search.best_params_)
    interval = ncv_interval(plan.assemble(unit_losses), confidence)
    return SelectionInterval(interval, n_fits, tuple(chosen))
