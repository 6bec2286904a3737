"""Stored test-fold predictions of a run, put back together per candidate.

A run with ``return_predictions`` keeps, for every fit (and outer refit),
the estimator's outputs on its test rows. :class:`StoredPredictions` holds
them with the test rows of each fold and the target, so tests on
predictions (McNemar, Cochran's Q) and the pooled confusion matrix of a
nested CV need no refit and no data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from parcv.errors import ParcvError, did_you_mean
from parcv.plan.records import Predictions

__all__ = [
    "NO_PREDICTIONS",
    "OutOfFold",
    "StoredPredictions",
    "no_predictions",
    "stored_predictions",
    "predicts_labels",
]

NO_PREDICTIONS = (
    "this result holds no stored predictions: the run did not keep them. Run it again with "
    "return_predictions=True (in a spec file: predictions = true under [scoring]); records "
    "stored without predictions are not reused for that run, so its fits run again"
)


def no_predictions(what: str) -> ParcvError:
    """The error of an accessor that needs stored predictions, saying how to get them."""
    return ParcvError(f"{what} needs stored predictions; {NO_PREDICTIONS}.")


@dataclass(frozen=True)
class OutOfFold:
    """Outputs of one candidate on the test rows of every fold, fold after fold.

    Parameters
    ----------
    rows : ndarray of shape (n,)
        Row index of each output: the folds' test rows, concatenated in fold
        order (a row appears once per fold that tests it).
    values : ndarray of shape (n, ...)
        The outputs, in the same order.
    y_true : ndarray of shape (n,) or None
        The target of those rows.
    folds : ndarray of shape (n,)
        Fold of each output.
    """

    rows: NDArray[np.intp]
    values: NDArray[Any]
    y_true: NDArray[Any] | None
    folds: NDArray[np.intp]


@dataclass(frozen=True)
class StoredPredictions:
    """Test-fold outputs of a run by candidate (or outer refit) and fold.

    Parameters
    ----------
    methods : tuple of str
        The methods kept (``"predict"``, ``"predict_proba"``, ...).
    tests : tuple of ndarray
        Test rows of each fold, in fold order.
    by_candidate : dict of int to list of Predictions or None
        Per candidate, one entry per fold (``None``: the fit failed or was
        not run).
    y_true : ndarray or None, default=None
        The run's target, when it is at hand.

    Examples
    --------
    >>> p = StoredPredictions(("predict",), (np.array([1]), np.array([0])),
    ...     {0: [Predictions({"predict": np.array([5])}), Predictions({"predict": np.array([7])})]},
    ...     np.array([7, 5]))
    >>> oof = p.out_of_fold(0)
    >>> oof.rows.tolist(), oof.values.tolist(), oof.y_true.tolist()
    ([1, 0], [5, 7], [5, 7])
    """

    methods: tuple[str, ...]
    tests: tuple[NDArray[np.intp], ...] = field(repr=False)
    by_candidate: dict[int, list[Predictions | None]] = field(repr=False)
    y_true: NDArray[Any] | None = field(default=None, repr=False)

    def out_of_fold(self, candidate: int = 0, method: str = "predict") -> OutOfFold:
        """The outputs of ``candidate`` on every fold's test rows, concatenated in fold order.

        Raises
        ------
        ValueError
            ``method`` was not kept, or the candidate has a fold without
            predictions (its fit failed).
        """
        if method.split("[", 1)[0] not in self.methods:  # "predict_proba[1]": one output's
            raise ValueError(
                f"method must be one of the kept methods {list(self.methods)!r}; got "
                f"{method!r}. "
                + did_you_mean(method.split("[", 1)[0], self.methods, end=" ")
                + f"Run with return_predictions={(*self.methods, method)!r} to keep it."
            )
        per_fold = self.by_candidate.get(candidate)
        if per_fold is None:
            raise ValueError(
                f"candidate {candidate!r} has no stored predictions; candidates with them: "
                f"{sorted(self.by_candidate)!r}."
            )
        missing = [i for i, p in enumerate(per_fold) if p is None]
        if missing:
            raise ValueError(
                f"candidate {candidate!r} has no predictions on folds {missing!r}: its fits "
                "there failed or were not run (see the failures). Tests on predictions need "
                "every fold; compare candidates whose fits all succeeded."
            )
        if any(method not in p.arrays for p in per_fold):  # type: ignore[union-attr]
            raise ValueError(
                f"{method!r} returned one array per output (a multi-output estimator): ask "
                f"for one output's, method='{method}[0]', '{method}[1]', ..."
            )
        values = [p.arrays[method] for p in per_fold]  # type: ignore[union-attr]
        rows = np.concatenate(self.tests) if self.tests else np.empty(0, dtype=np.intp)
        folds = np.repeat(np.arange(len(self.tests)), [len(t) for t in self.tests])
        y = None if self.y_true is None else self.y_true[rows]
        return OutOfFold(rows, np.concatenate(values), y, folds)

    def pooled(self, candidate: int = 0, method: str = "predict") -> OutOfFold:
        """Like :meth:`out_of_fold`, with the target required (tests and confusion matrices)."""
        oof = self.out_of_fold(candidate, method)
        if oof.y_true is None:
            raise ValueError(
                "the target of the stored predictions is not at hand (a store written before "
                "predictions kept it); run again with return_predictions=True."
            )
        return oof


def stored_predictions(
    methods: Sequence[str],
    tests: Sequence[NDArray[np.intp]],
    by_candidate: dict[int, list[Predictions | None]],
    y_true: Any,
) -> StoredPredictions | None:
    """A :class:`StoredPredictions`, or None when the run kept no predictions."""
    if not methods:
        return None
    y = None if y_true is None else np.asarray(y_true)
    return StoredPredictions(tuple(methods), tuple(tests), by_candidate, y)


def predicts_labels(pooled: OutOfFold) -> bool:
    """Whether pooled ``predict`` outputs are class labels (each one a value of the target).

    A regressor's predictions are practically never exactly a target value;
    a classifier's always are.

    Examples
    --------
    >>> rows = np.arange(3)
    >>> predicts_labels(OutOfFold(rows, np.array([1, 0, 1]), np.array([0, 1, 1]), rows))
    True
    >>> predicts_labels(OutOfFold(rows, np.array([0.9, 0.1, 1.2]), np.array([1.0, 0.0, 1.0]), rows))
    False
    """
    if pooled.y_true is None or pooled.values.ndim != 1:
        return False
    return bool(np.isin(pooled.values, pooled.y_true).all())
