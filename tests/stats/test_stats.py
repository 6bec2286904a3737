"""Tests for parcv.stats: each test is checked against an independent reference."""

from __future__ import annotations

import dataclasses
import doctest
import itertools
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.stats as scipy_stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge
from sklearn.model_selection import RepeatedKFold

import parcv.stats
import parcv.stats.mcnemar
import parcv.stats.multiple
import parcv.stats.paired
import parcv.stats.ranks
import parcv.stats.resampled
import parcv.stats.result
from parcv.stats import (
    TESTS,
    ComparisonTable,
    TestResult,
    average_ranks,
    bayesian_correlated_ttest,
    compare,
    compare_all,
    corrected_resampled_ttest,
    five_by_two_cv_ftest,
    five_by_two_cv_ttest,
    friedman_test,
    holm_adjust,
    holm_best_vs_rest,
    mcnemar_test,
    nemenyi_critical_difference,
    one_se_rule_compare,
    paired_ttest,
    wilcoxon_test,
)

pytestmark = [
    pytest.mark.filterwarnings("error"),
    # Hypothesis imports libcst to report a failure; libcst still uses this alias.
    pytest.mark.filterwarnings("ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"),
]

# No example database: tests must not write into the working tree.
HYPOTHESIS = settings(database=None, deadline=None, max_examples=60)

STAT_MODULES = [
    parcv.stats.multiple,
    parcv.stats.mcnemar,
    parcv.stats.paired,
    parcv.stats.ranks,
    parcv.stats.resampled,
    parcv.stats.result,
]


def _p(result: TestResult) -> float:
    """Return the p-value, which this test expects to exist."""
    assert result.p_value is not None
    return result.p_value


def _statistic(result: TestResult) -> float:
    """Return the statistic, which this test expects to exist."""
    assert result.statistic is not None
    return result.statistic


def _probabilities(result: TestResult) -> dict[str, float]:
    """Return the posterior probabilities of a Bayesian result."""
    assert result.probabilities is not None
    return result.probabilities


def _paired_scores(seed: int, n: int = 10, shift: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    b = 0.8 + 0.05 * rng.standard_normal(n)
    a = b + shift + 0.02 * rng.standard_normal(n)
    return a, b


score_lists = st.lists(
    st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False), min_size=3, max_size=25
)


@st.composite
def paired_lists(draw):
    a = draw(score_lists)
    b = draw(
        st.lists(
            st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
            min_size=len(a),
            max_size=len(a),
        )
    )
    difference = np.subtract(a, b)
    assume(np.ptp(difference) > 1e-6 * max(1.0, float(np.max(np.abs(difference)))))
    return np.array(a), np.array(b)


# --- doctests -----------------------------------------------------------------


@pytest.mark.parametrize("module", STAT_MODULES, ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
    assert attempted > 0 or module is parcv.stats.result


def test_public_names_are_exported():
    assert set(TESTS) == {
        "one_se_rule",
        "paired_t",
        "wilcoxon",
        "corrected_t",
        "5x2cv_t",
        "5x2cv_f",
        "bayesian_correlated_t",
    }
    for name in set(parcv.stats.__all__) - {"TESTS"}:
        assert getattr(parcv.stats, name).__doc__


# --- one-SE rule ----------------------------------------------------


def _seed_rule_moments(scores: list[float]) -> tuple[float, float]:
    k = len(scores)
    m = sum(scores) / k
    var = sum((s - m) ** 2 for s in scores) / (k * (k - 1))
    return m, math.sqrt(var)


def test_one_se_rule_matches_seed_formula():
    a = [0.91, 0.88, 0.93, 0.90, 0.89]
    b = [0.85, 0.86, 0.84, 0.88, 0.83]
    result = one_se_rule_compare(a, b)
    m_a, se_a = _seed_rule_moments(a)
    m_b, se_b = _seed_rule_moments(b)
    assert m_a - se_a > m_b + se_b
    assert result.decision == "A"
    assert result.details["mean_a"] == pytest.approx(m_a)
    assert result.details["se_a"] == pytest.approx(se_a)
    assert result.details["mean_b"] == pytest.approx(m_b)
    assert result.details["se_b"] == pytest.approx(se_b)
    assert result.statistic == pytest.approx((m_a - se_a) - (m_b + se_b))
    assert result.p_value is None
    assert one_se_rule_compare(b, a).decision == "B"


def test_one_se_rule_is_undecided_when_intervals_overlap():
    a = [0.90, 0.80, 0.85, 0.95]
    b = [0.88, 0.82, 0.86, 0.90]
    m_a, se_a = _seed_rule_moments(a)
    m_b, se_b = _seed_rule_moments(b)
    assert not (m_a - se_a > m_b + se_b or m_b - se_b > m_a + se_a)
    result = one_se_rule_compare(a, b)
    assert result.decision == "undecided"
    assert _statistic(result) < 0


def test_one_se_rule_on_negated_costs_matches_seed_cost_form():
    # Seed 004 states the rule for costs: M_i wins if m_i + se_i < m_j - se_j.
    cost_i = [0.10, 0.12, 0.09, 0.11, 0.10]
    cost_j = [0.20, 0.17, 0.22, 0.19, 0.21]
    m_i, se_i = _seed_rule_moments(cost_i)
    m_j, se_j = _seed_rule_moments(cost_j)
    assert m_i + se_i < m_j - se_j
    result = one_se_rule_compare(-np.array(cost_i), -np.array(cost_j))
    assert result.decision == "A"


@given(paired_lists())
@HYPOTHESIS
def test_one_se_rule_decision_agrees_with_statistic(pair):
    a, b = pair
    result = one_se_rule_compare(a, b)
    assert (result.decision != "undecided") == (_statistic(result) > 0)
    assert result.ci_low <= result.mean_difference <= result.ci_high


# --- paired t, Wilcoxon ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_paired_ttest_matches_scipy_ttest_rel(seed):
    a, b = _paired_scores(seed, n=8 + seed)
    result = paired_ttest(a, b, confidence=0.9)
    reference = scipy_stats.ttest_rel(a, b)
    assert result.statistic == pytest.approx(reference.statistic, rel=1e-12)
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-10)
    assert result.df == reference.df
    interval = reference.confidence_interval(0.9)
    assert (result.ci_low, result.ci_high) == pytest.approx((interval.low, interval.high))
    assert result.mean_difference == pytest.approx(np.mean(a - b))
    assert result.n == a.size


