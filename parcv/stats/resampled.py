"""Tests designed for resampled scores: 5x2cv tests and the Bayesian correlated t."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats  # type: ignore[import-untyped, unused-ignore]

from parcv.stats.checks import (
    FloatArray,
    check_confidence,
    check_constant_difference,
    check_paired,
    check_positive,
    check_scores,
    t_interval,
    two_sided_t_p_value,
)
from parcv.stats.result import TestResult

__all__ = ["bayesian_correlated_ttest", "five_by_two_cv_ftest", "five_by_two_cv_ttest"]

_FIVE_BY_TWO_ORDER = (
    "ordered as (repeat, fold), as produced by "
    "sklearn.model_selection.RepeatedKFold(n_splits=2, n_repeats=5)"
)


def _check_five_by_two(a: ArrayLike, b: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Return the (5, 2) differences and ``s_i^2`` per repeat, or raise."""
    arrays = []
    for value, name in ((a, "a"), (b, "b")):
        array = check_scores(value, name)
        if array.shape not in ((5, 2), (10,)):
            raise ValueError(
                f"{name} must have shape (5, 2) or (10,) {_FIVE_BY_TWO_ORDER}; got shape "
                f"{array.shape!r}. Run 5 repeats of 2-fold CV, or use "
                "corrected_resampled_ttest() for other designs."
            )
        arrays.append(array.reshape(5, 2))
    difference = arrays[0] - arrays[1]
    variances = np.sum((difference - difference.mean(axis=1, keepdims=True)) ** 2, axis=1)
    spread = float(np.max(np.abs(difference[:, 0] - difference[:, 1])))
    scale = max(float(np.max(np.abs(arrays[0]))), float(np.max(np.abs(arrays[1]))))
    if spread <= 8.0 * np.finfo(np.float64).eps * scale:
        raise ValueError(
            "scores of A and B differ by the same amount on both folds of every repeat "
            f"(differences {difference.tolist()!r}); the 5x2cv variance estimate is zero, "
            "so the test is undefined. Check that a and b come from different "
            "candidates, or use wilcoxon_test()."
        )
    return difference, variances


def _five_by_two_interval(
    difference: FloatArray, sigma2: float, confidence: float
) -> tuple[float, float, float]:
    """Return (mean, low, high) with the conservative 5x2cv interval."""
    mean = float(np.mean(difference))
    low, high = t_interval(mean, math.sqrt(sigma2), 5, confidence)
    return mean, low, high


def five_by_two_cv_ttest(a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95) -> TestResult:
    """Compare two candidates with Dietterich's 5x2cv paired t-test.

    With ``p_i^(j)`` the difference ``A - B`` on fold ``j`` of repeat ``i``,
    ``s_i^2 = sum_j (p_i^(j) - mean_j p_i^(j))^2`` and
    ``t = p_1^(1) / sqrt(sum_i s_i^2 / 5)`` with 5 degrees of freedom.

    Parameters
    ----------
    a, b : array-like of shape (5, 2) or (10,)
        Scores of A and B from 5 repeats of 2-fold cross-validation, ordered as
        (repeat, fold), as produced by ``RepeatedKFold(n_splits=2, n_repeats=5)``.
    confidence : float, default=0.95
        Level of the interval of the mean difference.

    Returns
    -------
    TestResult
        Two-sided t-test with 5 df; ``n`` is 10.

    Raises
    ------
    ValueError
        If a shape is not (5, 2) or (10,), a score is not finite, or the two
        fold differences are equal within every repeat.

    See Also
    --------
    five_by_two_cv_ftest : Alpaydin's more robust combined F test.

    Notes
    -----
    Dietterich (1998), "Approximate statistical tests for comparing supervised
    classification learning algorithms", Neural Computation 10(7). The
    interval ``mean -/+ t_5 sqrt(sum_i s_i^2 / 5)`` uses the variance of a
    single difference, an upper bound for that of the mean of all ten.

    Examples
    --------
    >>> from parcv.stats import five_by_two_cv_ttest
    >>> a = [0.90, 0.88, 0.91, 0.87, 0.89, 0.90, 0.92, 0.88, 0.90, 0.89]
    >>> b = [0.86, 0.87, 0.88, 0.86, 0.85, 0.88, 0.87, 0.87, 0.86, 0.88]
    >>> result = five_by_two_cv_ttest(a, b)
    >>> round(result.statistic, 4), round(result.p_value, 4), result.df
    (1.9518, 0.1084, 5.0)
    """
    confidence = check_confidence(confidence)
    difference, variances = _check_five_by_two(a, b)
    sigma2 = float(np.mean(variances))
    statistic = float(difference[0, 0]) / math.sqrt(sigma2)
    mean, ci_low, ci_high = _five_by_two_interval(difference, sigma2, confidence)
    return TestResult(
        test="5x2cv_t",
        statistic=statistic,
        p_value=two_sided_t_p_value(statistic, 5),
        probabilities=None,
        mean_difference=mean,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n=10,
        df=5.0,
        assumptions="fold differences are normal; the two folds of a repeat are "
        "independent, and s_i^2 is independent of p_1^(1)",
    )


