"""Running an iteration path: one fit per (fold, point of the space), scored at checkpoints.

A ``path`` unit (:mod:`parcv.plan.iterations`) grows one estimator per inner
fold along the checkpoints of its iteration parameter and makes the ``fit``
record of every checkpoint, as a separate fit at that count would, bit for
bit: the plan gives a path a shortcut only where :mod:`parcv.plan.shortcuts`
declares it exact (a ``"separate"`` path is ordinary fit units, never a path
unit). Early stopping is a strategy (:mod:`parcv.strategies.early_stopping`):
each of its rounds is a plan whose path units score a window of the
checkpoints, fitted once to the window's last count.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.metrics import accuracy_score, r2_score

from parcv.engine.work import (
    RUNNERS,
    Runner,
    _failed,
    _failed_with,
    _fit_params,
    _fresh_estimator,
    _score_all,
    _Split,
    _split_data,
    _stamp,
)
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.iterations import booster_library
from parcv.plan.kept import KeptFit
from parcv.plan.records import PREDICT_METHODS, ErrorInfo, Record, Unit

__all__ = ["run_path_unit"]


class _AtIteration:
    """A fitted estimator seen at iteration ``t`` of its path, for the scorers.

    Its prediction methods answer as the estimator fitted with ``t``
    iterations would: from the staged outputs (``staged``) or the booster's
    first ``t`` rounds (``booster``); everything else is the estimator's.
    """

    def __init__(self, fitted: Any, t: int, outputs: Callable[[str, Any, int], Any]) -> None:
        self._fitted, self._t, self._outputs = fitted, t, outputs

    def __getattr__(self, name: str) -> Any:
        fitted = self.__dict__["_fitted"]
        if name in PREDICT_METHODS and hasattr(fitted, name):

            def output(X: Any) -> Any:
                return self._outputs(name, X, self._t)

            output.__name__ = output.__qualname__ = name  # scorers read the method's name
            return output
        return getattr(fitted, name)

    def __sklearn_tags__(self) -> Any:
        return self._fitted.__sklearn_tags__()

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """The estimator's own ``score`` (accuracy or R²) at iteration ``t``."""
        predicted = self._outputs("predict", X, self._t)
        if is_classifier(self._fitted):
            return float(accuracy_score(y, predicted, sample_weight=sample_weight))
        if is_regressor(self._fitted):
            return float(r2_score(y, predicted, sample_weight=sample_weight))
        raise TypeError(
            f"{type(self._fitted).__name__} is neither a classifier nor a regressor: give "
            "scoring= to score its iteration path."
        )