@pytest.mark.parametrize("seed", range(5))
def test_wilcoxon_matches_scipy(seed):
    a, b = _paired_scores(seed, n=7 + 3 * seed, shift=0.005)
    result = wilcoxon_test(a, b)
    reference = scipy_stats.wilcoxon(a, b)
    assert result.statistic == reference.statistic
    assert result.p_value == pytest.approx(reference.pvalue)


@pytest.mark.parametrize(
    ("difference", "statistic", "p_value"),
    [
        ([1.0, 2.0, 3.0, 4.0, 5.0], 0.0, 2 / 32),  # all 32 sign patterns equally likely
        ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0.0, 2 / 64),
        ([1.0, -2.0, 3.0, 4.0, 5.0], 2.0, 2 * 3 / 32),  # subsets {}, {1}, {2} sum <= 2
    ],
)
def test_wilcoxon_exact_small_samples_by_hand(difference, statistic, p_value):
    result = wilcoxon_test(np.array(difference) + 10.0, np.full(len(difference), 10.0))
    assert result.statistic == statistic
    assert result.p_value == pytest.approx(p_value)


# --- corrected resampled t ------------------------------------------------------


def test_corrected_ttest_matches_nadeau_bengio_by_hand():
    a = [0.81, 0.79, 0.84, 0.80, 0.83, 0.78, 0.82, 0.85, 0.80, 0.81]
    b = [0.80, 0.78, 0.81, 0.80, 0.80, 0.77, 0.80, 0.82, 0.80, 0.79]
    d = [x - y for x, y in zip(a, b, strict=True)]
    j = len(d)
    mean = sum(d) / j
    s2 = sum((x - mean) ** 2 for x in d) / (j - 1)
    t = mean / math.sqrt((1 / j + 10 / 90) * s2)
    result = corrected_resampled_ttest(a, b, n_train=90, n_test=10)
    assert result.statistic == pytest.approx(t)
    assert result.p_value == pytest.approx(2 * scipy_stats.t.sf(abs(t), j - 1))
    assert result.df == j - 1


def test_corrected_ttest_reduces_to_paired_ttest_without_overlap():
    a, b = _paired_scores(3, n=12)
    corrected = corrected_resampled_ttest(a, b, n_train=1e12, n_test=1e-6)
    assert corrected.p_value == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue)


def test_corrected_ttest_accepts_repeated_kfold_matrix():
    a, b = _paired_scores(4, n=30)
    flat = corrected_resampled_ttest(a, b, n_train=80, n_test=20)
    matrix = corrected_resampled_ttest(a.reshape(3, 10), b.reshape(3, 10), n_train=80, n_test=20)
    assert matrix == flat
    assert matrix.n == 30


@given(paired_lists(), st.floats(0.05, 0.5))
@HYPOTHESIS
def test_corrected_ttest_is_never_more_significant_than_naive(pair, test_fraction):
    a, b = pair
    naive = paired_ttest(a, b)
    corrected = corrected_resampled_ttest(a, b, n_train=1 - test_fraction, n_test=test_fraction)
    assert _p(corrected) >= _p(naive) - 1e-12
    assert abs(_statistic(corrected)) <= abs(_statistic(naive)) + 1e-9


# --- 5x2cv ----------------------------------------------------------------------


def _dietterich_by_hand(a: list[float], b: list[float]) -> tuple[float, float]:
    p = [[a[2 * i + j] - b[2 * i + j] for j in range(2)] for i in range(5)]
    s2 = [
        (p[i][0] - (p[i][0] + p[i][1]) / 2) ** 2 + (p[i][1] - (p[i][0] + p[i][1]) / 2) ** 2
        for i in range(5)
    ]
    t = p[0][0] / math.sqrt(sum(s2) / 5)
    f = sum(x**2 for row in p for x in row) / (2 * sum(s2))
    return t, f


