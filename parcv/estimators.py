"""Drop-in estimators: GridSearchCV, RandomizedSearchCV, NestedCV and the Halving searches.

They take scikit-learn's constructor names and expose scikit-learn's fitted
attributes, so that existing code (a ``Pipeline``, ``clone``, ``pickle``,
``cross_val_score``) runs unchanged; ``fit`` calls :func:`parcv.search` or
:func:`parcv.nested_cv` and copies what they return. The parcv result itself
is ``result_`` (tests, comparisons, reports).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.callback import CallbackContext, CallbackSupportMixin, with_callbacks
from sklearn.model_selection import ParameterSampler
from sklearn.utils import _safe_indexing, indexable
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from parcv.api import nested_cv, search
from parcv.engine.options import RunOptions, check_run_options
from parcv.errors import ModelNotAvailableError
from parcv.plan.curves import draw_seed
from parcv.plan.data import n_rows_of
from parcv.plan.halving import Halving, check_resource, resolve_resources
from parcv.plan.routing import RoutedParams, route_search, routing_enabled, scorers_router
from parcv.plan.scoring import check_scoring_spec
from parcv.plan.space import RandomSpace
from parcv.plan.splits import Fold, check_scheme, materialize_folds
from parcv.results.aggregate import warn_non_finite
from parcv.results.objects import NestedResult, SearchResult

__all__ = [
    "GridSearchCV",
    "HalvingGridSearchCV",
    "HalvingRandomSearchCV",
    "NestedCV",
    "RandomizedSearchCV",
]


def _refit_is_callable_or_false(refit: Any) -> bool:
    return callable(refit) or refit is False


def _has(attr: str) -> Callable[[Any], bool]:
    """``available_if`` check: the method exists when refit is on and the model has it."""

    def check(self: Any) -> bool:
        _require_refit(self, attr)
        # Raises AttributeError (hasattr False) when the model has no such method.
        getattr(self.best_estimator_ if hasattr(self, "best_estimator_") else self.estimator, attr)
        return True

    return check


def _forward(name: str) -> Any:
    """A method calling ``name`` of the refitted model (``hasattr`` is False when it has none)."""

    def method(self: Any, X: Any) -> Any:
        check_is_fitted(self)
        return getattr(self.best_estimator_, name)(X)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Call ``{name}`` of the refitted model."
    return available_if(_has(name))(method)


class _SearchFace(CallbackSupportMixin, MetaEstimatorMixin, BaseEstimator):  # type: ignore[misc]
    """What GridSearchCV, RandomizedSearchCV and NestedCV share: the fitted face.

    ``set_callbacks`` (scikit-learn's ``sklearn.callback``) takes callbacks
    that ``fit`` calls on the driver with scikit-learn's task tree: the fit,
    the search, one ``candidate-split-evaluation`` per (candidate, fold) of
    the CV on all data, and the refit. The evaluations run as parcv's units
    (in other processes, or read back from a store): their hooks are called
    once the graph has run, in the order of the candidates and folds, each
    with its training rows and their ``sample_weight``. Callbacks are not
    propagated into the fitted sub-estimators.
    """

    estimator: Any
    scoring: Any
    refit: Any
    verbose: int
    error_score: Any
    return_train_score: bool
    backend: Any
    n_jobs: int | None
    store: Any
    resume: bool
    racing: Any
    options: RunOptions | None
    scorer_: Any
    # Set by the classes that take it (a search whose iteration parameter is a path).
    iterations: Any = None
    # Set by the classes that take it: a strategy of rounds (a Sampler, Halving, ...).
    strategy: Any = None

    def _space(self) -> Any:
        raise NotImplementedError

    def _run(self, X: Any, y: Any, params: RoutedParams) -> SearchResult | NestedResult:
        raise NotImplementedError

    def _cv(self) -> Any:
        """The splitter the search's ``fit`` metadata is routed to."""
        raise NotImplementedError

    def _scorers(self) -> tuple[dict[str, Any], bool]:
        """The scorers by name, and whether there are several (as routing sees them)."""
        spec = check_scoring_spec(self.estimator, self.scoring, self._api_refit())
        return dict(spec.scorers), spec.multimetric

    def get_metadata_routing(self) -> Any:
        """Get the metadata routing of this search, as scikit-learn's ``BaseSearchCV``.

        Returns
        -------
        MetadataRouter
            ``fit`` routes to the estimator's ``fit``, the scorers' ``score``
            and the splitter's ``split``; ``score`` to the scorers' ``score``.
        """
        named, multimetric = self._scorers()
        scorer = scorers_router(named) if multimetric else named["score"]
        cv = self._cv()
        return (
            MetadataRouter(owner=self)
            .add(
                estimator=self.estimator,
                method_mapping=MethodMapping().add(caller="fit", callee="fit"),
            )
            .add(
                scorer=scorer,
                method_mapping=MethodMapping()
                .add(caller="score", callee="score")
                .add(caller="fit", callee="score"),
            )
            .add(
                splitter=cv if hasattr(cv, "split") else None,
                method_mapping=MethodMapping().add(caller="fit", callee="split"),
            )
        )

    def _options(self) -> dict[str, Any]:
        """The keyword arguments every call of parcv's API shares (the run options as one)."""
        return dict(
            scoring=self.scoring,
            refit=self._api_refit(),
            return_train_score=self.return_train_score,
            error_score=self.error_score,
            racing=self.racing,
            iterations=self.iterations,
            strategy=self.strategy,
            options=self._run_options(),
        )

    def _run_options(self) -> RunOptions:
        """The run options: ``options``, or scikit-learn's names (those not left at default)."""
        own = {
            "backend": self.backend,
            "n_jobs": self.n_jobs,
            "store": self.store,
            "resume": self.resume,
            # scikit-learn's searches take verbose=True as 1.
            "verbose": int(self.verbose) if isinstance(self.verbose, bool) else self.verbose,
        }
        if self.options is None:
            # verbose=0 means quiet, not the bar on a terminal that progress=None shows.
            return RunOptions(**own, progress=self.verbose > 0)
        given = {k: v for k, v in own.items() if not _is_default(v, _OWN_DEFAULTS[k])}
        return check_run_options(self.options, given, caller=type(self).__name__, final_model=True)

    def _api_refit(self) -> bool | str:
        """``refit`` as parcv's API takes it: a callable refits here, after the CV."""
        if _refit_is_callable_or_false(self.refit):
            return False
        if _is_multimetric(self.scoring) or (
            callable(self.scoring) and isinstance(self.refit, str)
        ):
            # A callable scoring may return a dict of metrics: refit names one of them.
            return str(self.refit) if isinstance(self.refit, str) else bool(self.refit)
        return bool(self.refit)  # scikit-learn: with one metric, any true refit means True

    @with_callbacks  # type: ignore[untyped-decorator]
    def fit(self, X: Any, y: Any = None, **params: Any) -> Any:
        """Run the search (as one task graph) and refit the best candidate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **params : dict
            As scikit-learn's: without metadata routing, ``groups`` goes to the
            splitter, the rest to the estimator's ``fit`` (per-sample arrays
            are split with the rows), and ``sample_weight`` also to every
            scorer that accepts it; with
            ``sklearn.set_config(enable_metadata_routing=True)``, routed by
            :meth:`get_metadata_routing` (scikit-learn's errors are raised
            before any fit).

        Returns
        -------
        self
        """
        _check_refit_kind(self.refit, self.scoring)
        routed = route_search(self, self.estimator, self._cv(), self._scorers, params)
        fit_params = routed.fit
        weights = params.get("sample_weight")
        metadata = None if weights is None else {"sample_weight": weights}
        root = self._init_callback_context(max_subtasks=1 + (self.refit is not False))
        root.call_on_fit_task_begin(estimator=self, X=X, y=y, metadata=metadata)
        result = self._run(X, y, routed)
        search_result = result.final if isinstance(result, NestedResult) else result
        if search_result is None:  # NestedCV always runs the search on all data
            raise ModelNotAvailableError("nested CV ran without its search on all data")
        self.result_ = result
        self._tell_callbacks(root, search_result, (X, y, weights))
        self._copy(search_result, X, y, fit_params)
        if self.refit is not False:
            refit = root.subcontext(task_name="refit-with-best-params")
            refit.call_on_fit_task_begin(estimator=self, X=X, y=y, metadata=metadata)
            refit.call_on_fit_task_end(estimator=self, X=X, y=y, metadata=metadata)
        root.call_on_fit_task_end(estimator=self, X=X, y=y, metadata=metadata)
        return self

    def _tell_callbacks(
        self, root: CallbackContext, result: SearchResult, data: tuple[Any, Any, Any]
    ) -> None:
        """Call the hooks of the search and of each (candidate, fold) evaluation it ran."""
        if not getattr(self, "_skl_callbacks", None):
            return  # nothing to call: index no training rows
        n_splits = len(result.splits)
        data = (*indexable(data[0], data[1]), data[2])  # as scikit-learn splits them
        search_ctx = root.subcontext(task_name="search", sequential_subtasks=False,
                                     max_subtasks=len(result.candidates) * n_splits)  # fmt: skip
        search_ctx.call_on_fit_task_begin(estimator=self)
        for c in range(len(result.candidates)):
            for i, fold in enumerate(result.splits):
                task = search_ctx.subcontext(task_name="candidate-split-evaluation",
                                             task_id=c * n_splits + i)  # fmt: skip
                train = _train_rows(fold, data)
                task.call_on_fit_task_begin(estimator=self, **train)
                task.call_on_fit_task_end(estimator=self, **train)
        search_ctx.call_on_fit_task_end(estimator=self)

    def _copy(self, result: SearchResult, X: Any, y: Any, fit_params: dict[str, Any]) -> None:
        """Set scikit-learn's fitted attributes from a SearchResult."""
        api_refit = self._api_refit()
        spec = check_scoring_spec(self.estimator, self.scoring, api_refit)
        # scikit-learn's keys: parcv's count of failed fits stays in result_.cv_results_.
        self.cv_results_ = {k: v for k, v in result.cv_results_.items() if k != "n_failed_fits"}
        warn_non_finite(self.cv_results_)  # as GridSearchCV's _format_results
        self.n_splits_ = result.n_splits_
        self.multimetric_ = result.multimetric  # a callable's dict of metrics is one too
        self.scorer_ = dict(spec.scorers) if spec.multimetric else spec.scorers["score"]
        for name in ("best_index_", "best_params_", "best_score_", "best_estimator_",
                     "refit_time_", "feature_names_in_"):  # fmt: skip
            self.__dict__.pop(name, None)  # a refit of this object starts clean
        if callable(self.refit):
            self.best_index_ = _callable_index(self.refit, result.cv_results_)
            self.best_params_ = result.cv_results_["params"][self.best_index_]
            started = time.perf_counter()
            model = clone(self.estimator).set_params(**clone(self.best_params_, safe=False))
            self.best_estimator_ = model.fit(X, y, **fit_params)
            self.refit_time_ = time.perf_counter() - started
        elif self.refit or not self.multimetric_:
            self.best_index_ = result.best_index_
            self.best_params_ = result.best_params_
            self.best_score_ = result.best_score_
        if self.refit is not False and not callable(self.refit):
            self.best_estimator_ = result.best_estimator_
            final = [r for r in result.records if r.unit.kind == "final"]
            self.refit_time_ = final[0].fit_time if final else math.nan
        if hasattr(getattr(self, "best_estimator_", None), "feature_names_in_"):
            self.feature_names_in_ = self.best_estimator_.feature_names_in_

    def score(self, X: Any, y: Any = None, **params: Any) -> float:
        """Score the refitted model with the refit metric (``best_estimator_.score`` by default).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
        **params : dict
            Metadata for the scorer, routed as scikit-learn routes it; only
            with ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            ``params`` given while metadata routing is off (scikit-learn's error).
        """
        _require_refit(self, "score")
        check_is_fitted(self)
        score_params = self._score_params(params)
        if self.multimetric_:
            if not isinstance(self.refit, str):  # a callable: scikit-learn fails here too
                raise AttributeError(
                    f"score needs refit to name a metric of scoring={self.scoring!r}; got "
                    f"refit={self.refit!r}. Score best_estimator_ with a scorer of scorer_."
                )
            if not isinstance(self.scorer_, dict):  # one callable returning a dict of metrics
                return float(self.scorer_(self.best_estimator_, X, y, **score_params)[self.refit])
            scorer = self.scorer_[self.refit]
            if score_params:  # scikit-learn's multi-metric scorer routes among its scorers
                score_params = process_routing(scorers_router(self.scorer_), "score",
                                               **score_params)[self.refit]["score"]  # fmt: skip
            return float(scorer(self.best_estimator_, X, y, **score_params))
        return float(self.scorer_(self.best_estimator_, X, y, **score_params))

    def _score_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The scorer's metadata of ``score(**params)``, as scikit-learn's searches route it."""
        if not params:
            return {}
        if not routing_enabled():
            # scikit-learn's text (its _raise_for_params), which callers may match.
            raise ValueError(
                f"Passing extra keyword arguments to {type(self).__name__}.score is only "
                "supported if enable_metadata_routing=True, which you can set using "
                "`sklearn.set_config`. See the User Guide "
                "<https://scikit-learn.org/stable/metadata_routing.html> for more details. "
                f"Extra parameters passed are: {set(params)}"
            )
        return dict(process_routing(self, "score", **params)["scorer"]["score"])

    score_samples = _forward("score_samples")
    predict = _forward("predict")
    predict_proba = _forward("predict_proba")
    predict_log_proba = _forward("predict_log_proba")
    decision_function = _forward("decision_function")
    transform = _forward("transform")
    inverse_transform = _forward("inverse_transform")

    @property
    def n_features_in_(self) -> int:
        """Number of features the refitted model saw (only with refit)."""
        if not hasattr(self, "best_estimator_"):
            raise AttributeError(
                f"{type(self).__name__} object has no n_features_in_ attribute: it is not "
                "fitted, or was fitted with refit=False."
            )
        return int(self.best_estimator_.n_features_in_)

    @property
    def classes_(self) -> Any:
        """Class labels of the refitted classifier (only with refit)."""
        _has("classes_")(self)
        return self.best_estimator_.classes_

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.input_tags.pairwise = inner.input_tags.pairwise
        tags.input_tags.sparse = inner.input_tags.sparse
        return tags


# The estimators' own run parameters at their defaults.
_OWN_DEFAULTS: dict[str, Any] = {
    "backend": "local",
    "n_jobs": None,
    "store": None,
    "resume": False,
    "verbose": 0,
}


def _train_rows(fold: Fold, data: tuple[Any, Any, Any]) -> dict[str, Any]:
    """``X``, ``y`` and ``metadata`` (``sample_weight``) of a fold's training rows."""
    X, y, weights = data
    rows = fold.train
    return {
        "X": _safe_indexing(X, rows),
        "y": None if y is None else _safe_indexing(y, rows),
        "metadata": None if weights is None else {"sample_weight": _safe_indexing(weights, rows)},
    }


# RandomizedSearchCV's n_iter by default (scikit-learn's): with a sampler, n_trials counts.
_N_ITER = 10


def _is_default(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


def _check_refit_kind(refit: Any, scoring: Any) -> None:
    """``refit`` is a bool, a metric name or a callable(cv_results_) -> index."""
    if _is_multimetric(scoring) and not (refit is False or callable(refit)):
        names = list(scoring)
        if not (isinstance(refit, str) and refit in names):
            raise ValueError(
                "For multi-metric scoring, the parameter refit must be set to a scorer key or "
                "a callable to refit an estimator with the best parameter setting on the whole "
                "data and make the best_* attributes available for that metric. If this is not "
                f"needed, refit should be set to False explicitly. {refit!r} was passed; the "
                f"scorer keys are {names!r}."
            )
    if isinstance(refit, (bool, np.bool_, str)) or callable(refit):
        return
    raise TypeError(
        f"refit must be True, False, a metric name or a callable(cv_results_) -> int; got "
        f"refit={refit!r}. Pass e.g. refit=True, or refit='r2' with several metrics."
    )


def _callable_index(refit: Callable[[dict[str, Any]], Any], cv_results: dict[str, Any]) -> int:
    """scikit-learn's semantics of a callable ``refit``: it returns ``best_index_``."""
    given = refit(cv_results)
    if not isinstance(given, numbers.Integral):
        raise TypeError("best_index_ returned is not an integer")
    index = int(given)
    if index < 0 or index >= len(cv_results["params"]):
        raise IndexError("best_index_ index out of range")
    return int(index)


def _require_refit(search: Any, method: str) -> None:
    if search.refit is False:
        raise AttributeError(
            f"This {type(search).__name__} instance was initialized with `refit=False`. "
            f"{method} is available only after refitting on the best parameters. Pass "
            "refit=True (or, with several metrics, a metric name) to use it."
        )


class GridSearchCV(_SearchFace):
    """Exhaustive search over a grid, as scikit-learn's ``GridSearchCV``, run by parcv.

    Every (fold, candidate) fit is a unit of one task graph (see
    :func:`parcv.search`); the fitted attributes are scikit-learn's.

    Parameters
    ----------
    estimator : estimator object
    param_grid : dict or list of dict
    scoring : str, callable, list or dict, default=None
    n_jobs : int, default=None
        Worker processes of ``backend``; ``None`` uses every core.
    refit : bool, str or callable, default=True
        As scikit-learn: ``True`` (or, with several metrics, the metric name)
        refits the best candidate on all data in the graph; a callable gets
        ``cv_results_`` and returns ``best_index_`` (``best_score_`` is then
        not set) and that candidate is refitted in this process after the CV.
    cv : int, splitter or None, default=None
        ``None`` is 5 folds (stratified for classifiers).
    verbose : int, default=0
        ``> 0`` shows parcv's progress bar (done/failed/total, ETA) on stderr;
        ``> 1`` also prints scikit-learn's line per finished fit, with its
        scores from ``> 2`` (see the ``verbose`` run option).
    error_score : "raise" or float, default=nan
    return_train_score : bool, default=False
    backend : {"serial", "local", "dask"} or Backend, default="local"
    store : str or Path, default=None
        SQLite file that records every unit (see :func:`parcv.search`).
    resume : bool, default=False
        Reuse the records of ``store``; compute only what is missing.
    racing : Racing, default=None
        Drop candidates a paired test finds worse, fold by fold.
    iterations : Iterations, default=None
        Score an iteration parameter (``n_estimators``, ``max_iter``) as a
        path, one fit per (fold, point of the grid), with early stopping by
        ``patience`` (see :func:`parcv.search`); ``cv_results_`` has a row per
        (point, iteration count), as if the count were a grid axis.
    strategy : Halving, Hyperband, Sampler or a strategy, default=None
        Choose the units in rounds (see :func:`parcv.search`). A strategy
        without a seed of its own draws from the run's seed:
        ``random_state`` in :class:`RandomizedSearchCV`, 0 here. With
        :class:`parcv.Sampler` in :class:`RandomizedSearchCV`, the sampler
        proposes from ``param_distributions`` and its ``n_trials`` counts the
        trials (see ``n_iter`` there).
    options : RunOptions, default=None
        Every run option of :func:`parcv.search` as one object (``timeout``,
        ``retry_failed``, ``journal``, ``save_models``, ...); then
        ``backend``, ``n_jobs``, ``store``, ``resume`` and ``verbose`` stay
        at their defaults (giving one of them too is refused).

    Attributes
    ----------
    cv_results_, best_estimator_, best_score_, best_params_, best_index_
        As scikit-learn's.
    scorer_, n_splits_, refit_time_, multimetric_, classes_, n_features_in_
        As scikit-learn's.
    result_ : SearchResult
        parcv's result: tests between candidates, text, JSON, ``to_frame``.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, noise=5.0, random_state=0)
    >>> gs = GridSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, cv=3, backend="serial").fit(X, y)
    >>> gs.best_params_, gs.predict(X[:2]).shape
    ({'alpha': 0.1}, (2,))
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: Any = True,
        cv: Any = None,
        verbose: int = 0,
        error_score: Any = np.nan,
        return_train_score: bool = False,
        backend: Any = "local",
        store: Any = None,
        resume: bool = False,
        racing: Any = None,
        iterations: Any = None,
        strategy: Any = None,
        options: RunOptions | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.cv = cv
        self.verbose = verbose
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.backend = backend
        self.store = store
        self.resume = resume
        self.racing = racing
        self.iterations = iterations
        self.strategy = strategy
        self.options = options

    def _space(self) -> Any:
        return self.param_grid

    def _cv(self) -> Any:
        return 5 if self.cv is None else self.cv

    def _run(self, X: Any, y: Any, params: RoutedParams) -> SearchResult | NestedResult:
        return search(self.estimator, self._space(), X, y, cv=self._cv(), params=params,
                      **self._options())  # fmt: skip


class RandomizedSearchCV(GridSearchCV):
    """Random search, as scikit-learn's ``RandomizedSearchCV``, run by parcv.

    Parameters
    ----------
    estimator : estimator object
    param_distributions : dict or list of dict
        Lists (sampled uniformly) or ``scipy.stats`` distributions.
    n_iter : int, default=10
        Candidates drawn. With a :class:`parcv.Sampler` strategy the
        sampler's ``n_trials`` counts the trials instead: ``n_iter`` left at
        its default is not used, and another ``n_iter`` must equal
        ``n_trials`` (it is refused before anything runs otherwise).
    random_state : int, RandomState or None, default=None
        An int draws the candidates of scikit-learn's ``RandomizedSearchCV``
        with that seed (and a resumed run draws the same ones); ``None`` or a
        ``RandomState`` draws them as scikit-learn does, differently each fit.
        With a ``strategy`` it is also the run's seed (``random_state`` of
        :func:`parcv.search`), from which a strategy without a seed of its own
        draws (a ``Sampler`` without ``seed``: its trials): an int gives the
        same trials on every fit and resume; ``None`` a seed drawn anew each
        fit, a ``RandomState`` one drawn from it, as scikit-learn would.
    scoring, n_jobs, refit, cv, verbose, error_score, return_train_score
        As in :class:`GridSearchCV`.
    backend, store, resume, racing, iterations, strategy, options
        As in :class:`GridSearchCV`.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=40, n_features=3, noise=5.0, random_state=0)
    >>> rs = RandomizedSearchCV(Ridge(), {"alpha": loguniform(1e-3, 1e3)}, n_iter=3,
    ...                         random_state=0, cv=3, backend="serial").fit(X, y)
    >>> len(rs.cv_results_["params"])
    3
    """

    def __init__(
        self,
        estimator: Any,
        param_distributions: Any,
        *,
        n_iter: int = _N_ITER,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: Any = True,
        cv: Any = None,
        verbose: int = 0,
        random_state: Any = None,
        error_score: Any = np.nan,
        return_train_score: bool = False,
        backend: Any = "local",
        store: Any = None,
        resume: bool = False,
        racing: Any = None,
        iterations: Any = None,
        strategy: Any = None,
        options: RunOptions | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.cv = cv
        self.verbose = verbose
        self.random_state = random_state
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.backend = backend
        self.store = store
        self.resume = resume
        self.racing = racing
        self.iterations = iterations
        self.strategy = strategy
        self.options = options

    def _options(self) -> dict[str, Any]:
        options = super()._options()
        if self.strategy is not None:
            options["random_state"] = _run_seed(self.random_state)
        return options

    def _space(self) -> Any:
        if getattr(self.strategy, "takes_distributions", False):
            _check_n_iter(self.n_iter, self.strategy)
            return self.param_distributions  # a sampler proposes from them: nothing drawn
        seed = self.random_state
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            return RandomSpace(self.param_distributions, n_iter=self.n_iter, random_state=int(seed))
        draws = ParameterSampler(self.param_distributions, self.n_iter, random_state=seed)
        return [{name: [value] for name, value in params.items()} for params in draws]


def _run_seed(random_state: Any) -> int:
    """The run's seed of a drop-in's strategy: an int as given; else drawn as scikit-learn would.

    ``None`` draws one from the system's entropy (scikit-learn's ``random_state=None``:
    different each fit); a ``RandomState`` gives one of its draws.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    if random_state is None:
        return draw_seed()
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**32, dtype=np.int64))
    raise TypeError(
        f"random_state must be an int, a numpy RandomState or None; got {random_state!r}. "
        "Pass e.g. random_state=0."
    )


