"""The plan: candidates, folds and units of a run, as plain data."""

from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils import _safe_indexing

from parcv import __version__
from parcv.data import Dataset
from parcv.records import Unit
from parcv.scoring import Scoring, check_scoring_spec
from parcv.space import Candidate, check_candidate_params, check_space
from parcv.splits import Fold, ThreeWayHoldOut, check_scheme, materialize_folds
from parcv.summary import Selection

__all__ = ["Plan", "build_plan", "fingerprint"]


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything that determines the numbers of a run, materialised once.

    Parameters
    ----------
    estimator : estimator object
        Template cloned for every unit.
    candidates : tuple of Candidate
    scoring : Scoring
    outer_folds : tuple of Fold
        Empty unless nested.
    inner_folds : dict
        Inner folds per outer fold (``None`` = all data), absolute indices.
    units : tuple of Unit
        Every ``fit`` unit, in scheduling priority order.
    refit_outers : tuple of int
        Outer folds whose selected candidate is refitted and scored.
    final : bool
        Whether the selected candidate is refitted on all data.
    selection : Selection
    error_score : float or "raise"
    return_train_score : bool
    n_samples : int
    """

    estimator: Any
    candidates: tuple[Candidate, ...]
    scoring: Scoring
    outer_folds: tuple[Fold, ...]
    inner_folds: dict[int | None, tuple[Fold, ...]] = field(repr=False)
    units: tuple[Unit, ...] = field(repr=False)
    refit_outers: tuple[int, ...]
    final: bool
    selection: Selection
    error_score: float | str
    return_train_score: bool
    n_samples: int

    @property
    def n_units(self) -> int:
        """Total number of units, refits included."""
        return len(self.units) + len(self.refit_outers) + int(self.final)

    def fold_of(self, unit: Unit) -> Fold:
        """Return the rows a unit fits on and scores on."""
        if unit.kind == "fit":
            return self.inner_folds[unit.outer][unit.inner]  # type: ignore[index]
        if unit.kind == "refit":
            return self.outer_folds[unit.outer]  # type: ignore[index]
        return Fold(np.arange(self.n_samples, dtype=np.intp), np.empty(0, dtype=np.intp))

    def fit_keys(self, outer: int | None) -> list[Unit]:
        """Return the fit units whose results select the candidate of ``outer``."""
        return [u for u in self.units if u.outer == outer]


def check_error_score(error_score: Any) -> float | str:
    """Accept ``"raise"`` or a number."""
    if error_score == "raise":
        return "raise"
    if isinstance(error_score, numbers.Real) and not isinstance(error_score, bool):
        return float(error_score)
    raise ValueError(
        f"error_score must be 'raise' or a number; got {error_score!r}. "
        "Use float('nan') to record failures and go on, or 'raise' to stop at the first."
    )


def _check_estimator(estimator: Any) -> None:
    if isinstance(estimator, type):
        raise TypeError(
            f"estimator must be an instance, not the class {estimator.__name__}; "
            f"pass {estimator.__name__}()."
        )
    if not callable(getattr(estimator, "fit", None)) or not hasattr(estimator, "get_params"):
        raise TypeError(
            f"estimator must be a scikit-learn compatible estimator with fit() and "
            f"get_params(); got {estimator!r}. Wrap your model in a BaseEstimator subclass."
        )


def _inner_folds(
    inner: Any, data: Dataset, rows: Fold | None, classifier: bool
) -> tuple[Fold, ...]:
    if rows is None:
        y, groups, X = data.y, data.groups, data.X
        where = "cv"
    else:
        idx = rows.train
        y = _safe_indexing(data.y, idx)
        groups = None if data.groups is None else data.groups[idx]
        X = _safe_indexing(data.X, idx)
        where = "inner"
    splitter = check_scheme(inner, y, classifier=classifier)
    folds = materialize_folds(splitter, X, y, groups, where=where)
    if rows is None:
        return folds
    return tuple(Fold(rows.train[f.train], rows.train[f.test]) for f in folds)


def build_plan(
    estimator: Any,
    space: Any,
    data: Dataset,
    *,
    inner: Any,
    outer: Any = None,
    scoring: Any = None,
    refit: bool | str = True,
    selection: Selection | None = None,
    error_score: Any = math.nan,
    return_train_score: bool = False,
    final: bool | None = None,
) -> Plan:
    """Validate everything and materialise the units of a run.

    Parameters
    ----------
    estimator : estimator object
    space : dict, list of dict, RandomSpace or None
    data : Dataset
    inner : int, splitter or ThreeWayHoldOut
        The CV that scores candidates (on all data, or inside each outer fold).
    outer : int, splitter, ThreeWayHoldOut or None, default=None
        Nested CV when given.
    scoring, refit
        As in :func:`parcv.search`.
    selection : Selection, default=None
        Rule that picks a candidate from its CV scores (best mean by default).
    error_score : "raise" or float, default=nan
    return_train_score : bool, default=False
    final : bool, default=None
        Refit the selection on all data; defaults to ``bool(refit)``.

    Returns
    -------
    Plan
    """
    _check_estimator(estimator)
    candidates = check_space(space)
    check_candidate_params(estimator, candidates)
    selects = len(candidates) > 1 or bool(refit)
    score_spec: Scoring = check_scoring_spec(estimator, scoring, refit, selects=selects)
    classifier = is_classifier(estimator)
    outer_folds: tuple[Fold, ...] = ()
    inner_folds: dict[int | None, tuple[Fold, ...]] = {}
    do_final = bool(refit) if final is None else final
    if isinstance(outer, ThreeWayHoldOut) and inner is None:
        inner = outer.inner_splitter()
    if do_final or outer is None:
        a_scheme = inner.inner_splitter() if isinstance(inner, ThreeWayHoldOut) else inner
        inner_folds[None] = _inner_folds(a_scheme, data, None, classifier)
    if outer is not None:
        outer_splitter = check_scheme(outer, data.y, classifier=classifier)
        outer_folds = materialize_folds(outer_splitter, data.X, data.y, data.groups, where="outer")
        for o, fold in enumerate(outer_folds):
            inner_folds[o] = _inner_folds(inner, data, fold, classifier)
    units = tuple(
        Unit("fit", o, i, c.index)
        for o, folds in inner_folds.items()
        for i in range(len(folds))
        for c in candidates
    )
    return Plan(
        estimator=estimator,
        candidates=candidates,
        scoring=score_spec,
        outer_folds=outer_folds,
        inner_folds=inner_folds,
        units=units,
        refit_outers=tuple(range(len(outer_folds))),
        final=do_final,
        selection=selection if selection is not None else Selection(),
        error_score=check_error_score(error_score),
        return_train_score=bool(return_train_score),
        n_samples=data.n_samples,
    )


def _hash_value(h: Any, value: Any) -> None:
    if hasattr(value, "tobytes") and hasattr(value, "dtype"):
        arr = np.ascontiguousarray(value)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
    elif hasattr(value, "to_numpy"):
        _hash_value(h, value.to_numpy())
        h.update(repr(list(getattr(value, "columns", []))).encode())
    elif hasattr(value, "toarray"):
        _hash_value(h, value.toarray())
    else:
        h.update(repr(value).encode())


def fingerprint(plan: Plan, data: Dataset) -> str:
    """Hash what determines the numbers: data, estimator, space, folds, scorers, version.

    Parameters
    ----------
    plan : Plan
    data : Dataset

    Returns
    -------
    str
        Hex digest; equal plans on equal data give equal fingerprints,
        whatever backend or chunking runs them.
    """
    h = hashlib.sha256()
    for value in (data.X, data.y, data.groups):
        _hash_value(h, np.asarray(value) if isinstance(value, list) else value)
    est = plan.estimator
    h.update(f"{type(est).__module__}.{type(est).__qualname__}".encode())
    h.update(repr(sorted(est.get_params(deep=True).items(), key=lambda kv: kv[0])).encode())
    h.update(repr([c.params for c in plan.candidates]).encode())
    for folds in (plan.outer_folds, *plan.inner_folds.values()):
        for fold in folds:
            _hash_value(h, fold.train)
            _hash_value(h, fold.test)
    h.update(repr(sorted(plan.scoring.scorers.items())).encode())
    h.update(repr((plan.scoring.refit, plan.selection, plan.error_score)).encode())
    h.update(repr((plan.return_train_score, plan.final, __version__)).encode())
    return h.hexdigest()