FIVE_A = [0.90, 0.88, 0.91, 0.87, 0.89, 0.90, 0.92, 0.88, 0.90, 0.89]
FIVE_B = [0.86, 0.87, 0.88, 0.86, 0.85, 0.88, 0.87, 0.87, 0.86, 0.88]


def test_five_by_two_tests_match_published_formulas():
    t, f = _dietterich_by_hand(FIVE_A, FIVE_B)
    t_result = five_by_two_cv_ttest(FIVE_A, FIVE_B)
    f_result = five_by_two_cv_ftest(FIVE_A, FIVE_B)
    assert t_result.statistic == pytest.approx(t)
    assert t_result.p_value == pytest.approx(2 * scipy_stats.t.sf(abs(t), 5))
    assert f_result.statistic == pytest.approx(f)
    assert f_result.p_value == pytest.approx(scipy_stats.f.sf(f, 10, 5))
    assert (t_result.df, f_result.df, t_result.n) == (5.0, (10.0, 5.0), 10)
    shaped = five_by_two_cv_ttest(np.reshape(FIVE_A, (5, 2)), np.reshape(FIVE_B, (5, 2)))
    assert shaped == t_result


def test_five_by_two_order_matches_repeated_kfold():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + 0.5 * rng.standard_normal(60)
    folds = list(RepeatedKFold(n_splits=2, n_repeats=5, random_state=0).split(X))
    scores: dict[float, list[float]] = {alpha: [] for alpha in (0.1, 100.0)}
    for train, test in folds:
        for alpha, values in scores.items():
            values.append(Ridge(alpha=alpha).fit(X[train], y[train]).score(X[test], y[test]))
    # Folds 0 and 1 of RepeatedKFold are the two halves of the first repeat.
    assert np.array_equal(np.sort(np.concatenate([folds[0][1], folds[1][1]])), np.arange(60))
    t, f = _dietterich_by_hand(scores[0.1], scores[100.0])
    assert five_by_two_cv_ttest(scores[0.1], scores[100.0]).statistic == pytest.approx(t)
    assert five_by_two_cv_ftest(scores[0.1], scores[100.0]).statistic == pytest.approx(f)


@pytest.mark.parametrize("shape", [(2, 5), (9,), (10, 1), (5, 3)])
@pytest.mark.parametrize("test", [five_by_two_cv_ttest, five_by_two_cv_ftest])
def test_five_by_two_refuses_other_shapes(shape, test):
    scores = np.linspace(0.5, 0.9, math.prod(shape)).reshape(shape)
    with pytest.raises(ValueError, match=r"a must have shape \(5, 2\) or \(10,\).*RepeatedKFold"):
        test(scores, scores[::-1] if scores.ndim == 1 else scores[::-1, ::-1])


def test_five_by_two_refuses_zero_within_repeat_variance():
    b = np.array(FIVE_B)
    a = b + np.repeat([0.01, 0.02, 0.03, 0.01, 0.02], 2)
    for test in (five_by_two_cv_ttest, five_by_two_cv_ftest):
        with pytest.raises(ValueError, match="differ by the same amount on both folds"):
            test(a, b)


# --- McNemar --------------------------------------------------------------------