def _check_n_iter(n_iter: Any, strategy: Any) -> None:
    """Refuse an ``n_iter`` other than the default that disagrees with a sampler's n_trials."""
    n_trials = getattr(strategy, "n_trials", None)
    if _is_default(n_iter, _N_ITER) or (n_trials is not None and n_iter == n_trials):
        return
    name = getattr(strategy, "name", type(strategy).__name__)
    trials = "its own trials" if n_trials is None else f"n_trials={n_trials!r} trials"
    raise ValueError(
        f"n_iter={n_iter!r} does not go with strategy={name}, which proposes {trials} from "
        "param_distributions: n_iter counts the candidates a random search draws, and the "
        "sampler counts its trials itself. Give the count once: drop n_iter (its default is "
        "not used with a sampler), or set it equal to n_trials."
    )


class NestedCV(_SearchFace):
    """Nested CV of a grid search, then the search on all data: one estimator.

    ``fit`` runs :func:`parcv.nested_cv`: for each outer fold, an inner CV
    on the outer-train part selects a candidate, refitted and scored on the
    outer-test part (the estimate of the whole selection procedure); and the
    same search on all data selects and refits the model to ship, whose
    attributes (``best_estimator_``, ``cv_results_``, ``predict``, ...) are
    those of :class:`GridSearchCV`.

    Parameters
    ----------
    estimator : estimator object
    param_grid : dict, list of dict or RandomSpace
    outer : int or splitter, default=5
    inner : int or splitter, default=3
    scoring, n_jobs, verbose, error_score, return_train_score, backend, store, resume, racing
        As in :class:`GridSearchCV`.
    iterations : Iterations, default=None
        As in :class:`GridSearchCV`, for every inner CV and the search on all data.
    strategy : Halving, Hyperband, Sampler or a strategy, default=None
        As in :class:`GridSearchCV`, for every inner CV and the search on all data.
    options : RunOptions, default=None
        As in :class:`GridSearchCV`.
    refit : bool, str or callable, default=True
        As in :class:`GridSearchCV`, for the search on all data.

    Attributes
    ----------
    outer_scores_ : dict of str to ndarray of shape (n_outer_splits,)
        Score of each outer fold's selected and refitted candidate.
    result_ : NestedResult
        parcv's result: estimate, choices per outer fold, stability.
    cv_results_, best_estimator_, best_score_, best_params_, best_index_
        Of the search on all data, as :class:`GridSearchCV`.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
    >>> nested = NestedCV(Ridge(), {"alpha": [0.1, 10.0]}, outer=3, backend="serial").fit(X, y)
    >>> nested.outer_scores_["score"].shape, nested.best_params_
    ((3,), {'alpha': 0.1})
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        outer: Any = 5,
        inner: Any = 3,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: Any = True,
        verbose: int = 0,
        error_score: Any = np.nan,
        return_train_score: bool = False,
        backend: Any = "local",
        store: Any = None,
        resume: bool = False,
        racing: Any = None,
        iterations: Any = None,
        strategy: Any = None,
        options: RunOptions | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.outer = outer
        self.inner = inner
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.verbose = verbose
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.backend = backend
        self.store = store
        self.resume = resume
        self.racing = racing
        self.iterations = iterations
        self.strategy = strategy
        self.options = options

    def _cv(self) -> Any:
        return self.outer

    def _run(self, X: Any, y: Any, params: RoutedParams) -> SearchResult | NestedResult:
        options = self._options()
        # The all-data search gives cv_results_ (and the model); run it whatever refit says.
        if options["refit"] is False:
            options["refit"] = True if not _is_multimetric(self.scoring) else _first(self.scoring)
        result = nested_cv(self.estimator, self.param_grid, X, y, outer=self.outer,
                           inner=self.inner, params=params, **options)  # fmt: skip
        self.outer_scores_ = result.outer_scores
        return result


def _is_multimetric(scoring: Any) -> bool:
    return not (scoring is None or isinstance(scoring, str) or callable(scoring))


def _first(scoring: Any) -> str:
    return str(next(iter(scoring)))


class _HalvingFace(_SearchFace):
    """What HalvingGridSearchCV and HalvingRandomSearchCV share: the rungs' attributes."""

    factor: Any
    resource: Any
    max_resources: Any
    min_resources: Any
    aggressive_elimination: Any
    random_state: Any
    cv: Any
    racing: Any = None

    def _cv(self) -> Any:
        return self.cv

    def _halving(self, min_resources: Any = None) -> Halving:
        return Halving(
            resource=self.resource,
            factor=self.factor,
            min_resources=self.min_resources if min_resources is None else min_resources,
            max_resources=self.max_resources,
            aggressive_elimination=self.aggressive_elimination,
            random_state=self.random_state,
        )

    def _run(self, X: Any, y: Any, params: RoutedParams) -> SearchResult | NestedResult:
        halving = self._halving()  # checked before the candidates are drawn
        check_resource(halving, self.estimator, [])
        options = {k: v for k, v in self._options().items() if k != "racing"}
        if self.random_state is None:  # scikit-learn's None: other rows on every fit
            options["random_state"] = _run_seed(None)
        result = search(self.estimator, self._candidates(X, y, params, halving), X, y,
                        cv=self._cv(), params=params, halving=halving, **options)  # fmt: skip
        for name in _HALVING_ATTRIBUTES:
            setattr(self, name, getattr(result, name))
        return result

    def _candidates(self, X: Any, y: Any, params: RoutedParams, halving: Halving) -> Any:
        raise NotImplementedError

    @staticmethod
    def _select_best_index(refit: Any, refit_metric: Any, results: dict[str, Any]) -> int:
        """The best candidate of the last rung, as scikit-learn's hook of that name.

        The first of the best mean test scores; 0 of the last rung when all are NaN.
        """
        iterations = np.asarray(results["iter"])
        last = np.flatnonzero(iterations == iterations.max())
        scores = np.asarray(results["mean_test_score"], dtype=np.float64)[last]
        return int(last[0 if np.isnan(scores).all() else int(np.nanargmax(scores))])


