"""Paired tests on per-fold scores of two candidates, and McNemar's test."""

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
    t_interval,
    two_sided_t_p_value,
)
from parcv.stats.result import TestResult

__all__ = [
    "CORRECTED_T_ASSUMPTIONS",
    "corrected_resampled_ttest",
    "one_se_rule_compare",
    "paired_ttest",
    "wilcoxon_test",
]

#: What the corrected resampled t-test assumes, as its results say.
CORRECTED_T_ASSUMPTIONS = (
    "fold differences are normal with correlation n_test/(n_train + n_test) "
    "between folds (Nadeau-Bengio variance correction)"
)


def difference_t_test(
    test: str,
    a: FloatArray,
    b: FloatArray,
    variance_factor: float,
    confidence: float,
    assumptions: str,
) -> TestResult:
    """Run a one-sample t test on ``a - b`` with ``Var(mean) = factor * s^2``."""
    difference = a - b
    n = difference.size
    check_constant_difference(difference, a, b, float(np.ptp(difference)))
    mean = float(np.mean(difference))
    se = math.sqrt(variance_factor * float(np.var(difference, ddof=1)))
    statistic = mean / se
    ci_low, ci_high = t_interval(mean, se, n - 1, confidence)
    return TestResult(
        test=test,
        statistic=statistic,
        p_value=two_sided_t_p_value(statistic, n - 1),
        probabilities=None,
        mean_difference=mean,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n=n,
        df=float(n - 1),
        assumptions=assumptions,
        details={"standard_error": se},
    )


def one_se_rule_compare(a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95) -> TestResult:
    """Decide between two candidates with the mean +/- one standard error rule.

    A is better than B if ``m_A - sqrt(Var_A) > m_B + sqrt(Var_B)``, where
    ``Var = sum_k (s_k - m)^2 / (K (K - 1))`` is the variance of the mean of
    the ``K`` fold scores (greater is better). B is better in the mirrored
    case; otherwise the rule is ``"undecided"``.

    Parameters
    ----------
    a, b : array-like of shape (n_folds,)
        Scores of candidates A and B on the same folds.
    confidence : float, default=0.95
        Level of the reported interval of the mean difference.

    Returns
    -------
    TestResult
        ``decision`` is ``"A"``, ``"B"`` or ``"undecided"``; ``statistic`` is
        the gap ``|m_A - m_B| - (se_A + se_B)`` (positive means decided);
        ``details`` holds ``mean_a``, ``se_a``, ``mean_b`` and ``se_b``.

    Raises
    ------
    ValueError
        If the scores are not paired, hold fewer than 2 folds or non-finite values.

    See Also
    --------
    paired_ttest : Uses the pairing, and so is usually more sensitive.

    Notes
    -----
    The rule ignores the pairing of folds. The interval is
    ``m_A - m_B -/+ t_{K-1} sqrt(se_A^2 + se_B^2)``; there is no p-value.

    Examples
    --------
    >>> from parcv.stats import one_se_rule_compare
    >>> result = one_se_rule_compare([0.90, 0.92, 0.91], [0.80, 0.83, 0.81])
    >>> result.decision, round(result.details["se_a"], 4)
    ('A', 0.0058)
    >>> one_se_rule_compare([0.9, 0.8, 0.85], [0.88, 0.82, 0.86]).decision
    'undecided'
    """
    confidence = check_confidence(confidence)
    a_array, b_array = check_paired(a, b)
    n = a_array.size
    mean_a, mean_b = float(np.mean(a_array)), float(np.mean(b_array))
    se_a = math.sqrt(float(np.var(a_array, ddof=1)) / n)
    se_b = math.sqrt(float(np.var(b_array, ddof=1)) / n)
    # |m_A - m_B| > se_A + se_B is the seed rule for whichever mean is higher.
    gap = abs(mean_a - mean_b) - (se_a + se_b)
    decision = "undecided" if gap <= 0.0 else ("A" if mean_a > mean_b else "B")
    ci_low, ci_high = t_interval(mean_a - mean_b, math.hypot(se_a, se_b), n - 1, confidence)
    return TestResult(
        test="one_se_rule",
        statistic=gap,
        p_value=None,
        probabilities=None,
        mean_difference=mean_a - mean_b,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n=n,
        df=None,
        assumptions="fold scores of each candidate are independent draws; "
        "the pairing of folds is ignored",
        decision=decision,
        details={"mean_a": mean_a, "se_a": se_a, "mean_b": mean_b, "se_b": se_b},
    )


def paired_ttest(a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95) -> TestResult:
    """Compare two candidates with the (naive) paired t-test on fold scores.

    Parameters
    ----------
    a, b : array-like of shape (n_folds,)
        Scores of candidates A and B on the same folds.
    confidence : float, default=0.95
        Level of the t interval of the mean difference.

    Returns
    -------
    TestResult
        Two-sided test of ``mean(a - b) = 0`` with ``n_folds - 1`` df.

    Raises
    ------
    ValueError
        If the scores are not paired, hold fewer than 2 folds, contain
        non-finite values, or differ by the same amount on every fold.

    See Also
    --------
    corrected_resampled_ttest : Accounts for overlapping training sets.

    Notes
    -----
    Cross-validation folds share training data, so their differences are
    positively correlated and this test rejects far too often under the null;
    prefer :func:`corrected_resampled_ttest` for (repeated) k-fold scores.

    Examples
    --------
    >>> from parcv.stats import paired_ttest
    >>> result = paired_ttest([0.9, 0.8, 0.85, 0.95], [0.85, 0.78, 0.84, 0.9])
    >>> round(result.statistic, 4), round(result.p_value, 4)
    (3.153, 0.0511)
    """
    confidence = check_confidence(confidence)
    a_array, b_array = check_paired(a, b)
    return difference_t_test(
        "paired_t",
        a_array,
        b_array,
        1.0 / a_array.size,
        confidence,
        "fold differences are independent and normally distributed "
        "(violated by overlapping cross-validation training sets)",
    )