def _mcnemar_inputs(
    only_a: int, only_b: int, both: int = 30, neither: int = 5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.array(["x"] * (only_a + only_b + both + neither))
    wrong = "o"
    pred_a = np.array(["x"] * only_a + [wrong] * only_b + ["x"] * both + [wrong] * neither)
    pred_b = np.array([wrong] * only_a + ["x"] * only_b + ["x"] * both + [wrong] * neither)
    return y, pred_a, pred_b


@pytest.mark.parametrize(("only_a", "only_b"), [(7, 1), (3, 9), (12, 12), (0, 5)])
def test_mcnemar_exact_matches_binomtest(only_a, only_b):
    result = mcnemar_test(*_mcnemar_inputs(only_a, only_b))
    reference = scipy_stats.binomtest(only_a, only_a + only_b, 0.5)
    assert result.test == "mcnemar_exact"
    assert result.p_value == pytest.approx(reference.pvalue)
    assert result.statistic == min(only_a, only_b)
    assert result.mean_difference == pytest.approx((only_a - only_b) / (only_a + only_b + 35))


@pytest.mark.parametrize(("only_a", "only_b"), [(30, 12), (15, 40), (20, 21)])
def test_mcnemar_chi2_with_continuity_correction(only_a, only_b):
    result = mcnemar_test(*_mcnemar_inputs(only_a, only_b))
    statistic = (abs(only_a - only_b) - 1) ** 2 / (only_a + only_b)
    assert result.test == "mcnemar_chi2"
    assert result.statistic == pytest.approx(statistic)
    assert result.p_value == pytest.approx(scipy_stats.chi2.sf(statistic, 1))
    assert result.df == 1.0


def test_mcnemar_switches_to_chi2_at_25_discordant_pairs():
    assert mcnemar_test(*_mcnemar_inputs(20, 4)).test == "mcnemar_exact"
    assert mcnemar_test(*_mcnemar_inputs(20, 5)).test == "mcnemar_chi2"
    assert mcnemar_test(*_mcnemar_inputs(20, 5), exact=True).test == "mcnemar_exact"
    assert mcnemar_test(*_mcnemar_inputs(3, 4), exact=False).test == "mcnemar_chi2"


def test_mcnemar_without_discordant_pairs():
    y, pred_a, _ = _mcnemar_inputs(0, 0)
    assert mcnemar_test(y, pred_a, pred_a).p_value == 1.0
    with pytest.raises(ValueError, match="exact must be True or None"):
        mcnemar_test(y, pred_a, pred_a, exact=False)


def test_mcnemar_refuses_bad_input():
    with pytest.raises(ValueError, match=r"equal lengths; got lengths \[3, 3, 2\]"):
        mcnemar_test([0, 1, 1], [0, 1, 1], [0, 1])
    with pytest.raises(TypeError, match="exact must be True, False or None"):
        mcnemar_test([0, 1], [0, 1], [1, 1], exact="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pred_a must not contain NaN"):
        mcnemar_test([0.0, 1.0], [np.nan, 1.0], [1.0, 1.0])


# --- Friedman, ranks, Nemenyi ---------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_friedman_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(0.6, 0.9, size=(8 + seed, 3 + seed)), 2)  # rounding makes ties
    result = friedman_test(scores)
    reference = scipy_stats.friedmanchisquare(*scores.T)
    assert result.statistic == pytest.approx(reference.statistic)
    assert result.p_value == pytest.approx(reference.pvalue)
    n, k = scores.shape
    f = (n - 1) * result.statistic / (n * (k - 1) - result.statistic)
    assert result.iman_davenport_statistic == pytest.approx(f)
    assert result.iman_davenport_p_value == pytest.approx(
        scipy_stats.f.sf(f, k - 1, (k - 1) * (n - 1))
    )


def test_average_ranks_by_hand_with_ties():
    scores = {"a": [0.9, 0.7, 0.8], "b": [0.8, 0.7, 0.9], "c": [0.1, 0.2, 0.3]}
    # fold 1: a=1, b=2, c=3; fold 2: a=b=1.5, c=3; fold 3: b=1, a=2, c=3
    assert average_ranks(scores) == pytest.approx({"a": 4.5 / 3, "b": 4.5 / 3, "c": 3.0})
    assert friedman_test(scores).average_ranks == average_ranks(scores)


def test_friedman_refuses_all_ties_and_reports_infinite_f():
    with pytest.raises(ValueError, match="tied on all 3 folds"):
        friedman_test(np.ones((3, 4)))
    perfect = friedman_test([[3.0, 2.0, 1.0]] * 5)
    assert perfect.iman_davenport_statistic == math.inf
    assert perfect.iman_davenport_p_value == 0.0


def test_nemenyi_q_values_match_demsar_table():
    demsar_q = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    for k, q in zip(range(2, 11), demsar_q, strict=True):
        cd = nemenyi_critical_difference(k, 6)
        assert cd / math.sqrt(k * (k + 1) / 36) == pytest.approx(q, abs=1e-3)


def test_nemenyi_reproduces_demsar_worked_example():
    # Demsar (2006), section 3.2.4: k=4 classifiers, N=14 data sets, CD = 1.25.
    assert nemenyi_critical_difference(4, 14) == pytest.approx(2.569 * math.sqrt(20 / 84), abs=1e-3)
    assert round(nemenyi_critical_difference(4, 14), 2) == 1.25


def test_nemenyi_refuses_bad_arguments():
    with pytest.raises(ValueError, match="n_candidates must be an int >= 2; got 1"):
        nemenyi_critical_difference(1, 10)
    with pytest.raises(TypeError, match="n_folds must be an int"):
        nemenyi_critical_difference(3, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="alpha must be a float in"):
        nemenyi_critical_difference(3, 10, alpha=1.5)


# --- Holm -----------------------------------------------------------------------


def test_holm_adjust_by_hand():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1 -> max(0.06, 0.04)
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), st.floats(0.001, 0.2))
@HYPOTHESIS
def test_holm_adjust_agrees_with_sequential_rejection(p_values, alpha):
    adjusted = holm_adjust(p_values)
    m = len(p_values)
    rejected = np.zeros(m, dtype=bool)
    for step, index in enumerate(np.argsort(p_values, kind="stable")):
        if p_values[index] > alpha / (m - step):
            break
        rejected[index] = True
    assert np.array_equal(adjusted <= alpha, rejected)
    assert np.all(adjusted >= np.array(p_values)) and np.all(adjusted <= 1.0)


