"""Fold sets whose test sets partition their rows, stored compactly.

Leave-one-out on ``n`` rows has ``n`` train sets of ``n - 1`` rows each;
materialising them costs ``O(n^2)`` memory and time.  When every train set
is the complement of its test set, the test sets alone describe the folds:
:class:`PartitionFolds` keeps only those and builds a fold's train rows when
(and if) a unit asks for them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from parcv.plan.splits import Fold

__all__ = ["PartitionFolds", "as_partition", "leave_one_out_folds", "relative_blocks"]

Index = NDArray[np.intp]


@dataclass(frozen=True, slots=True, eq=False)
class PartitionFolds(Sequence[Fold]):
    """Folds whose test sets partition ``rows`` and whose train sets are their complements.

    Parameters
    ----------
    rows : ndarray of shape (n_rows,)
        The rows that are split (absolute indices, in order).
    tests : ndarray of shape (n_rows,)
        Test rows of every fold, concatenated in fold order.
    offsets : ndarray of shape (n_folds + 1,)
        Fold ``i`` tests ``tests[offsets[i]:offsets[i + 1]]``.
    leave_one_out : bool, default=False
        Whether this is scikit-learn's ``LeaveOneOut`` (one test row per fold).

    Examples
    --------
    >>> folds = leave_one_out_folds(np.array([3, 5, 7]))
    >>> len(folds), folds[1].train.tolist(), folds[1].test.tolist()
    (3, [3, 7], [5])
    """

    rows: Index = field(repr=False)
    tests: Index = field(repr=False)
    offsets: Index = field(repr=False)
    leave_one_out: bool = False

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> Fold:  # type: ignore[override]
        if not -len(self) <= index < len(self):
            raise IndexError(f"fold index {index!r} out of range for {len(self)} folds.")
        index %= len(self)
        test = self.tests[self.offsets[index] : self.offsets[index + 1]]
        if self.leave_one_out:
            # Same rows, same order as LeaveOneOut().split on these rows.
            return Fold(np.delete(self.rows, index), test)
        keep = np.ones(len(self.rows), dtype=bool)
        keep[np.isin(self.rows, test)] = False
        return Fold(self.rows[keep], test)

    def __iter__(self) -> Iterator[Fold]:
        return (self[i] for i in range(len(self)))

    @property
    def sizes(self) -> Index:
        """Number of test rows of every fold."""
        return np.diff(self.offsets)


def leave_one_out_folds(rows: Index) -> PartitionFolds:
    """Describe leave-one-out over ``rows`` without building any train set.

    Parameters
    ----------
    rows : ndarray of shape (n_rows,)
        Absolute row indices, in order.

    Returns
    -------
    PartitionFolds
        Fold ``i`` tests ``rows[i]`` and trains on the other rows, in order.

    Examples
    --------
    >>> leave_one_out_folds(np.arange(4)).sizes.tolist()
    [1, 1, 1, 1]
    """
    rows = np.asarray(rows, dtype=np.intp)
    return PartitionFolds(rows, rows, np.arange(len(rows) + 1, dtype=np.intp), True)


def as_partition(folds: Sequence[Fold], rows: Index) -> PartitionFolds | None:
    """Return ``folds`` as a :class:`PartitionFolds`, or None if they are not one.

    Parameters
    ----------
    folds : sequence of Fold
        Materialised folds over ``rows`` (absolute indices).
    rows : ndarray of shape (n_rows,)
        The rows that were split.

    Returns
    -------
    PartitionFolds or None
        None unless every row is tested exactly once and every train set is
        the complement of its test set within ``rows``.

    Examples
    --------
    >>> rows = np.arange(4)
    >>> kfold = [Fold(np.array([2, 3]), np.array([0, 1])), Fold(np.array([0, 1]), np.array([2, 3]))]
    >>> as_partition(kfold, rows).sizes.tolist()
    [2, 2]
    >>> as_partition(kfold[:1], rows) is None
    True
    """
    if isinstance(folds, PartitionFolds):
        return folds
    rows = np.asarray(rows, dtype=np.intp)
    tests = [np.asarray(f.test, dtype=np.intp) for f in folds]
    if not tests:
        return None
    joined = np.concatenate(tests)
    if len(joined) != len(rows) or not np.array_equal(np.sort(joined), np.sort(rows)):
        return None
    for fold, test in zip(folds, tests, strict=True):
        train = np.asarray(fold.train, dtype=np.intp)
        if len(train) + len(test) != len(rows) or np.isin(train, test).any():
            return None
        if not np.array_equal(np.sort(train), np.setdiff1d(rows, test)):
            return None
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in tests])]).astype(np.intp)
    return PartitionFolds(rows, joined, offsets, False)


def relative_blocks(folds: PartitionFolds, n_samples: int) -> Index:
    """Return the concatenated test rows as positions within ``folds.rows``.

    Parameters
    ----------
    folds : PartitionFolds
    n_samples : int
        Number of rows of the whole data set.

    Returns
    -------
    ndarray of shape (n_rows,)
        ``folds.rows[result] == folds.tests``.

    Examples
    --------
    >>> relative_blocks(leave_one_out_folds(np.array([3, 5, 7])), 8).tolist()
    [0, 1, 2]
    """
    if folds.leave_one_out:
        return np.arange(len(folds.rows), dtype=np.intp)
    position = np.empty(n_samples, dtype=np.intp)
    position[folds.rows] = np.arange(len(folds.rows), dtype=np.intp)
    return position[folds.tests]
