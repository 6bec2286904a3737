"""Readable results: short reprs, to_frame() and the correction of compare_all."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.stats import adjust_p_values, compare_all

X, Y = make_regression(n_samples=80, n_features=5, noise=8.0, random_state=0)
ALPHAS = [0.01, 0.1, 1.0, 10.0, 30.0, 100.0, 300.0, 1000.0]


@pytest.fixture(scope="module")
def searched():
    return parcv.search(Ridge(), {"alpha": ALPHAS}, X, Y, cv=6, backend="serial")


def _holm_by_its_definition(p, alpha):
    """Holm's sequentially rejective procedure at level ``alpha``: which hypotheses it rejects."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    rejected = set()
    for step, i in enumerate(order):
        if p[i] * (len(p) - step) > alpha * (1 + 1e-12):  # p > alpha / k, up to rounding
            break
        rejected.add(i)
    return rejected


def _adjusted_by_definition(p):
    """The adjusted p-value of H_i: the smallest level at which Holm's procedure rejects it."""
    m = len(p)
    levels = sorted({min(1.0, k * q) for q in p for k in range(1, m + 1)} | {1.0})
    # Never rejected, even at level 1: the adjusted p-value is 1.
    return [
        min((a for a in levels if i in _holm_by_its_definition(p, a)), default=1.0)
        for i in range(m)
    ]


def test_holm_equals_the_procedure_by_its_definition():
    rng = np.random.default_rng(0)
    for p in ([0.01, 0.04, 0.03, 0.005], rng.uniform(0, 0.2, size=7).tolist()):
        np.testing.assert_allclose(adjust_p_values(p, "holm"), _adjusted_by_definition(p))
    np.testing.assert_allclose(adjust_p_values([0.01, 0.04, 0.03, 0.005], "holm"),
                               [0.03, 0.06, 0.06, 0.02])  # fmt: skip
    np.testing.assert_allclose(adjust_p_values([0.01, 0.04, 0.03, 0.005], "bonferroni"),
                               [0.04, 0.16, 0.12, 0.02])  # fmt: skip


def test_statsmodels_agrees_when_installed():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(1).uniform(0, 0.3, size=9)
    for method in ("holm", "bonferroni"):
        np.testing.assert_allclose(
            adjust_p_values(p, method), multitest.multipletests(p, method=method)[1]
        )


@pytest.mark.parametrize("correction", ["holm", "bonferroni", None])
def test_compare_all_adjusts_by_the_correction(searched, correction):
    table = searched.compare_all(correction=correction)
    raw = [r.p_value for r in table]
    assert len(raw) == len(ALPHAS) * (len(ALPHAS) - 1) // 2
    expected = {
        "holm": _adjusted_by_definition(raw),
        "bonferroni": [min(1.0, len(raw) * p) for p in raw],
        None: raw,
    }[correction]
    np.testing.assert_allclose(table.adjusted_p_values, expected, rtol=1e-12)
    assert table.rejected == tuple(p <= 0.05 for p in expected)
    column = table.adjusted_column
    assert (
        column == {"holm": "p_holm", "bonferroni": "p_bonferroni", None: "p_unadjusted"}[correction]
    )
    assert column in table.to_text().splitlines()[0]
    assert table.to_dict()["comparisons"][0][column] == table.adjusted_p_values[0]
    best = searched.best_vs_rest(correction=correction)
    assert best.correction == correction and len(best) == len(ALPHAS) - 1


def test_bad_correction_is_refused(searched):
    with pytest.raises(ValueError, match="correction must be 'holm', 'bonferroni' or None"):
        searched.compare_all(correction="fdr")
    with pytest.raises(ValueError, match="correction must be"):
        compare_all({"a": [1.0, 2.0], "b": [0.5, 1.0]}, correction="BH")


def test_reprs_are_short_tables_not_dataclass_dumps(searched):
    cv = parcv.cross_validate(Ridge(), X, Y, cv=4, backend="serial")
    nested = parcv.nested_cv(Ridge(), {"alpha": ALPHAS[:3]}, X, Y, outer=3, inner=3,
                             backend="serial")  # fmt: skip
    for result in (cv, searched, nested, searched.best_vs_rest(), searched.compare_all()):
        text = repr(result)
        assert len(text.splitlines()) <= 10, text
        assert "records=" not in text and "Record(" not in text and "cv_results_=" not in text
    assert repr(cv).startswith("CVResult: 4 folds") and "mean ± se" in repr(cv)
    assert repr(searched).startswith(f"SearchResult: {len(ALPHAS)} candidates x 6 folds")
    assert searched.candidates[searched.best_index_].label in repr(searched).splitlines()[2]
    assert repr(nested).startswith("NestedResult: 3 outer folds")
    assert "... 22 more rows" in repr(searched.compare_all())


def test_to_frame_holds_the_results_numbers(searched):
    frame = searched.to_frame()
    assert list(frame["candidate"]) == [c.label for c in searched.candidates]
    np.testing.assert_array_equal(frame["mean_test_score"], searched.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(frame["param_alpha"], ALPHAS)
    assert list(frame["params"]) == searched.cv_results_["params"]

    cv = parcv.cross_validate(Ridge(), X, Y, cv=4, backend="serial", return_train_score=True)
    cv_frame = cv.to_frame()
    assert set(cv_frame.columns) == set(cv.scores)
    np.testing.assert_array_equal(cv_frame["test_score"], cv.scores["test_score"])

    nested = parcv.nested_cv(Ridge(), {"alpha": ALPHAS[:3]}, X, Y, outer=3, backend="serial")
    nested_frame = nested.to_frame()
    np.testing.assert_array_equal(nested_frame["score"], nested.outer_scores["score"])
    assert list(nested_frame["selected"]) == nested.chosen

    table = searched.best_vs_rest()
    table_frame = table.to_frame()
    assert list(table_frame["p_holm"]) == list(table.adjusted_p_values)
    assert list(table_frame["B"]) == [r.name_b for r in table]


def test_to_frame_without_pandas_says_how_to_install_it(searched, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"parcv\[pandas\]"):
        searched.to_frame()
    with pytest.raises(ImportError, match=r"ComparisonTable\.to_frame needs pandas"):
        searched.best_vs_rest().to_frame()