def _split_estimator(estimator: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The final step of a Pipeline (or the estimator) and how to bring X to it."""
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and len(steps) > 1:
        head = estimator[:-1]
        return steps[-1][1], head.transform
    final = steps[-1][1] if isinstance(steps, list) else estimator
    return final, lambda X: X


@dataclass
class _Staged:
    """Staged outputs at the checkpoints, computed in one pass per method and rows."""

    fitted: Any
    checkpoints: tuple[int, ...]
    cache: dict[tuple[str, int], tuple[Any, dict[int, Any]]] = field(default_factory=dict)

    def outputs(self, method: str, X: Any, t: int) -> Any:
        found = self.cache.get((method, id(X)))
        if found is None or found[0] is not X:
            final, to_final = _split_estimator(self.fitted)
            staged_name = "staged_predict_proba" if method == "predict_log_proba" else method
            stages = getattr(final, f"staged_{staged_name.removeprefix('staged_')}")
            wanted, at = set(self.checkpoints), {}
            out: Any = None
            for n, out in enumerate(stages(to_final(X)), start=1):
                if n in wanted:
                    at[n] = np.log(out) if method == "predict_log_proba" else out
            for n in wanted - set(at):  # after a model's own early stop: its last stage
                at[n] = np.log(out) if method == "predict_log_proba" else out
            found = self.cache[(method, id(X))] = (X, at)
        return found[1][t]


def _booster_outputs(fitted: Any) -> Callable[[str, Any, int], Any]:
    final, to_final = _split_estimator(fitted)
    xgboost = booster_library(final) == "xgboost"

    def outputs(method: str, X: Any, t: int) -> Any:
        call = getattr(final, method)
        if xgboost:
            return call(to_final(X), iteration_range=(0, t))
        return call(to_final(X), num_iteration=t)

    return outputs


@dataclass
class _Grower:
    """One inner fold's estimator grown along the path: ``advance(t)`` then ``view(t)``."""

    plan: Plan
    data: Dataset
    method: str
    estimator: Any
    split: _Split
    fit_params: dict[str, Any]
    done: int = 0
    grown: str = ""
    horizon: int = 0
    outputs: Callable[[str, Any, int], Any] | None = None
    pristine: Any = None  # the unfitted estimator, for fits from scratch after the first

    def __post_init__(self) -> None:
        self.pristine = copy.deepcopy(self.estimator)

    def _from_scratch(self, t: int) -> None:
        """Fit a fresh copy of the unfitted estimator with ``t`` iterations.

        A fresh copy, not a refit: a ``random_state`` given as a RandomState
        is advanced by each fit, and a separate fit starts from its first state.
        """
        if self.done or self.horizon:
            self.estimator = copy.deepcopy(self.pristine)
        self.estimator.set_params(**{self._param: t})
        self.estimator.fit(self.split.X_train, self.split.y_train, **self.fit_params)

    @property
    def _param(self) -> str:
        return self.plan.iterations.param  # type: ignore[union-attr]

    @property
    def _checkpoints(self) -> tuple[int, ...]:
        return self.plan.iterations.checkpoints  # type: ignore[union-attr]

    def _prefixed(self, name: str) -> str:
        head, sep, _ = self._param.rpartition("__")
        return f"{head}{sep}{name}"

    @property
    def fitted_ahead(self) -> bool:
        """Whether checkpoints are read from one fit to a later count (staged, booster)."""
        return self.grown in ("staged", "booster", "continued")

    def advance(self, t: int) -> float:
        """Grow the estimator to ``t`` iterations; return the seconds spent fitting."""
        self.grown = self.grown or self.method
        X, y = self.split.X_train, self.split.y_train
        t0 = time.perf_counter()
        if self.grown == "warm_start":
            self.estimator.set_params(**{self._param: t, self._prefixed("warm_start"): True})
            self.estimator.fit(X, y, **self.fit_params)
        elif self.grown == "partial_fit":
            extra = {}
            if self.done == 0:  # the count the epochs go up to, as fit(max_iter=...) sees it
                self.estimator.set_params(**{self._param: self._checkpoints[-1]})
                if is_classifier(self.estimator):  # the classes fit() finds in these rows
                    extra["classes"] = np.unique(y)
            for _ in range(t - self.done):
                self.estimator.partial_fit(X, y, **extra, **self.fit_params)
                extra = {}
        elif self.grown == "continued":
            if t > self.horizon:
                self._continue_ahead()
        elif t > self.horizon:
            self._fit_ahead(t)
        self.done = t
        return time.perf_counter() - t0

    def _continue_ahead(self) -> None:
        """Grow a kept fit by one warm start to the last checkpoint; read the others' stages.

        The warm start gives the fit from scratch to the last count and a stage
        ``t`` of that fit is the fit to ``t`` (the shortcut table's
        ``"continuation"`` and ``"staged"`` rows, both exact for this path): one
        fit and one pass of staged outputs, where a warm start and a scoring at
        every checkpoint grew and read the trees before each checkpoint again.
        """
        horizon = self._checkpoints[-1]
        warm = {self._param: horizon, self._prefixed("warm_start"): True}
        self.estimator.set_params(**warm)
        self.estimator.fit(self.split.X_train, self.split.y_train, **self.fit_params)
        self.horizon = horizon
        self.outputs = _Staged(self.estimator, self._checkpoints).outputs

    def _fit_ahead(self, t: int) -> None:
        """Fit from scratch to the last checkpoint and read the others from its stages.

        A fit from scratch to ``h`` has the same first ``t`` stages as one to
        ``t``; an early-stopping round's window ends at its own last checkpoint.
        """
        horizon = self._checkpoints[-1]
        self._from_scratch(horizon)
        self.horizon = horizon
        if self.grown == "staged":
            counts = tuple(c for c in self._checkpoints if c <= self.horizon)
            self.outputs = _Staged(self.estimator, counts).outputs
        else:
            self.outputs = _booster_outputs(self.estimator)

    def view(self, t: int) -> Any:
        """The estimator as the scorers see it at ``t`` iterations."""
        if self.outputs is not None:
            return _AtIteration(self.estimator, t, self.outputs)
        return self.estimator


_Scores = tuple[dict[str, float], dict[str, float], dict[str, ErrorInfo]]


def _score(plan: Plan, model: Any, split: _Split) -> _Scores:
    test = _score_all(plan, model, split.X_test, split.y_test, split.score_test, "test")
    train_scores: dict[str, float] = {}
    errors = dict(test.errors)
    if plan.return_train_score:
        train = _score_all(plan, model, split.X_train, split.y_train, split.score_train, "train")
        train_scores, errors = train.scores, {**errors, **train.errors}
    return test.scores, train_scores, errors


@dataclass
class _FoldPath:
    """The records of one inner fold's path as it grows."""

    unit: Unit
    grower: _Grower | None
    n: tuple[int, int]
    records: list[Record] = field(default_factory=list)
    failure: Record | None = None
    elapsed: float = 0.0
    base: int = 0  # the count it starts from: a kept fit's, or 0


def run_path_unit(plan: Plan, data: Dataset, unit: Unit) -> list[Record]:
    """Grow a path unit's estimators along the checkpoints, scoring each fold at each.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    unit : Unit
        A ``path`` unit: one inner fold of one point of the space.

    Returns
    -------
    list of Record
        The ``fit`` record of every checkpoint of the path, in
        :meth:`Plan.record_units` order. A record's fit time is the time its
        fold's estimator took to grow from the previous checkpoint to its own
        (a staged or booster path fitted at once: its share of that one fit,
        by iterations). A fold whose fit fails fails at every later checkpoint.
    """
    iterations: Any = plan.iterations  # set: a plan has path units only then
    group = plan.batch_of(unit)
    method = plan.path_methods[plan.paths.index(group)]
    checkpoints = iterations.checkpoints
    started = time.time()
    fold = _start_fold(plan, data, unit, unit.inner, (group[0], method))  # type: ignore[arg-type]
    for j in range(len(checkpoints)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            record = _step(plan, fold, group[j], j, checkpoints)
        fold.records.append(_stamp(record, caught, started))
    if plan.keep_fitted and fold.grower is not None and fold.records[-1].ok:
        # The estimator at the window's last checkpoint, for the next window to continue.
        kept = KeptFit.of(fold.grower.estimator)
        fold.records[-1] = replace(fold.records[-1], estimator=kept)
    return fold.records


def _start_fold(
    plan: Plan, data: Dataset, unit: Unit, inner: int, first: tuple[int, str]
) -> _FoldPath:
    candidate, method = first
    record_unit = Unit("fit", unit.outer, inner, candidate)
    fold = plan.inner_folds[unit.outer][inner]
    estimator, pairwise = _fresh_estimator(plan, candidate)
    split = _split_data(plan, data, record_unit, fold, pairwise)
    grower = _Grower(plan, data, method, estimator, split, _fit_params(data, fold.train))
    start = plan.starts.get(record_unit.key) if plan.starts else None
    if start is not None:
        # A window continuing the last one's fit (Part.continues): grown by a warm start from
        # its count on, where the shortcut table says that is the fit from scratch.
        grower.estimator = start.estimator()
        # Where the path reads its checkpoints from stages, one warm start to the window's
        # end; elsewhere (a forest) a warm start to each checkpoint.
        grower.grown = "continued" if method == "staged" else "warm_start"
        grower.done = int(grower.estimator.get_params()[plan.iterations.param])  # type: ignore[union-attr]
    return _FoldPath(record_unit, grower, (fold.train.size, fold.test.size), base=grower.done)


def _step(
    plan: Plan, fold: _FoldPath, candidate: int, j: int, checkpoints: tuple[int, ...]
) -> Record:
    """Grow one fold's estimator to checkpoint ``j`` and score it (a failure sticks)."""
    unit = replace(fold.unit, candidate=candidate)
    grower = fold.grower
    if fold.failure is not None:
        return replace(fold.failure, unit=unit)
    if grower is None:
        raise RuntimeError("a path fold with neither an estimator nor a failure")
    t = checkpoints[j]
    try:
        took = grower.advance(t)
        if grower.fitted_ahead:
            if j == 0:
                fold.elapsed = took  # one fit to the last checkpoint: shared by iterations
            before = checkpoints[j - 1] if j else fold.base
            took = fold.elapsed * (t - before) / (checkpoints[-1] - fold.base)
        t1 = time.perf_counter()
        test, train, errors = _score(plan, grower.view(t), grower.split)
        score_time = time.perf_counter() - t1
    except Exception as err:
        fold.failure = _failed(plan, unit, err, fold.n)
        fold.grower = None
        return fold.failure
    return Record(unit, "ok", test, train, took, score_time, *fold.n, score_errors=errors)


def _lost_path(plan: Plan, unit: Unit, error: ErrorInfo) -> list[Record]:
    """Every record of a path unit whose worker died or timed out: failed."""
    return [_failed_with(plan, r, error, (0, 0)) for r in plan.record_units(unit)]


RUNNERS["path"] = Runner(
    lambda plan, data, unit, cache: run_path_unit(plan, data, unit), _lost_path
)
