"""Rank-based comparison of several candidates: Friedman test and Nemenyi CD."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats  # type: ignore[import-untyped, unused-ignore]

from parcv.stats.checks import FloatArray, check_probability, check_score_table
from parcv.stats.result import FriedmanResult

__all__ = ["average_ranks", "friedman_test", "nemenyi_critical_difference"]


def _rank_table(
    scores: ArrayLike | Mapping[str, ArrayLike], names: Sequence[str] | None
) -> tuple[FloatArray, tuple[str, ...]]:
    """Rank candidates within each fold (1 = highest score, ties averaged)."""
    table, checked_names = check_score_table(scores, names)
    n_folds, n_candidates = table.shape
    if n_folds < 2 or n_candidates < 2:
        raise ValueError(
            "scores must hold at least 2 folds and 2 candidates; got shape "
            f"(n_folds, n_candidates)={table.shape!r}. Add folds or candidates "
            "(a dict maps each candidate name to its per-fold scores)."
        )
    ranks = np.asarray(scipy_stats.rankdata(-table, axis=1), dtype=np.float64)
    return ranks, checked_names


def _friedman_statistic(ranks: FloatArray) -> float:
    """Return the tie-corrected Friedman chi-square of a (n_folds, k) rank table."""
    n_folds, k = int(ranks.shape[0]), int(ranks.shape[1])
    tie_sizes = [np.unique(row, return_counts=True)[1].astype(np.float64) for row in ranks]
    ties = float(sum(np.sum(sizes**3 - sizes) for sizes in tie_sizes))
    correction = 1.0 - ties / (n_folds * k * (k * k - 1.0))
    if correction <= 0.0:
        raise ValueError(
            f"scores must differ between candidates on at least one fold; got {k!r} "
            f"candidates tied on all {n_folds!r} folds, so the Friedman test is "
            "undefined. The candidates cannot be told apart from these scores."
        )
    rank_sums = ranks.sum(axis=0)
    spread = 12.0 / (n_folds * k * (k + 1.0)) * float(np.sum(rank_sums**2))
    # Clip rounding noise so a statistic that should be 0 is never negative.
    return max((spread - 3.0 * n_folds * (k + 1.0)) / correction, 0.0)


def average_ranks(
    scores: ArrayLike | Mapping[str, ArrayLike], names: Sequence[str] | None = None
) -> dict[str, float]:
    """Average each candidate's within-fold rank over folds (1 = best).

    Parameters
    ----------
    scores : array-like of shape (n_folds, n_candidates) or dict of str to array-like
        Greater-is-better scores of every candidate on the same folds.
    names : sequence of str or None, default=None
        Candidate names for an array; defaults to ``"0"``, ``"1"``, ...

    Returns
    -------
    dict of str to float
        Average rank of each candidate; ties share the average rank.

    Raises
    ------
    ValueError
        If there are fewer than 2 folds or candidates, or non-finite scores.

    See Also
    --------
    friedman_test : Tests whether the average ranks differ.

    Notes
    -----
    Scores are greater-is-better; negate losses first.

    Examples
    --------
    >>> from parcv.stats import average_ranks
    >>> average_ranks({"a": [0.9, 0.8], "b": [0.7, 0.8], "c": [0.6, 0.5]})
    {'a': 1.25, 'b': 1.75, 'c': 3.0}
    """
    ranks, checked_names = _rank_table(scores, names)
    means = ranks.mean(axis=0)
    return {name: float(mean) for name, mean in zip(checked_names, means, strict=True)}


def friedman_test(
    scores: ArrayLike | Mapping[str, ArrayLike], names: Sequence[str] | None = None
) -> FriedmanResult:
    """Test whether several candidates rank differently across the same folds.

    Parameters
    ----------
    scores : array-like of shape (n_folds, n_candidates) or dict of str to array-like
        Greater-is-better scores of every candidate on the same folds (or data
        sets, as in Demsar 2006).
    names : sequence of str or None, default=None
        Candidate names for an array; defaults to ``"0"``, ``"1"``, ...

    Returns
    -------
    FriedmanResult
        Tie-corrected Friedman chi-square (``k - 1`` df), the Iman-Davenport
        F statistic and the average ranks (1 = best).

    Raises
    ------
    ValueError
        If there are fewer than 2 folds or candidates, non-finite scores, or
        if every fold ties all candidates.

    See Also
    --------
    nemenyi_critical_difference : Post-hoc threshold for average ranks.
    holm_best_vs_rest : Post-hoc comparison of the best with the rest.

    Notes
    -----
    Friedman (1937); Iman and Davenport (1980); Demsar (2006), "Statistical
    comparisons of classifiers over multiple data sets", JMLR 7. Folds of one
    data set are not independent, so the p-value is optimistic there.

    Examples
    --------
    >>> from parcv.stats import friedman_test
    >>> scores = [[0.9, 0.8, 0.7], [0.85, 0.8, 0.75], [0.9, 0.7, 0.8], [0.8, 0.75, 0.7]]
    >>> result = friedman_test(scores, names=["rf", "svm", "knn"])
    >>> round(result.statistic, 4), round(result.p_value, 4), result.average_ranks["rf"]
    (6.5, 0.0388, 1.0)
    """
    ranks, checked_names = _rank_table(scores, names)
    n_folds, k = int(ranks.shape[0]), int(ranks.shape[1])
    rank_sums = ranks.sum(axis=0)
    statistic = _friedman_statistic(ranks)
    df_denominator = (k - 1) * (n_folds - 1)
    remainder = n_folds * (k - 1.0) - statistic
    # Every fold ranking the candidates identically makes the F statistic infinite.
    f_statistic = math.inf if remainder <= 0.0 else (n_folds - 1.0) * statistic / remainder
    f_p_value = (
        0.0
        if math.isinf(f_statistic)
        else float(scipy_stats.f.sf(f_statistic, k - 1, df_denominator))
    )
    return FriedmanResult(
        statistic=statistic,
        p_value=float(scipy_stats.chi2.sf(statistic, k - 1)),
        df=k - 1,
        iman_davenport_statistic=f_statistic,
        iman_davenport_p_value=f_p_value,
        iman_davenport_df=(k - 1, df_denominator),
        average_ranks={
            name: float(r) for name, r in zip(checked_names, rank_sums / n_folds, strict=True)
        },
        n_folds=n_folds,
        n_candidates=k,
        assumptions="folds (or data sets) are independent blocks; within a block all "
        "rankings are equally likely under the null",
    )


def nemenyi_critical_difference(n_candidates: int, n_folds: int, alpha: float = 0.05) -> float:
    """Return the Nemenyi critical difference for average ranks.

    Two candidates differ significantly if their average ranks differ by at
    least ``CD = q_alpha sqrt(k (k + 1) / (6 N))``, where ``q_alpha`` is the
    studentized range quantile for ``k`` groups and infinite df, divided by
    ``sqrt(2)``.

    Parameters
    ----------
    n_candidates : int
        Number of candidates ``k`` (at least 2).
    n_folds : int
        Number of folds or data sets ``N`` (at least 2).
    alpha : float, default=0.05
        Family-wise significance level.

    Returns
    -------
    float
        The critical difference in average-rank units.

    Raises
    ------
    TypeError
        If a count is not an int or ``alpha`` is not a float.
    ValueError
        If a count is below 2 or ``alpha`` is not in (0, 1).

    See Also
    --------
    friedman_test : Run first; use the CD only if it rejects.

    Notes
    -----
    Nemenyi (1963); Demsar (2006), JMLR 7, table 5 (``q_0.05`` = 1.960,
    2.343, 2.569, ... for k = 2, 3, 4, ...).

    Examples
    --------
    >>> from parcv.stats import nemenyi_critical_difference
    >>> round(nemenyi_critical_difference(4, 14), 4)
    1.2536
    """
    for value, name in ((n_candidates, "n_candidates"), (n_folds, "n_folds")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int >= 2; got {value!r}. Pass a count.")
        if value < 2:
            raise ValueError(
                f"{name} must be an int >= 2; got {value!r}. Compare at least 2 "
                "candidates on at least 2 folds."
            )
    alpha = check_probability(alpha, "alpha", "Use e.g. alpha=0.05.")
    q = float(scipy_stats.studentized_range.ppf(1.0 - alpha, n_candidates, np.inf)) / math.sqrt(2.0)
    return q * math.sqrt(n_candidates * (n_candidates + 1.0) / (6.0 * n_folds))
