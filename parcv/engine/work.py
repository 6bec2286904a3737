"""Pure task work: fit one candidate on one split and keep what its kind keeps.

Each unit runs by its kind's runner (:data:`RUNNERS`, named by
:data:`parcv.plan.kinds.KINDS`). Every kind but fast CV runs through the one
fit loop, :func:`run_unit`: clone the candidate, fit it on the unit's rows
(``y`` of its kind's target rows), keep what the kind keeps (scores,
per-sample losses, predictions, criteria, the model) and turn a failure into
a ``failed`` record. A fast-CV ``fit`` unit (``inner=None``) computes the
held-out predictions of a batch of linear-smoother candidates on every inner
fold at once (:mod:`parcv.fastcv.smoothers`) and returns one record per candidate.
"""

from __future__ import annotations

import contextlib
import copy
import numbers
import os
import socket
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn import config_context
from sklearn.base import clone, is_classifier
from sklearn.utils import _safe_indexing, get_tags

from parcv.criteria.tasks import evaluate_criteria
from parcv.engine.shared_prefix import PrefixCache, PrefixFit, fit_with_prefix
from parcv.fastcv.scoring import score_folds
from parcv.fastcv.smoothers import held_out_predictions
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.kept import KeptFit
from parcv.plan.kinds import kind_of
from parcv.plan.partition import PartitionFolds, as_partition, relative_blocks
from parcv.plan.records import SPARSE_PREFIX, ErrorInfo, FoldScores, Predictions, Record, Unit
from parcv.plan.routing import routing_enabled, rows_of_params
from parcv.plan.splits import Fold

__all__ = [
    "RUNNERS",
    "Runner",
    "lost_unit_records",
    "per_sample_loss",
    "run_fast_unit",
    "run_incremental_unit",
    "run_unit",
    "run_units",
]


def _take(values: Any, rows: NDArray[np.intp], axis: int = 0) -> Any:
    """``_safe_indexing`` of scikit-learn, with its own expression for numpy arrays.

    For an ndarray (or memmap) ``_safe_indexing`` evaluates ``a[rows, ...]`` or
    ``a[:, rows]`` after dataframe checks that cost ~4x the copy: the same
    expression here gives the same array, bit for bit.
    """
    if values is None:  # y of an unsupervised estimator
        return None
    if type(values) is np.ndarray or type(values) is np.memmap:
        return values[rows, ...] if axis == 0 else values[:, rows]
    return _safe_indexing(values, rows, axis=axis)


def _split_rows(pairwise: bool, X: Any, rows: NDArray[np.intp], train: NDArray[np.intp]) -> Any:
    # Precomputed kernels are indexed on both axes, as scikit-learn's _safe_split does.
    subset = _take(X, rows)
    return _take(subset, train, axis=1) if pairwise else subset


def _fit_params(data: Dataset, rows: NDArray[np.intp]) -> dict[str, Any]:
    if not data.fit_params:
        return {}
    return rows_of_params(data.fit_params, rows, data.n_samples)


def _score_params(data: Dataset, rows: NDArray[np.intp]) -> dict[str, dict[str, Any]]:
    """Each scorer's arguments for the rows it scores (split as scikit-learn's _fit_and_score)."""
    if not data.score_params:
        return {}
    return {
        name: rows_of_params(params, rows, data.n_samples)
        for name, params in data.score_params.items()
    }


# Per process, for the plan it runs now: each candidate's configured, unfitted estimator
# and whether it is pairwise. Pure function of the plan, rebuilt when another plan comes.
_PROTOTYPES: list[Any] = [None, {}]


