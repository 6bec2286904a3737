"""Per-fold scores of precomputed held-out predictions, vectorised over folds and candidates.

The common regression scorers are computed for every (candidate, fold) at
once.  Any other scorer is called as usual, once per fold, on a stand-in
estimator whose ``predict`` returns the precomputed predictions.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import check_scoring, get_scorer

__all__ = ["HeldOutPredictions", "score_folds", "scorer_problem"]

Matrix = NDArray[np.float64]
Index = NDArray[np.intp]
_NAMES = {
    "neg_mean_squared_error": "mse",
    "neg_root_mean_squared_error": "rmse",
    "neg_mean_absolute_error": "mae",
    "neg_max_error": "max",
    "r2": "r2",
}


def _scorer_key(scorer: Any) -> tuple[Any, ...] | None:
    """What makes two scikit-learn scorers score alike: function, sign, options, response."""
    func = getattr(scorer, "_score_func", None)
    if func is None:
        return None
    options = repr(sorted(getattr(scorer, "_kwargs", {}).items()))
    return (func, getattr(scorer, "_sign", 1), options, getattr(scorer, "_response_method", ""))


@functools.cache
def _vectorised() -> dict[tuple[Any, ...] | None, str]:
    return {_scorer_key(get_scorer(name)): kind for name, kind in _NAMES.items()}


@functools.cache
def _passthrough_type() -> type:
    # What scikit-learn's check_scoring(estimator, None) returns: a call of estimator.score.
    return type(check_scoring(HeldOutPredictions(), None))


def _kind(scorer: Any, estimator: Any) -> str:
    """Return the vectorised kind of a scorer, 'call' for the stand-in, or ''."""
    if type(scorer) is _passthrough_type():
        # The default scorer is estimator.score: r2 for a plain regressor.
        return "r2" if type(estimator).score is RegressorMixin.score else ""
    key = _scorer_key(scorer)
    kind = _vectorised().get(key) if key is not None else None
    if kind is not None:
        return kind
    return "call" if getattr(scorer, "_response_method", None) == "predict" else ""


def scorer_problem(name: str, scorer: Any, estimator: Any, *, strict: bool) -> str:
    """Return why a scorer cannot score precomputed predictions, or ''.

    Parameters
    ----------
    name : str
        Metric name, for the message.
    scorer : callable
    estimator : estimator object
    strict : bool
        Only scorers known to need nothing but ``predict`` (``fast_cv="auto"``);
        otherwise any callable is tried on the stand-in (``fast_cv=True``).

    Returns
    -------
    str

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> scorer_problem("score", get_scorer("neg_mean_squared_error"), Ridge(), strict=True)
    ''
    """
    if _kind(scorer, estimator) or (not strict and callable(scorer)):
        if type(scorer) is _passthrough_type() and not _kind(scorer, estimator):
            return f"metric {name!r} is {type(estimator).__name__}.score, which is not r2"
        return ""
    return f"metric {name!r} needs more than predict() ({scorer!r})"


class HeldOutPredictions(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Stand-in estimator: ``predict(X)`` returns held-out predictions of rows ``X[:, 0]``.

    Parameters
    ----------
    predictions : ndarray of shape (n_rows,)

    Examples
    --------
    >>> HeldOutPredictions(np.array([1.0, 2.0])).predict(np.array([[1]]))
    array([2.])
    """

    def __init__(self, predictions: Matrix | None = None) -> None:
        self.predictions = predictions

    def fit(self, X: Any, y: Any = None) -> HeldOutPredictions:
        """Do nothing: the predictions are precomputed."""
        return self

    def predict(self, X: Any) -> Matrix:
        """Return the stored predictions of the rows named in ``X[:, 0]``."""
        if self.predictions is None:
            raise ValueError(
                "predictions is None; HeldOutPredictions(predictions) needs the held-out "
                "predictions of every row."
            )
        return np.asarray(self.predictions[np.asarray(X)[:, 0]])


