"""Pure task work: fit one candidate on one split and score it.

Three kinds of work: a ``fit`` unit fits one candidate on one inner split;
a fast-CV ``fit`` unit (``inner=None``) computes the held-out predictions
of a batch of linear-smoother candidates on every inner fold at once
(:mod:`parcv.fastcv.smoothers`) and returns one record per candidate; a ``criteria``
unit fits one candidate once and computes its criteria.
"""

from __future__ import annotations

import copy
import os
import socket
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.utils import _safe_indexing, get_tags

from parcv.criteria.tasks import evaluate_criteria
from parcv.engine.shared_prefix import PrefixCache, PrefixFit, fit_with_prefix
from parcv.fastcv.scoring import score_folds
from parcv.fastcv.smoothers import held_out_predictions
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.partition import PartitionFolds, as_partition, relative_blocks
from parcv.plan.records import ErrorInfo, FoldScores, Predictions, Record, Unit

__all__ = [
    "lost_unit_records",
    "per_sample_loss",
    "run_bootstrap_unit",
    "run_ncv_unit",
    "run_permuted_unit",
    "run_unit",
    "run_units",
]


def _take(values: Any, rows: NDArray[np.intp], axis: int = 0) -> Any:
    """``_safe_indexing`` of scikit-learn, with its own expression for numpy arrays.

    For an ndarray (or memmap) ``_safe_indexing`` evaluates ``a[rows, ...]`` or
    ``a[:, rows]`` after dataframe checks that cost ~4x the copy: the same
    expression here gives the same array, bit for bit.
    """
    if type(values) is np.ndarray or type(values) is np.memmap:
        return values[rows, ...] if axis == 0 else values[:, rows]
    return _safe_indexing(values, rows, axis=axis)


def _split_rows(pairwise: bool, X: Any, rows: NDArray[np.intp], train: NDArray[np.intp]) -> Any:
    # Precomputed kernels are indexed on both axes, as scikit-learn's _safe_split does.
    subset = _take(X, rows)
    return _take(subset, train, axis=1) if pairwise else subset