def test_holm_best_vs_rest_by_hand():
    rng = np.random.default_rng(11)
    base = rng.normal(0.8, 0.03, size=10)
    scores = {
        "worse": base - 0.02 + 0.01 * rng.standard_normal(10),
        "best": base + 0.01 * rng.standard_normal(10),
        "worst": base - 0.05 + 0.01 * rng.standard_normal(10),
    }
    table = holm_best_vs_rest(scores, n_train=90, n_test=10)
    assert table.best == "best"
    raw = [
        _p(corrected_resampled_ttest(scores["best"], scores[name], 90, 10))
        for name in ("worse", "worst")
    ]
    smallest, largest = sorted(raw)
    expected = {
        p: min(1.0, 2 * smallest) if p == smallest else max(2 * smallest, largest) for p in raw
    }
    assert [r.name_b for r in table] == ["worse", "worst"]
    assert list(table.adjusted_p_values) == pytest.approx([expected[p] for p in raw])
    assert holm_best_vs_rest(scores).results[0].test == "paired_t"


@settings(max_examples=60, deadline=None)
@given(
    n_folds=st.integers(2, 25),
    n_candidates=st.integers(2, 30),
    scale=st.sampled_from([1e-3, 1.0, 1e4]),
    seed=st.integers(0, 2**16),
    confidence=st.sampled_from([0.9, 0.95, 0.99]),
)
def test_holm_best_vs_rest_in_one_pass_equals_the_test_pair_by_pair(
    n_folds, n_candidates, scale, seed, confidence
):
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(n_folds, n_candidates)) * scale + rng.normal()
    names = [f"c{i}" for i in range(n_candidates)]
    got = holm_best_vs_rest(table, names, test="corrected_t", n_train=90, n_test=10,
                            confidence=confidence)  # fmt: skip
    best = int(np.argmax(table.mean(axis=0)))
    want = [
        corrected_resampled_ttest(table[:, best], table[:, o], 90, 10, confidence=confidence)
        for o in range(n_candidates)
        if o != best
    ]
    assert [r.name_b for r in got] == [n for i, n in enumerate(names) if i != best]
    for mine, theirs in zip(got, want, strict=True):  # bit for bit, not approximately
        assert (mine.statistic, mine.p_value, mine.ci_low, mine.ci_high, mine.details) == (
            theirs.statistic, theirs.p_value, theirs.ci_low, theirs.ci_high, theirs.details
        )  # fmt: skip
        assert mine.assumptions == theirs.assumptions and mine.df == theirs.df


@settings(max_examples=40, deadline=None)
@given(
    n_folds=st.integers(2, 12),
    n_candidates=st.integers(2, 20),
    seed=st.integers(0, 2**16),
    correction=st.sampled_from(["holm", "bonferroni", None]),
    alpha=st.sampled_from([0.01, 0.05, 0.2]),
    confidence=st.sampled_from([0.9, 0.95]),
)
def test_best_vs_rest_as_columns_are_the_columns_of_holm_best_vs_rest(
    n_folds, n_candidates, seed, correction, alpha, confidence
):
    # A report of 220,000 candidates reads these columns, made without a TestResult per
    # candidate: the same values, bit for bit, as the table's.
    from parcv.stats.multiple import best_vs_rest_columns

    table = np.random.default_rng(seed).normal(size=(n_folds, n_candidates))
    names = [f"c{i}" for i in range(n_candidates)]
    options = {"n_train": 90, "n_test": 10, "confidence": confidence}
    got = best_vs_rest_columns(table, names, alpha=alpha, correction=correction, **options)
    want = holm_best_vs_rest(table, names, test="corrected_t", alpha=alpha,
                             correction=correction, **options)  # fmt: skip
    assert (got["best"], got["alpha"], got["correction"]) == (want.best, want.alpha, correction)
    assert got["columns"] == want.columns(list(got["columns"]))
    assert {(got["confidence"], got["n"], got["assumptions"])} == {
        (r.confidence, r.n, r.assumptions) for r in want
    }


def test_best_vs_rest_as_columns_leaves_a_constant_difference_to_the_table():
    from parcv.stats.multiple import best_vs_rest_columns

    table = np.column_stack([[1.0, 2.0, 3.0], [0.5, 1.5, 2.5], [0.0, 1.9, 2.2]])
    assert best_vs_rest_columns(table, ["a", "b", "c"], n_train=9, n_test=3) is None


def test_holm_best_vs_rest_refuses_a_constant_difference_pair_by_pair():
    table = np.column_stack([[1.0, 2.0, 3.0], [0.5, 1.5, 2.5], [0.0, 1.9, 2.2]])
    with pytest.raises(ValueError, match="differ by the same amount on every fold"):
        holm_best_vs_rest(table, test="corrected_t", n_train=9, n_test=3)


def test_holm_best_vs_rest_accepts_array_and_refuses_bayesian():
    scores = np.column_stack(_paired_scores(5, n=10))
    table = holm_best_vs_rest(scores, names=["a", "b"], test="wilcoxon")
    assert (table.best, len(table)) == ("a", 1)
    with pytest.raises(ValueError, match="test must produce p-values"):
        holm_best_vs_rest(scores, test="bayesian_correlated_t", rho=0.1)


# --- Bayesian correlated t ------------------------------------------------------


