"""Pairwise tests chosen by name, and many candidates compared at once with Holm's correction."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special  # type: ignore[import-untyped, unused-ignore]

from parcv.errors import did_you_mean
from parcv.stats.checks import (
    check_confidence,
    check_positive,
    check_probability,
    check_score_table,
    t_quantile,
)
from parcv.stats.paired import (
    CORRECTED_T_ASSUMPTIONS,
    corrected_resampled_ttest,
    one_se_rule_compare,
    paired_ttest,
    wilcoxon_test,
)
from parcv.stats.resampled import (
    bayesian_correlated_ttest,
    five_by_two_cv_ftest,
    five_by_two_cv_ttest,
)
from parcv.stats.result import ComparisonTable, TestResult

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "adjust_p_values",
    "bonferroni_adjust",
    "compare",
    "compare_all",
    "holm_adjust",
    "holm_best_vs_rest",
]

#: The corrections for multiple comparisons :func:`adjust_p_values` takes (None: none).
CORRECTIONS = ("holm", "bonferroni", None)

PairwiseTest = Callable[..., TestResult]

#: Pairwise tests available by name in :func:`compare` and the table helpers.
TESTS: Mapping[str, PairwiseTest] = MappingProxyType(
    {
        "one_se_rule": one_se_rule_compare,
        "paired_t": paired_ttest,
        "wilcoxon": wilcoxon_test,
        "corrected_t": corrected_resampled_ttest,
        "5x2cv_t": five_by_two_cv_ttest,
        "5x2cv_f": five_by_two_cv_ftest,
        "bayesian_correlated_t": bayesian_correlated_ttest,
    }
)


def _resolve_test(test: str | PairwiseTest) -> PairwiseTest:
    """Look a test up by name, or accept a callable as is."""
    if callable(test):
        return test
    if isinstance(test, str) and test in TESTS:
        return TESTS[test]
    raise ValueError(
        f"test must be one of {sorted(TESTS)!r} or a callable (a, b, **options) -> "
        f"TestResult; got {test!r}. "
        + did_you_mean(test, TESTS, end=" ")
        + "Use e.g. test='corrected_t' for k-fold scores."
    )


def compare(
    a: ArrayLike,
    b: ArrayLike,
    test: str | PairwiseTest = "paired_t",
    *,
    name_a: str = "A",
    name_b: str = "B",
    **options: object,
) -> TestResult:
    """Compare two candidates' per-fold scores with a test chosen by name.

    Parameters
    ----------
    a, b : array-like of shape (n_folds,)
        Scores of candidates A and B on the same folds.
    test : str or callable, default="paired_t"
        A key of :data:`TESTS` or a callable ``(a, b, **options) -> TestResult``.
    name_a, name_b : str, default="A", "B"
        Names written into the result (and into a one-SE ``decision``).
    **options
        Passed to the test, e.g. ``n_train`` and ``n_test`` for
        ``"corrected_t"`` or ``rope`` for ``"bayesian_correlated_t"``.

    Returns
    -------
    TestResult
        The test's result, with ``name_a`` and ``name_b`` filled in.

    Raises
    ------
    ValueError
        If ``test`` is unknown, or the chosen test refuses the input.
    TypeError
        If ``options`` do not match the chosen test's parameters.

    See Also
    --------
    compare_all : All pairs with Holm-adjusted p-values.

    Notes
    -----
    For (repeated) k-fold scores prefer ``"corrected_t"`` or
    ``"bayesian_correlated_t"``: the naive ``"paired_t"`` and ``"wilcoxon"``
    ignore the overlap of training sets and reject too often.

    Examples
    --------
    >>> from parcv.stats import compare
    >>> a, b = [0.9, 0.8, 0.85, 0.95], [0.85, 0.78, 0.84, 0.9]
    >>> result = compare(a, b, "corrected_t", n_train=75, n_test=25, name_a="rf")
    >>> result.name_a, round(result.p_value, 4)
    ('rf', 0.131)
    """
    result = _resolve_test(test)(a, b, **options)
    if not isinstance(result, TestResult):
        raise TypeError(
            f"test must return a TestResult; {test!r} returned {type(result).__name__!r}. "
            "Wrap custom tests so they build a parcv.stats.TestResult."
        )
    renames = {result.name_a: name_a, result.name_b: name_b}
    decision = (
        result.decision
        if result.decision is None
        else renames.get(result.decision, result.decision)
    )
    return replace(result, name_a=name_a, name_b=name_b, decision=decision)


def holm_adjust(p_values: ArrayLike) -> NDArray[np.float64]:
    """Adjust p-values for multiple comparisons with Holm's step-down method.

    Sorted ascending, the ``i``-th smallest p-value becomes
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``.

    Parameters
    ----------
    p_values : array-like of shape (n_comparisons,)
        Unadjusted p-values in [0, 1].

    Returns
    -------
    ndarray of shape (n_comparisons,)
        Adjusted p-values in the input order; reject where ``<= alpha``.

    Raises
    ------
    ValueError
        If the input is not 1-D or holds values outside [0, 1] (or NaN).

    See Also
    --------
    holm_best_vs_rest : Applies this adjustment to best-versus-rest tests.

    Notes
    -----
    Holm (1979), "A simple sequentially rejective multiple test procedure",
    Scandinavian Journal of Statistics 6. Controls the family-wise error rate.

    Examples
    --------
    >>> from parcv.stats import holm_adjust
    >>> holm_adjust([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = _check_p_values(p_values)
    order = np.argsort(p, kind="stable")
    scaled = (p.size - np.arange(p.size)) * p[order]
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


def bonferroni_adjust(p_values: ArrayLike) -> NDArray[np.float64]:
    """Adjust p-values for multiple comparisons with Bonferroni's method: ``min(1, m p)``.

    Parameters
    ----------
    p_values : array-like of shape (n_comparisons,)
        Unadjusted p-values in [0, 1].

    Returns
    -------
    ndarray of shape (n_comparisons,)
        The adjusted p-values, in the order given.

    Raises
    ------
    ValueError
        If the input is not 1-D or holds values outside [0, 1] (or NaN).

    See Also
    --------
    holm_adjust : Rejects everything Bonferroni rejects, and often more.

    Examples
    --------
    >>> from parcv.stats import bonferroni_adjust
    >>> bonferroni_adjust([0.01, 0.04, 0.5]).tolist()
    [0.03, 0.12, 1.0]
    """
    p = _check_p_values(p_values)
    return np.minimum(1.0, p.size * p)


def adjust_p_values(p_values: ArrayLike, correction: str | None) -> NDArray[np.float64]:
    """Adjust p-values by ``correction``: ``"holm"``, ``"bonferroni"`` or None (unadjusted).

    Parameters
    ----------
    p_values : array-like of shape (n_comparisons,)
    correction : {"holm", "bonferroni"} or None

    Returns
    -------
    ndarray of shape (n_comparisons,)
        The adjusted p-values, in the order given.

    Raises
    ------
    ValueError
        For another ``correction``, or p-values outside [0, 1].

    Examples
    --------
    >>> from parcv.stats import adjust_p_values
    >>> adjust_p_values([0.01, 0.04], None).tolist()
    [0.01, 0.04]
    """
    check_correction(correction)
    if correction == "holm":
        return holm_adjust(p_values)
    if correction == "bonferroni":
        return bonferroni_adjust(p_values)
    return _check_p_values(p_values)


def check_correction(correction: object) -> None:
    """Refuse a multiple-comparison correction parcv does not know."""
    if correction not in CORRECTIONS:
        raise ValueError(
            f"correction must be 'holm', 'bonferroni' or None; got {correction!r}. Use 'holm' "
            "(the default: controls the family-wise error, more power than Bonferroni) or None "
            "for unadjusted p-values."
        )


def _check_p_values(p_values: ArrayLike) -> NDArray[np.float64]:
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError(
            f"p_values must be a 1-D array of probabilities in [0, 1]; got {p_values!r}. "
            "Drop tests without a p-value (e.g. Bayesian ones) before adjusting."
        )
    return p


def _build_table(
    results: list[TestResult], alpha: float, best: str | None, correction: str | None = "holm"
) -> ComparisonTable:
    """Adjust the p-values that exist and assemble the table."""
    indexed = [
        (i, result.p_value) for i, result in enumerate(results) if result.p_value is not None
    ]
    adjusted: list[float | None] = [None] * len(results)
    if indexed:
        values = adjust_p_values([p_value for _, p_value in indexed], correction)
        for (i, _), value in zip(indexed, values, strict=True):
            adjusted[i] = float(value)
    return ComparisonTable(tuple(results), tuple(adjusted), alpha, best, correction=correction)


def compare_all(
    scores: Mapping[str, ArrayLike],
    test: str | PairwiseTest = "paired_t",
    *,
    alpha: float = 0.05,
    correction: str | None = "holm",
    **options: object,
) -> ComparisonTable:
    """Compare every pair of candidates and adjust the p-values (Holm by default).

    Parameters
    ----------
    scores : dict of str to array-like of shape (n_folds,)
        Per-fold scores of each candidate, all on the same folds.
    test : str or callable, default="paired_t"
        As in :func:`compare`.
    alpha : float, default=0.05
        Family-wise error rate for :attr:`ComparisonTable.rejected`.
    correction : {"holm", "bonferroni"} or None, default="holm"
        How the p-values are adjusted for the number of pairs; None leaves
        them unadjusted (each pair then has error rate ``alpha``).
    **options
        Passed to the test, e.g. ``n_train`` and ``n_test``.

    Returns
    -------
    ComparisonTable
        One row per pair ``(A, B)`` in dict order, ``A`` before ``B``.

    Raises
    ------
    TypeError
        If ``scores`` is not a dict.
    ValueError
        If there are fewer than 2 candidates, or a test refuses its input.

    See Also
    --------
    holm_best_vs_rest : Fewer comparisons, so more power, against the best.

    Notes
    -----
    Tests without p-values (one-SE rule, Bayesian) get ``None`` as adjusted
    p-value; the Holm family is formed by the pairs that have one.

    Examples
    --------
    >>> from parcv.stats import compare_all
    >>> scores = {"rf": [0.9, 0.8, 0.85], "svm": [0.8, 0.78, 0.8], "knn": [0.7, 0.72, 0.69]}
    >>> table = compare_all(scores, "paired_t")
    >>> [(r.name_a, r.name_b) for r in table]
    [('rf', 'svm'), ('rf', 'knn'), ('svm', 'knn')]
    """
    if not isinstance(scores, Mapping):
        raise TypeError(
            f"scores must be a dict mapping candidate names to per-fold scores; got "
            f"{type(scores).__name__!r}. Build e.g. {{'rf': rf_scores, 'svm': svm_scores}}."
        )
    alpha = check_probability(alpha, "alpha", "Use e.g. alpha=0.05.")
    check_correction(correction)
    _check_at_least_two(len(scores), "scores")
    results = [
        compare(
            scores[name_a],
            scores[name_b],
            test,
            name_a=str(name_a),
            name_b=str(name_b),
            **options,
        )
        for name_a, name_b in itertools.combinations(scores, 2)
    ]
    return _build_table(results, alpha, best=None, correction=correction)


def _check_at_least_two(n_candidates: int, name: str) -> None:
    """Refuse comparisons with fewer than 2 candidates."""
    if n_candidates < 2:
        raise ValueError(
            f"{name} must hold at least 2 candidates; got {n_candidates!r}. "
            "Add the candidates to compare."
        )


def holm_best_vs_rest(
    scores: ArrayLike | Mapping[str, ArrayLike],
    names: Sequence[str] | None = None,
    *,
    test: str | PairwiseTest | None = None,
    alpha: float = 0.05,
    correction: str | None = "holm",
    **options: object,
) -> ComparisonTable:
    """Compare the best-mean candidate with each other one, Holm-adjusted.

    Parameters
    ----------
    scores : array-like of shape (n_folds, n_candidates) or dict of str to array-like
        Greater-is-better per-fold scores of every candidate on the same folds.
    names : sequence of str or None, default=None
        Candidate names for an array; defaults to ``"0"``, ``"1"``, ...
    test : str, callable or None, default=None
        As in :func:`compare`; None means ``"corrected_t"`` when ``n_train``
        and ``n_test`` are given in ``options``, else ``"paired_t"``. The
        test must produce p-values.
    alpha : float, default=0.05
        Family-wise error rate for :attr:`ComparisonTable.rejected`.
    correction : {"holm", "bonferroni"} or None, default="holm"
        As in :func:`compare_all`.
    **options
        Passed to the test, e.g. ``n_train`` and ``n_test``.

    Returns
    -------
    ComparisonTable
        Rows ``(best, other)`` in candidate order; ``best`` names the
        candidate with the highest mean score (first one on ties).

    Raises
    ------
    ValueError
        If there are fewer than 2 candidates, the test yields no p-values,
        or a test refuses its input.

    See Also
    --------
    friedman_test : Omnibus test to run first, as advised by Demsar (2006).

    Notes
    -----
    Comparing with the best only needs ``k - 1`` tests instead of
    ``k (k - 1) / 2``, so Holm's correction costs less power (Demsar 2006,
    section 3.2.2).

    Examples
    --------
    >>> from parcv.stats import holm_best_vs_rest
    >>> scores = {"rf": [0.9, 0.8, 0.85, 0.9], "svm": [0.8, 0.79, 0.8, 0.84],
    ...           "knn": [0.6, 0.52, 0.59, 0.61]}
    >>> table = holm_best_vs_rest(scores, n_train=75, n_test=25)
    >>> table.best, [r.test for r in table], table.rejected
    ('rf', ['corrected_t', 'corrected_t'], (False, True))
    """
    alpha = check_probability(alpha, "alpha", "Use e.g. alpha=0.05.")
    check_correction(correction)
    table, checked_names = check_score_table(scores, names)
    _check_at_least_two(table.shape[1], "scores")
    if test is None:
        has_sizes = options.get("n_train") is not None and options.get("n_test") is not None
        test = "corrected_t" if has_sizes else "paired_t"
    best = int(np.argmax(table.mean(axis=0)))
    fast = _corrected_t_vs_best(table, best, checked_names, test, options)
    results = fast if fast is not None else [
        compare(
            table[:, best],
            table[:, other],
            test,
            name_a=checked_names[best],
            name_b=checked_names[other],
            **options,
        )
        for other in range(table.shape[1])
        if other != best
    ]  # fmt: skip
    if any(result.p_value is None for result in results):
        raise ValueError(
            f"test must produce p-values for Holm's method; got test={test!r}, which "
            "has none. Use 'paired_t', 'corrected_t', 'wilcoxon' or a 5x2cv test, or "
            "call compare_all() to tabulate Bayesian results."
        )
    return _build_table(results, alpha, best=checked_names[best], correction=correction)


def _corrected_t_vs_best(
    table: NDArray[np.float64],
    best: int,
    names: tuple[str, ...],
    test: str | PairwiseTest,
    options: Mapping[str, object],
) -> list[TestResult] | None:
    """The corrected t-test of the best column against every other, in one numpy pass.

    Equal bit for bit to :func:`corrected_resampled_ttest` per pair (the same
    reductions, row by row), and thousands of times cheaper than one call per
    candidate. None when the pair-by-pair path must run: another test or
    option, or a pair it refuses (fewer than 2 folds, a constant difference),
    so that its message is the one raised.
    """
    found = _corrected_t_columns(table, best, test, options)
    if found is None:
        return None
    others, confidence, columns = found
    n_folds = table.shape[0]
    return [
        TestResult(
            test="corrected_t",
            statistic=t,
            p_value=p,
            probabilities=None,
            mean_difference=m,
            ci_low=lo,
            ci_high=hi,
            confidence=confidence,
            n=n_folds,
            df=float(n_folds - 1),
            assumptions=CORRECTED_T_ASSUMPTIONS,
            name_a=names[best],
            name_b=names[other],
            details={"standard_error": e},
        )
        for other, t, p, m, lo, hi, e in zip(others, *columns.values(), strict=True)
    ]


def _corrected_t_columns(
    table: NDArray[np.float64],
    best: int,
    test: str | PairwiseTest,
    options: Mapping[str, object],
) -> tuple[list[int], float, dict[str, list[float]]] | None:
    """:func:`_corrected_t_vs_best` as columns: the other candidates, the confidence, and
    each test's statistic, p-value, mean difference, interval and standard error (Python
    floats, as each result holds them). None where :func:`_corrected_t_vs_best` is.
    """
    if test != "corrected_t" or not set(options) <= {"n_train", "n_test", "confidence"}:
        return None
    hint = "Pass the number of samples in each training/test fold."
    n_train = check_positive(options.get("n_train"), "n_train", hint)  # type: ignore[arg-type]
    n_test = check_positive(options.get("n_test"), "n_test", hint)  # type: ignore[arg-type]
    confidence = check_confidence(options.get("confidence", 0.95))  # type: ignore[arg-type]
    n_folds = table.shape[0]
    others = [c for c in range(table.shape[1]) if c != best]
    a = np.ascontiguousarray(np.broadcast_to(table[:, best], (len(others), n_folds)))
    b = np.ascontiguousarray(table[:, others].T)
    difference = a - b
    scale = np.maximum(np.max(np.abs(a), axis=1), np.max(np.abs(b), axis=1))
    if n_folds < 2 or np.any(np.ptp(difference, axis=1) <= 8.0 * np.finfo(np.float64).eps * scale):
        return None
    mean = np.mean(difference, axis=1)
    se = np.sqrt((1.0 / n_folds + n_test / n_train) * np.var(difference, ddof=1, axis=1))
    statistic = mean / se
    quantile = t_quantile(0.5 + confidence / 2.0, float(n_folds - 1))  # as t_interval does
    low, high = mean - quantile * se, mean + quantile * se
    p_value = np.minimum(1.0, 2.0 * special.stdtr(n_folds - 1, -np.abs(statistic)))
    columns = {"statistic": statistic, "p_value": p_value, "mean_difference": mean,
               "ci_low": low, "ci_high": high, "standard_error": se}  # fmt: skip
    return others, confidence, {name: c.tolist() for name, c in columns.items()}


def best_vs_rest_columns(
    scores: ArrayLike,
    names: Sequence[str],
    *,
    alpha: float = 0.05,
    correction: str | None = "holm",
    **options: object,
) -> dict[str, object] | None:
    """:func:`holm_best_vs_rest` with the corrected t-test, as columns, without a result
    per pair.

    The values are those of ``holm_best_vs_rest(scores, names, test="corrected_t",
    ...)``: its best candidate, and for every other one the fields of its
    :class:`TestResult` (``name_b``, ``statistic``, ``p_value``, ``mean_difference``,
    ``ci_low``, ``ci_high``), the adjusted p-value and whether it is rejected, each a
    list. With 220,000 candidates the table's results took 3 s to make. None where
    that table must be made pair by pair (fewer than 2 folds, a constant difference, an
    option of another test): call :func:`holm_best_vs_rest` then.

    Returns
    -------
    dict or None
        ``best``, ``alpha``, ``correction``, ``confidence``, ``n`` (folds),
        ``assumptions`` and ``columns``, the adjusted p-values under
        ``p_holm``, ``p_bonferroni`` or ``p_unadjusted``.
    """
    alpha = check_probability(alpha, "alpha", "Use e.g. alpha=0.05.")
    check_correction(correction)
    table, checked_names = check_score_table(scores, names)
    _check_at_least_two(table.shape[1], "scores")
    best = int(np.argmax(table.mean(axis=0)))
    found = _corrected_t_columns(table, best, "corrected_t", options)
    if found is None:
        return None
    others, confidence, columns = found
    adjusted = adjust_p_values(columns["p_value"], correction).tolist()
    return {
        "best": checked_names[best],
        "alpha": alpha,
        "correction": correction,
        "confidence": confidence,
        "n": table.shape[0],
        "assumptions": CORRECTED_T_ASSUMPTIONS,
        "columns": {
            "name_b": [checked_names[c] for c in others],
            **{k: v for k, v in columns.items() if k != "standard_error"},
            f"p_{correction or 'unadjusted'}": adjusted,
            "rejected": [p <= alpha for p in adjusted],
        },
    }