def _fit_params(data: Dataset, rows: NDArray[np.intp]) -> dict[str, Any]:
    n = data.n_samples
    return {
        name: _take(value, rows) if hasattr(value, "__len__") and len(value) == n else value
        for name, value in data.fit_params.items()
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


def _score_all(plan: Plan, estimator: Any, X: Any, y: Any) -> dict[str, float]:
    return {name: float(scorer(estimator, X, y)) for name, scorer in plan.scoring.scorers.items()}


def _error_value(plan: Plan) -> float:
    return plan.error_score if isinstance(plan.error_score, float) else float("nan")


def _failed(plan: Plan, unit: Unit, err: BaseException, n: tuple[int, int]) -> Record:
    value = _error_value(plan)
    names = plan.scoring.scorers if unit.kind != "criteria" else plan.criteria.names  # type: ignore[union-attr]
    scores = {name: value for name in names}
    info = ErrorInfo(type(err).__name__, str(err), traceback.format_exc())
    return Record(
        unit,
        "failed",
        scores,
        dict(scores) if plan.return_train_score and unit.kind != "criteria" else {},
        0.0,
        0.0,
        n[0],
        n[1],
        error=info,
    )


def _train_data(
    pairwise: bool, data: Dataset, rows: NDArray[np.intp], everything: bool
) -> tuple[Any, Any]:
    if everything:
        # All rows in order: fit on the data as given, as GridSearchCV's refit does.
        return data.X, data.y
    return _split_rows(pairwise, data.X, rows, rows), _take(data.y, rows)


def run_unit(plan: Plan, data: Dataset, unit: Unit, cache: PrefixCache | None = None) -> Record:
    """Fit and score one unit; a failure becomes a ``failed`` record.

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
        Scores on the unit's test rows (none for a ``final`` unit, which
        carries the fitted estimator instead).
    """
    fold = plan.fold_of(unit)
    started = time.time()
    estimator, pairwise = _fresh_estimator(plan, unit.candidate)
    X_train, y_train = _train_data(pairwise, data, fold.train, unit.kind == "final")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # As in scikit-learn's _fit_and_score, the timers hold the fit and the scoring only.
            fit_params = _fit_params(data, fold.train)
            X_test = _split_rows(pairwise, data.X, fold.test, fold.train)
            y_test = _take(data.y, fold.test)
            shared = _fit_shared(plan, unit, estimator, (X_train, y_train), cache)
            if shared is None:
                t0 = time.perf_counter()
                estimator.fit(X_train, y_train, **fit_params)
                fit_time = time.perf_counter() - t0
            else:
                fit_time = shared.fit_time
            t1 = time.perf_counter()
            test = {}
            if fold.test.size:
                test = _score_all(plan, estimator, X_test, y_test)
            train = (
                _score_all(plan, estimator, X_train, y_train)
                if (plan.return_train_score and fold.test.size)
                else {}
            )
            losses = _bbc_losses(plan, unit, estimator, (X_test, y_test))
            score_time = time.perf_counter() - t1
            kept = _predictions(plan, unit, estimator, X_test) if fold.test.size else None
        except Exception as err:
            failed = _failed(plan, unit, err, (fold.train.size, fold.test.size))
            return _stamp(failed, caught, started, before=_prefix_warnings(cache, unit, plan))
    record = Record(
        unit,
        "ok",
        test,
        train,
        fit_time,
        score_time,
        fold.train.size,
        fold.test.size,
        estimator=estimator if unit.kind == "final" else None,
        reused_steps=0 if shared is None else shared.reused,
        folds=None if losses is None else FoldScores({"loss": losses}),
        predictions=kept,
    )
    return _stamp(record, caught, started, before=() if shared is None else shared.warnings)


def _predictions(plan: Plan, unit: Unit, estimator: Any, X_test: Any) -> Predictions | None:
    """The outputs on the test rows a fit or refit keeps when the plan asks (not timed).

    Each is the estimator's own array, as ``cross_val_predict`` calls it; the
    classes come along with the per-class outputs, whose columns follow them.
    """
    if not plan.predictions or unit.kind not in ("fit", "refit"):
        return None
    arrays = {m: np.asarray(getattr(estimator, m)(X_test)) for m in plan.predictions}
    if set(plan.predictions) - {"predict"} and hasattr(estimator, "classes_"):
        arrays["classes_"] = np.asarray(estimator.classes_)
    return Predictions(arrays)


def _bbc_losses(
    plan: Plan, unit: Unit, estimator: Any, test: tuple[Any, Any]
) -> NDArray[np.float64] | None:
    """Per-sample test losses of an all-data fit unit, when the plan asks for BBC-CV."""
    if plan.bbc is None or unit.kind != "fit" or unit.outer is not None or not len(test[1]):
        return None
    return per_sample_loss(plan.bbc.metric, estimator, *test)


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
    return replace(
        record,
        warnings=before + tuple(w.category.__name__ for w in caught) + extra,
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
    """Run a chunk of units in order.

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
    for unit in units:
        if unit.kind == "fit" and unit.inner is None:
            done = run_fast_unit(plan, data, unit)
        elif unit.kind == "criteria":
            done = [run_criteria_unit(plan, data, unit)]
        elif unit.kind == "ncv":
            done = [run_ncv_unit(plan, data, unit)]
        elif unit.kind == "perm":
            done = [run_permuted_unit(plan, data, unit)]
        elif unit.kind == "boot":
            done = [run_bootstrap_unit(plan, data, unit)]
        else:
            done = [run_unit(plan, data, unit, cache)]
        if on_unit is not None:
            on_unit(done)
        records += done
    return records


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


def run_ncv_unit(plan: Plan, data: Dataset, unit: Unit) -> Record:
    """Fit one model of the nested CV interval and keep its per-sample test losses.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    unit : Unit
        An ``ncv`` unit.

    Returns
    -------
    Record
        The losses on the unit's test rows (in row order) as ``folds["loss"]``.
    """
    metric = plan.interval.metric  # type: ignore[union-attr]

    def losses(estimator: Any, X_test: Any, test: NDArray[np.intp]) -> NDArray[np.float64]:
        return per_sample_loss(metric, estimator, X_test, _take(data.y, test))

    return _fit_and_keep(plan, data, unit, "loss", losses)


def _fit_and_keep(
    plan: Plan,
    data: Dataset,
    unit: Unit,
    name: str,
    measure: Callable[[Any, Any, NDArray[np.intp]], NDArray[np.float64]],
) -> Record:
    """Fit ``unit``'s candidate on its training rows; keep ``measure`` of its test rows.

    ``measure(estimator, X_test, test_rows)`` gives one value per test row,
    kept in row order as ``folds[name]``; its time is the record's score time.
    """
    fold, started = plan.fold_of(unit), time.time()
    estimator, pairwise = _fresh_estimator(plan, unit.candidate)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            X_train, y_train = _train_data(pairwise, data, fold.train, False)
            X_test = _split_rows(pairwise, data.X, fold.test, fold.train)
            t0 = time.perf_counter()
            estimator.fit(X_train, y_train, **_fit_params(data, fold.train))
            fit_time = time.perf_counter() - t0
            values = measure(estimator, X_test, fold.test)
            score_time = time.perf_counter() - t0 - fit_time
        except Exception as err:
            failed = _failed(plan, unit, err, (fold.train.size, fold.test.size))
            return _stamp(replace(failed, test_scores={}, train_scores={}), caught, started)
    shape = (fold.train.size, fold.test.size)
    record = Record(unit, "ok", {}, {}, fit_time, score_time, *shape,
                    folds=FoldScores({name: values}))  # fmt: skip
    return _stamp(record, caught, started)


def run_permuted_unit(plan: Plan, data: Dataset, unit: Unit) -> Record:
    """Fit and score one fold of one permutation of a permutation test.

    As scikit-learn's ``permutation_test_score``: fit ``X[train]`` on the
    permuted targets of those rows and score on ``X[test]`` with theirs.

    Parameters
    ----------
    plan : Plan
        A plan with ``permutations``.
    data : Dataset
    unit : Unit
        A ``perm`` unit: permutation ``unit.outer``, fold ``unit.inner``.

    Returns
    -------
    Record
        Its test scores; a failed record (scored ``error_score``) if it failed.
    """
    fold, started = plan.fold_of(unit), time.time()
    permutations = plan.permutations
    assert permutations is not None  # a perm unit belongs to a permutation test's plan
    estimator, pairwise = _fresh_estimator(plan, unit.candidate)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            X_train = _split_rows(pairwise, data.X, fold.train, fold.train)
            y_train = _take(data.y, permutations.target_rows(unit.outer, fold.train))  # type: ignore[arg-type]
            X_test = _split_rows(pairwise, data.X, fold.test, fold.train)
            y_test = _take(data.y, permutations.target_rows(unit.outer, fold.test))  # type: ignore[arg-type]
            t0 = time.perf_counter()
            estimator.fit(X_train, y_train, **_fit_params(data, fold.train))
            fit_time = time.perf_counter() - t0
            test = _score_all(plan, estimator, X_test, y_test)
            score_time = time.perf_counter() - t0 - fit_time
        except Exception as err:
            failed = _failed(plan, unit, err, (fold.train.size, fold.test.size))
            return _stamp(replace(failed, train_scores={}), caught, started)
    shape = (fold.train.size, fold.test.size)
    record = Record(unit, "ok", test, {}, fit_time, score_time, *shape)
    return _stamp(record, caught, started)


def run_bootstrap_unit(plan: Plan, data: Dataset, unit: Unit) -> Record:
    """Fit one bootstrap round of a bias-variance decomposition; keep its predictions.

    As mlxtend's ``bias_variance_decomp``: fit on the bootstrap rows of the
    training set (``fold.train``, with repeats) and predict the test rows.

    Parameters
    ----------
    plan : Plan
    data : Dataset
        The training rows followed by the test rows.
    unit : Unit
        A ``boot`` unit: round ``unit.inner``.

    Returns
    -------
    Record
        The predictions on the test rows (in row order) as
        ``folds["prediction"]``, as float64: numeric targets only.
    """

    def predictions(estimator: Any, X_test: Any, test: NDArray[np.intp]) -> NDArray[np.float64]:
        return np.asarray(estimator.predict(X_test), dtype=np.float64).ravel()

    return _fit_and_keep(plan, data, unit, "prediction", predictions)


def run_criteria_unit(plan: Plan, data: Dataset, unit: Unit) -> Record:
    """Fit one candidate on the outer-train part (or all data) and compute its criteria.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    unit : Unit
        A ``criteria`` unit.

    Returns
    -------
    Record
        The criteria values in ``test_scores``; a failed record if the fit
        failed or a criterion is undefined (error type ``CriteriaUndefinedError``).
    """
    rows = plan.rows_of(unit.outer)
    started = time.time()
    estimator, pairwise = _fresh_estimator(plan, unit.candidate)
    X_train, y_train = _train_data(pairwise, data, rows, unit.outer is None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            estimator.fit(X_train, y_train, **_fit_params(data, rows))
            fit_time = time.perf_counter() - t0
            values = evaluate_criteria(estimator, X_train, y_train, plan.criteria)  # type: ignore[arg-type]
        except Exception as err:
            return _stamp(_failed(plan, unit, err, (rows.size, 0)), caught, started)
    score_time = time.perf_counter() - t0 - fit_time
    record = Record(unit, "ok", values, {}, fit_time, score_time, rows.size, 0)
    return _stamp(record, caught, started)


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
    for j, c in enumerate(batch):
        per_fold = {name: np.ascontiguousarray(s[j]) for name, s in out.scores.items()}
        record = Record(
            Unit("fit", unit.outer, None, c),
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


def _fast_failure(plan: Plan, candidate: int, record: Record) -> Record:
    """The failed record of one candidate of a fast batch: error_score on every fold."""
    n_folds = len(plan.inner_folds[record.unit.outer])
    value = np.full(n_folds, _error_value(plan))
    return replace(
        record,
        unit=Unit("fit", record.unit.outer, None, candidate),
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
    if unit.kind == "fit" and unit.inner is None:
        failed = Record(unit, "failed", {}, {}, 0.0, 0.0, 0, 0, error=error)
        records = [_fast_failure(plan, c, failed) for c in plan.batch_of(unit)]
    else:
        fold = plan.fold_of(unit)
        records = [_failed_with(plan, unit, error, (fold.train.size, fold.test.size))]
    return [replace(r, worker=worker, started=now, finished=now) for r in records]


def _failed_with(plan: Plan, unit: Unit, error: ErrorInfo, n: tuple[int, int]) -> Record:
    try:
        raise RuntimeError(error.message)
    except RuntimeError as err:
        record = _failed(plan, unit, err, n)
    return replace(record, error=error)
