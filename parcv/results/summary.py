"""Summaries of scores: estimates and their standard errors, ranks, the choice, stability."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from parcv.plan.selection import Selection

__all__ = [
    "ScoreSummaries",
    "ScoreSummary",
    "summarize_scores",
    "summarize_rows",
    "rank_means",
    "select_candidate",
    "select_one_se",
]


@dataclass(frozen=True, slots=True)
class ScoreSummary:
    """Mean and spread of K fold scores.

    Attributes
    ----------
    mean : float
        ``m = 1/K sum_k s_k``.
    std : float
        Population standard deviation over folds (scikit-learn's ``std_test_score``).
    var_mean : float
        Variance of the mean ``1/(K(K-1)) sum_k (s_k - m)^2``.
    se : float
        Standard error ``sqrt(var_mean)``.
    n : int
        Number of folds K.
    """

    mean: float
    std: float
    var_mean: float
    se: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready view."""
        return {
            "mean": self.mean,
            "std": self.std,
            "var_mean": self.var_mean,
            "se": self.se,
            "n": self.n,
        }


def summarize_scores(scores: Sequence[float] | NDArray[np.float64]) -> ScoreSummary:
    """Summarize fold scores: mean, std, variance of the mean, standard error.

    Parameters
    ----------
    scores : array-like of shape (n_folds,)
        One score per fold.

    Returns
    -------
    ScoreSummary
        ``var_mean`` and ``se`` are NaN for a single fold (undefined).

    Raises
    ------
    TypeError
        If a score is not a number.
    ValueError
        If ``scores`` is empty or not 1-D.

    Examples
    --------
    >>> s = summarize_scores([1.0, 2.0, 3.0])
    >>> s.mean, s.var_mean
    (2.0, 0.3333333333333333)
    """
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"scores must be numbers, one per fold; got {scores!r}. "
            "Pass e.g. [0.81, 0.79, 0.84] (convert strings with float() first)."
        ) from err
    if arr.ndim != 1:
        raise ValueError(
            f"scores must be 1-D, one score per fold; got shape {arr.shape} from {scores!r}. "
            "Summarize one row at a time, or use summarize_rows() for a matrix."
        )
    k = arr.size
    if k == 0:
        raise ValueError("scores is empty; summarize at least one fold score.")
    mean = float(np.average(arr))
    std = float(np.sqrt(np.average((arr - mean) ** 2)))
    var_mean = float(np.sum((arr - mean) ** 2) / (k * (k - 1))) if k > 1 else float("nan")
    return ScoreSummary(mean, std, var_mean, float(np.sqrt(var_mean)), k)


class ScoreSummaries(Sequence[ScoreSummary]):
    """A :class:`ScoreSummary` per row of a score matrix, each made when read.

    Kept as four columns, not an object per row: a search of 220,000 candidates held
    35 MB of summaries as a list, about 7 MB so. Reads, compares, pickles and prints as
    the list it stands for.
    """

    __slots__ = ("_columns", "_n")

    def __init__(self, columns: tuple[NDArray[np.float64], ...], n: int) -> None:
        self._columns = columns  # means, stds, variances of the mean, standard errors
        self._n = n

    @overload
    def __getitem__(self, i: int) -> ScoreSummary: ...

    @overload
    def __getitem__(self, i: slice) -> list[ScoreSummary]: ...

    def __getitem__(self, i: int | slice) -> ScoreSummary | list[ScoreSummary]:
        if isinstance(i, slice):
            return list(self._rows(*(c[i] for c in self._columns)))
        m, s, v, e = (float(c[i]) for c in self._columns)
        return ScoreSummary(m, s, v, e, self._n)

    def __len__(self) -> int:
        return len(self._columns[0])

    def __iter__(self) -> Iterator[ScoreSummary]:
        return self._rows(*self._columns)

    def _rows(self, *columns: NDArray[np.float64]) -> Iterator[ScoreSummary]:
        n = self._n
        for m, s, v, e in zip(*(c.tolist() for c in columns), strict=True):
            yield ScoreSummary(m, s, v, e, n)

    def json_rows(self) -> list[dict[str, float | int | None]]:
        """Each summary's ``to_dict()``, NaN and infinity as None: as JSON writes the list."""
        n = self._n
        columns = [[v if math.isfinite(v) else None for v in c.tolist()] for c in self._columns]
        return [{"mean": m, "std": s, "var_mean": v, "se": e, "n": n}
                for m, s, v, e in zip(*columns, strict=True)]  # fmt: skip

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ScoreSummaries, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list's: equal to one, so unhashable

    def __reduce__(self) -> tuple[type[list[ScoreSummary]], tuple[list[ScoreSummary]]]:
        return (list, (list(self),))  # pickled (or copied) as the plain list it stands for

    def __repr__(self) -> str:
        return repr(list(self))