def test_bayesian_correlated_ttest_by_hand():
    a, b = _paired_scores(2, n=10, shift=0.01)
    d = a - b
    n = d.size
    rho = 10 / 100
    scale = math.sqrt((1 / n + rho / (1 - rho)) * np.var(d, ddof=1))
    posterior = scipy_stats.t(n - 1, loc=np.mean(d), scale=scale)
    result = bayesian_correlated_ttest(a, b, rope=0.005, n_train=90, n_test=10)
    assert _probabilities(result)["p_right"] == pytest.approx(posterior.sf(0.005))
    assert _probabilities(result)["p_left"] == pytest.approx(posterior.cdf(-0.005))
    assert _probabilities(result)["p_rope"] == pytest.approx(
        posterior.cdf(0.005) - posterior.cdf(-0.005)
    )
    assert (result.ci_low, result.ci_high) == pytest.approx(posterior.interval(0.95))
    assert result.p_value is None and result.df == n - 1


def test_bayesian_without_correlation_or_rope_matches_one_sided_ttest():
    a, b = _paired_scores(6, n=9, shift=0.005)
    result = bayesian_correlated_ttest(a, b, rope=0.0, rho=0.0)
    one_sided = scipy_stats.ttest_rel(a, b, alternative="greater").pvalue
    assert _probabilities(result)["p_right"] == pytest.approx(1 - one_sided)
    assert _probabilities(result)["p_rope"] == pytest.approx(0.0, abs=1e-12)


@given(paired_lists(), st.floats(0.0, 5.0), st.floats(0.0, 0.9))
@HYPOTHESIS
def test_bayesian_probabilities_form_a_distribution(pair, rope, rho):
    a, b = pair
    probabilities = _probabilities(bayesian_correlated_ttest(a, b, rope=rope, rho=rho))
    assert all(value >= 0 for value in probabilities.values())
    assert sum(probabilities.values()) == pytest.approx(1.0)


def test_bayesian_refuses_bad_parameters():
    a, b = _paired_scores(0)
    with pytest.raises(ValueError, match="rho is required when n_train or n_test is missing"):
        bayesian_correlated_ttest(a, b)
    with pytest.raises(ValueError, match=r"rho must be a float in \[0, 1\); got 1.0"):
        bayesian_correlated_ttest(a, b, rho=1.0)
    with pytest.raises(ValueError, match=r"rope must be a finite float >= 0; got -0\.1"):
        bayesian_correlated_ttest(a, b, rope=-0.1, rho=0.1)
    with pytest.raises(ValueError, match="n_test must be a finite number > 0"):
        bayesian_correlated_ttest(a, b, n_train=90, n_test=0)


# --- symmetry invariants ----------------------------------------------------------


@given(paired_lists())
@HYPOTHESIS
def test_swapping_candidates_flips_the_sign_only(pair):
    a, b = pair
    for name in ("paired_t", "wilcoxon", "corrected_t", "one_se_rule"):
        options: dict[str, Any] = {"n_train": 9, "n_test": 1} if name == "corrected_t" else {}
        forward, backward = compare(a, b, name, **options), compare(b, a, name, **options)
        assert backward.mean_difference == pytest.approx(-forward.mean_difference, abs=1e-9)
        assert forward.p_value == backward.p_value or forward.p_value == pytest.approx(
            backward.p_value
        )
        if name != "wilcoxon":
            assert backward.statistic == pytest.approx(
                _statistic(forward) if name == "one_se_rule" else -_statistic(forward), abs=1e-9
            )
        if forward.p_value is not None:
            assert 0.0 <= forward.p_value <= 1.0


# --- dispatch and tables --------------------------------------------------------


def test_compare_dispatches_to_each_named_test():
    a, b = np.array(FIVE_A), np.array(FIVE_B)
    calls: dict[str, tuple[dict[str, Any], TestResult]] = {
        "one_se_rule": ({}, one_se_rule_compare(a, b)),
        "paired_t": ({}, paired_ttest(a, b)),
        "wilcoxon": ({}, wilcoxon_test(a, b)),
        "corrected_t": ({"n_train": 9, "n_test": 1}, corrected_resampled_ttest(a, b, 9, 1)),
        "5x2cv_t": ({}, five_by_two_cv_ttest(a, b)),
        "5x2cv_f": ({}, five_by_two_cv_ftest(a, b)),
        "bayesian_correlated_t": ({"rho": 0.1}, bayesian_correlated_ttest(a, b, rho=0.1)),
    }
    for name, (options, expected) in calls.items():
        assert compare(a, b, name, **options) == expected


def test_compare_writes_names_into_result_and_decision():
    result = compare([0.9, 0.92, 0.91], [0.8, 0.81, 0.79], "one_se_rule", name_a="rf", name_b="knn")
    assert (result.name_a, result.name_b, result.decision) == ("rf", "knn", "rf")


def test_compare_refuses_unknown_test():
    with pytest.raises(ValueError, match=r"test must be one of .*got 'mcnemar'"):
        compare([1.0, 2.0], [2.0, 1.0], "mcnemar")


