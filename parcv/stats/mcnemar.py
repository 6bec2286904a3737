"""McNemar's test on hold-out predictions of two classifiers, Cochran's Q for several."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as scipy_stats  # type: ignore[import-untyped, unused-ignore]

from parcv.stats.checks import check_confidence
from parcv.stats.result import TestResult

__all__ = ["CochranQResult", "cochran_q_test", "mcnemar_test"]

_EXACT_BELOW = 25


def _check_labels(values: ArrayLike, name: str) -> NDArray[np.generic]:
    """Convert labels to a 1-D array, refusing NaN/inf in float labels."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D of shape (n_samples,); got shape {array.shape!r}. "
            "Pass one label per hold-out sample."
        )
    if np.issubdtype(array.dtype, np.floating) and not np.all(np.isfinite(array)):
        raise ValueError(
            f"{name} must not contain NaN or inf labels; got {array!r}. "
            "Drop the samples without a valid label or prediction."
        )
    return array


def _check_exact(exact: bool | None) -> None:
    """Check the ``exact`` switch."""
    if exact is not None and not isinstance(exact, (bool, np.bool_)):
        raise TypeError(
            f"exact must be True, False or None; got {exact!r}. Use None to pick the "
            f"exact test below {_EXACT_BELOW} discordant pairs automatically."
        )


def _mcnemar_p_value(only_a: int, only_b: int, exact: bool) -> tuple[float, float]:
    """Return McNemar's (statistic, p-value) from the discordant counts."""
    discordant = only_a + only_b
    if exact:
        if discordant == 0:
            return 0.0, 1.0
        smaller = min(only_a, only_b)
        p_value = 2.0 * float(scipy_stats.binom.cdf(smaller, discordant, 0.5))
        return float(smaller), min(1.0, p_value)
    if discordant == 0:
        raise ValueError(
            "exact must be True or None when the classifiers never disagree on "
            "correctness; got exact=False with 0 discordant pairs, where the "
            "chi-square statistic is undefined. Use exact=None."
        )
    # Clip at 0 so the continuity correction never overshoots when only_a == only_b.
    statistic = max(abs(only_a - only_b) - 1.0, 0.0) ** 2 / discordant
    return statistic, float(scipy_stats.chi2.sf(statistic, 1))


def mcnemar_test(
    y_true: ArrayLike,
    pred_a: ArrayLike,
    pred_b: ArrayLike,
    exact: bool | None = None,
    *,
    confidence: float = 0.95,
) -> TestResult:
    """Compare two classifiers' hold-out predictions with McNemar's test.

    Only the discordant samples matter: ``n_a`` where only A is correct and
    ``n_b`` where only B is correct. Under the null both are equally likely.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels of the hold-out samples.
    pred_a, pred_b : array-like of shape (n_samples,)
        Predictions of classifiers A and B for the same samples.
    exact : bool or None, default=None
        True for the exact binomial test, False for the chi-square test with
        continuity correction; None picks exact when ``n_a + n_b < 25``.
    confidence : float, default=0.95
        Level of the Wald interval of the accuracy difference.

    Returns
    -------
    TestResult
        ``test`` is ``"mcnemar_exact"`` (statistic ``min(n_a, n_b)``) or
        ``"mcnemar_chi2"`` (statistic ``(|n_a - n_b| - 1)^2 / (n_a + n_b)``,
        1 df); ``mean_difference`` is ``accuracy_a - accuracy_b``; ``n`` is
        the number of samples; ``details`` holds ``n_a`` and ``n_b``.

    Raises
    ------
    TypeError
        If ``exact`` is not a bool or None.
    ValueError
        If the arrays differ in length, are empty or not 1-D, or if
        ``exact=False`` while the classifiers never disagree.

    See Also
    --------
    paired_ttest : For per-fold scores rather than one hold-out set.

    Notes
    -----
    McNemar (1947); recommended by Dietterich (1998) when a learner can be
    trained only once. With no discordant pairs the exact p-value is 1. The
    continuity-corrected numerator is clipped at 0 (p-value 1 when
    ``n_a == n_b``).

    Examples
    --------
    >>> from parcv.stats import mcnemar_test
    >>> y = [0, 1, 1, 0, 1, 0, 1, 1]
    >>> result = mcnemar_test(y, [0, 1, 1, 0, 1, 0, 1, 1], [1, 0, 1, 1, 1, 0, 0, 1])
    >>> result.test, result.details["n_a"], result.details["n_b"], result.p_value
    ('mcnemar_exact', 4.0, 0.0, 0.125)
    """
    _check_exact(exact)
    confidence = check_confidence(confidence)
    arrays = [
        _check_labels(v, n) for v, n in ((y_true, "y_true"), (pred_a, "pred_a"), (pred_b, "pred_b"))
    ]
    lengths = [array.size for array in arrays]
    if len(set(lengths)) != 1 or lengths[0] == 0:
        raise ValueError(
            "y_true, pred_a and pred_b must be non-empty with equal lengths; got "
            f"lengths {lengths!r}. Predict both classifiers on the same hold-out samples."
        )
    correct_a, correct_b = arrays[1] == arrays[0], arrays[2] == arrays[0]
    only_a = int(np.sum(correct_a & ~correct_b))
    only_b = int(np.sum(~correct_a & correct_b))
    use_exact = bool(exact) if exact is not None else only_a + only_b < _EXACT_BELOW
    statistic, p_value = _mcnemar_p_value(only_a, only_b, use_exact)
    n = lengths[0]
    mean = (only_a - only_b) / n
    se = math.sqrt(max(only_a + only_b - (only_a - only_b) ** 2 / n, 0.0)) / n
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2.0))
    return TestResult(
        test="mcnemar_exact" if use_exact else "mcnemar_chi2",
        statistic=statistic,
        p_value=p_value,
        probabilities=None,
        mean_difference=mean,
        ci_low=mean - z * se,
        ci_high=mean + z * se,
        confidence=confidence,
        n=n,
        df=None if use_exact else 1.0,
        assumptions="hold-out samples are independent; both classifiers were trained once "
        "on the same training set",
        details={"n_a": float(only_a), "n_b": float(only_b)},
    )