def five_by_two_cv_ftest(a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95) -> TestResult:
    """Compare two candidates with Alpaydin's combined 5x2cv F test.

    ``f = sum_i sum_j (p_i^(j))^2 / (2 sum_i s_i^2)`` follows F with (10, 5)
    degrees of freedom under the null, with ``p_i^(j)`` and ``s_i^2`` as in
    :func:`five_by_two_cv_ttest`.

    Parameters
    ----------
    a, b : array-like of shape (5, 2) or (10,)
        Scores of A and B from 5 repeats of 2-fold cross-validation, ordered as
        (repeat, fold), as produced by ``RepeatedKFold(n_splits=2, n_repeats=5)``.
    confidence : float, default=0.95
        Level of the interval of the mean difference.

    Returns
    -------
    TestResult
        Upper-tail p-value of F(10, 5) (two-sided in the mean difference);
        ``df`` is ``(10.0, 5.0)`` and ``n`` is 10.

    Raises
    ------
    ValueError
        If a shape is not (5, 2) or (10,), a score is not finite, or the two
        fold differences are equal within every repeat.

    See Also
    --------
    five_by_two_cv_ttest : Dietterich's original test.

    Notes
    -----
    Alpaydin (1999), "Combined 5x2 cv F test for comparing supervised
    classification learning algorithms", Neural Computation 11(8). The
    interval is the same conservative one as for the 5x2cv t-test.

    Examples
    --------
    >>> from parcv.stats import five_by_two_cv_ftest
    >>> a = [0.90, 0.88, 0.91, 0.87, 0.89, 0.90, 0.92, 0.88, 0.90, 0.89]
    >>> b = [0.86, 0.87, 0.88, 0.86, 0.85, 0.88, 0.87, 0.87, 0.86, 0.88]
    >>> result = five_by_two_cv_ftest(a, b)
    >>> round(result.statistic, 4), round(result.p_value, 4), result.df
    (2.1429, 0.2071, (10.0, 5.0))
    """
    confidence = check_confidence(confidence)
    difference, variances = _check_five_by_two(a, b)
    statistic = float(np.sum(difference**2)) / (2.0 * float(np.sum(variances)))
    mean, ci_low, ci_high = _five_by_two_interval(difference, float(np.mean(variances)), confidence)
    return TestResult(
        test="5x2cv_f",
        statistic=statistic,
        p_value=float(scipy_stats.f.sf(statistic, 10, 5)),
        probabilities=None,
        mean_difference=mean,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n=10,
        df=(10.0, 5.0),
        assumptions="fold differences are normal; the two folds of a repeat are "
        "independent, and the repeats are independent of each other",
    )


def _check_rho(rho: float | None, n_train: float | None, n_test: float | None) -> float:
    """Resolve the correlation between folds from ``rho`` or the fold sizes."""
    if rho is None:
        if n_train is None or n_test is None:
            raise ValueError(
                f"rho is required when n_train or n_test is missing; got rho=None, "
                f"n_train={n_train!r}, n_test={n_test!r}. Pass n_train and n_test (rho "
                "becomes n_test / (n_train + n_test)) or pass rho directly."
            )
        hint = "Pass the number of samples in each training/test fold."
        n_train = check_positive(n_train, "n_train", hint)
        n_test = check_positive(n_test, "n_test", hint)
        return n_test / (n_train + n_test)
    hint = "Use rho=n_test/(n_train + n_test), e.g. 0.1 for 10-fold CV."
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.floating)):
        raise TypeError(f"rho must be a float in [0, 1); got {rho!r}. {hint}")
    if not 0.0 <= float(rho) < 1.0:
        raise ValueError(f"rho must be a float in [0, 1); got {rho!r}. {hint}")
    return float(rho)