def test_compare_all_table_text_and_json():
    rng = np.random.default_rng(3)
    scores = {name: 0.8 + 0.02 * i + 0.01 * rng.standard_normal(10) for i, name in enumerate("xyz")}
    table = compare_all(scores, "corrected_t", n_train=90, n_test=10)
    assert isinstance(table, ComparisonTable)
    assert [(r.name_a, r.name_b) for r in table] == list(itertools.combinations("xyz", 2))
    assert list(table.adjusted_p_values) == pytest.approx(holm_adjust([_p(r) for r in table]))
    lines = table.to_text().splitlines()
    assert len(lines) == 4
    starts = {line.index("corrected_t") for line in lines[1:]}
    assert starts == {lines[0].index("test")}
    payload = json.loads(json.dumps(table.to_dict(), allow_nan=False))
    assert payload["comparisons"][0]["p_holm"] == table.adjusted_p_values[0]


def test_compare_all_with_bayesian_test_has_no_p_values():
    a, b = _paired_scores(1)
    table = compare_all({"a": a, "b": b}, "bayesian_correlated_t", rho=0.1)
    assert table.adjusted_p_values == (None,) and table.rejected == (None,)
    assert "P(L/R/R)=" in table.to_text()


# --- validation -----------------------------------------------------------------


def _pair_tests() -> list[Callable[[Any, Any], TestResult]]:
    return [
        lambda a, b: one_se_rule_compare(a, b),
        lambda a, b: paired_ttest(a, b),
        lambda a, b: wilcoxon_test(a, b),
        lambda a, b: corrected_resampled_ttest(a, b, 9, 1),
        lambda a, b: bayesian_correlated_ttest(a, b, rho=0.1),
    ]


