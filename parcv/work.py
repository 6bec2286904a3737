"""Pure task work: fit one candidate on one split and score it."""

from __future__ import annotations

import os
import socket
import time
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.utils import _safe_indexing, get_tags

from parcv.data import Dataset
from parcv.plan import Plan
from parcv.records import ErrorInfo, Record, Unit

__all__ = ["run_unit", "run_units"]


def _split_rows(estimator: Any, X: Any, rows: NDArray[np.intp], train: NDArray[np.intp]) -> Any:
    # Precomputed kernels are indexed on both axes, as scikit-learn's _safe_split does.
    subset = _safe_indexing(X, rows)
    if get_tags(estimator).input_tags.pairwise:
        return _safe_indexing(subset, train, axis=1)
    return subset


def _fit_params(data: Dataset, rows: NDArray[np.intp]) -> dict[str, Any]:
    n = data.n_samples
    return {
        name: _safe_indexing(value, rows)
        if hasattr(value, "__len__") and len(value) == n
        else value
        for name, value in data.fit_params.items()
    }


def _score_all(plan: Plan, estimator: Any, X: Any, y: Any) -> dict[str, float]:
    return {name: float(scorer(estimator, X, y)) for name, scorer in plan.scoring.scorers.items()}


def _failed(plan: Plan, unit: Unit, err: BaseException, n: tuple[int, int]) -> Record:
    value = plan.error_score if isinstance(plan.error_score, float) else float("nan")
    scores = {name: value for name in plan.scoring.scorers}
    info = ErrorInfo(type(err).__name__, str(err), traceback.format_exc())
    return Record(
        unit,
        "failed",
        scores,
        dict(scores) if plan.return_train_score else {},
        0.0,
        0.0,
        n[0],
        n[1],
        error=info,
    )


def run_unit(plan: Plan, data: Dataset, unit: Unit) -> Record:
    """Fit and score one unit; a failure becomes a ``failed`` record.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    unit : Unit

    Returns
    -------
    Record
        Scores on the unit's test rows (none for a ``final`` unit, which
        carries the fitted estimator instead).
    """
    fold = plan.fold_of(unit)
    started = time.time()
    # Estimator-valued parameters (model families) are cloned so no fit mutates the plan.
    params = clone(plan.candidates[unit.candidate].params, safe=False)
    estimator = clone(plan.estimator).set_params(**params)
    X_train = _split_rows(estimator, data.X, fold.train, fold.train)
    y_train = _safe_indexing(data.y, fold.train)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            estimator.fit(X_train, y_train, **_fit_params(data, fold.train))
            fit_time = time.perf_counter() - t0
            t1 = time.perf_counter()
            test = {}
            if fold.test.size:
                X_test = _split_rows(estimator, data.X, fold.test, fold.train)
                test = _score_all(plan, estimator, X_test, _safe_indexing(data.y, fold.test))
            train = (
                _score_all(plan, estimator, X_train, y_train)
                if (plan.return_train_score and fold.test.size)
                else {}
            )
            score_time = time.perf_counter() - t1
        except Exception as err:
            failed = _failed(plan, unit, err, (fold.train.size, fold.test.size))
            return _stamp(failed, caught, started)
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
    )
    return _stamp(record, caught, started)


def _stamp(record: Record, caught: Sequence[warnings.WarningMessage], started: float) -> Record:
    return replace(
        record,
        warnings=tuple(w.category.__name__ for w in caught),
        worker=f"{socket.gethostname()}:{os.getpid()}",
        started=started,
        finished=time.time(),
    )


def run_units(plan: Plan, data: Dataset, units: Sequence[Unit]) -> list[Record]:
    """Run a chunk of units in order.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    units : sequence of Unit

    Returns
    -------
    list of Record
        One record per unit, in the same order.
    """
    return [run_unit(plan, data, unit) for unit in units]