def _fresh_estimator(plan: Plan, candidate: int) -> tuple[Any, bool]:
    """A new unfitted estimator of ``candidate`` and its pairwise tag.

    The first call per candidate does what GridSearchCV does for every fit,
    ``clone(estimator).set_params(**clone(params, safe=False))``; later calls
    deep-copy that unfitted prototype, which makes the same object (clone
    deep-copies every non-estimator parameter) at a tenth of the cost.
    """
    owner, cache = _PROTOTYPES
    if owner is not plan:
        cache = {}
        _PROTOTYPES[:] = [plan, cache]
    if candidate not in cache:
        # Estimator-valued parameters (model families) are cloned so no fit mutates the plan.
        params = clone(plan.candidates[candidate].params, safe=False)
        prototype = clone(plan.estimator).set_params(**params)
        cache[candidate] = prototype, bool(get_tags(prototype).input_tags.pairwise)
    prototype, pairwise = cache[candidate]
    return copy.deepcopy(prototype), pairwise


@dataclass(frozen=True, slots=True)
class _Scored:
    """Scores of one side (``test`` or ``train``) and the scorers that raised, by record key."""

    scores: dict[str, float]
    errors: dict[str, ErrorInfo]


def _score_all(
    plan: Plan,
    estimator: Any,
    X: Any,
    y: Any,
    params: Mapping[str, Mapping[str, Any]],
    which: str,
) -> _Scored:
    """Every scorer's score; one that raises scores ``error_score`` alone, as in scikit-learn.

    ``params`` are each scorer's metadata for these rows. With
    ``error_score="raise"`` its exception fails the unit. A score that is not a
    number is a misconfigured scorer: a ``ValueError``, as scikit-learn's.
    """
    scores: dict[str, float] = {}
    errors: dict[str, ErrorInfo] = {}
    # Without a target a scorer gets (estimator, X), as in scikit-learn's _score.
    args = (estimator, X) if y is None else (estimator, X, y)
    for name, scorer in plan.scoring.scorers.items():
        try:
            score = scorer(*args, **params.get(name, {}))
        except Exception as err:
            if plan.error_score == "raise":
                raise
            scores[name] = _error_value(plan)
            errors[f"{which}:{name}"] = ErrorInfo.of(err, traceback.format_exc())
            continue
        if isinstance(score, Mapping) and not plan.scoring.multimetric:
            return _Scored(_named_scores(plan, score), errors)  # one callable, several metrics
        scores[name] = _number(score, name)
    return _Scored(scores, errors)


def _named_scores(plan: Plan, scores: Mapping[Any, Any]) -> dict[str, float]:
    """The metrics a callable ``scoring`` returned as a dict, as scikit-learn takes them."""
    refit = plan.scoring.refit
    selects = plan.final or bool(plan.refit_outers)
    if selects and refit not in scores:
        given = True if refit == "score" else refit
        raise ValueError(
            "For multi-metric scoring, the parameter refit must be set to a scorer key or a "
            "callable to refit an estimator with the best parameter setting on the whole data "
            "and make the best_* attributes available for that metric. If this is not needed, "
            f"refit should be set to False explicitly. {given!r} was passed; the scorer "
            f"returned the keys {sorted(map(str, scores))!r}."
        )
    return {str(name): _number(value, str(name)) for name, value in scores.items()}


def _number(score: Any, name: str) -> float:
    if hasattr(score, "item"):
        with contextlib.suppress(ValueError):  # a numpy scalar or one-element array
            score = score.item()
    if not isinstance(score, numbers.Number) or isinstance(score, complex):
        raise ValueError(
            f"scoring must return a number, got {score!r} ({type(score)}) instead. "
            f"(scorer={name}) A scorer returns one float per call, greater is better."
        )
    return float(score)  # type: ignore[arg-type]


def _error_value(plan: Plan) -> float:
    return plan.error_score if isinstance(plan.error_score, float) else float("nan")


def _failed(plan: Plan, unit: Unit, err: BaseException, n: tuple[int, int]) -> Record:
    """The failed record of a unit: ``error_score`` for every score its kind keeps."""
    keeps, value = kind_of(unit).keeps, _error_value(plan)
    names: Any = ()
    if "scores" in keeps:
        names = plan.scoring.scorers
    elif "criteria" in keeps:
        names = plan.criteria.names  # type: ignore[union-attr]
    scores = dict.fromkeys(names, value)
    train = dict(scores) if plan.return_train_score and "train_scores" in keeps else {}
    info = ErrorInfo.of(err, traceback.format_exc(), keep=plan.error_score == "raise")
    return Record(unit, "failed", scores, train, 0.0, 0.0, n[0], n[1], error=info)


