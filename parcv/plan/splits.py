"""Cross-validation schemes materialised once as index arrays."""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Iterator, Mapping, Sequence
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
    check_cv,
)

from parcv.errors import warn_at_caller
from parcv.plan.data import n_rows_of

__all__ = ["Fold", "ThreeWayHoldOut", "check_scheme", "describe_folds", "materialize_folds"]

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
    """Train/validation/test hold-out: a hold-out test set after selection on the validation part.

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


def check_scheme(cv: Any, y: Any, *, classifier: bool, where: str = "cv") -> Any:
    """Normalise ``cv`` to a splitter, as scikit-learn's ``check_cv`` does.

    Parameters
    ----------
    cv : int, splitter or iterable of splits
        An int k is stratified k-fold for classifiers, plain k-fold otherwise.
    y : array-like of shape (n_samples,)
        Targets; decide stratification.
    classifier : bool
        Whether the estimator is a classifier.
    where : str, default="cv"
        Name of the parameter the scheme came from, for error messages.

    Returns
    -------
    splitter
        An object with ``split(X, y, groups)``.

    Raises
    ------
    TypeError
        ``cv`` is a splitter class rather than an instance, a float, a
        string, None or another object that cannot split.
    ValueError
        ``cv`` is an int below 2.

    Examples
    --------
    >>> from sklearn.model_selection import KFold
    >>> check_scheme(KFold, None, classifier=False)
    Traceback (most recent call last):
    ...
    TypeError: cv must be a splitter instance such as KFold(5); got the class KFold. \
Pass KFold(5).
    """
    if isinstance(cv, ThreeWayHoldOut):
        return cv
    expected = f"{where} must be an int >= 2, a scikit-learn splitter or a list of splits"
    if isinstance(cv, type):
        raise TypeError(
            f"{where} must be a splitter instance such as KFold(5); got the class "
            f"{cv.__name__}. Pass {_instance_hint(cv)}."
        )
    if isinstance(cv, bool) or (isinstance(cv, numbers.Integral) and cv < 2):
        raise ValueError(f"{expected}; got {cv!r}. Use at least 2 folds.")
    if isinstance(cv, numbers.Real) and not isinstance(cv, numbers.Integral):
        value = float(cv)
        whole = value.is_integer() and value >= 2
        fix = f"{where}={int(value)}" if whole else f"an int number of folds, e.g. {where}=5"
        raise TypeError(f"{expected}; got the float {cv!r}. Pass {fix}.")
    if (
        cv is None
        or isinstance(cv, (str, bytes))
        or not (isinstance(cv, numbers.Integral) or hasattr(cv, "split") or hasattr(cv, "__iter__"))
    ):
        raise TypeError(f"{expected}; got {cv!r}. Pass e.g. {where}=5 or {where}=KFold(5).")
    return check_cv(cv, y, classifier=classifier)


def _instance_hint(cls: type) -> str:
    """``KFold(5)`` for a class taking ``n_splits``, else ``LeaveOneOut()``."""
    try:
        takes_splits = "n_splits" in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        takes_splits = False
    return f"{cls.__name__}(5)" if takes_splits else f"{cls.__name__}()"


def materialize_folds(
    splitter: Any,
    X: Any,
    y: Any,
    groups: Any,
    *,
    where: str = "cv",
    params: Mapping[str, Any] | None = None,
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
    params : dict, default=None
        Arguments routed to ``split`` by scikit-learn's metadata routing
        (``groups`` among them); then ``split`` gets them as keywords, and
        ``groups`` only from them or from ``groups``.

    Returns
    -------
    tuple of Fold
        Index arrays relative to ``X``. As in scikit-learn, explicit splits
        may give boolean masks or negative indices (counted from the end);
        both become non-negative row indices.

    Warns
    -----
    UserWarning
        What the splitter itself warns, at the user's call: e.g.
        StratifiedKFold's "The least populated class in y has only 1
        members, which is less than n_splits=3", as in scikit-learn, where
        the folds still run.

    Raises
    ------
    ValueError
        If the scheme cannot split these rows, or a split has an index
        outside ``[-n_samples, n_samples)``, a boolean mask of the wrong
        length or an empty side.
    TypeError
        If a split's indices are neither integers nor a boolean mask.
    """
    n_x = n_rows_of(X)
    n_samples = len(y) if n_x is None else n_x
    routed = _accepted(splitter, params) if params else {}
    if groups is not None and routed:
        routed["groups"] = groups
    _check_before_split(splitter, routed.get("groups", groups), n_samples, where)
    label = _describe(splitter, where)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pairs = list(splitter.split(X, y, **routed) if routed else splitter.split(X, y, groups))
    except ValueError as err:
        raise ValueError(f"{label} cannot split {n_samples} samples: {err}") from err
    for warning in caught:
        # The splitter's own warnings (StratifiedKFold's "The least populated class in y has
        # only 1 members ..."), shown at the user's call rather than inside parcv's plan.
        warn_at_caller(str(warning.message), warning.category)
    if not pairs:
        raise ValueError(f"{label} produced no split for {n_samples} samples.")
    _check_count(splitter, len(pairs), (X, y, groups), routed, label)
    folds = []
    for i, (train, test) in enumerate(pairs):
        rows = (_check_indices(part, name, n_samples, f"{label}: split {i}")
                for name, part in (("train", train), ("test", test)))  # fmt: skip
        fold = Fold(*rows)
        if fold.train.size == 0 or fold.test.size == 0:
            raise ValueError(
                f"{label}: split {i} has {fold.train.size} train and {fold.test.size} test "
                "samples; every split needs both. Use fewer folds or more data."
            )
        folds.append(fold)
    return tuple(folds)