@pytest.mark.parametrize("test", _pair_tests())
def test_refuses_unpaired_short_and_nonfinite_scores(test):
    with pytest.raises(
        ValueError, match=r"a and b must be paired .* a.shape=\(3,\) and b.shape=\(2,\)"
    ):
        test([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError, match="at least 2 paired folds; got 1"):
        test([0.1], [0.2])
    with pytest.raises(
        ValueError, match=r"b must contain only finite scores; got nan at flat position\(s\) \[1\]"
    ):
        test([0.1, 0.2, 0.3], [0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="a must contain only finite scores; got inf"):
        test([0.1, np.inf, 0.3], [0.1, 0.2, 0.3])
    with pytest.raises(TypeError, match="a must be an array-like of numeric"):
        test(["x", "y"], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"a must be 1-D .* got shape \(2, 2, 2\)"):
        test(np.ones((2, 2, 2)), np.ones((2, 2, 2)))


@pytest.mark.parametrize("name", ["paired_t", "corrected_t", "bayesian_correlated_t"])
def test_t_tests_refuse_constant_difference(name):
    b = np.array([0.7, 0.8, 0.75, 0.9])
    options: dict[str, Any] = {"n_train": 9, "n_test": 1} if name != "paired_t" else {}
    with pytest.raises(
        ValueError, match="differ by the same amount on every fold; a t-test is undefined"
    ):
        compare(b + 0.1, b, name, **options)


def test_wilcoxon_refuses_identical_scores_but_accepts_constant_shift():
    b = np.array([0.7, 0.8, 0.75, 0.9, 0.85])
    with pytest.raises(ValueError, match="a and b must differ on at least one fold"):
        wilcoxon_test(b, b)
    assert wilcoxon_test(b + 0.1, b).p_value == pytest.approx(0.0625)


def test_refuses_bad_confidence_and_fold_sizes():
    a, b = _paired_scores(0)
    with pytest.raises(ValueError, match="confidence must be a float in"):
        paired_ttest(a, b, confidence=95)
    with pytest.raises(TypeError, match="n_train must be a positive number; got None"):
        corrected_resampled_ttest(a, b, None, 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_train must be a finite number > 0; got -5"):
        corrected_resampled_ttest(a, b, -5, 10)


def test_score_tables_refuse_ragged_or_misnamed_input():
    with pytest.raises(ValueError, match="same number of folds for every candidate"):
        friedman_test({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0]})
    with pytest.raises(ValueError, match="names must be 2 distinct strings"):
        average_ranks(np.ones((3, 2)), names=["a", "a"])
    with pytest.raises(ValueError, match="at least 2 folds and 2 candidates"):
        friedman_test(np.ones((1, 3)))
    with pytest.raises(TypeError, match="scores must be a dict"):
        compare_all([[1.0, 2.0], [2.0, 1.0]])  # type: ignore[arg-type]


def test_test_result_refuses_nan_and_serializes():
    kwargs: dict[str, Any] = dict(
        test="x",
        statistic=1.0,
        p_value=0.5,
        probabilities=None,
        mean_difference=0.1,
        ci_low=0.0,
        ci_high=0.2,
        confidence=0.95,
        n=5,
        df=4.0,
        assumptions="none",
    )
    result = TestResult(**kwargs)
    assert hash(result) == hash(TestResult(**kwargs))
    assert json.loads(json.dumps(result.to_dict()))["p_value"] == 0.5
    with pytest.raises(ValueError, match=r"TestResult\.statistic must not be NaN"):
        TestResult(**{**kwargs, "statistic": math.nan})
    with pytest.raises(ValueError, match=r"TestResult.p_value must lie in \[0, 1\]"):
        TestResult(**{**kwargs, "p_value": 1.5})


# --- simulation: naive vs corrected t on repeated k-fold ------------------------


def _ridge_fold_scores(
    X: np.ndarray, y: np.ndarray, test_mask: np.ndarray, alpha: float = 1.0
) -> np.ndarray:
    """Negative test MSE of a ridge fit (no intercept) for every fold at once."""
    gram = X.T @ X - np.einsum("fn,ni,nj->fij", test_mask, X, X) + alpha * np.eye(X.shape[1])
    moment = X.T @ y - (test_mask * y) @ X
    coef = np.linalg.solve(gram, moment[..., None])[..., 0]
    squared_error = (X @ coef.T - y[:, None]) ** 2
    return -(test_mask.T * squared_error).sum(axis=0) / test_mask.sum(axis=1)


def test_vectorized_ridge_matches_sklearn():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((20, 3)), rng.standard_normal(20)
    test_mask = np.zeros((1, 20))
    test_mask[0, :4] = 1
    model = Ridge(alpha=1.0, fit_intercept=False).fit(X[4:], y[4:])
    expected = -np.mean((model.predict(X[:4]) - y[:4]) ** 2)
    assert _ridge_fold_scores(X, y, test_mask)[0] == pytest.approx(expected)


def _simulate_null_rejections(
    n_datasets: int, seed: int, n_samples: int = 100, n_repeats: int = 10, n_splits: int = 10
) -> dict[str, float]:
    """Reject rates of naive and corrected t for two equally good learners.

    A ridge on features 0-4 and a ridge on features 5-9 are equally good by
    symmetry, so every rejection of 'equal expected score' is a false one.
    """
    rng = np.random.default_rng(seed)
    rejections = {"naive": 0, "corrected": 0}
    for _ in range(n_datasets):
        X = rng.standard_normal((n_samples, 10))
        y = X @ np.full(10, 0.5) + rng.standard_normal(n_samples)
        fold_of = np.stack([rng.permutation(n_samples) % n_splits for _ in range(n_repeats)])
        test_mask = (fold_of[:, None, :] == np.arange(n_splits)[None, :, None]).reshape(
            -1, n_samples
        )
        a = _ridge_fold_scores(X[:, :5], y, test_mask.astype(float))
        b = _ridge_fold_scores(X[:, 5:], y, test_mask.astype(float))
        n_test = n_samples / n_splits
        rejections["naive"] += _p(paired_ttest(a, b)) <= 0.05
        corrected = corrected_resampled_ttest(a, b, n_samples - n_test, n_test)
        rejections["corrected"] += _p(corrected) <= 0.05
    return {key: count / n_datasets for key, count in rejections.items()}


def test_corrected_ttest_keeps_type_one_error_near_alpha_on_repeated_kfold(record_property):
    rates = _simulate_null_rejections(n_datasets=300, seed=20240501)
    record_property("naive_rejection_rate", rates["naive"])
    record_property("corrected_rejection_rate", rates["corrected"])
    print(f"rejection rates at alpha=0.05 over 300 datasets: {rates}")
    assert rates["corrected"] <= 0.10
    assert rates["naive"] >= 0.25
    assert rates["naive"] >= 3 * max(rates["corrected"], 0.01)
    assert abs(rates["corrected"] - 0.05) < abs(rates["naive"] - 0.05)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 5).flatmap(lambda k: st.lists(
        st.lists(st.floats(-10, 10), min_size=3, max_size=3), min_size=k, max_size=k)),
    st.sampled_from(["paired_t", "corrected_t", "bayesian_correlated_t"]),
    st.sampled_from(["holm", "bonferroni", None]),
    st.integers(0, 2),
)  # fmt: skip
def test_a_tables_columns_are_its_rows_values(scores, test, correction, n_undefined):
    # results.json and the report read a best-vs-rest table as columns, made without a
    # dict per row: each column is what the rows of to_dict() hold, undefined rows too.
    named = {f"c{i}": row for i, row in enumerate(scores)}
    options = {"n_train": 8, "n_test": 2} if test != "paired_t" else {}
    try:
        table = parcv.stats.compare_all(named, test, correction=correction, **options)
    except ValueError:
        assume(False)  # a pair the test refuses (equal scores): not a table
    undefined = tuple(parcv.stats.result.UndefinedComparison(test, "c0", f"u{i}", 0.0, 3,
                                                             "identical fold scores")
                      for i in range(n_undefined))  # fmt: skip
    table = dataclasses.replace(table, undefined=undefined)
    rows = table.to_dict()["comparisons"]
    names = sorted({name for row in rows for name in row} | {"note", "p_holm", "not a key"})
    want = {name: [row.get(name) for row in rows] for name in names}
    assert json.dumps(table.columns(names), sort_keys=True) == json.dumps(want, sort_keys=True)