def corrected_resampled_ttest(
    a: ArrayLike,
    b: ArrayLike,
    n_train: float,
    n_test: float,
    *,
    confidence: float = 0.95,
) -> TestResult:
    """Compare two candidates with Nadeau and Bengio's corrected resampled t-test.

    The variance of the mean difference is ``(1/J + n_test/n_train) s^2``
    instead of ``s^2 / J``, where ``J`` is the number of resamples (all folds
    of all repeats) and ``s^2`` the sample variance of the differences.

    Parameters
    ----------
    a, b : array-like of shape (n_folds,) or (n_repeats, n_splits)
        Scores of candidates A and B on the same folds.
    n_train, n_test : float
        Number of training and test samples per fold (averages are fine).
    confidence : float, default=0.95
        Level of the t interval of the mean difference.

    Returns
    -------
    TestResult
        Two-sided test with ``J - 1`` degrees of freedom.

    Raises
    ------
    TypeError
        If ``n_train`` or ``n_test`` is not a number.
    ValueError
        If the scores are not paired, hold fewer than 2 folds, contain
        non-finite values, differ by the same amount on every fold, or if
        ``n_train`` or ``n_test`` is not positive.

    See Also
    --------
    paired_ttest : The uncorrected test.
    bayesian_correlated_ttest : Bayesian counterpart with the same correction.

    Notes
    -----
    Nadeau and Bengio (2003), "Inference for the generalization error",
    Machine Learning 52. For k-fold, ``n_test / n_train = 1 / (k - 1)``.

    Examples
    --------
    >>> from parcv.stats import corrected_resampled_ttest
    >>> a, b = [0.9, 0.8, 0.85, 0.95], [0.85, 0.78, 0.84, 0.9]
    >>> result = corrected_resampled_ttest(a, b, n_train=75, n_test=25)
    >>> round(result.statistic, 4), round(result.p_value, 4)
    (2.0641, 0.131)
    """
    hint = "Pass the number of samples in each training/test fold."
    n_train = check_positive(n_train, "n_train", hint)
    n_test = check_positive(n_test, "n_test", hint)
    confidence = check_confidence(confidence)
    a_array, b_array = check_paired(a, b)
    return difference_t_test(
        "corrected_t",
        a_array,
        b_array,
        1.0 / a_array.size + n_test / n_train,
        confidence,
        CORRECTED_T_ASSUMPTIONS,
    )


def wilcoxon_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    zero_method: str = "wilcox",
    confidence: float = 0.95,
) -> TestResult:
    """Compare two candidates with the Wilcoxon signed-rank test.

    Parameters
    ----------
    a, b : array-like of shape (n_folds,)
        Scores of candidates A and B on the same folds.
    zero_method : {"wilcox", "pratt", "zsplit"}, default="wilcox"
        How zero differences are treated, as in :func:`scipy.stats.wilcoxon`.
    confidence : float, default=0.95
        Level of the (paired t) interval of the mean difference.

    Returns
    -------
    TestResult
        ``statistic`` is scipy's ``min(W+, W-)``; two-sided ``p_value``
        (exact for small samples without ties, normal approximation otherwise).

    Raises
    ------
    ValueError
        If the scores are not paired, hold fewer than 2 folds, contain
        non-finite values, or are equal on every fold.

    See Also
    --------
    paired_ttest : Parametric alternative.

    Notes
    -----
    The test needs no normality but still assumes independent folds, so it is
    also too liberal on cross-validation scores. The interval reported is the
    paired t interval (zero width if the differences are constant).

    Examples
    --------
    >>> from parcv.stats import wilcoxon_test
    >>> result = wilcoxon_test([5.0, 6.0, 7.0, 8.0, 9.0], [4.0, 4.0, 4.0, 4.0, 4.0])
    >>> result.statistic, result.p_value
    (0.0, 0.0625)
    """
    confidence = check_confidence(confidence)
    a_array, b_array = check_paired(a, b)
    difference = a_array - b_array
    if not np.any(difference):
        raise ValueError(
            "a and b must differ on at least one fold; got identical scores on all "
            f"{difference.size!r} folds, so the Wilcoxon test is undefined. "
            "The candidates cannot be told apart from these scores."
        )
    result = scipy_stats.wilcoxon(difference, zero_method=zero_method)
    n = difference.size
    mean = float(np.mean(difference))
    ci_low, ci_high = t_interval(
        mean, float(np.std(difference, ddof=1)) / math.sqrt(n), n - 1, confidence
    )
    return TestResult(
        test="wilcoxon",
        statistic=float(result.statistic),
        p_value=min(1.0, float(result.pvalue)),
        probabilities=None,
        mean_difference=mean,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n=n,
        df=None,
        assumptions="fold differences are independent and symmetric about their median",
    )