# scikit-learn's fitted attributes of a Halving search, beyond GridSearchCV's.
_HALVING_ATTRIBUTES = (
    "n_resources_",
    "n_candidates_",
    "n_remaining_candidates_",
    "min_resources_",
    "max_resources_",
    "n_iterations_",
    "n_possible_iterations_",
    "n_required_iterations_",
)

_HALVING_DOC = """\
    factor : float, default=3
        Each rung keeps ``ceil(n_candidates / factor)`` candidates and gives
        them ``factor`` times the resource.
    resource : str, default="n_samples"
        Rows per fold, or an estimator parameter (``n_estimators``) set to the
        rung's resource in every candidate.
    max_resources : int or "auto", default="auto"
    min_resources : int, "exhaust" or "smallest"
    aggressive_elimination : bool, default=False
    cv : int or splitter, default=5
        Must give the same folds at every call (no unseeded shuffling).
    scoring : str or callable, default=None
    refit : bool or callable, default=True
        Refit the best candidate of the last rung on all data. A callable
        gets ``cv_results_`` (every rung's rows) and returns ``best_index_``,
        as scikit-learn documents (its implementation ignores the callable and
        takes the last rung's best); that candidate is refitted after the search.
    error_score : "raise" or float, default=nan
    return_train_score : bool, default=True
    random_state : int, RandomState or None, default=None
        Seed of the subsamples (and of the draws of the random search), as
        scikit-learn's; an int makes a resumed run reuse every finished rung.
        ``None`` draws other rows on every fit, as scikit-learn's (the run's
        seed is drawn anew: see :class:`parcv.Halving`).
    n_jobs, verbose, backend, store, resume, options
        As in :class:`GridSearchCV`.

    Attributes
    ----------
    n_resources_, n_candidates_, n_remaining_candidates_, min_resources_
        As scikit-learn's.
    max_resources_, n_iterations_, n_possible_iterations_, n_required_iterations_
        As scikit-learn's.
    cv_results_, best_estimator_, best_score_, best_params_, best_index_
        As scikit-learn's: one row per (rung, candidate), with ``iter`` and
        ``n_resources``; the best candidate of the last rung.
    result_ : HalvingResult
        parcv's result, with each rung's :class:`SearchResult`.
"""