def bayesian_correlated_ttest(
    a: ArrayLike,
    b: ArrayLike,
    *,
    rope: float = 0.01,
    rho: float | None = None,
    n_train: float | None = None,
    n_test: float | None = None,
    confidence: float = 0.95,
) -> TestResult:
    """Compare two candidates with the Bayesian correlated t-test.

    The posterior of the mean difference ``A - B`` is a Student t with
    ``n - 1`` df, location ``mean(d)`` and scale
    ``sqrt((1/n + rho/(1 - rho)) var(d, ddof=1))``.

    Parameters
    ----------
    a, b : array-like of shape (n_folds,) or (n_repeats, n_splits)
        Scores of candidates A and B on the same folds.
    rope : float, default=0.01
        Half-width of the region of practical equivalence, in score units.
    rho : float or None, default=None
        Correlation between folds, in [0, 1); defaults to
        ``n_test / (n_train + n_test)``.
    n_train : float or None, default=None
        Training samples per fold; needed when ``rho`` is None.
    n_test : float or None, default=None
        Test samples per fold; needed when ``rho`` is None.
    confidence : float, default=0.95
        Mass of the equal-tailed credible interval.

    Returns
    -------
    TestResult
        ``p_value`` and ``statistic`` are None; ``probabilities`` holds
        ``p_right = P(d > rope)`` (A better), ``p_rope = P(-rope <= d <= rope)``
        and ``p_left = P(d < -rope)`` (B better).

    Raises
    ------
    TypeError
        If ``rope``, ``rho``, ``n_train`` or ``n_test`` has a wrong type.
    ValueError
        If the scores are not paired, are too few, are not finite or differ by
        the same amount on every fold; if ``rope < 0``; if ``rho`` is not in
        [0, 1); or if neither ``rho`` nor both fold sizes are given.

    See Also
    --------
    corrected_resampled_ttest : Frequentist test with the same correction.

    Notes
    -----
    Corani and Benavoli (2015), "A Bayesian approach for comparing
    cross-validated algorithms on multiple data sets", Machine Learning
    100; Benavoli et al. (2017), JMLR 18(77).

    Examples
    --------
    >>> from parcv.stats import bayesian_correlated_ttest
    >>> a, b = [0.9, 0.8, 0.85, 0.95], [0.85, 0.78, 0.84, 0.9]
    >>> result = bayesian_correlated_ttest(a, b, rope=0.01, n_train=75, n_test=25)
    >>> {key: round(value, 3) for key, value in result.probabilities.items()}
    {'p_left': 0.037, 'p_rope': 0.087, 'p_right': 0.876}
    """
    if isinstance(rope, bool) or not isinstance(rope, (int, float, np.floating)):
        raise TypeError(f"rope must be a float >= 0; got {rope!r}. Use e.g. rope=0.01.")
    if not (math.isfinite(rope) and rope >= 0):
        raise ValueError(f"rope must be a finite float >= 0; got {rope!r}. Use e.g. rope=0.01.")
    correlation = _check_rho(rho, n_train, n_test)
    confidence = check_confidence(confidence)
    a_array, b_array = check_paired(a, b)
    difference = a_array - b_array
    check_constant_difference(difference, a_array, b_array, float(np.ptp(difference)))
    n = difference.size
    mean = float(np.mean(difference))
    scale = math.sqrt(
        (1.0 / n + correlation / (1.0 - correlation)) * float(np.var(difference, ddof=1))
    )
    posterior = scipy_stats.t(n - 1, loc=mean, scale=scale)
    p_left, p_right = float(posterior.cdf(-rope)), float(posterior.sf(rope))
    ci_low, ci_high = t_interval(mean, scale, n - 1, confidence)
    return TestResult(
        test="bayesian_correlated_t",
        statistic=None,
        p_value=None,
        probabilities={
            "p_left": p_left,
            "p_rope": max(0.0, 1.0 - p_left - p_right),
            "p_right": p_right,
        },
        mean_difference=mean,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n=n,
        df=float(n - 1),
        assumptions="fold differences are normal with equal correlation rho between "
        f"folds (rho={correlation:.4g}); flat prior on mean and precision",
        details={"rho": correlation, "scale": scale},
    )