def describe_folds(folds: Sequence[Fold]) -> str:
    """Say in words which kind of CV made ``folds``, from the folds alone.

    Parameters
    ----------
    folds : sequence of Fold
        The splits of one CV (of all data, or of an outer fold's training part).

    Returns
    -------
    str
        ``"5-fold CV"`` (test sets partitioning the rows: KFold,
        StratifiedKFold, GroupKFold...), ``"5-fold CV repeated 2 times"``
        (RepeatedKFold, RepeatedStratifiedKFold), ``"leave-one-out CV (n
        folds)"``, ``"leave-p-out CV (m splits)"``, ``"k time-ordered splits
        (each trains on the rows before it)"`` (TimeSeriesSplit), ``"one
        train/validation split"``, else ``"k train/validation splits"``
        (ShuffleSplit, explicit splits).

    Examples
    --------
    >>> from sklearn.model_selection import RepeatedKFold
    >>> pairs = RepeatedKFold(n_splits=3, n_repeats=2, random_state=0).split(np.zeros(9))
    >>> describe_folds([Fold(train, test) for train, test in pairs])
    '3-fold CV repeated 2 times'
    """
    k = len(folds)
    if k == 1:
        return "one train/validation split"
    if getattr(folds, "leave_one_out", False):  # PartitionFolds: no fold is built to see it
        return f"leave-one-out CV ({k} folds)"
    first = folds[0]
    rows = np.union1d(first.train, first.test)
    sizes = [len(f.test) for f in folds]
    repeats = sum(sizes) // len(rows)
    if sum(sizes) == repeats * len(rows) and repeats >= 1 and k % repeats == 0:
        per = k // repeats
        blocks = (np.sort(np.concatenate([f.test for f in folds[r * per : (r + 1) * per]]))
                  for r in range(repeats))  # fmt: skip
        if all(np.array_equal(block, rows) for block in blocks):
            if per == len(rows):
                return f"leave-one-out CV ({k} folds)"
            return f"{per}-fold CV" + (f" repeated {repeats} times" if repeats > 1 else "")
    p = sizes[0]  # leave-p-out is only practical for a small p (and comb() is cheap then)
    if p <= 3 and all(s == p for s in sizes) and k == math.comb(len(rows), p):
        return f"leave-{p}-out CV ({k} splits)"
    if all(f.train.size and f.train.max() < f.test.min() for f in folds):
        return f"{k} time-ordered splits (each trains on the rows before it)"
    return f"{k} train/validation splits"


