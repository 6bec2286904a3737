"""Cross-validation schemes materialised once as index arrays."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.model_selection import (
    GroupKFold,
    GroupShuffleSplit,
    LeaveOneGroupOut,
    LeavePGroupsOut,
    ShuffleSplit,
    StratifiedGroupKFold,
    StratifiedKFold,
    check_cv,
)

__all__ = ["Fold", "ThreeWayHoldOut", "materialize_folds", "check_scheme"]

_GROUP_SPLITTERS = (
    GroupKFold,
    GroupShuffleSplit,
    LeaveOneGroupOut,
    LeavePGroupsOut,
    StratifiedGroupKFold,
)


@dataclass(frozen=True, slots=True)
class Fold:
    """One train/test split as absolute row indices into the full data.

    Parameters
    ----------
    train : ndarray of shape (n_train,)
        Rows the estimator is fitted on.
    test : ndarray of shape (n_test,)
        Rows it is scored on.
    """

    train: NDArray[np.intp] = field(compare=False)
    test: NDArray[np.intp] = field(compare=False)


@dataclass(frozen=True, slots=True)
class ThreeWayHoldOut:
    """Train/validation/test hold-out (Architecture B of the seeds).

    Used as the ``outer`` scheme of :func:`parcv.nested_cv`: the test part is
    held out, candidates are fitted on the train part and compared on the
    validation part, the winner is refitted on train + validation and scored
    on test. Used as ``cv`` of :func:`parcv.search` it gives one train/valid
    split of ``train / (train + valid)``.

    Parameters
    ----------
    train, valid, test : float
        Fractions of the samples, each in (0, 1), summing to 1.
    random_state : int, default=0
        Seed of the shuffle.

    Examples
    --------
    >>> scheme = ThreeWayHoldOut(0.6, 0.2, 0.2, random_state=0)
    >>> [(len(tr), len(te)) for tr, te in scheme.split(np.zeros((10, 1)))]
    [(8, 2)]
    """

    train: float = 0.6
    valid: float = 0.2
    test: float = 0.2
    random_state: int = 0

    def __post_init__(self) -> None:
        parts = {"train": self.train, "valid": self.valid, "test": self.test}
        for name, value in parts.items():
            if not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
                raise ValueError(
                    f"ThreeWayHoldOut.{name} must be a fraction in (0, 1); got {value!r}."
                )
        if not np.isclose(sum(parts.values()), 1.0):
            raise ValueError(
                f"ThreeWayHoldOut fractions must sum to 1; got {parts!r} "
                f"(sum {sum(parts.values())!r}). Use e.g. 0.6/0.2/0.2."
            )

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        """Return 1: the hold-out is a single split."""
        return 1

    def split(
        self, X: Any, y: Any = None, groups: Any = None
    ) -> Iterator[tuple[NDArray[np.intp], NDArray[np.intp]]]:
        """Yield the single (train + valid, test) split."""
        splitter = ShuffleSplit(n_splits=1, test_size=self.test, random_state=self.random_state)
        yield from splitter.split(X, y, groups)

    def inner_splitter(self) -> ShuffleSplit:
        """Return the (train, valid) split of the train + valid part."""
        valid = self.valid / (self.train + self.valid)
        return ShuffleSplit(n_splits=1, test_size=valid, random_state=self.random_state)


def check_scheme(cv: Any, y: Any, *, classifier: bool) -> Any:
    """Normalise ``cv`` to a splitter, as scikit-learn's ``check_cv`` does.

    Parameters
    ----------
    cv : int, splitter or iterable of splits
        An int k is stratified k-fold for classifiers, plain k-fold otherwise.
    y : array-like of shape (n_samples,)
        Targets; decide stratification.
    classifier : bool
        Whether the estimator is a classifier.

    Returns
    -------
    splitter
        An object with ``split(X, y, groups)``.
    """
    if isinstance(cv, ThreeWayHoldOut):
        return cv
    if isinstance(cv, bool) or (isinstance(cv, numbers.Integral) and cv < 2):
        raise ValueError(
            f"cv must be an int >= 2, a scikit-learn splitter or a list of splits; got {cv!r}. "
            "Use at least 2 folds."
        )
    if cv is None or isinstance(cv, str):
        raise TypeError(
            f"cv must be an int >= 2, a scikit-learn splitter or a list of splits; got {cv!r}."
        )
    return check_cv(cv, y, classifier=classifier)


def materialize_folds(
    splitter: Any, X: Any, y: Any, groups: Any, *, where: str = "cv"
) -> tuple[Fold, ...]:
    """Split once and check the folds, with errors that name the scheme.

    Parameters
    ----------
    splitter : splitter
        From :func:`check_scheme`.
    X, y, groups : array-like
        The rows to split (row indices of the result are relative to them).
    where : str, default="cv"
        Name of the parameter the scheme came from, for error messages.

    Returns
    -------
    tuple of Fold
        Index arrays relative to ``X``.

    Raises
    ------
    ValueError
        If the scheme cannot split these rows.
    """
    n_samples = len(y)
    _check_before_split(splitter, y, groups, n_samples, where)
    try:
        pairs = list(splitter.split(X, y, groups))
    except ValueError as err:
        raise ValueError(f"{where}={splitter!r} cannot split {n_samples} samples: {err}") from err
    if not pairs:
        raise ValueError(f"{where}={splitter!r} produced no split for {n_samples} samples.")
    folds = []
    for i, (train, test) in enumerate(pairs):
        train = np.asarray(train, dtype=np.intp)
        test = np.asarray(test, dtype=np.intp)
        if train.size == 0 or test.size == 0:
            raise ValueError(
                f"{where}={splitter!r}: split {i} has {train.size} train and {test.size} test "
                "samples; every split needs both. Use fewer folds or more data."
            )
        folds.append(Fold(train, test))
    return tuple(folds)


def _check_before_split(splitter: Any, y: Any, groups: Any, n_samples: int, where: str) -> None:
    if isinstance(splitter, _GROUP_SPLITTERS) and groups is None:
        raise ValueError(
            f"{where}={splitter!r} splits by group, but groups=None. "
            "Pass groups=array of shape (n_samples,) with the group label of each sample."
        )
    n_splits = getattr(splitter, "n_splits", None)
    is_kfold = isinstance(n_splits, numbers.Integral) and not isinstance(splitter, ShuffleSplit)
    if is_kfold and int(n_splits) > n_samples:  # type: ignore[arg-type]
        raise ValueError(
            f"{where} asks for {n_splits} folds but there are only {n_samples} samples. "
            f"Use at most {n_samples} folds (k <= n_samples), or LeaveOneOut()."
        )
    if isinstance(splitter, StratifiedKFold):
        labels, counts = np.unique(np.asarray(y), return_counts=True)
        small = counts < splitter.n_splits
        if small.any():
            label = (
                labels[small][0].item() if hasattr(labels[small][0], "item") else labels[small][0]
            )
            raise ValueError(
                f"{where} is stratified with {splitter.n_splits} folds, but class {label!r} has "
                f"only {counts[small][0]} member(s), fewer than the folds. Use at most "
                f"{counts.min()} folds, merge rare classes, or pass a non-stratified KFold."
            )