def summarize_rows(scores: NDArray[np.float64]) -> ScoreSummaries:
    """Summarize every row of a score matrix at once; equal to :func:`summarize_scores` per row.

    Parameters
    ----------
    scores : ndarray of shape (n_candidates, n_folds)

    Returns
    -------
    ScoreSummaries
        A sequence of :class:`ScoreSummary`, one per row.

    Examples
    --------
    >>> rows = summarize_rows(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]]))
    >>> rows[0] == summarize_scores([1.0, 2.0, 3.0]), rows[1].mean
    (True, 1.0)
    """
    arr = np.asarray(scores, dtype=np.float64)
    n_rows, k = arr.shape
    if k == 0:
        raise ValueError("scores has no columns; summarize at least one fold score.")
    means = np.average(arr, axis=1)
    squares = (arr - means[:, np.newaxis]) ** 2
    stds = np.sqrt(np.average(squares, axis=1))
    var_means = np.sum(squares, axis=1) / (k * (k - 1)) if k > 1 else np.full(n_rows, np.nan)
    ses = np.sqrt(var_means)
    columns = tuple(np.asarray(c, dtype=np.float64) for c in (means, stds, var_means, ses))
    return ScoreSummaries(columns, k)


def rank_means(means: NDArray[np.float64]) -> NDArray[np.int32]:
    """Rank candidate means as ``GridSearchCV`` does (1 = best, NaN last)."""
    if np.isnan(means).all():
        return np.ones_like(means, dtype=np.int32)
    filled = -np.nan_to_num(means, nan=np.nanmin(means) - 1)
    # scipy's rankdata(method="min"): 1 + the number of strictly better means.
    return np.asarray(np.searchsorted(np.sort(filled), filled, side="left") + 1, dtype=np.int32)


def select_candidate(
    scores: NDArray[np.float64], params: Sequence[Mapping[str, Any]], selection: Selection
) -> int:
    """Pick a candidate from its per-fold scores.

    Parameters
    ----------
    scores : ndarray of shape (n_candidates, n_folds)
        Greater is better; NaN marks failed fits.
    params : sequence of dict
        Parameters of each candidate (for the complexity of ``one_se``).
    selection : Selection

    Returns
    -------
    int
        Index of the selected candidate.

    Raises
    ------
    ValueError
        If every candidate has a NaN mean (all failed).

    Examples
    --------
    >>> s = np.array([[0.5, 0.7], [0.8, 0.9], [0.8, 0.9]])
    >>> select_candidate(s, [{}] * 3, Selection())
    1
    """
    means = np.average(scores, axis=1)
    if np.isnan(means).all():
        raise ValueError("every candidate failed in at least one fold; nothing to select.")
    best = int(np.argmin(rank_means(means)))
    if selection.rule == "best":
        return best
    return select_one_se(scores, lambda c: selection.complexity_of(params[c]))


def select_one_se(scores: NDArray[np.float64], complexity: Callable[[int], float]) -> int:
    """Pick the simplest candidate whose mean is within one standard error of the best.

    Parameters
    ----------
    scores : ndarray of shape (n_candidates, n_folds)
        Greater is better; NaN marks failed fits.
    complexity : callable
        ``complexity(candidate_index) -> float``, smaller is simpler.

    Returns
    -------
    int
        Ties in complexity go to the higher mean, then the lower index.

    Examples
    --------
    >>> s = np.array([[0.70, 0.80], [0.90, 0.92], [0.74, 0.76]])
    >>> select_one_se(s, lambda c: [1, 3, 2][c])
    1
    >>> select_one_se(np.array([[0.88, 0.92], [0.90, 0.92]]), lambda c: c)
    0
    """
    means = np.average(scores, axis=1)
    best = int(np.argmin(rank_means(means)))
    se = summarize_scores(scores[best]).se
    # One fold has no standard error: only candidates tied with the best are eligible.
    threshold = means[best] - (se if np.isfinite(se) else 0.0)
    eligible = [c for c in range(len(means)) if not np.isnan(means[c]) and means[c] >= threshold]
    return min(eligible, key=lambda c: (complexity(c), -means[c], c))


@dataclass(frozen=True, slots=True)
class StabilityRow:
    """How often one candidate was selected over the outer folds."""

    candidate: int
    label: str
    count: int
    frequency: float
    folds: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the row (the folds as a list)."""
        return {
            "candidate": self.candidate,
            "label": self.label,
            "count": self.count,
            "frequency": self.frequency,
            "folds": list(self.folds),
        }


def selection_stability(chosen: Sequence[int], labels: Sequence[str]) -> list[StabilityRow]:
    """Tabulate which candidate each outer fold selected, most frequent first.

    Parameters
    ----------
    chosen : sequence of int
        Candidate selected by each outer fold, in fold order.
    labels : sequence of str
        Label of every candidate.

    Returns
    -------
    list of StabilityRow

    Examples
    --------
    >>> [(r.candidate, r.count) for r in selection_stability([1, 0, 1], ["a", "b"])]
    [(1, 2), (0, 1)]
    """
    counts = Counter(chosen)
    rows = [
        StabilityRow(
            c, labels[c], n, n / len(chosen), tuple(i for i, x in enumerate(chosen) if x == c)
        )
        for c, n in counts.items()
    ]
    return sorted(rows, key=lambda r: (-r.count, r.candidate))