def _reduce(values: Matrix, offsets: Index, ufunc: Any, loo: bool) -> Matrix:
    """Reduce (n_rows, m) values fold by fold into (m, n_folds)."""
    if loo:
        return values.T
    return np.asarray(ufunc.reduceat(values, offsets[:-1], axis=0).T)


def _r2(y: Matrix, err: Matrix, offsets: Index, sizes: Index, loo: bool) -> Matrix:
    if loo:
        return np.full(err.shape[::-1], np.nan)
    means = np.add.reduceat(y, offsets[:-1]) / sizes
    total = np.add.reduceat((y - np.repeat(means, sizes)) ** 2, offsets[:-1])[:, None]
    residual = np.add.reduceat(err**2, offsets[:-1], axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - residual / total
    # scikit-learn's force_finite: constant targets give 1 if fitted exactly, else 0.
    r2 = np.where(total == 0, np.where(residual == 0, 1.0, 0.0), r2)
    r2[sizes < 2] = np.nan
    return np.asarray(r2.T)


def _vector_scores(kind: str, y: Matrix, err: Matrix, offsets: Index) -> Matrix:
    sizes = np.diff(offsets)
    loo = bool(np.all(sizes == 1))
    if kind == "r2":
        return _r2(y, err, offsets, sizes, loo)
    if kind == "max":
        return -_reduce(np.abs(err), offsets, np.maximum, loo)
    values = np.abs(err) if kind == "mae" else err**2
    mean = _reduce(values, offsets, np.add, loo) / sizes
    return -np.sqrt(mean) if kind == "rmse" else -mean


def _called_scores(
    scorer: Callable[..., float], y: Matrix, predictions: Matrix, order: Index, offsets: Index
) -> Matrix:
    out = np.empty((predictions.shape[1], len(offsets) - 1))
    for j in range(predictions.shape[1]):
        stand_in = HeldOutPredictions(predictions[:, j])
        for f in range(len(offsets) - 1):
            rows = order[offsets[f] : offsets[f + 1]]
            out[j, f] = float(scorer(stand_in, rows[:, np.newaxis], y[rows]))
    return out


def score_folds(
    scorers: Mapping[str, Callable[..., float]],
    estimator: Any,
    y: Matrix,
    predictions: Matrix,
    order: Index,
    offsets: Index,
) -> tuple[dict[str, Matrix], tuple[str, ...]]:
    """Score held-out predictions fold by fold, for every candidate of a batch.

    Parameters
    ----------
    scorers : mapping of str to callable
    estimator : estimator object
        The template (decides what the default ``score`` is).
    y : ndarray of shape (n_rows,)
    predictions : ndarray of shape (n_rows, n_candidates)
    order : ndarray of shape (n_rows,)
        Row positions, fold after fold.
    offsets : ndarray of shape (n_folds + 1,)
        Fold ``f`` holds ``order[offsets[f]:offsets[f + 1]]``.

    Returns
    -------
    scores : dict of str to ndarray of shape (n_candidates, n_folds)
    warnings : tuple of str
        Category names of warnings raised while scoring (once per kind).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> scorers = {"mse": get_scorer("neg_mean_squared_error")}
    >>> y, p = np.array([1.0, 2.0, 4.0]), np.array([[1.5], [2.0], [3.0]])
    >>> score_folds(scorers, Ridge(), y, p, np.arange(3), np.array([0, 2, 3]))[0]["mse"]
    array([[-0.125, -1.   ]])
    """
    scores: dict[str, Matrix] = {}
    caught_names: list[str] = []
    err = predictions[order] - y[order, np.newaxis]
    for name, scorer in scorers.items():
        kind = _kind(scorer, estimator)
        if kind in ("", "call"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                scores[name] = _called_scores(scorer, y, predictions, order, offsets)
            caught_names += [w.category.__name__ for w in caught]
        else:
            scores[name] = _vector_scores(kind, y[order], err, offsets)
            if kind == "r2" and np.any(np.diff(offsets) < 2):
                caught_names.append("UndefinedMetricWarning")
    return scores, tuple(dict.fromkeys(caught_names))
