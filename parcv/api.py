"""The three entry points: cross_validate, search and nested_cv."""

from __future__ import annotations

import math
from typing import Any

from parcv.backends import check_backend
from parcv.data import check_dataset
from parcv.plan import build_plan
from parcv.results import (
    CVResult,
    NestedResult,
    SearchResult,
    make_cv_result,
    make_nested_result,
    make_search_result,
)
from parcv.runner import run_plan
from parcv.summary import Selection

__all__ = ["cross_validate", "search", "nested_cv"]


def cross_validate(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    cv: Any = 5,
    scoring: Any = None,
    groups: Any = None,
    fit_params: dict[str, Any] | None = None,
    return_train_score: bool = False,
    error_score: Any = math.nan,
    backend: Any = "local",
    n_jobs: int | None = None,
) -> CVResult:
    """Cross-validate one model: fit and score it on every split.

    Parameters
    ----------
    estimator : estimator object
        Any scikit-learn compatible estimator; cloned for every fold.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    cv : int, splitter or ThreeWayHoldOut, default=5
        An int k is stratified k-fold for classifiers, k-fold otherwise.
    scoring : str, callable, list or dict, default=None
        scikit-learn scorer names or callables; ``None`` uses ``estimator.score``.
    groups : array-like of shape (n_samples,), default=None
        Group labels for group splitters.
    fit_params : dict, default=None
        Extra ``fit`` arguments; per-sample arrays are split with the rows.
    return_train_score : bool, default=False
    error_score : "raise" or float, default=nan
        Score recorded for a failing fit; ``"raise"`` stops at the first.
    backend : {"serial", "local"} or Backend, default="local"
    n_jobs : int, default=None
        Local workers; ``None`` uses every core.

    Returns
    -------
    CVResult
        ``scores`` has the keys of ``sklearn.model_selection.cross_validate``.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    >>> result = cross_validate(Ridge(), X, y, cv=4, backend="serial")
    >>> result.scores["test_score"].shape
    (4,)
    """
    data = check_dataset(X, y, groups, fit_params)
    plan = build_plan(
        estimator,
        None,
        data,
        inner=cv,
        scoring=scoring,
        refit=False,
        error_score=error_score,
        return_train_score=return_train_score,
    )
    records = run_plan(plan, data, check_backend(backend, n_jobs))
    return make_cv_result(plan, records)


def search(
    estimator: Any,
    space: Any,
    X: Any,
    y: Any,
    *,
    cv: Any = 5,
    scoring: Any = None,
    refit: bool | str = True,
    selection: Selection | None = None,
    groups: Any = None,
    fit_params: dict[str, Any] | None = None,
    return_train_score: bool = False,
    error_score: Any = math.nan,
    backend: Any = "local",
    n_jobs: int | None = None,
) -> SearchResult:
    """Select a candidate by CV on all data and refit it (Architecture A).

    Parameters
    ----------
    estimator : estimator object
    space : dict, list of dict, RandomSpace or None
        Grid as ``GridSearchCV``'s ``param_grid``, or a :class:`RandomSpace`.
        Several model families: make a pipeline step a parameter, e.g.
        ``[{"model": [Ridge()], "model__alpha": [...]}, {"model": [SVR()]}]``.
    X, y, groups, fit_params, cv, scoring, return_train_score, error_score, backend, n_jobs
        As in :func:`cross_validate`.
    refit : bool or str, default=True
        Refit the selected candidate on all data; with several metrics, the
        name of the metric that selects.
    selection : Selection, default=None
        ``Selection("one_se", complexity=...)`` for the one-standard-error rule.

    Returns
    -------
    SearchResult
        ``cv_results_``, ``best_params_``, ``best_score_``, ``best_estimator_``.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, noise=5.0, random_state=0)
    >>> result = search(Ridge(), {"alpha": [0.1, 10.0]}, X, y, cv=3, backend="serial")
    >>> result.best_params_
    {'alpha': 0.1}
    """
    data = check_dataset(X, y, groups, fit_params)
    plan = build_plan(
        estimator,
        space,
        data,
        inner=cv,
        scoring=scoring,
        refit=refit,
        selection=selection,
        error_score=error_score,
        return_train_score=return_train_score,
    )
    records = run_plan(plan, data, check_backend(backend, n_jobs))
    return make_search_result(plan, records)


def nested_cv(
    estimator: Any,
    space: Any,
    X: Any,
    y: Any,
    *,
    outer: Any = 5,
    inner: Any = 3,
    scoring: Any = None,
    refit: bool | str = True,
    selection: Selection | None = None,
    groups: Any = None,
    fit_params: dict[str, Any] | None = None,
    return_train_score: bool = False,
    error_score: Any = math.nan,
    backend: Any = "local",
    n_jobs: int | None = None,
) -> NestedResult:
    """Estimate the performance of the whole selection procedure by nested CV.

    For each outer fold, inner CV on the outer-train part selects a candidate,
    which is refitted on the outer-train part and scored on the outer-test
    part (Architecture C). With ``refit`` the same selection also runs on all
    data and its winner is refitted there (Architecture A): the model to ship.
    Every fit of every fold runs in one task graph; each outer refit starts as
    soon as its own inner fits are done.

    Parameters
    ----------
    estimator, space, X, y, scoring, selection, groups, fit_params
        As in :func:`search`.
    return_train_score, error_score, backend, n_jobs
        As in :func:`search`.
    outer : int, splitter or ThreeWayHoldOut, default=5
        Outer scheme. A ``ThreeWayHoldOut`` is Architecture B (its validation
        split is the inner scheme when ``inner=None``).
    inner : int, splitter or None, default=3
        Inner scheme, applied to each outer-train part (and to all data for A).
    refit : bool or str, default=True
        Also select and refit on all data; with several metrics, the metric
        that selects.

    Returns
    -------
    NestedResult

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
    >>> r = nested_cv(Ridge(), {"alpha": [0.1, 10.0]}, X, y, outer=3, inner=3, backend="serial")
    >>> len(r.outer_scores["score"]), r.chosen
    (3, [0, 0, 0])
    """
    data = check_dataset(X, y, groups, fit_params)
    plan = build_plan(
        estimator,
        space,
        data,
        inner=inner,
        outer=outer,
        scoring=scoring,
        refit=refit,
        selection=selection,
        error_score=error_score,
        return_train_score=return_train_score,
    )
    records = run_plan(plan, data, check_backend(backend, n_jobs))
    return make_nested_result(plan, records)