@dataclass(frozen=True, slots=True)
class _Split:
    """A unit's data: ``X`` and ``y`` of its training rows and of its test rows."""

    X_train: Any
    y_train: Any
    X_test: Any
    y_test: Any
    n_test: int
    score_train: dict[str, dict[str, Any]] = field(default_factory=dict)
    score_test: dict[str, dict[str, Any]] = field(default_factory=dict)


def _split_data(plan: Plan, data: Dataset, unit: Unit, fold: Fold, pairwise: bool) -> _Split:
    """Index the data by the unit's rows (``y`` by its kind's target rows)."""
    targets = kind_of(unit).targets(plan, unit, fold)
    if fold.test.size == 0 and np.array_equal(fold.train, np.arange(plan.n_samples)):
        # All rows in order: fit on the data as given, as GridSearchCV's refit does.
        X_train, y_train = data.X, data.y
    else:
        X_train = _split_rows(pairwise, data.X, fold.train, fold.train)
        y_train = _take(data.y, targets.train)
    X_test = _split_rows(pairwise, data.X, fold.test, fold.train)
    y_test = _take(data.y, targets.test)
    if not data.score_params:
        return _Split(X_train, y_train, X_test, y_test, fold.test.size)
    scored = (_score_params(data, fold.train), _score_params(data, fold.test))
    return _Split(X_train, y_train, X_test, y_test, fold.test.size, *scored)


def run_unit(plan: Plan, data: Dataset, unit: Unit, cache: PrefixCache | None = None) -> Record:
    """Fit one unit's candidate on its training rows and keep what its kind keeps.

    The one fit loop of every kind that runs as a fit (``runner="fit"`` in
    :data:`parcv.plan.kinds.KINDS`): clone, fit, keep, and a failure becomes
    a ``failed`` record.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    unit : Unit
    cache : PrefixCache, default=None
        The chunk's fitted Pipeline prefixes: a ``fit`` unit whose candidate
        shares steps with another unit of its fold fits them only once.

    Returns
    -------
    Record
        What its kind keeps: scores on its test rows, per-sample losses,
        predictions, criteria, or (``final``) the fitted estimator.
    """
    kind, fold, started = kind_of(unit), plan.fold_of(unit), time.time()
    estimator, pairwise = _fresh_estimator(plan, unit.candidate)
    start = plan.starts.get(unit.key) if plan.starts else None
    if start is not None:  # continue a fit of the rung before by a warm start: same numbers
        estimator = start.estimator()
        estimator.set_params(**clone(plan.candidates[unit.candidate].params, safe=False))
        cache = None
    shared: PrefixFit | None = None
    # Outside the try, as before the fit loops were one: data that cannot be indexed as the
    # estimator needs (a precomputed kernel given as a list) is an input error of the whole
    # run, raised as such, not a failure of each unit.
    split = _split_data(plan, data, unit, fold, pairwise)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # As in scikit-learn's _fit_and_score, the timers hold the fit and the scoring only.
            shared = _fit_shared(plan, unit, estimator, (split.X_train, split.y_train), cache)
            if shared is None:
                t0 = time.perf_counter()
                estimator.fit(split.X_train, split.y_train, **_fit_params(data, fold.train))
                fit_time = time.perf_counter() - t0
            else:
                fit_time = shared.fit_time
            t1 = time.perf_counter()
            kept = _keep(kind.keeps, plan, unit, estimator, split, timed=True)
            score_time = time.perf_counter() - t1
            kept.update(_keep(kind.keeps, plan, unit, estimator, split, timed=False))
        except Exception as err:
            failed = _failed(plan, unit, err, (fold.train.size, fold.test.size))
            return _stamp(failed, caught, started, before=_prefix_warnings(cache, unit, plan))
    record = Record(
        unit, "ok", kept.get("test_scores", {}), kept.get("train_scores", {}), fit_time,
        score_time, fold.train.size, fold.test.size, estimator=kept.get("estimator"),
        reused_steps=0 if shared is None else shared.reused, folds=kept.get("folds"),
        predictions=kept.get("predictions"),
        score_errors={**kept.get("test_errors", {}), **kept.get("train_errors", {})},
    )  # fmt: skip
    return _stamp(record, caught, started, before=() if shared is None else shared.warnings)