class HalvingGridSearchCV(_HalvingFace):
    """Successive halving over a grid, as scikit-learn's ``HalvingGridSearchCV``, run by parcv.

    Every candidate is scored with a small resource; the best ``1 / factor``
    go on with ``factor`` times more, rung after rung (see
    :class:`parcv.Halving` and :func:`parcv.search`). Each rung is one task
    graph; with the same ``cv`` and ``random_state``, the rungs, the kept
    candidates, ``cv_results_`` and the winner are scikit-learn's.

    Parameters
    ----------
    estimator : estimator object
    param_grid : dict or list of dict
    %(halving)s
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=90, n_features=3, noise=5.0, random_state=0)
    >>> grid = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]}
    >>> hs = HalvingGridSearchCV(Ridge(), grid, cv=3, random_state=0, backend="serial").fit(X, y)
    >>> hs.n_candidates_, hs.n_resources_
    ([6, 2], [30, 90])
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        factor: float = 3,
        resource: str = "n_samples",
        max_resources: Any = "auto",
        min_resources: Any = "exhaust",
        aggressive_elimination: bool = False,
        cv: Any = 5,
        scoring: Any = None,
        refit: Any = True,
        error_score: Any = np.nan,
        return_train_score: bool = True,
        random_state: Any = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        backend: Any = "local",
        store: Any = None,
        resume: bool = False,
        options: RunOptions | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.factor = factor
        self.resource = resource
        self.max_resources = max_resources
        self.min_resources = min_resources
        self.aggressive_elimination = aggressive_elimination
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.backend = backend
        self.store = store
        self.resume = resume
        self.options = options

    def _candidates(self, X: Any, y: Any, params: RoutedParams, halving: Halving) -> Any:
        return self.param_grid


class HalvingRandomSearchCV(_HalvingFace):
    """Successive halving over random draws, as scikit-learn's ``HalvingRandomSearchCV``.

    As :class:`HalvingGridSearchCV`, over ``n_candidates`` candidates drawn
    from ``param_distributions`` as scikit-learn draws them.

    Parameters
    ----------
    estimator : estimator object
    param_distributions : dict or list of dict
        Lists (sampled uniformly) or ``scipy.stats`` distributions.
    n_candidates : int or "exhaust", default="exhaust"
        ``"exhaust"``: ``max_resources_ // min_resources_`` candidates, so
        that the last rung uses as many resources as it can.
    %(halving)s
    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> X, y = make_regression(n_samples=90, n_features=3, noise=5.0, random_state=0)
    >>> hs = HalvingRandomSearchCV(Ridge(), {"alpha": loguniform(1e-3, 1e3)}, cv=3,
    ...                            random_state=0, backend="serial").fit(X, y)
    >>> hs.n_candidates_, hs.n_resources_
    ([15, 5, 2], [6, 18, 54])
    """

    def __init__(
        self,
        estimator: Any,
        param_distributions: Any,
        *,
        n_candidates: Any = "exhaust",
        factor: float = 3,
        resource: str = "n_samples",
        max_resources: Any = "auto",
        min_resources: Any = "smallest",
        aggressive_elimination: bool = False,
        cv: Any = 5,
        scoring: Any = None,
        refit: Any = True,
        error_score: Any = np.nan,
        return_train_score: bool = True,
        random_state: Any = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        backend: Any = "local",
        store: Any = None,
        resume: bool = False,
        options: RunOptions | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_candidates = n_candidates
        self.factor = factor
        self.resource = resource
        self.max_resources = max_resources
        self.min_resources = min_resources
        self.aggressive_elimination = aggressive_elimination
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.error_score = error_score
        self.return_train_score = return_train_score
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.backend = backend
        self.store = store
        self.resume = resume
        self.options = options

    def _candidates(self, X: Any, y: Any, params: RoutedParams, halving: Halving) -> Any:
        n_candidates = self.n_candidates
        if n_candidates == "exhaust":
            if self.min_resources == "exhaust":
                raise ValueError(
                    "n_candidates and min_resources cannot be both set to 'exhaust': each "
                    "is computed from the other. Give one of them, e.g. n_candidates=20."
                )
            low, high = _first_resources(self, X, y, params, halving)
            n_candidates = high // low
        elif isinstance(n_candidates, bool) or not isinstance(n_candidates, numbers.Integral):
            raise TypeError(
                f"n_candidates must be an int >= 1 or 'exhaust'; got {n_candidates!r}. Pass "
                "e.g. n_candidates=20."
            )
        elif n_candidates < 1:
            raise ValueError(
                f"n_candidates must be an int >= 1 or 'exhaust'; got {n_candidates!r}. Pass "
                "e.g. n_candidates=20."
            )
        seed = self.random_state
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            return RandomSpace(
                self.param_distributions, n_iter=n_candidates, random_state=int(seed)
            )
        draws = ParameterSampler(self.param_distributions, n_candidates, random_state=seed)
        return [{name: [value] for name, value in p.items()} for p in draws]


def _first_resources(
    face: _HalvingFace, X: Any, y: Any, params: RoutedParams, halving: Halving
) -> tuple[int, int]:
    """scikit-learn's ``min_resources_`` and ``max_resources_`` before the candidates exist."""
    classifier = is_classifier(face.estimator)
    splitter = check_scheme(face._cv(), y, classifier=classifier)
    folds = materialize_folds(splitter, X, y, params.groups, params=params.split)
    n_rows = n_rows_of(X)
    return resolve_resources(
        halving,
        n_samples=len(y) if n_rows is None else n_rows,
        n_splits=len(folds),
        n_classes=len(np.unique(y)) if classifier else None,
    )


for _face in (HalvingGridSearchCV, HalvingRandomSearchCV):
    _face.__doc__ = (_face.__doc__ or "").replace("    %(halving)s\n", _HALVING_DOC)
