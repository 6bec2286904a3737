"""The entry points: cross_validate, search, nested_cv, and the curves and tests on their graph."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import is_classifier

from parcv.engine.backends.local import LocalBackend, prepare_workers
from parcv.engine.options import (
    FinalRunKeywords,
    RunKeywords,
    RunOptions,
    check_run_options,
    takes_run_options,
)
from parcv.engine.progress import VERBOSE_LOG, shows_progress, start_output, verbose_output
from parcv.engine.rounds import execute_rounds, load_rounds, load_rounds_so_far, plan_rounds
from parcv.engine.session import execute_plan, load_run, missing_of_expected
from parcv.errors import ParcvError, did_you_mean, warn_at_caller
from parcv.plan.build import Plan, build_plan, check_predictions
from parcv.plan.curves import (
    CurvePlan,
    bias_variance_data,
    candidate_space,
    draw_seed,
    for_candidates,
    plan_bias_variance,
    plan_learning_curve,
    plan_permutation_test,
    plan_validation_curve,
)
from parcv.plan.data import Dataset, check_dataset
from parcv.plan.halving import Halving, Hyperband
from parcv.plan.iterations import Iterations
from parcv.plan.kinds import Key
from parcv.plan.records import SPARSE_PREFIX, Record
from parcv.plan.routing import (
    RoutedParams,
    check_no_groups,
    check_params,
    route_search,
    route_validation,
    routing_enabled,
)
from parcv.plan.scoring import check_scoring_spec
from parcv.plan.selection import Selection
from parcv.plan.space import check_space
from parcv.results.aggregate import report_fit_failures
from parcv.results.assemble import (
    fold_indices,
    make_cv_result,
    make_nested_result,
    make_search_result,
)
from parcv.results.curves import (
    BiasVarianceResult,
    LearningCurveResult,
    PermutationTestResult,
    ValidationCurveResult,
    make_bias_variance,
    make_bias_variance_tradeoff,
    make_learning_curve,
    make_permutation_test,
    make_validation_curve,
)
from parcv.results.halving import NestedRoundsResult
from parcv.results.objects import CVResult, NestedResult, SearchResult
from parcv.results.partial import PartialResult, make_partial_result
from parcv.results.rounds import make_rounds_result
from parcv.stats.racing import Racing
from parcv.store.checks import check_store_to_read
from parcv.store.readers import read_meta, read_target
from parcv.store.seal import check_seal
from parcv.strategies.check import check_strategy, check_strategy_metric
from parcv.strategies.strategy import Strategy

if TYPE_CHECKING:
    from typing_extensions import Unpack


__all__ = [
    "bias_variance",
    "cross_val_predict",
    "cross_val_score",
    "cross_validate",
    "learning_curve",
    "load",
    "nested_cv",
    "permutation_test_score",
    "search",
    "validation_curve",
]


def _run(
    kind: str,
    estimator: Any,
    space: Any,
    data: Dataset,
    plan_options: dict[str, Any],
    options: RunOptions,
) -> tuple[Plan, MutableMapping[Key, Record]]:
    """Build the plan of checked data and run it: the body every entry point shares.

    ``plan_options`` go to :func:`build_plan`.
    """
    if isinstance(options.resolved_backend, LocalBackend):
        prepare_workers()  # their imports run while the plan is built
    plan = build_plan(estimator, space, data, **plan_options)
    return plan, _execute(plan, data, kind, options)


def run_built_plan(plan: Plan, data: Dataset, kind: str, options: RunOptions) -> None:
    """Run a plan its caller built (and so checked) into ``options.store``.

    ``parcv run`` builds a spec's plan to refuse bad input before anything is
    created, then runs that plan here instead of building it again in
    :func:`search` (at millions of units a plan takes seconds). ``kind`` is
    the entry point whose result the store will rebuild: ``"cross_validate"``,
    ``"search"`` or ``"nested_cv"``; :func:`load` reads it back.
    """
    _execute(plan, data, kind, options)


def _scorers_of(estimator: Any, scoring: Any) -> Callable[[], tuple[dict[str, Any], bool]]:
    """The scorers routing gives metadata to, by name, and whether there are several."""

    def scorers() -> tuple[dict[str, Any], bool]:
        spec = check_scoring_spec(estimator, scoring, False, selects=False)
        return dict(spec.scorers), spec.multimetric

    return scorers


def _validation_data(
    caller: str,
    estimator: Any,
    arrays: tuple[Any, Any, Any],
    *,
    fit_params: Any,
    params: Any,
    cv: Any,
    scoring: Any = None,
    fit_method: str = "fit",
) -> Dataset:
    """Check the data and route ``params`` as scikit-learn's validation function ``caller``.

    ``arrays`` is ``(X, y, groups)``. ``fit_params`` (parcv's) go to ``fit``
    only, never routed; ``params`` (scikit-learn's) are routed when
    scikit-learn's metadata routing is on, before anything is fitted.
    """
    X, y, groups = arrays
    given = check_params(params, fit_params, caller)
    if given is None and (fit_params is not None or not routing_enabled()):
        return check_dataset(X, y, groups, fit_params)
    scorers = None if caller == "cross_val_predict" else _scorers_of(estimator, scoring)
    routed = route_validation(caller, estimator, cv, scorers, given, groups=groups,
                              fit_method=fit_method)  # fmt: skip
    return _routed_dataset(X, y, routed)


def _routed_dataset(X: Any, y: Any, routed: RoutedParams) -> Dataset:
    """The data with its routed metadata; with routing on, ``groups`` travel in ``split``."""
    if not routed.enabled:
        return check_dataset(X, y, routed.groups, routed.fit, score_params=routed.score)
    return check_dataset(X, y, None, routed.fit, score_params=routed.score,
                         split_params=routed.split, routed=True)  # fmt: skip


def _search_data(
    caller: str,
    estimator: Any,
    arrays: tuple[Any, Any, Any],
    *,
    fit_params: Any,
    params: Any,
    cv: Any,
    scoring: Any,
) -> Dataset:
    """Check the data and route ``params`` as a scikit-learn search's ``fit`` does.

    A :class:`~parcv.plan.routing.RoutedParams` is taken as routed already
    (the drop-in searches route their own ``fit(**params)``).
    """
    X, y, groups = arrays
    if isinstance(params, RoutedParams):
        return _routed_dataset(X, y, params)
    given = check_params(params, fit_params, caller)
    if given is None:
        return check_dataset(X, y, groups, fit_params)
    if groups is not None:
        check_no_groups(groups)
        given.setdefault("groups", groups)
    return _routed_dataset(X, y, route_search(caller, estimator, cv,
                                              _scorers_of(estimator, scoring), given))  # fmt: skip


def _execute(
    plan: Plan, data: Dataset, kind: str, options: RunOptions
) -> MutableMapping[Key, Record]:
    """Run a checked plan as ``options`` say: the one call of the engine.

    What a resume finds in the store is said on stderr when the run shows its progress.
    """
    with start_output(shows_progress(options.progress, options.verbose)):
        return execute_plan(plan, data, kind, options)


@takes_run_options()
def cross_validate(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    cv: Any = 5,
    scoring: Any = None,
    groups: Any = None,
    fit_params: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    return_train_score: bool = False,
    error_score: Any = math.nan,
    fast_cv: bool | str = "auto",
    interval: str | None = None,
    confidence: float = 0.9,
    ncv_repetitions: int = 50,
    ncv_random_state: int = 0,
    return_predictions: Any = False,
    return_estimator: bool = False,
    return_indices: bool = False,
    options: RunOptions | None = None,
    **run_options: Unpack[RunKeywords],
) -> CVResult:
    """Cross-validate one model: fit and score it on every split.

    Parameters
    ----------
    estimator : estimator object
        Any scikit-learn compatible estimator; cloned for every fold.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or None, default=None
        None for an unsupervised estimator, scored by its own ``score(X)`` or a
        scorer called as ``scorer(estimator, X)``, as in scikit-learn.
    cv : int, splitter or ThreeWayHoldOut, default=5
        An int k is stratified k-fold for classifiers, k-fold otherwise.
    scoring : str, callable, list or dict, default=None
        scikit-learn scorer names or callables; ``None`` uses ``estimator.score``.
    groups : array-like of shape (n_samples,), default=None
        Group labels for group splitters.
    fit_params : dict, default=None
        Extra ``fit`` arguments; per-sample arrays are split with the rows.
        Never routed (parcv's name, from before scikit-learn's ``params``).
    params : dict, default=None
        Metadata, as scikit-learn's ``params``: without metadata routing,
        arguments of ``fit`` (per-sample arrays are split with the rows);
        with ``sklearn.set_config(enable_metadata_routing=True)``, routed by
        scikit-learn's rules to the estimator's ``fit``, the scorers and the
        splitter (``groups`` is then passed here, not as ``groups=``), and
        metadata nothing requests raises scikit-learn's error before any fit.
        Not with ``fit_params``.
    return_train_score : bool, default=False
    error_score : "raise" or float, default=nan
        Score recorded for a failing fit; ``"raise"`` stops at the first.
    fast_cv : {"auto", True, False}, default="auto"
        Exact fast cross-validation for linear smoothers. When every train
        set is the complement of its test set and the estimator (with every
        candidate's parameters) is a linear smoother parcv knows --
        ``Ridge`` (direct solvers, ``positive=False``), ``KernelRidge``,
        :class:`~parcv.bayes.BayesianLinearRegression` with
        ``optimize=False``, a Gaussian process with fixed kernel, or any
        estimator implementing :class:`~parcv.fastloo.SupportsHatMatrix`
        -- the held-out predictions are computed in closed form from one
        fit instead of one refit per fold; candidates that differ only in
        their shrinkage (e.g. Ridge alphas) share one decomposition and run
        as one task per outer fold. ``"auto"`` does this for
        ``LeaveOneOut()`` only, so k-fold keeps scikit-learn's numbers bit
        for bit; ``True`` also does it for k-fold (any partition of the
        rows) and raises ``ValueError`` saying why when it cannot apply;
        ``False`` always refits. Fast CV is the one place where parcv is
        not bit-identical to scikit-learn: predictions and scores agree
        with the refits to rounding (about 1e-12 relative; the serial,
        local and dask backends still agree with each other bit for bit).
        It needs dense float64 ``X``, 1-D ``y``, no ``fit_params`` and no
        ``return_train_score``; the common regression scorers (MSE, RMSE,
        MAE, max error, r2 and the default ``score``) are vectorised, other
        ``predict``-based scorers are called on the precomputed
        predictions. The result's ``fast_cv`` says whether it was used.

    interval : {None, "ncv"}, default=None
        ``"ncv"``: also compute the nested cross-validation interval of Bates,
        Hastie and Tibshirani ("Cross-validation: what does it estimate and
        how well does it do it?", JASA 2023) for the prediction error of the
        model fitted on these data (Err_XY: its expected loss on new data,
        not the average over data sets of this size). The usual interval,
        mean ± z se of the fold scores, treats the folds as independent and
        can cover far below its nominal level; the nested CV interval
        estimates the mean squared error of the CV estimate by CV inside CV,
        corrects the estimate's bias, and keeps roughly nominal coverage.
        Its ``ncv_repetitions * K * (K + 1) / 2`` fits (K: the folds of
        ``cv``, 3 to 20) are ordinary units: run in parallel, stored and
        resumed with the rest. It needs a per-sample loss: ``scoring`` one of
        ``"neg_mean_squared_error"``, ``"neg_mean_absolute_error"``,
        ``"accuracy"`` (0-1 loss; the default for classifiers) or
        ``"neg_log_loss"``; it is not available for metrics that are not
        averages over samples (R^2, ROC AUC, F1), for grouped data, or for
        one model among several (cross-validate the chosen one). The result's
        ``interval`` is on the loss scale (e.g. the mean squared error,
        positive, where ``test_score`` holds its negative) and its estimate
        is bias-corrected; ``naive_interval`` (also ``interval.naive``) is
        the usual interval of this run's own folds beside it: the mean fold
        loss ± z times the standard error of the score summary.
    confidence : float, default=0.9
        Nominal coverage of both intervals.
    ncv_repetitions : int, default=50
        Random assignments of the rows to K folds (the authors use 200).
    ncv_random_state : int, default=0
        Seed of those assignments.
    return_predictions : bool, str or sequence of str, default=False
        Keep every fold's outputs on its test rows, with the records: in the
        store (compact little-endian arrays, never pickles; class labels as
        one- or two-byte codes into the distinct labels) and in the result
        (``result.out_of_fold()``). ``True`` keeps ``predict``; a method name
        or a tuple of them chooses among ``"predict"``, ``"predict_proba"``,
        ``"predict_log_proba"`` and ``"decision_function"`` (the estimator's
        ``classes_`` are kept with the per-class outputs). Every estimator
        must have the methods. Records stored without predictions are not
        reused by a run that keeps them. Not with ``fast_cv=True``.
    return_estimator : bool, default=False
        Keep the estimator fitted on each fold (``result["estimator"]``,
        ``result.estimators``), as scikit-learn does. The store does not keep
        fitted estimators, so such a run fits every fold even on resume; its
        records are not reused by runs without it, nor theirs by it. Not with
        ``fast_cv=True``.
    return_indices : bool, default=False
        Add each fold's train and test rows (``result["indices"]``).
    %(run_options)s

    Returns
    -------
    CVResult
        Reads as the dict of ``sklearn.model_selection.cross_validate``
        (``result["test_score"]``, ``dict(result)``); ``scores`` holds its
        arrays.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    >>> result = cross_validate(Ridge(), X, y, cv=4, backend="serial")
    >>> result.scores["test_score"].shape
    (4,)
    """
    run = check_run_options(options, run_options, caller="cross_validate")
    data = _validation_data("cross_validate", estimator, (X, y, groups), fit_params=fit_params,
                            params=params, cv=cv, scoring=scoring)  # fmt: skip
    plan, records = _run(
        "cross_validate",
        estimator,
        None,
        data,
        dict(inner=cv, scoring=scoring, refit=False, error_score=error_score,
             interval=interval, confidence=confidence, ncv_repetitions=ncv_repetitions,
             ncv_random_state=ncv_random_state,
             return_train_score=return_train_score, fast_cv=fast_cv,
             predictions=return_predictions, estimators=return_estimator),
        run,
    )  # fmt: skip
    result = make_cv_result(plan, records, y_true=_target(plan, y))
    if not isinstance(return_indices, (bool, np.bool_)):
        raise TypeError(
            f"return_indices must be True or False; got {return_indices!r}. Pass True to "
            "get each fold's train and test rows."
        )
    return replace(result, indices=fold_indices(plan)) if return_indices else result


@takes_run_options()
def cross_val_score(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    cv: Any = 5,
    scoring: Any = None,
    groups: Any = None,
    fit_params: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    error_score: Any = math.nan,
    options: RunOptions | None = None,
    **run_options: Unpack[RunKeywords],
) -> NDArray[np.float64]:
    """Score one model on every split, as scikit-learn's ``cross_val_score``.

    The test scores of :func:`cross_validate` with one metric, as an array:
    the same units, run, stored and resumed the same way.

    Parameters
    ----------
    estimator : estimator object
        Any scikit-learn compatible estimator; cloned for every fold.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or None, default=None
        None for an unsupervised estimator, scored by its own ``score(X)`` or a
        scorer called as ``scorer(estimator, X)``, as in scikit-learn.
    cv : int or splitter, default=5
        An int k is stratified k-fold for classifiers, k-fold otherwise.
    scoring : str or callable, default=None
        One scikit-learn scorer name or callable; ``None`` uses
        ``estimator.score``.
    groups : array-like of shape (n_samples,), default=None
        Group labels for group splitters.
    fit_params : dict, default=None
        Extra ``fit`` arguments; per-sample arrays are split with the rows.
    params : dict, default=None
        As in :func:`cross_validate`.
    error_score : "raise" or float, default=nan
        Score recorded for a failing fit; ``"raise"`` stops at the first.
    %(run_options)s

    Returns
    -------
    ndarray of shape (n_splits,)
        The score of each split, in the splitter's order.

    Raises
    ------
    ValueError
        For several metrics (as scikit-learn): use :func:`cross_validate`.

    See Also
    --------
    cross_validate : Several metrics, train scores, intervals, predictions.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> X, y = load_diabetes(return_X_y=True)
    >>> cross_val_score(Ridge(), X, y, cv=3, backend="serial").round(3)
    array([0.37 , 0.418, 0.44 ])
    """
    run = check_run_options(options, run_options, caller="cross_val_score")
    if scoring is not None and not isinstance(scoring, str) and not callable(scoring):
        raise ValueError(
            f"cross_val_score takes one metric (a name, a scorer or None); got scoring="
            f"{scoring!r}. For several metrics, use parcv.cross_validate(..., scoring=[...])."
        )
    result = cross_validate(
        estimator, X, y, cv=cv, scoring=scoring, groups=groups, fit_params=fit_params,
        params=params, error_score=error_score, options=run,
    )  # fmt: skip
    return np.asarray(result.scores["test_score"], dtype=np.float64)


@takes_run_options(final_model=True)
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
    params: dict[str, Any] | RoutedParams | None = None,
    return_train_score: bool = False,
    error_score: Any = math.nan,
    fast_cv: bool | str = "auto",
    criteria: Any = None,
    racing: Racing | None = None,
    bbc: bool = False,
    confidence: float = 0.9,
    return_predictions: Any = False,
    learning_curve: Any = None,
    learning_curve_for: str = "best",
    bias_variance: Any = None,
    iterations: Iterations | None = None,
    halving: Halving | Hyperband | None = None,
    strategy: Any = None,
    random_state: int | None = None,
    options: RunOptions | None = None,
    **run_options: Unpack[FinalRunKeywords],
) -> SearchResult:
    """Select a candidate by CV on all data and refit it (select and refit).

    Parameters
    ----------
    estimator : estimator object
    space : dict, list of dict, RandomSpace or None
        Grid as ``GridSearchCV``'s ``param_grid``, or a :class:`RandomSpace`.
        Several model families: make a pipeline step a parameter, e.g.
        ``[{"model": [Ridge()], "model__alpha": [...]}, {"model": [SVR()]}]``.
    X, y, groups, fit_params, cv, scoring, return_train_score, error_score
        As in :func:`cross_validate`.
    params : dict or RoutedParams, default=None
        Metadata, as ``GridSearchCV.fit(X, y, **params)`` takes it: without
        metadata routing, ``groups`` goes to the splitter, the rest to
        ``fit``, and ``sample_weight`` also to every scorer that accepts it
        (with scikit-learn's warning for each one that does not), so the
        scores are weighted as scikit-learn 1.9's; with routing on, routed by
        scikit-learn's rules. ``fit_params`` (parcv's) go to ``fit`` only.
        Not with ``fit_params``.
    refit : bool or str, default=True
        Refit the selected candidate on all data; with several metrics, the
        name of the metric that selects. No callable: use ``selection``.
    selection : Selection, default=None
        ``Selection("one_se", complexity=...)`` for the one-standard-error rule
        (a :class:`Selection`, not a rule name; a complexity name is checked
        against the space before anything runs).
    fast_cv : {"auto", True, False}, default="auto"
        Exact closed-form held-out predictions for linear smoothers; see
        :func:`cross_validate`. ``cv=LeaveOneOut()`` over Ridge alphas costs
        one SVD, not ``n_samples x n_candidates`` fits.
    criteria : list of str or CriteriaRequest, default=None
        Also fit each candidate once on all data and compute these criteria:
        ``"aic"``, ``"bic"``, ``"cp"`` (regression), ``"vc"``
        (classification) and ``"evidence"`` (the log evidence of a Bayesian
        model: ``BayesianLinearRegression.log_evidence_`` or a Gaussian
        process's ``log_marginal_likelihood_value_``). The parameter count
        is the number of non-zero ``coef_`` entries; for other models pass
        ``parcv.criteria.tasks.CriteriaRequest(names, n_params=...)``. A
        criterion undefined for the estimator raises
        ``CriteriaUndefinedError`` saying how to fix it. The result's
        ``criteria_table`` shows each candidate's CV mean ± se next to its
        criteria and which candidate each method (CV best, one-SE, each
        criterion) selects.
    racing : Racing, default=None
        Race the candidates: score the CV folds in order and, after
        ``burn_in`` folds and each further fold (but the last), drop every
        candidate a paired test on the folds scored so far finds worse than
        the current best (Nadeau-Bengio corrected t by default, Holm-adjusted
        at each decision; see :class:`parcv.Racing`). A dropped candidate's
        later folds are never run, and it cannot be selected. Decisions read
        only the folds up to each decision, so every backend drops the same
        candidates. ``cv_results_`` has NaN for folds not run and the columns
        ``race_eliminated_after`` (last fold run, -1 = survived) and
        ``race_p_value``.
    bbc : bool, default=False
        Also estimate the error of the selected candidate by BBC-CV
        (Tsamardinos, Greasidou & Borboudakis, "Bootstrapping the out-of-sample
        predictions for efficient and accurate cross-validation", Machine
        Learning 2018): the winner's CV score is optimistic because it won on
        those folds; BBC-CV bootstraps the rows of the out-of-fold per-sample
        losses of every candidate, selects on each bootstrap sample and
        scores the winner on the rows left out, with no extra fit. The
        result's ``bbc`` holds the estimate (loss scale) and its percentile
        interval. Needs a refit metric with a per-sample loss (as
        :func:`cross_validate`'s ``interval``), k-fold-like CV, and no racing.
    confidence : float, default=0.9
        Nominal coverage of the BBC-CV interval.
    return_predictions : bool, str or sequence of str, default=False
        As in :func:`cross_validate`, for every candidate's fits: then
        ``result.compare(a, b, test="mcnemar")`` and ``result.cochran_q()``
        test candidates on their pooled out-of-fold predictions, with no
        refit, also on a result loaded from the store.
    learning_curve : array-like, default=None
        Train sizes (fractions of a fold's train rows, or counts), e.g.
        ``[0.1, 0.325, 0.55, 0.775, 1.0]``: also compute the learning curve
        (as :func:`learning_curve`, on the same ``cv``, with the refit
        metric) of the selected candidate, or of every candidate with
        ``learning_curve_for="all"``. The result's ``learning_curves`` maps
        candidate index to :class:`LearningCurveResult`; the report plots it.
    learning_curve_for : {"best", "all"}, default="best"
    bias_variance : tuple or dict, default=None
        A hold-out test set, ``(X_test, y_test)``, or a dict with keys
        ``X_test``, ``y_test`` and optionally ``loss`` ("mse" for
        regressors, "0-1" for classifiers by default), ``n_rounds`` (200)
        and ``random_state`` (0): also decompose every candidate's expected
        loss on it into bias and variance (as :func:`bias_variance`, the
        bootstrap samples drawn from ``X, y``). The result's
        ``bias_variance`` holds the trade-off along the candidates; the
        report plots it against the complexity parameter.

        Both run as units of their own plans after the search, on the same
        backend; with ``store``, they are kept (and resumed) in the files
        ``<store>.learning_curve.sqlite`` and ``<store>.bias_variance.sqlite``.
        Their options are checked before the search runs. :func:`load`
        rebuilds the search without them: rerun the call with
        ``resume=True`` to read them back without fitting.
    iterations : Iterations, default=None
        Score an iteration parameter as a path, e.g.
        ``Iterations("n_estimators", up_to=500, every=10, patience=5)``: one
        fit per (fold, point of the space) is scored at every checkpoint
        (staged predictions, warm-start growth, a booster's rounds or
        ``partial_fit`` epochs), where that gives the scores of separate fits
        (:mod:`parcv.plan.shortcuts`; elsewhere every checkpoint is fitted
        from scratch). ``cv_results_`` has a row per (point, checkpoint), as a grid
        over the parameter would, with the column ``path_stopped``;
        ``best_params_`` holds the count and the refit uses it. With
        ``patience``, a point's path stops once its mean score over the folds
        stops improving (its later checkpoints are NaN and never fitted). With
        ``racing`` (no patience), a (point, count) is raced as any candidate,
        and a point's fold is skipped once the race dropped all its counts.
        Not with fast CV, BBC-CV, ``return_predictions``.
    halving : Halving, default=None
        Successive halving (see :class:`Halving`): score every candidate
        with a small resource, keep the best ``1 / factor``, and so on; each
        rung is a search of its own on the engine (with ``store``, in the
        same store: a resumed run reuses every finished rung). The result
        is then a :class:`HalvingResult`, as scikit-learn's
        ``HalvingGridSearchCV``. With ``racing``, each rung races its
        candidates over its folds, and a candidate the race dropped ranks
        below every other when the rung promotes. Not with ``criteria``, ``bbc``,
        ``selection``, ``learning_curve`` or ``bias_variance``. A
        :class:`Hyperband` runs several such searches (brackets) on an
        iteration parameter, each over its own draws of ``space`` (a
        :class:`RandomSpace`), and returns a :class:`HyperbandResult`.
        The same as ``strategy=Halving(...)``.
    strategy : Halving, Hyperband, Sampler or a strategy, default=None
        How the search chooses which units run, round after round: each round
        is proposed from the rounds finished before it (so every backend runs
        the same), its decision stored with the run (so :func:`load` rebuilds
        the whole result, every rung and bracket), and it starts as soon as
        the records it reads are in. ``None`` scores every candidate on every
        fold in one round (grid or random search). :class:`Halving` and
        :class:`Hyperband` as ``halving=``; ``iterations=Iterations(...,
        patience=...)`` is early stopping. Any object with ``start``,
        ``schedule``, ``config`` and a ``name`` is a strategy (see
        :mod:`parcv.strategies.strategy`). A strategy decides by one
        metric, the one ``refit`` names: several metrics with
        ``refit=False`` are refused before any fit.
    random_state : int or None, default=None
        The run's seed, with a strategy: every random draw of a strategy
        without a seed of its own comes from it (a :class:`Sampler` without
        ``seed``, a :class:`Halving` without ``random_state``, a strategy's
        ``Part(n_rows=...)`` subsample without ``subsample_seed``), one stream
        per search and round (:func:`parcv.strategies.strategy.round_seed`). A
        rerun or a resume with the same seed draws the same; another seed draws
        anew. None is 0. A strategy's own seed takes precedence for its own
        draws. Not without a strategy (a grid draws nothing; a
        :class:`RandomSpace` has its own ``random_state``).
    %(run_options)s

    Returns
    -------
    SearchResult
        ``cv_results_``, ``best_params_``, ``best_score_``, ``best_estimator_``
        (a :class:`HalvingResult` with ``halving``, a :class:`HyperbandResult`
        with Hyperband; with another strategy a column ``round`` says which
        round scored each row).

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, noise=5.0, random_state=0)
    >>> result = search(Ridge(), {"alpha": [0.1, 10.0]}, X, y, cv=3, backend="serial")
    >>> result.best_params_
    {'alpha': 0.1}
    """
    run = check_run_options(options, run_options, caller="search", final_model=True)
    adaptive = check_strategy(strategy, halving=halving, iterations=iterations)
    if adaptive is not None:
        _check_strategy_options(adaptive, dict(
            selection=None if selection in (None, Selection()) else selection,
            criteria=criteria, bbc=bbc, learning_curve=learning_curve,
            bias_variance=bias_variance, return_predictions=return_predictions,
            fast_cv=None if fast_cv in ("auto", False) else fast_cv,
            iterations=None if iterations is None or iterations.patience is not None
            else iterations,
            racing=None if getattr(adaptive, "races", True) else racing,
        ))  # fmt: skip
        check_strategy_metric(adaptive, scoring, refit, nested=False)
    _check_random_state(random_state, adaptive)
    data = _search_data("search", estimator, (X, y, groups), fit_params=fit_params,
                        params=params, cv=cv, scoring=scoring)  # fmt: skip
    if adaptive is not None:
        return _in_rounds(  # type: ignore[no-any-return]
            "search", estimator, space, data, adaptive,
            dict(cv=cv, scoring=scoring, refit=refit, error_score=error_score,
                 return_train_score=return_train_score, racing=racing,
                 random_state=random_state),
            run,
        )  # fmt: skip
    extras = _plan_search_extras(
        estimator, space, (X, y, data.groups, data.fit_params or None),
        dict(cv=cv, scoring=scoring, refit=refit, error_score=error_score),
        learning_curve=learning_curve, learning_curve_for=learning_curve_for,
        bias_variance=bias_variance,
    )  # fmt: skip
    plan, records = _run(
        "search",
        estimator,
        space,
        data,
        dict(inner=cv, scoring=scoring, refit=refit, selection=selection,
             error_score=error_score, return_train_score=return_train_score,
             fast_cv=fast_cv, criteria=criteria, racing=racing, bbc=bbc,
             confidence=confidence, predictions=return_predictions, iterations=iterations),
        run,
    )  # fmt: skip
    result = make_search_result(plan, records, y_true=_target(plan, y))
    return result if extras.empty else _run_search_extras(extras, result, run)


@takes_run_options(final_model=True)
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
    params: dict[str, Any] | RoutedParams | None = None,
    return_train_score: bool = False,
    error_score: Any = math.nan,
    fast_cv: bool | str = "auto",
    criteria: Any = None,
    racing: Racing | None = None,
    bbc: bool = False,
    interval: str | None = None,
    confidence: float = 0.9,
    ncv_repetitions: int = 10,
    ncv_random_state: int = 0,
    return_predictions: Any = False,
    iterations: Iterations | None = None,
    halving: Halving | Hyperband | None = None,
    strategy: Any = None,
    random_state: int | None = None,
    options: RunOptions | None = None,
    **run_options: Unpack[FinalRunKeywords],
) -> NestedResult | NestedRoundsResult:
    """Estimate the performance of the whole selection procedure by nested CV.

    For each outer fold, inner CV on the outer-train part selects a candidate,
    which is refitted on the outer-train part and scored on the outer-test
    part (nested CV). With ``refit`` the same selection also runs on all
    data and its winner is refitted there (select and refit): the model to ship.
    Every fit of every fold runs in one task graph; each outer refit starts as
    soon as its own inner fits are done.

    Parameters
    ----------
    estimator, space, X, y, scoring, selection, groups, fit_params, params
        As in :func:`search`.
    return_train_score, error_score
        As in :func:`search`.
    outer : int, splitter or ThreeWayHoldOut, default=5
        Outer scheme. A ``ThreeWayHoldOut`` gives a hold-out test set (its validation
        split is the inner scheme when ``inner=None``).
    inner : int, splitter or None, default=3
        Inner scheme, applied to each outer-train part (and, with ``refit``,
        to all data, for the search whose winner is the model to ship).
    refit : bool or str, default=True
        Also select and refit on all data; with several metrics, the metric
        that selects.
    fast_cv : {"auto", True, False}, default="auto"
        Exact closed-form held-out predictions for the inner CVs of linear
        smoothers (``inner=LeaveOneOut()``, or k-fold with ``True``); see
        :func:`cross_validate`. Outer refits are always real fits.
    criteria : list of str or CriteriaRequest, default=None
        As in :func:`search`, computed on every outer-train part (and on all
        data with ``refit``): ``criteria_choices`` says which candidate each
        method selects in each outer fold, ``criteria_table`` is the
        all-data table.
    racing : Racing, default=None
        As in :func:`search`: each inner CV (and the search on all data)
        runs its own race; an outer refit selects among its race's survivors.
    bbc : bool, default=False
        As in :func:`search`, for the selection on all data (``refit=True``):
        the result's ``final.bbc``, next to the nested CV estimate (and its
        ``interval``, unless ``interval="ncv"``).
    interval : {None, "ncv", "bbc"}, default=None
        The interval of the error of the whole procedure -- select by the
        inner CV, refit the winner -- applied to these data (its error on new
        data: that of the model ``final`` ships). The usual ``mean ± z se`` of
        the outer scores treats the outer folds as independent and can cover
        far below its level. ``"ncv"``: the nested cross-validation interval
        of Bates, Hastie and Tibshirani (see :func:`cross_validate`), the
        "model" being the whole selection: for each of ``ncv_repetitions``
        random assignments of the rows to K folds (K: the outer folds, 3 to
        20), each of its K (K + 1) / 2 (train, test) pairs -- all rows but
        one fold or two -- is one more outer fold of this nested CV (inner CV
        on the train rows, refit of the winner there, per-sample losses on the
        test rows), run, stored and resumed with the rest. That is
        ``ncv_repetitions * K * (K + 1) / 2`` selections of
        ``n_candidates * n_inner_folds + 1`` fits each: with 5 outer folds, 3
        inner folds and 4 candidates, 10 repetitions take 150 selections, 1,950
        fits. ``"bbc"``: BBC-CV of the selection on all data instead
        (``bbc=True``; no extra fits, needs ``refit=True`` and a k-fold
        ``inner``); it targets the selected candidate's error more than the
        shipped model's. Both need a per-sample loss as the refit metric
        (``"neg_mean_squared_error"``, ``"neg_mean_absolute_error"``,
        ``"accuracy"``, ``"neg_log_loss"``), and ``"ncv"`` ungrouped rows.
        The result's ``interval`` is on the loss scale, with the usual
        interval of the outer folds as ``naive_interval``. With ``strategy``
        (or ``halving``), the procedure is the strategy: each ``"ncv"``
        selection runs the strategy's whole search on its training rows, as
        an outer fold does. ``"bbc"`` (and ``bbc=True``) needs candidates fixed
        before any score, each scored on every row; it is refused, before any
        fit, for a strategy without them (a sampler, halving, Hyperband,
        early stopping).
    confidence : float, default=0.9
        Nominal coverage of the intervals (and of BBC-CV's).
    ncv_repetitions : int, default=10
        Random assignments of the rows to K folds for ``interval="ncv"``
        (fewer than :func:`cross_validate`'s 50: each costs a nested CV and
        more, K (K + 1) / 2 selections; the authors use 200).
    ncv_random_state : int, default=0
        Seed of those assignments.
    return_predictions : bool, str or sequence of str, default=False
        As in :func:`search`, for every inner fit and every outer refit: the
        outer refits' predictions give the pooled confusion matrix
        (``result.confusion_matrix()``, classification) or residuals
        (regression) in the report.
    iterations : Iterations, default=None
        As in :func:`search`, for every inner CV: each outer fold selects a
        (point, iteration count) and refits it.
    halving : Halving, default=None
        Select by successive halving (see :func:`search`): each outer fold
        runs a halving search on its outer-train rows with ``inner``, and
        its winner is fitted there and scored on the outer-test rows (one
        unit per outer fold); with ``refit``, the halving search on all data
        gives the model to ship (a :class:`Hyperband` likewise). Returns a
        :class:`NestedRoundsResult`.
        Not with ``criteria``, ``selection`` or ``return_predictions``; ``interval``
        as with ``strategy``.
    strategy : Halving, Hyperband, Sampler or a strategy, default=None
        As in :func:`search`: every outer fold's search and the search on all
        data run their rounds side by side, each round as soon as the records
        it reads are in. Returns a :class:`NestedRoundsResult`. With several
        metrics ``refit`` names the one every search decides by
        (``refit=False`` is refused before any fit).
    random_state : int or None, default=None
        The run's seed, with a strategy, as in :func:`search`: each outer
        fold's search draws its own stream from it.
    %(run_options)s

    Returns
    -------
    NestedResult or NestedRoundsResult
        The outer-fold scores and their estimate, what each outer fold selected, and the
        select-and-refit search on all data (``final``): the model to ship.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
    >>> r = nested_cv(Ridge(), {"alpha": [0.1, 10.0]}, X, y, outer=3, inner=3, backend="serial")
    >>> len(r.outer_scores["score"]), r.chosen
    (3, [0, 0, 0])
    """
    run = check_run_options(options, run_options, caller="nested_cv", final_model=True)
    adaptive = check_strategy(strategy, halving=halving, iterations=iterations)
    if adaptive is not None:
        _check_strategy_options(adaptive, dict(
            selection=None if selection in (None, Selection()) else selection,
            criteria=criteria, return_predictions=return_predictions,
            fast_cv=None if fast_cv in ("auto", False) else fast_cv,
            iterations=None if iterations is None or iterations.patience is not None
            else iterations,
            racing=None if getattr(adaptive, "races", True) else racing,
        ))  # fmt: skip
        check_strategy_metric(adaptive, scoring, refit, nested=True)
        if inner is None:
            raise ValueError(
                f"nested_cv with {adaptive.name} needs an inner CV scheme; got inner=None. "
                "Pass e.g. inner=3."
            )
    _check_random_state(random_state, adaptive)
    data = _search_data("nested_cv", estimator, (X, y, groups), fit_params=fit_params,
                        params=params, cv=outer, scoring=scoring)  # fmt: skip
    if adaptive is not None:
        return _in_rounds(  # type: ignore[no-any-return]
            "nested_cv", estimator, space, data, adaptive,
            dict(cv=inner, outer=outer, scoring=scoring, refit=refit, error_score=error_score,
                 return_train_score=return_train_score, racing=racing, bbc=bbc,
                 interval=interval, confidence=confidence, ncv_repetitions=ncv_repetitions,
                 ncv_random_state=ncv_random_state, random_state=random_state),
            run,
        )  # fmt: skip
    plan, records = _run(
        "nested_cv",
        estimator,
        space,
        data,
        dict(inner=inner, outer=outer, scoring=scoring, refit=refit, selection=selection,
             error_score=error_score, return_train_score=return_train_score,
             fast_cv=fast_cv, criteria=criteria, racing=racing, bbc=bbc, interval=interval,
             confidence=confidence, ncv_repetitions=ncv_repetitions,
             ncv_random_state=ncv_random_state, predictions=return_predictions,
             iterations=iterations),
        run,
    )  # fmt: skip
    return make_nested_result(plan, records, y_true=_target(plan, y))


@overload
def load(
    store: str | Path, *, load_models: bool = False, partial: Literal[False] = False
) -> CVResult | SearchResult | NestedResult: ...


@overload
def load(
    store: str | Path, *, load_models: bool = False, partial: bool
) -> CVResult | SearchResult | NestedResult | PartialResult: ...


def load(
    store: str | Path, *, load_models: bool = False, partial: bool = False
) -> CVResult | SearchResult | NestedResult | PartialResult:
    """Rebuild the result of a run from its store, without recomputing anything.

    Parameters
    ----------
    store : str or Path
        SQLite file written by ``cross_validate``/``search``/``nested_cv``.
    load_models : bool, default=False
        Load the final model saved with ``save_models=True`` now and raise if
        there is none. Otherwise it is loaded when ``best_estimator_`` is
        first read. Reading the store itself never runs code; unpickling the
        model does, so the file is loaded only when its tag in the store
        verifies with your model key, which no store holds
        (``~/.config/parcv/model-key``): a model your own parcv saved,
        unchanged since. Without such a model, reading ``best_estimator_``
        raises :class:`~parcv.errors.ModelNotAvailableError` saying how to get
        one (a model an earlier parcv saved: :func:`trust_saved_model`).
    partial : bool, default=False
        For a run that did not finish (interrupted, or still running
        elsewhere), return a :class:`~parcv.PartialResult`: units done, the
        scores of the folds done so far, and which estimates are not known
        yet; of a run in rounds (halving, Hyperband, a sampler, early
        stopping), each search's rounds as far as they got, a finished round
        as the finished run gives it (``PartialResult.parts``). Without it
        such a store raises :class:`~parcv.UnfinishedRunError` saying how far
        it got.

    Returns
    -------
    CVResult, SearchResult, NestedResult or PartialResult
        Equal scores, selections and estimates to the run's own result.
        Parameters that were objects (estimators) come back as their repr.

    Raises
    ------
    StoreDamagedError
        SQLite cannot read the store, or it differs from the seal its last
        run wrote (a row changed, added or removed since): the message names
        the tables and the way on (a resume, or a new store).
    PlanMismatchError
        The file is not a parcv store, was written by a newer parcv (both
        schema versions are named; the file is left as it is), or is a
        schema-4 store that describes only the last rung of its run.
    UnfinishedRunError
        The run did not finish (see ``partial``).

    Notes
    -----
    What is trusted: the store's records (numbers, text, JSON) are read as data and
    never run code, whoever wrote them, and are checked against the seal the run
    wrote. The saved model is code: it is unpickled (by ``best_estimator_`` or
    ``load_models=True``) only when its tag verifies with your model key, which
    lives outside the store, so a model file or a store rewritten without your key
    is refused. A store someone else wrote holds no model your key verifies: read
    its results and refit ``best_params_`` yourself.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.sqlite"
    >>> r = search(Ridge(), {"alpha": [0.1, 1.0]}, X, y, cv=3, backend="serial", store=path)
    >>> load(path).best_params_ == r.best_params_
    True
    """
    path = check_store_to_read(store)
    meta = read_meta(path)  # first: a newer schema is refused as such, not as changed
    check_seal(path)
    if "strategy" in meta and meta.get("kind") in ("search", "nested_cv"):
        so_far = load_rounds_so_far(path, meta) if partial else None
        if so_far is not None:
            return so_far
        base, searches, config = load_rounds(path, meta, load_models=load_models)
        return make_rounds_result(meta["kind"], base, searches, config)
    kind, plan, records = load_run(store, load_models=load_models and not partial,
                                   partial=partial)  # fmt: skip
    missing, n_units = missing_of_expected(plan, records) if partial else ([], 0)
    if missing:
        return make_partial_result(kind, plan, records, missing, n_units)
    if kind not in ("cross_validate", "search", "nested_cv"):
        raise ParcvError(
            f"store {str(store)!r} holds a {kind} run, which load() does not rebuild; call "
            f"parcv.{kind}(...) again with the same arguments, store= and resume=True: it "
            "reads every stored unit back and fits nothing."
        )
    y_true = read_target(check_store_to_read(store)) if plan.predictions else None
    if kind == "cross_validate":
        return make_cv_result(plan, records, y_true=y_true)
    if kind == "search":
        return make_search_result(plan, records, y_true=y_true)
    return make_nested_result(plan, records, y_true=y_true)


def _target(plan: Plan, y: Any) -> Any:
    """The target the stored predictions are compared with (None when none are kept).

    None also for an unsupervised run; a sparse y (multilabel indicator) as its dense labels,
    as the store keeps it.
    """
    if not plan.predictions or y is None:
        return None
    return y.toarray() if sp.issparse(y) else np.asarray(y)


def _no_score(estimator: Any, X: Any, y: Any = None) -> float:
    """The scorer of cross_val_predict's fits: it keeps predictions, not scores."""
    return 0.0


@takes_run_options()
def cross_val_predict(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    cv: Any = 5,
    method: str = "predict",
    groups: Any = None,
    fit_params: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    options: RunOptions | None = None,
    **run_options: Unpack[RunKeywords],
) -> Any:
    """Out-of-fold outputs for every row, equal to scikit-learn's ``cross_val_predict``.

    Every fold is one unit of the graph (run serially, on the local pool or
    on Dask); each unit keeps its outputs on its test rows, which are put
    back in row order. The folds, the fits and the outputs are those of
    ``sklearn.model_selection.cross_val_predict`` with the same ``cv``, bit
    for bit: for ``predict_proba``, ``predict_log_proba`` and
    ``decision_function`` the target is label-encoded before fitting and a
    fold missing a class gets that class's column filled as scikit-learn
    fills it (0 for probabilities, else the float minimum).

    Parameters
    ----------
    estimator : estimator object
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), default=None
    cv : int or splitter, default=5
        As in :func:`cross_validate`; the test sets must be a partition of
        the rows (every row tested exactly once), as scikit-learn requires.
    method : {"predict", "predict_proba", "predict_log_proba", "decision_function"}
    groups, fit_params, params
        As in :func:`cross_validate` (no scorer takes metadata). A fit that
        fails raises (as in scikit-learn): ``error_score="raise"``.
    %(run_options)s

    Returns
    -------
    ndarray of shape (n_samples,) or (n_samples, n_classes)
        Each sample's prediction by the model fitted on the folds that left it out.

    Warns
    -----
    RuntimeWarning
        A fold's training part lacks a class (per-class methods), as in
        scikit-learn.

    Raises
    ------
    ValueError
        ``method`` is not one of the four, the estimator lacks it, the
        test sets are not a partition (checked before any fit), or a
        per-class method is asked for a 2-D ``y``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_predict as sk_cross_val_predict
    >>> X, y = make_classification(n_samples=40, random_state=0)
    >>> ours = cross_val_predict(LogisticRegression(), X, y, cv=4, backend="serial")
    >>> bool((ours == sk_cross_val_predict(LogisticRegression(), X, y, cv=4)).all())
    True
    """
    if not isinstance(method, str):
        raise TypeError(
            f"method must be a str naming an estimator method; got {method!r}. Pass e.g. "
            "method='predict_proba'."
        )
    check_predictions(method, estimator)
    run = check_run_options(options, run_options, caller="cross_val_predict")
    encode = method != "predict" and y is not None
    y_fit = _encoded(y) if encode else y
    data = _validation_data("cross_val_predict", estimator, (X, y_fit, groups),
                            fit_params=fit_params, params=params, cv=cv)  # fmt: skip
    plan = build_plan(estimator, None, data, inner=cv, scoring={"unscored": _no_score},
                      refit=False, error_score="raise", predictions=method)  # fmt: skip
    folds = plan.inner_folds[None]
    tests = [np.asarray(folds[i].test) for i in range(len(folds))]
    order = np.concatenate(tests) if tests else np.empty(0, dtype=np.intp)
    if order.size != data.n_samples or not np.array_equal(np.sort(order), np.arange(order.size)):
        raise ValueError(
            f"cross_val_predict only works for partitions: cv={cv!r} must test every row "
            f"exactly once (its test sets hold {order.size} rows for {data.n_samples} samples). "
            "Use KFold, StratifiedKFold, GroupKFold or LeaveOneOut, or cross_validate(..., "
            "return_predictions=True) to keep the predictions of any CV."
        )
    records = _execute(plan, data, "cross_validate", run)
    kept = [records[("fit", None, i, 0)].predictions.arrays for i in range(len(folds))]  # type: ignore[union-attr]
    inverse = np.empty(order.size, dtype=int)
    inverse[order] = np.arange(order.size)
    if encode and f"{method}[0]" in kept[0]:  # a multi-output classifier: a list, per output
        return [
            np.concatenate([_in_columns(k, f"[{j}]", y_fit[:, j], method) for k in kept])[inverse]
            for j in range(y_fit.shape[1])
        ]
    outputs = [_in_columns(k, "", y_fit, method) if encode else k[method] for k in kept]
    joined = np.concatenate(outputs)[inverse]
    sparse_format = kept[0].get(SPARSE_PREFIX + method)
    if sparse_format is None:
        return joined
    # The estimator predicted sparse matrices: stacked in the first fold's format, as sklearn.
    return sp.csr_matrix(joined).asformat(str(sparse_format))


def _in_columns(kept: dict[str, Any], output: str, y_fit: Any, method: str) -> Any:
    """A fold's outputs with one column per class of the whole target (of one output)."""
    values = kept[method + output]
    if "classes_" + output not in kept:
        return values
    # A 2-D y is a label indicator matrix (one column per label) unless split per output.
    n_classes = len(np.unique(y_fit)) if y_fit.ndim == 1 else y_fit.shape[1]
    return _full_columns(kept["classes_" + output], values, n_classes, method)


def _encoded(y: Any) -> Any:
    """The target label-encoded as scikit-learn's cross_val_predict does for per-class methods.

    A 2-D target (several labels or outputs) is encoded column by column.
    """
    array = np.asarray(y)
    if array.ndim == 2:
        encoded = np.zeros(array.shape, dtype=int)
        for j in range(array.shape[1]):
            encoded[:, j] = np.unique(array[:, j], return_inverse=True)[1].reshape(-1)
        return encoded
    if array.ndim != 1:
        raise ValueError(
            f"cross_val_predict with a per-class method needs a 1-D or 2-D y; got shape "
            f"{array.shape!r}. Use method='predict', or one column of y at a time."
        )
    return np.unique(array, return_inverse=True)[1].reshape(-1)


def _full_columns(classes: Any, values: Any, n_classes: int, method: str) -> Any:
    """One column per class of the whole target, when a fold's training part lacked some.

    The columns of missing classes are filled as scikit-learn fills them.
    """
    if n_classes == len(classes):
        return values
    # The messages begin with scikit-learn's words, which its users may filter or match.
    warn_at_caller(
        f"Number of classes in training fold ({len(classes)}) does not match total number of "
        f"classes ({n_classes}). Results may not be appropriate for your use case. (The "
        f"{method} columns of the missing ones are filled, as in scikit-learn's "
        "cross_val_predict; use a stratified CV to keep every class in every training part.)",
        RuntimeWarning,
    )
    if method == "decision_function" and values.ndim == 2 and values.shape[1] != len(classes):
        raise ValueError(  # SVC(decision_function_shape="ovo"): one column per pair of classes
            f"Output shape {values.shape} of {method} does not match number of classes "
            f"({len(classes)}) in fold. Irregular decision_function outputs are not currently "
            "supported by cross_val_predict: use decision_function_shape='ovr', "
            "method='predict_proba', or a StratifiedKFold that keeps every class in every "
            "training part."
        )
    if method == "decision_function" and (values.ndim == 1 or len(classes) <= 2):
        raise ValueError(
            f"Only {len(classes)} class/es in training fold, but {n_classes} in overall "
            "dataset. This is not supported for decision_function with imbalanced folds. To "
            "fix this, use a cross-validation technique resulting in properly stratified "
            "folds: its decision_function output cannot be put in one column per class. Use "
            "method='predict_proba', or a StratifiedKFold that keeps every class in every "
            "training part."
        )
    fill = 0.0 if method == "predict_proba" else np.finfo(values.dtype).min
    full = np.full((values.shape[0], n_classes), fill, dtype=values.dtype)
    full[:, classes] = values
    return full


@takes_run_options()
def learning_curve(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    groups: Any = None,
    train_sizes: Any = (0.1, 0.325, 0.55, 0.775, 1.0),
    cv: Any = 5,
    scoring: Any = None,
    shuffle: bool = False,
    random_state: int | None = None,
    error_score: Any = math.nan,
    return_times: bool = False,
    fit_params: dict[str, Any] | None = None,
    exploit_incremental_learning: bool = False,
    params: dict[str, Any] | None = None,
    options: RunOptions | None = None,
    **run_options: Unpack[RunKeywords],
) -> LearningCurveResult:
    """Train and test scores for growing training sets, as scikit-learn's ``learning_curve``.

    Each (CV fold, train size) is one unit: the model is fitted on the first
    ``n`` train rows of the fold (after permuting them with ``shuffle``) and
    scored on those rows and on the fold's test rows. Given the same folds
    and ``random_state``, the scores are scikit-learn's, bit for bit. With
    ``verbose`` the train sizes are logged in scikit-learn's words (logger
    ``"parcv"``, INFO): parcv logs, it does not print.

    Parameters
    ----------
    estimator, X, y, groups, cv, scoring, error_score, fit_params, params
        As in :func:`cross_validate`; ``scoring`` is one metric.
    train_sizes : array-like, default=(0.1, 0.325, 0.55, 0.775, 1.0)
        Fractions in (0, 1] of the first fold's train rows, or counts of rows.
    shuffle : bool, default=False
        Permute each fold's train rows before cutting them.
    random_state : int, default=None
        Seed of that permutation, drawn fold after fold as scikit-learn does.
        None with ``shuffle``: parcv draws a seed from the system's entropy
        (as scikit-learn's None draws fresh rows), records it in the result
        (``random_state_``) and in the store's plan; a resume of that store
        (``resume=True`` without ``random_state``) reuses it, so it completes
        the same curve.
    return_times : bool, default=False
        Also unpack fit and score times (the result holds them either way).
    exploit_incremental_learning : bool, default=False
        As scikit-learn: one unit per fold fits the fold's train rows with
        ``partial_fit`` in steps up to each train size (a classifier's
        ``partial_fit`` gets ``classes``, every class of ``y``) and is scored
        after each step, instead of one fit per (fold, size). A failing
        ``partial_fit`` stops the run, as in scikit-learn.
    %(run_options)s

    Returns
    -------
    LearningCurveResult
        Unpacks as ``train_sizes_abs, train_scores, test_scores`` (and the
        times with ``return_times=True``); arrays of shape (n_sizes, n_folds).

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    >>> sizes, train, test = learning_curve(Ridge(), X, y, cv=4, train_sizes=[0.5, 1.0],
    ...                                     backend="serial")
    >>> sizes.tolist(), test.shape
    ([15, 30], (2, 4))
    """
    run = check_run_options(options, run_options, caller="learning_curve")
    _check_incremental(exploit_incremental_learning)
    fit_method = "partial_fit" if exploit_incremental_learning else "fit"
    data = _validation_data("learning_curve", estimator, (X, y, groups), fit_params=fit_params,
                            params=params, cv=cv, scoring=scoring,
                            fit_method=fit_method)  # fmt: skip
    drawn = bool(shuffle) and random_state is None
    if drawn:  # as scikit-learn's random_state=None, but recorded: a resume draws the same rows
        random_state = _recorded_seed(run)
        random_state = draw_seed() if random_state is None else random_state
    curve = plan_learning_curve(estimator, data, train_sizes=train_sizes, cv=cv, scoring=scoring,
                                shuffle=shuffle, random_state=random_state,
                                error_score=error_score, drawn=drawn,
                                incremental=exploit_incremental_learning)  # fmt: skip
    with verbose_output(run.verbose):  # scikit-learn prints this line with verbose > 0
        VERBOSE_LOG.info("[learning_curve] Training set sizes: %s", curve.train_sizes)
    records = _execute(curve.plan, data, "learning_curve", run)
    if not exploit_incremental_learning:  # its failures stop the run
        report_fit_failures(curve.plan, records)
    return make_learning_curve(curve, records, return_times=return_times)


def _check_incremental(value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"exploit_incremental_learning must be True or False; got {value!r}. Pass True to "
            "fit each fold with partial_fit, size after size."
        )


def _recorded_seed(run: RunOptions) -> int | None:
    """The seed a learning curve drew in the store this run resumes (None: none to reuse)."""
    if not run.resume or run.store is None or not Path(run.store).is_file():
        return None
    meta = read_meta(Path(run.store))
    if meta.get("kind") != "learning_curve":
        return None
    seed = json.loads(meta.get("plan", "{}")).get("random_state")
    return seed if isinstance(seed, int) else None


@takes_run_options()
def validation_curve(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    param_name: str,
    param_range: Any,
    groups: Any = None,
    cv: Any = 5,
    scoring: Any = None,
    error_score: Any = math.nan,
    fit_params: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    options: RunOptions | None = None,
    **run_options: Unpack[RunKeywords],
) -> ValidationCurveResult:
    """Train and test scores along one parameter, as scikit-learn's ``validation_curve``.

    Each (value, CV fold) is one unit; the scores are scikit-learn's for the
    same folds.

    Parameters
    ----------
    estimator, X, y, groups, cv, scoring, error_score, fit_params, params
        As in :func:`cross_validate`; ``scoring`` is one metric.
    param_name : str
        The parameter that varies (``step__param`` inside a Pipeline).
    param_range : array-like
        Its values, one row of the result each.
    %(run_options)s

    Returns
    -------
    ValidationCurveResult
        Unpacks as ``train_scores, test_scores`` of shape (n_values, n_folds).

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    >>> train, test = validation_curve(Ridge(), X, y, param_name="alpha",
    ...                                param_range=[0.1, 1.0, 10.0], cv=4, backend="serial")
    >>> test.shape
    (3, 4)
    """
    run = check_run_options(options, run_options, caller="validation_curve")
    data = _validation_data(
        "validation_curve", estimator, (X, y, groups), fit_params=fit_params, params=params,
        cv=cv, scoring=scoring,
    )  # fmt: skip
    curve = plan_validation_curve(estimator, data, param_name=param_name,
                                  param_range=param_range, cv=cv, scoring=scoring,
                                  error_score=error_score)  # fmt: skip
    records = _execute(curve.plan, data, "validation_curve", run)
    return make_validation_curve(curve, records, param_name)


@takes_run_options()
def permutation_test_score(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    groups: Any = None,
    cv: Any = 5,
    n_permutations: int = 100,
    random_state: int = 0,
    scoring: Any = None,
    fit_params: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    options: RunOptions | None = None,
    **run_options: Unpack[RunKeywords],
) -> PermutationTestResult:
    """Test whether a CV score beats chance, as scikit-learn's ``permutation_test_score``.

    The model is cross-validated on the true targets and on ``n_permutations``
    permutations of them (within each group with ``groups``); the p-value is
    the share of permutations that score at least as well (counting the
    true targets once). Each (permutation, fold) is one unit. The
    permutations are scikit-learn's for the same ``random_state``, so the
    result is scikit-learn's. A failing fit stops the run, as in scikit-learn.

    Parameters
    ----------
    estimator, X, y, groups, cv, scoring, fit_params, params
        As in :func:`cross_validate`; ``scoring`` is one metric. With metadata
        routing on, the permutations are not within groups (``groups`` is
        routed to the splitter only), as in scikit-learn.
    n_permutations : int, default=100
    random_state : int, default=0
        Seed of the permutations.
    %(run_options)s

    Returns
    -------
    PermutationTestResult
        Unpacks as ``score, permutation_scores, pvalue``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = make_classification(n_samples=60, random_state=0)
    >>> score, permuted, pvalue = permutation_test_score(
    ...     LogisticRegression(), X, y, cv=3, n_permutations=9, backend="serial")
    >>> permuted.shape, pvalue
    ((9,), 0.2)
    """
    run = check_run_options(options, run_options, caller="permutation_test_score")
    data = _validation_data(
        "permutation_test_score", estimator, (X, y, groups), fit_params=fit_params,
        params=params, cv=cv, scoring=scoring,
    )  # fmt: skip
    curve = plan_permutation_test(
        estimator, data, cv=cv, scoring=scoring, n_permutations=n_permutations,
        random_state=random_state,
    )  # fmt: skip
    records = _execute(curve.plan, data, "permutation_test_score", run)
    return make_permutation_test(curve, records)


@takes_run_options()
def bias_variance(
    estimator: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    y_test: Any,
    *,
    loss: str = "mse",
    n_rounds: int = 200,
    random_state: int = 0,
    options: RunOptions | None = None,
    **run_options: Unpack[RunKeywords],
) -> BiasVarianceResult:
    """Decompose a model's expected loss on a hold-out test set into bias and variance.

    The model is fitted on ``n_rounds`` bootstrap samples of the training
    set (each round one unit) and predicts the test set each time. For
    squared error (``loss="mse"``) the expected loss over training sets is
    bias² + variance + noise: ``avg_bias`` is the squared bias of the mean
    prediction against the observed test targets, so it holds the noise
    too, and ``avg_expected_loss = avg_bias + avg_var``. For the 0-1 loss
    (``loss="0-1"``, integer class labels 0..k-1) the bias is the error of
    the most frequent prediction and the variance how often a round departs
    from it, as mlxtend defines them. The bootstrap samples are those
    ``mlxtend.evaluate.bias_variance_decomp`` draws with
    ``random_seed=random_state``, so the numbers are mlxtend's.

    Parameters
    ----------
    estimator : estimator object
        Cloned for every round.
    X_train, y_train : array-like
        The rows the bootstrap samples are drawn from.
    X_test, y_test : array-like
        The hold-out test set.
    loss : {"mse", "0-1"}, default="mse"
    n_rounds : int, default=200
    random_state : int, default=0
        Seed of the bootstrap samples. A failing fit stops the run.
    %(run_options)s

    Returns
    -------
    BiasVarianceResult
        ``avg_expected_loss``, ``avg_bias``, ``avg_var``; unpacks as those three.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X, y = make_regression(n_samples=60, n_features=3, noise=10.0, random_state=0)
    >>> r = bias_variance(DecisionTreeRegressor(random_state=0), X[:40], y[:40], X[40:], y[40:],
    ...                   n_rounds=20, backend="serial")
    >>> bool(abs(r.avg_expected_loss - (r.avg_bias + r.avg_var)) < 1e-6 * r.avg_expected_loss)
    True
    """
    run = check_run_options(options, run_options, caller="bias_variance")
    data = bias_variance_data(X_train, y_train, X_test, y_test)
    curve = plan_bias_variance(estimator, data, len(y_train), loss=loss, n_rounds=n_rounds,
                               random_state=random_state)  # fmt: skip
    records = _execute(curve.plan, data, "bias_variance", run)
    return make_bias_variance(curve, records, np.asarray(y_test), loss)


@dataclass(frozen=True)
class _SearchExtras:
    """A search's learning curves and bias-variance decompositions, planned before it runs."""

    curve: CurvePlan | None = None
    curve_data: Dataset | None = None
    curve_for: str = "best"
    decomposition: CurvePlan | None = None
    decomposition_data: Dataset | None = None
    y_test: Any = None
    loss: str = "mse"

    @property
    def empty(self) -> bool:
        return self.curve is None and self.decomposition is None


def _one_metric(scoring: Any, refit: Any) -> Any:
    """The search's refit metric as one scorer (a curve has one metric)."""
    if isinstance(scoring, dict):
        return scoring[refit] if isinstance(refit, str) else next(iter(scoring.values()))
    if isinstance(scoring, (list, tuple)):
        return refit if isinstance(refit, str) else scoring[0]
    return scoring


def _hold_out(bias_variance: Any, estimator: Any) -> dict[str, Any]:
    """``bias_variance=`` of a search as the keyword arguments of a decomposition."""
    if isinstance(bias_variance, tuple) and len(bias_variance) == 2:
        given: dict[str, Any] = {"X_test": bias_variance[0], "y_test": bias_variance[1]}
    elif isinstance(bias_variance, dict) and {"X_test", "y_test"} <= set(bias_variance):
        given = dict(bias_variance)
    else:
        raise TypeError(
            "bias_variance needs a hold-out test set: (X_test, y_test) or a dict with keys "
            f"'X_test', 'y_test' (and optionally 'loss', 'n_rounds', 'random_state'); got "
            f"{type(bias_variance).__name__}. Pass bias_variance=(X_test, y_test)."
        )
    keys = ("X_test", "y_test", "loss", "n_rounds", "random_state")
    unknown = sorted(set(given) - set(keys))
    if unknown:
        raise ValueError(
            f"bias_variance has unknown keys {unknown!r}; the keys are 'X_test', "
            "'y_test', 'loss', 'n_rounds' and 'random_state'. " + did_you_mean(unknown[0], keys)
        )
    given.setdefault("loss", "0-1" if is_classifier(estimator) else "mse")
    return {"n_rounds": 200, "random_state": 0, **given}


def _plan_search_extras(
    estimator: Any,
    space: Any,
    arrays: tuple[Any, Any, Any, Any],
    options: dict[str, Any],
    *,
    learning_curve: Any,
    learning_curve_for: Any,
    bias_variance: Any,
) -> _SearchExtras:
    """Plan (and so check) a search's learning curves and decompositions before it runs."""
    if learning_curve is None and bias_variance is None:
        return _SearchExtras()
    if learning_curve_for not in ("best", "all"):
        raise ValueError(
            f"learning_curve_for must be 'best' (the selected candidate) or 'all' (every "
            f"candidate); got {learning_curve_for!r}."
        )
    params = [dict(c.params) for c in check_space(space)]
    candidates = candidate_space(params)
    extras = _SearchExtras(curve_for=learning_curve_for)
    if learning_curve is not None:
        data = check_dataset(*arrays)
        curve = plan_learning_curve(
            estimator, data, train_sizes=learning_curve, cv=options["cv"],
            scoring=_one_metric(options["scoring"], options["refit"]), shuffle=False,
            random_state=None, error_score=options["error_score"], space=candidates,
        )  # fmt: skip
        extras = replace(extras, curve=curve, curve_data=data)
    if bias_variance is not None:
        hold = _hold_out(bias_variance, estimator)
        data = bias_variance_data(arrays[0], arrays[1], hold["X_test"], hold["y_test"])
        plan = plan_bias_variance(estimator, data, len(arrays[1]), loss=hold["loss"],
                                  n_rounds=hold["n_rounds"], random_state=hold["random_state"],
                                  space=candidates)  # fmt: skip
        extras = replace(extras, decomposition=plan, decomposition_data=data,
                         y_test=np.asarray(hold["y_test"]), loss=hold["loss"])  # fmt: skip
    return extras


def _sibling(options: RunOptions, what: str) -> RunOptions:
    """The search's options for one of its extras: its own store beside the search's."""
    store = None if options.store is None else f"{options.store}.{what}.sqlite"
    return replace(options, store=store, save_models=False)


def _run_search_extras(
    extras: _SearchExtras, result: SearchResult, options: RunOptions
) -> SearchResult:
    """Run the planned learning curves and decompositions; attach them to the result."""
    curves = decomposition = None
    if extras.curve is not None and extras.curve_data is not None:
        chosen = (
            [result.best_index_]
            if extras.curve_for == "best"
            else list(range(len(result.candidates)))
        )
        curve = for_candidates(extras.curve, chosen)
        records = _execute(curve.plan, extras.curve_data, "learning_curve",
                           _sibling(options, "learning_curve"))  # fmt: skip
        curves = {c: make_learning_curve(curve, records, return_times=False, candidate=c)
                  for c in chosen}  # fmt: skip
    if extras.decomposition is not None and extras.decomposition_data is not None:
        records = _execute(extras.decomposition.plan, extras.decomposition_data,
                           "bias_variance", _sibling(options, "bias_variance"))  # fmt: skip
        decomposition = make_bias_variance_tradeoff(
            extras.decomposition, records, extras.y_test, extras.loss
        )
    return replace(result, learning_curves=curves, bias_variance=decomposition)


# Searches in rounds: any strategy (halving, Hyperband, early stopping, a sampler) on one driver.


def _check_strategy_options(strategy: Strategy, unsupported: dict[str, Any]) -> None:
    """Refuse what a search in rounds does not do, before anything runs."""
    given = sorted(name for name, value in unsupported.items()
                   if value is not None and value is not False)  # fmt: skip
    if given:
        raise ValueError(
            f"{strategy.name} does not combine with {', '.join(given)}; got "
            f"{', '.join(f'{n}={unsupported[n]!r}' for n in given)}. Drop them, or search "
            f"without {strategy.name}."
        )


def _check_random_state(random_state: Any, strategy: Strategy | None) -> None:
    """Refuse a run seed that is not an int >= 0, or that no strategy would draw from."""
    if random_state is None:
        return
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(
        random_state, (int, np.integer)
    ):
        raise TypeError(
            f"random_state must be an int >= 0 or None; got {random_state!r}. Pass e.g. "
            "random_state=0: the run's seed of a strategy's draws."
        )
    if random_state < 0:
        raise ValueError(
            f"random_state must be an int >= 0 or None; got {random_state!r}. Pass e.g. "
            "random_state=0."
        )
    if strategy is None:
        raise ValueError(
            f"random_state seeds a strategy's rounds; got random_state={random_state!r} "
            "without a strategy, which would draw nothing from it. Drop it, seed a "
            "RandomSpace with its own random_state, or pass strategy=... (e.g. parcv.Sampler)."
        )


def _in_rounds(
    kind: str,
    estimator: Any,
    space: Any,
    data: Dataset,
    strategy: Strategy,
    o: dict[str, Any],
    run: RunOptions,
) -> Any:
    """Run a search (or nested CV) whose strategy proposes its units round by round."""
    job, _ = plan_rounds(kind, estimator, space, data, strategy, o)
    with start_output(shows_progress(run.progress, run.verbose)):
        runs = execute_rounds(job, data, kind, run)
    return make_rounds_result(kind, job.base, runs, job.config)