@dataclass(frozen=True)
class CochranQResult:
    """Outcome of Cochran's Q test over several classifiers on the same samples.

    Parameters
    ----------
    statistic : float
        Cochran's Q; chi-square with ``df`` degrees of freedom under the null.
    p_value : float
    df : int
        ``n_classifiers - 1``.
    accuracies : dict of str to float
        Accuracy of each classifier on the samples.
    n : int
        Number of samples.
    assumptions : str
    """

    statistic: float
    p_value: float
    df: int
    accuracies: dict[str, float] = field(hash=False)
    n: int
    assumptions: str


def cochran_q_test(
    y_true: ArrayLike, predictions: Sequence[ArrayLike], names: Sequence[str] | None = None
) -> CochranQResult:
    """Test whether several classifiers have equal accuracy with Cochran's Q.

    Each sample scores 1 for a classifier that predicts it correctly, else 0;
    with ``C_j`` the column totals, ``R_i`` the row totals and ``N`` the total,
    ``Q = (k - 1) (k sum C_j^2 - N^2) / (k N - sum R_i^2)``, chi-square with
    ``k - 1`` df under the null of equal accuracy. With two classifiers it is
    McNemar's chi-square without continuity correction.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    predictions : sequence of array-like of shape (n_samples,)
        At least two classifiers' predictions of the same samples.
    names : sequence of str, default=None
        One per classifier; ``"0"``, ``"1"``, ... by default.

    Returns
    -------
    CochranQResult
        When no sample is predicted correctly by some but not all
        classifiers, the statistic is 0 and the p-value 1.

    Raises
    ------
    ValueError
        Fewer than two classifiers, unequal or empty arrays, or names that do
        not match the predictions.

    Examples
    --------
    >>> y = [0, 1, 1, 0, 1, 0]
    >>> r = cochran_q_test(y, [[0, 1, 1, 0, 1, 0], [1, 0, 1, 1, 1, 0], [0, 1, 0, 0, 1, 1]])
    >>> round(r.statistic, 4), r.df
    (2.8, 2)
    """
    if isinstance(predictions, np.ndarray) or len(predictions) < 2:
        raise ValueError(
            f"predictions must be a list of at least two classifiers' predictions; got "
            f"{type(predictions).__name__} of length {len(predictions)}. Pass "
            "[pred_a, pred_b, ...], one array per classifier."
        )
    k = len(predictions)
    labels = [str(j) for j in range(k)] if names is None else [str(n) for n in names]
    if len(labels) != k:
        raise ValueError(f"names must give one name per classifier ({k}); got {list(labels)!r}.")
    truth = _check_labels(y_true, "y_true")
    arrays = [_check_labels(p, f"predictions[{j}]") for j, p in enumerate(predictions)]
    lengths = [truth.size] + [a.size for a in arrays]
    if len(set(lengths)) != 1 or truth.size == 0:
        raise ValueError(
            f"y_true and every prediction must be non-empty with equal lengths; got lengths "
            f"{lengths!r}. Predict every classifier on the same hold-out samples."
        )
    correct = np.column_stack([a == truth for a in arrays]).astype(np.int64)
    columns, rows = correct.sum(axis=0), correct.sum(axis=1)
    total = int(columns.sum())
    denominator = float(k * total - np.sum(rows**2))
    if denominator == 0.0:
        statistic, p_value = 0.0, 1.0
    else:
        statistic = (k - 1) * (k * float(np.sum(columns**2)) - float(total) ** 2) / denominator
        p_value = float(scipy_stats.chi2.sf(statistic, k - 1))
    return CochranQResult(
        statistic=float(statistic),
        p_value=p_value,
        df=k - 1,
        accuracies={n: float(c) / truth.size for n, c in zip(labels, columns, strict=True)},
        n=int(truth.size),
        assumptions="samples are independent; every classifier predicted the same samples",
    )