def _check_count(
    splitter: Any, n_split: int, data: tuple[Any, Any, Any], routed: dict[str, Any], label: str
) -> None:
    """Refuse a splitter whose ``get_n_splits`` disagrees with what ``split`` gave, as scikit-learn.

    A splitter without ``get_n_splits`` (a bare iterable of splits) is not checked.
    """
    get_n_splits = getattr(splitter, "get_n_splits", None)
    if get_n_splits is None:
        return
    X, y, groups = data
    promised = get_n_splits(X, y, **routed) if routed else get_n_splits(X, y, groups)
    if promised != n_split:
        raise ValueError(
            f"cv.split and cv.get_n_splits return inconsistent results. Expected {promised} "
            f"splits, got {n_split}: {label}.get_n_splits() must count the splits its split() "
            "yields."
        )


def _accepted(splitter: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """The routed arguments ``splitter.split`` takes (a list of splits takes no metadata)."""
    try:
        accepted = inspect.signature(splitter.split).parameters
    except (TypeError, ValueError):
        return dict(params)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return dict(params)
    return {name: value for name, value in params.items() if name in accepted}


def _describe(splitter: Any, where: str) -> str:
    """``cv=KFold(...)``, or ``cv (a list of 3 splits)`` rather than the repr of every index."""
    splits = getattr(splitter, "cv", None)  # check_cv wraps an iterable of splits this way
    if isinstance(splits, list):
        return f"{where} (a list of {len(splits)} splits)"
    return f"{where}={splitter!r}"


def _check_indices(values: Any, part: str, n_samples: int, where: str) -> NDArray[np.intp]:
    """Row indices of one side of a split: ints in [-n, n) or a boolean mask, as scikit-learn."""
    array = np.asarray(values)
    if array.size == 0:
        return np.empty(0, dtype=np.intp)
    if array.ndim != 1:
        raise ValueError(
            f"{where}: the {part} indices must be a 1-D array; got shape {array.shape!r}. "
            "Pass one flat array of row indices per side of each split."
        )
    if array.dtype == bool:
        if array.size != n_samples:
            raise ValueError(
                f"{where}: the {part} boolean mask has {array.size} entries for {n_samples} "
                f"samples. Pass a mask of length {n_samples}, or integer row indices."
            )
        return np.flatnonzero(array).astype(np.intp)
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(
            f"{where}: the {part} indices must be integers or a boolean mask; got dtype "
            f"{array.dtype.name!r} (first value {array[0]!r}). Pass integer row indices, "
            "e.g. np.asarray(indices, dtype=int)."
        )
    bad = (array < -n_samples) | (array >= n_samples)
    if bad.any():
        raise ValueError(
            f"{where}: {part} index {array[bad][0].item()!r} is out of range for {n_samples} "
            f"samples (valid indices are 0 to {n_samples - 1}, or -{n_samples} to -1 from the "
            "end). Build the splits from the rows of the data passed, e.g. with a "
            "splitter's split(X)."
        )
    rows = array.astype(np.intp)
    # Negative indices count from the end, as numpy and scikit-learn's _safe_indexing do.
    return np.where(rows < 0, rows + n_samples, rows)


def _check_before_split(splitter: Any, groups: Any, n_samples: int, where: str) -> None:
    if isinstance(splitter, _GROUP_SPLITTERS) and groups is None:
        raise ValueError(
            f"The 'groups' parameter should not be None. {where}={splitter!r} splits by group, "
            "but groups=None. "
            "Pass groups=array of shape (n_samples,) with the group label of each sample."
        )
    n_splits = getattr(splitter, "n_splits", None)
    is_kfold = isinstance(n_splits, numbers.Integral) and not isinstance(splitter, ShuffleSplit)
    if is_kfold and int(n_splits) > n_samples:  # type: ignore[arg-type]
        raise ValueError(
            f"{where} asks for {n_splits} folds but there are only {n_samples} samples. "
            f"Use at most {n_samples} folds (k <= n_samples), or LeaveOneOut()."
        )