def _keep(
    keeps: tuple[str, ...], plan: Plan, unit: Unit, estimator: Any, split: _Split, *, timed: bool
) -> dict[str, Any]:
    """The record fields the keepers of ``keeps`` fill (the timed ones, or the others)."""
    kept: dict[str, Any] = {}
    for name in keeps:
        keeper = _KEEPERS[name]
        if keeper.timed == timed:
            kept.update(keeper.keep(plan, unit, estimator, split))
    return kept


def _keep_scores(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    if not split.n_test:
        return {}
    scored = _score_all(plan, estimator, split.X_test, split.y_test, split.score_test, "test")
    return {"test_scores": scored.scores, "test_errors": scored.errors}


def _keep_train_scores(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    if not (plan.return_train_score and split.n_test):
        return {}
    scored = _score_all(plan, estimator, split.X_train, split.y_train, split.score_train, "train")
    return {"train_scores": scored.scores, "train_errors": scored.errors}


def _keep_predictions(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    """The outputs on the test rows, when the plan asks (not timed).

    Each is the estimator's own array, as ``cross_val_predict`` calls it; the
    classes come along with the per-class outputs, whose columns follow them.
    """
    if not plan.predictions or not split.n_test:
        return {}
    arrays: dict[str, Any] = {}
    for method in plan.predictions:
        arrays.update(_outputs(method, getattr(estimator, method)(split.X_test)))
    if set(plan.predictions) - {"predict"} and hasattr(estimator, "classes_"):
        arrays.update(_outputs("classes_", estimator.classes_))
    return {"predictions": Predictions(arrays)}


def _outputs(name: str, values: Any) -> dict[str, Any]:
    """``{name: array}``, or one array per output (``name[i]``) for a list of them.

    A multi-output classifier's ``predict_proba`` (a random forest's) returns a list
    of arrays, one per output, of as many columns as that output has classes, and its
    ``classes_`` a list of arrays. A sparse matrix (a multilabel ``predict`` after a
    sparse y) is kept dense, with its format under ``SPARSE_PREFIX + name``.
    """
    if isinstance(values, list) and values and all(hasattr(v, "shape") for v in values):
        return {f"{name}[{i}]": np.asarray(v) for i, v in enumerate(values)}
    if sp.issparse(values):  # kept dense, with its format to rebuild it (cross_val_predict)
        return {name: values.toarray(), SPARSE_PREFIX + name: np.asarray(values.format)}
    return {name: np.asarray(values)}


def _keep_bbc_losses(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    """Per-sample test losses of an all-data fit, when the plan asks for BBC-CV."""
    if plan.bbc is None or unit.outer is not None or not split.n_test:
        return {}
    losses = per_sample_loss(plan.bbc.metric, estimator, split.X_test, split.y_test)
    return {"folds": FoldScores({"loss": losses})}


def _keep_losses(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    """Per-sample test losses of the nested-CV interval's metric, in row order.

    Its ``ncv`` units keep them, and the refits of a nested CV with the interval
    (the other refits have nothing to keep).
    """
    if plan.interval is None or not split.n_test:
        return {}
    metric = plan.interval.metric
    losses = per_sample_loss(metric, estimator, split.X_test, split.y_test)
    return {"folds": FoldScores({"loss": losses})}


def _keep_predicted(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    """Predictions on the test rows as float64 (a bias-variance decomposition's)."""
    predicted = np.asarray(estimator.predict(split.X_test), dtype=np.float64).ravel()
    return {"folds": FoldScores({"prediction": predicted})}


def _keep_criteria(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    """The criteria of the fit on its training rows (an undefined one raises)."""
    request: Any = plan.criteria
    return {"test_scores": evaluate_criteria(estimator, split.X_train, split.y_train, request)}


def _keep_model(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    return {"estimator": estimator}


def _keep_estimator(plan: Plan, unit: Unit, estimator: Any, split: _Split) -> dict[str, Any]:
    """The fitted estimator of a fit, when the plan asks: ``return_estimator``'s, or a rung's
    kept for the next rung to continue (pickled here, once: :class:`~parcv.plan.kept.KeptFit`).
    """
    if plan.estimators:
        return {"estimator": estimator}
    return {"estimator": KeptFit.of(estimator)} if plan.keep_fitted else {}


def _fit_shared(
    plan: Plan, unit: Unit, estimator: Any, train: tuple[Any, Any], cache: PrefixCache | None
) -> PrefixFit | None:
    """Fit a fit unit's Pipeline through the chunk's shared prefixes; None: fit it alone."""
    if cache is None or plan.share_group(unit) is None:
        return None
    cache.on_fold((unit.outer, unit.inner))
    return fit_with_prefix(estimator, plan.prefixes[unit.candidate], *train, cache)


def _prefix_warnings(cache: PrefixCache | None, unit: Unit, plan: Plan) -> tuple[str, ...]:
    """Warnings of the shared steps a failed unit went through (as an unshared fit records)."""
    if cache is None or plan.share_group(unit) is None:
        return ()
    ids = plan.prefixes[unit.candidate]
    names: tuple[str, ...] = ()
    for j, prefix in enumerate(ids):
        fitted = cache.steps.get((j, prefix))
        if fitted is None:
            break
        names += fitted.warnings
        if fitted.error is not None:
            break
    return names


def _worker_name() -> str:
    """``host:pid`` of this process (computed once per process)."""
    pid = os.getpid()
    if _WORKER[0] != pid:
        _WORKER[:] = [pid, f"{socket.gethostname()}:{pid}"]
    return str(_WORKER[1])


_WORKER: list[Any] = [None, ""]


def _stamp(
    record: Record,
    caught: Sequence[warnings.WarningMessage],
    started: float,
    extra: tuple[str, ...] = (),
    *,
    before: tuple[str, ...] = (),
) -> Record:
    first: dict[str, str] = {}
    for w in caught:  # the first message of each category, for the caller to see
        first.setdefault(f"{w.category.__module__}:{w.category.__qualname__}", str(w.message))
    return replace(
        record,
        warnings=before + tuple(w.category.__name__ for w in caught) + extra,
        first_warnings=first,
        worker=_worker_name(),
        started=started,
        finished=time.time(),
    )


def run_units(
    plan: Plan,
    data: Dataset,
    units: Sequence[Unit],
    on_unit: Callable[[list[Record]], None] | None = None,
) -> list[Record]:
    """Run a chunk of units in order, each by its kind's runner.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    units : sequence of Unit
    on_unit : callable, default=None
        Called with each unit's records as soon as the unit is done (a forked
        child sends them to its parent this way).

    Returns
    -------
    list of Record
        The records of every unit, in unit order: one per unit, except a
        fast-CV unit, which makes one per candidate of its batch.
    """
    records: list[Record] = []
    cache = PrefixCache() if plan.prefixes else None
    with _routing_context(data):
        for unit in units:
            done = RUNNERS[kind_of(unit).runner].run(plan, data, unit, cache)
            if on_unit is not None:
                on_unit(done)
            records += done
    return records


def _routing_context(data: Dataset) -> AbstractContextManager[Any]:
    """The driver decided the routing: fits and scorers see it, whatever this process's config."""
    if data.routed == routing_enabled():
        return nullcontext()  # the common case costs a read of the config, not a set
    context: AbstractContextManager[Any] = config_context(enable_metadata_routing=data.routed)
    return context


def per_sample_loss(metric: str, estimator: Any, X: Any, y: Any) -> NDArray[np.float64]:
    """The per-sample loss whose mean is ``-metric`` (or ``1 - accuracy``), for ``X, y``.

    Examples
    --------
    >>> from sklearn.dummy import DummyRegressor
    >>> model = DummyRegressor().fit([[0], [0]], [0.0, 2.0])
    >>> per_sample_loss("neg_mean_squared_error", model, [[0], [0]], [0.0, 2.0]).tolist()
    [1.0, 1.0]
    """
    y = np.asarray(y)
    if metric == "neg_log_loss":
        proba = np.clip(estimator.predict_proba(X), np.finfo(np.float64).eps, 1.0)
        column = np.searchsorted(estimator.classes_, y)
        return -np.log(proba[np.arange(len(y)), column])  # type: ignore[no-any-return]
    predicted = np.asarray(estimator.predict(X))
    if metric == "accuracy":
        return np.asarray(predicted != y, dtype=np.float64)
    error = predicted.astype(np.float64) - y.astype(np.float64)
    return error**2 if metric == "neg_mean_squared_error" else np.abs(error)  # type: ignore[no-any-return]


def _fast_inputs(
    plan: Plan, data: Dataset, outer: int | None
) -> tuple[Any, Any, PartitionFolds, NDArray[np.intp]]:
    """X and y of the rows an outer fold's inner CV splits, its folds and their test order."""
    rows = plan.rows_of(outer)
    folds = as_partition(plan.inner_folds[outer], rows)
    if folds is None:  # the plan checked this; a stale plan must not give wrong numbers
        raise ValueError(f"the inner folds of outer fold {outer!r} are not a partition.")
    X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y, dtype=np.float64)
    if outer is not None:
        X, y = X[rows], y[rows]
    return X, y, folds, relative_blocks(folds, plan.n_samples)


@dataclass(frozen=True, slots=True)
class _FastOutcome:
    """Everything a fast batch computed, before it is split into records."""

    folds: PartitionFolds
    n_rows: int
    scores: dict[str, NDArray[np.float64]]
    errors: tuple[str | None, ...]
    scorer_warnings: tuple[str, ...]
    fit_time: float
    score_time: float


def _compute_fast(plan: Plan, data: Dataset, unit: Unit, batch: tuple[int, ...]) -> _FastOutcome:
    t0 = time.perf_counter()
    X, y, folds, order = _fast_inputs(plan, data, unit.outer)
    bounds = zip(folds.offsets[:-1], folds.offsets[1:], strict=True)
    blocks = None if folds.leave_one_out else [order[a:b] for a, b in bounds]
    params = [plan.candidates[c].params for c in batch]
    held = held_out_predictions(plan.estimator, params, X, y, blocks)
    fit_time = time.perf_counter() - t0
    scores, names = score_folds(
        plan.scoring.scorers, plan.estimator, y, held.predictions, order, folds.offsets
    )
    score_time = time.perf_counter() - t0 - fit_time
    return _FastOutcome(folds, len(y), scores, held.errors, names, fit_time, score_time)


def run_fast_unit(plan: Plan, data: Dataset, unit: Unit) -> list[Record]:
    """Compute a batch's held-out predictions on every inner fold, and score them.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    unit : Unit
        A fast-CV ``fit`` unit (``inner=None``).

    Returns
    -------
    list of Record
        One per candidate of the batch, keyed ``("fit", outer, None, c)``,
        with the per-fold test scores in ``folds``; fit and score times are
        the batch's, shared equally.
    """
    batch, started = plan.batch_of(unit), time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = _compute_fast(plan, data, unit, batch)
        except Exception as err:
            failed = _failed(plan, unit, err, (0, 0))
            return [_stamp(_fast_failure(plan, c, failed), caught, started) for c in batch]
    mean_test = float(out.folds.sizes.mean())
    shape = (round(out.n_rows - mean_test), round(mean_test))
    records = []
    for j, one in enumerate(plan.record_units(unit)):
        c = one.candidate
        per_fold = {name: np.ascontiguousarray(s[j]) for name, s in out.scores.items()}
        record = Record(
            one,
            "ok",
            {},
            {},
            out.fit_time / len(batch),
            out.score_time / len(batch),
            *shape,
            folds=FoldScores(per_fold),
        )
        message = out.errors[j]
        if message is not None:
            record = _fast_failure(
                plan, c, replace(record, error=ErrorInfo("ValueError", message, ""))
            )
        records.append(_stamp(record, caught, started, extra=out.scorer_warnings))
    return records


def run_incremental_unit(plan: Plan, data: Dataset, unit: Unit) -> Record:
    """Fit one fold's train rows by ``partial_fit`` in the plan's steps, scoring after each.

    As scikit-learn's ``learning_curve(exploit_incremental_learning=True)``:
    the train rows are cut at the train sizes; each piece is passed to
    ``partial_fit`` (with ``classes``, every class of ``y``, for a
    classifier), then the model is scored on the rows fitted so far and on
    the test rows.

    Parameters
    ----------
    plan : Plan
        An incremental learning curve's plan (``plan.increments``).
    data : Dataset
    unit : Unit
        An ``incr`` unit: one fold of one candidate.

    Returns
    -------
    Record
        ``folds`` holds ``train``, ``test``, ``fit_time`` and ``score_time``,
        one value per train size; a failure is a ``failed`` record.
    """
    fold, started = plan.fold_of(unit), time.time()
    estimator, pairwise = _fresh_estimator(plan, unit.candidate)
    classes = {"classes": np.unique(data.y)} if is_classifier(estimator) else {}
    sizes = plan.increments
    steps = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            for start, stop in zip((0, *sizes[:-1]), sizes, strict=True):
                model = (estimator, pairwise, classes)
                steps.append(_incremental_step(plan, data, model, fold, (start, stop)))
        except Exception as err:
            failed = _failed(plan, unit, err, (fold.train.size, fold.test.size))
            return _stamp(failed, caught, started)
    columns = np.array(steps, dtype=np.float64).T
    names = ("train", "test", "fit_time", "score_time")
    folds = FoldScores({n: np.ascontiguousarray(c) for n, c in zip(names, columns, strict=True)})
    record = Record(unit, "ok", {}, {}, float(columns[2].sum()), float(columns[3].sum()),
                    fold.train.size, fold.test.size, folds=folds)  # fmt: skip
    return _stamp(record, caught, started)


def _incremental_step(
    plan: Plan, data: Dataset, model: tuple[Any, bool, dict[str, Any]], fold: Fold,
    bounds: tuple[int, int],
) -> tuple[float, float, float, float]:  # fmt: skip
    """partial_fit the train rows ``bounds``; the train and test scores and the times after."""
    estimator, pairwise, classes = model
    metric, (start, stop) = plan.scoring.refit, bounds
    part, fitted = fold.train[start:stop], fold.train[:stop]
    X_part = _split_rows(pairwise, data.X, part, part)
    t0 = time.perf_counter()
    estimator.partial_fit(X_part, _take(data.y, part), **classes, **_fit_params(data, part))
    t1 = time.perf_counter()
    # Test first, then train, as scikit-learn scores them.
    X_test = _split_rows(pairwise, data.X, fold.test, fitted)
    y_test = _take(data.y, fold.test)
    test = _score_all(plan, estimator, X_test, y_test, _score_params(data, fold.test), "test")
    test_score = test.scores[metric]
    X_fitted, y_fitted = _split_rows(pairwise, data.X, fitted, fitted), _take(data.y, fitted)
    train = _score_all(plan, estimator, X_fitted, y_fitted, _score_params(data, fitted), "train")
    return train.scores[metric], test_score, t1 - t0, time.perf_counter() - t1


def _fast_failure(plan: Plan, candidate: int, record: Record) -> Record:
    """The failed record of one candidate of a fast batch: error_score on every fold."""
    n_folds = len(plan.inner_folds[record.unit.outer])
    value = np.full(n_folds, _error_value(plan))
    return replace(
        record,
        unit=replace(record.unit, candidate=candidate),
        status="failed",
        test_scores={},
        folds=FoldScores({name: value for name in plan.scoring.scorers}),
    )


def lost_unit_records(plan: Plan, unit: Unit, error: ErrorInfo, worker: str) -> list[Record]:
    """Return the failed records of a unit that never came back: its worker died or timed out.

    They are scored with ``error_score`` like any failed fit (a fast-CV unit
    makes one per candidate of its batch).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from parcv.plan.build import build_plan
    >>> from parcv.plan.data import check_dataset
    >>> import numpy as np
    >>> data = check_dataset(np.arange(20.0).reshape(10, 2), np.arange(10.0))
    >>> plan = build_plan(Ridge(), {"alpha": [1.0]}, data, inner=2, refit=False)
    >>> info = ErrorInfo("WorkerDied", "worker died: SIGSEGV", "")
    >>> [r.status for r in lost_unit_records(plan, plan.units[0], info, "host:1")]
    ['failed']
    """
    now = time.time()
    records = RUNNERS[kind_of(unit).runner].lost(plan, unit, error)
    return [replace(r, worker=worker, started=now, finished=now) for r in records]


def _lost_fit(plan: Plan, unit: Unit, error: ErrorInfo) -> list[Record]:
    fold = plan.fold_of(unit)
    return [_failed_with(plan, unit, error, (fold.train.size, fold.test.size))]


def _lost_fast(plan: Plan, unit: Unit, error: ErrorInfo) -> list[Record]:
    failed = Record(unit, "failed", {}, {}, 0.0, 0.0, 0, 0, error=error)
    return [_fast_failure(plan, c, failed) for c in plan.batch_of(unit)]


def _failed_with(plan: Plan, unit: Unit, error: ErrorInfo, n: tuple[int, int]) -> Record:
    try:
        raise RuntimeError(error.message)
    except RuntimeError as err:
        record = _failed(plan, unit, err, n)
    return replace(record, error=error)


@dataclass(frozen=True, slots=True)
class _Keeper:
    """How the fit loop keeps one thing a record keeps; ``timed``: in the score time."""

    keep: Callable[[Plan, Unit, Any, _Split], dict[str, Any]]
    timed: bool = True


# One keeper per entry of parcv.plan.kinds.KEEPS (fold_scores: fast CV keeps them itself).
_KEEPERS: dict[str, _Keeper] = {
    "scores": _Keeper(_keep_scores),
    "train_scores": _Keeper(_keep_train_scores),
    "bbc_losses": _Keeper(_keep_bbc_losses),
    "predictions": _Keeper(_keep_predictions, timed=False),
    "losses": _Keeper(_keep_losses),
    "predicted": _Keeper(_keep_predicted),
    "criteria": _Keeper(_keep_criteria),
    "model": _Keeper(_keep_model, timed=False),
    "estimator": _Keeper(_keep_estimator, timed=False),
}


@dataclass(frozen=True, slots=True)
class Runner:
    """How the engine runs one kind's units (``Kind.runner`` names it).

    Parameters
    ----------
    run : callable
        ``run(plan, data, unit, cache) -> list of Record``.
    lost : callable
        ``lost(plan, unit, error) -> list of Record``: the failed records of
        a unit whose worker died or timed out.

    Examples
    --------
    >>> sorted(RUNNERS)
    ['fast-cv', 'fit', 'incremental', 'path']
    """

    run: Callable[[Plan, Dataset, Unit, PrefixCache | None], list[Record]]
    lost: Callable[[Plan, Unit, ErrorInfo], list[Record]]


# The one table of runners: every kind runs as a fit unless it names another runner here.
RUNNERS: dict[str, Runner] = {
    "fit": Runner(lambda plan, data, unit, cache: [run_unit(plan, data, unit, cache)], _lost_fit),
    "fast-cv": Runner(lambda plan, data, unit, cache: run_fast_unit(plan, data, unit), _lost_fast),
    "incremental": Runner(
        lambda plan, data, unit, cache: [run_incremental_unit(plan, data, unit)], _lost_fit
    ),
}
