"""nested_cv(interval=...): the interval of the whole select-then-refit procedure.

The NCV interval of Bates, Hastie & Tibshirani with the search as the "model": each of its
(train, test) pairs is one more outer fold of the nested plan (inner CV, refit, per-sample
losses on the test rows). Its numbers must equal a plain loop of scikit-learn's
GridSearchCV over the same pairs, on every backend; BBC-CV is the all-data search's.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GroupKFold, KFold

import parcv
from parcv.report.text import RunInfo, render_report
from tests.intervals_reference import (
    selection_interval_reference,
    squared_error,
    zero_one_loss,
)

GRID = {"alpha": [0.1, 30.0, 3000.0]}
NCV = dict(interval="ncv", confidence=0.9, ncv_repetitions=2, ncv_random_state=3)


def _same(ours, theirs):
    for name in ("estimate", "lower", "upper", "se", "confidence"):
        assert getattr(ours, name) == getattr(theirs, name), name
    for name in ("err_ncv", "err_cv", "bias", "mse_hat", "n_folds", "n_repetitions"):
        assert ours.details[name] == theirs.details[name], name


def test_the_interval_of_the_selection_equals_a_loop_over_gridsearchcv(reg_data, backend):
    # Before: nested_cv(..., interval="ncv") raised "got an unexpected keyword argument".
    X, y = reg_data
    result = parcv.nested_cv(Ridge(), GRID, X, y, outer=4, inner=3,
                             scoring="neg_mean_squared_error", backend=backend, **NCV)  # fmt: skip
    reference = selection_interval_reference(
        Ridge(), GRID, X, y, inner=3, scoring="neg_mean_squared_error", loss=squared_error,
        confidence=0.9, n_folds=4, n_repetitions=2, random_state=3,
    )  # fmt: skip
    iv = result.interval
    assert iv.method == "ncv"
    _same(iv, reference.interval)
    # 2 repetitions x 4 x 5 / 2 = 20 selections of 3 candidates x 3 inner folds + 1 refit.
    assert iv.details["n_selections"] == 20
    assert iv.n_fits == reference.n_fits == 20 * (3 * 3 + 1)
    assert iv.lower < iv.estimate < iv.upper


def test_a_classifier_s_selection_interval_uses_the_0_1_loss(clf_data):
    X, y = clf_data
    grid = {"C": [0.001, 1.0]}
    model = LogisticRegression(max_iter=500)
    result = parcv.nested_cv(model, grid, X, y, outer=3, inner=3, backend="serial", **NCV)
    reference = selection_interval_reference(
        model, grid, X, y, inner=3, scoring="accuracy", loss=zero_one_loss, confidence=0.9,
        n_folds=3, n_repetitions=2, random_state=3,
    )  # fmt: skip
    _same(result.interval, reference.interval)
    assert result.interval_loss == "0-1 loss"
    naive = result.naive_interval
    assert naive.estimate == pytest.approx(1.0 - result.estimate["score"].mean, rel=1e-12)
    assert "error rate (mean 0-1 loss) of the selection procedure" in result.to_text()


def test_the_nested_cv_itself_is_unchanged_by_the_interval(reg_data):
    X, y = reg_data
    options = dict(outer=4, inner=3, scoring="neg_mean_squared_error", backend="serial")
    plain = parcv.nested_cv(Ridge(), GRID, X, y, **options)
    with_interval = parcv.nested_cv(Ridge(), GRID, X, y, **options, **NCV)
    np.testing.assert_array_equal(with_interval.outer_scores["score"], plain.outer_scores["score"])
    assert with_interval.chosen == plain.chosen
    assert len(with_interval.inner_cv_results) == 4
    assert with_interval.final.best_params_ == plain.final.best_params_
    assert plain.interval is None and plain.naive_interval is None
    # The same outer folds: the two can be compared fold by fold (compare() checks this).
    assert with_interval.outer_folds_digest == plain.outer_folds_digest
    # The naive interval is the usual one of the outer folds, on the loss scale.
    naive, summary = with_interval.naive_interval, with_interval.estimate["score"]
    assert with_interval.interval.naive == naive
    assert naive.estimate == pytest.approx(-summary.mean, rel=1e-12)
    assert naive.se == pytest.approx(summary.se, rel=1e-12)
    text = repr(with_interval)
    assert text.index("nested CV 90% interval") < text.index("naive 90% interval")
    assert f"[{naive.lower:.6g}, {naive.upper:.6g}]" in text


def test_the_selections_are_stored_and_a_resume_or_load_reruns_none(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    options = dict(outer=3, inner=3, scoring="neg_mean_absolute_error", backend="serial",
                   store=store)  # fmt: skip
    first = parcv.nested_cv(Ridge(), GRID, X, y, **options, **NCV)
    again = parcv.nested_cv(Ridge(), GRID, X, y, resume=True, **options, **NCV)
    # Every fit is reused; only the final model is fitted again (the store keeps no model).
    started = [(r.unit, r.started) for r in again.records if r.unit.kind != "final"]
    assert started == [(r.unit, r.started) for r in first.records if r.unit.kind != "final"]
    loaded = parcv.load(store)
    _same(loaded.interval, first.interval)
    assert loaded.interval.n_fits == first.interval.n_fits
    assert loaded.naive_interval == first.naive_interval
    np.testing.assert_array_equal(loaded.outer_scores["score"], first.outer_scores["score"])


def test_a_refit_stored_without_its_losses_is_not_reused_for_the_interval(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    options = dict(outer=3, inner=3, scoring="neg_mean_squared_error", backend="serial",
                   store=store)  # fmt: skip
    parcv.nested_cv(Ridge(), GRID, X, y, **options)
    grown = parcv.nested_cv(Ridge(), GRID, X, y, resume=True, **options, **NCV)
    fresh = parcv.nested_cv(Ridge(), GRID, X, y, **dict(options, store=None), **NCV)
    _same(grown.interval, fresh.interval)


def test_interval_bbc_is_the_bbc_of_the_selection_on_all_data(reg_data):
    X, y = reg_data
    options = dict(outer=4, inner=KFold(4), scoring="neg_mean_squared_error", backend="serial")
    result = parcv.nested_cv(Ridge(), GRID, X, y, interval="bbc", **options)
    assert result.interval.method == "bbc"
    assert result.interval == parcv.nested_cv(Ridge(), GRID, X, y, bbc=True,
                                              **options).interval  # fmt: skip
    bbc = result.final.bbc
    for name in ("estimate", "lower", "upper"):
        assert getattr(result.interval, name) == getattr(bbc, name)
    assert result.interval.naive == result.naive_interval
    assert "BBC-CV 90% interval" in result.to_text()


def test_the_report_shows_the_interval_of_the_selection(reg_data):
    X, y = reg_data
    result = parcv.nested_cv(Ridge(), GRID, X, y, outer=3, inner=3, backend="serial",
                             scoring="neg_mean_squared_error", **NCV)  # fmt: skip
    report = render_report(result, RunInfo("nested"))
    assert "Error of the selection procedure (select by inner CV, refit)" in report
    assert f"| {result.interval.estimate:.6g} |" in report
    assert f"{int(result.interval.details['n_selections'])} more selections" in report
    assert "usual: mean ± z se of the outer fold losses" in report


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"interval": "bootstrap"}, ValueError,
         r"interval must be None or 'ncv' or 'bbc'; got 'bootstrap'"),
        ({"interval": "ncv", "scoring": None}, ValueError,
         "needs a metric with a per-sample loss; got 'r2'"),
        ({"interval": "ncv", "outer": 2}, ValueError, "needs outer with 3 to 20 folds"),
        ({"interval": "ncv", "ncv_repetitions": 0}, ValueError,
         "ncv_repetitions must be an int >= 1"),
        ({"interval": "ncv", "outer": GroupKFold(3), "inner": GroupKFold(2),
          "groups": np.arange(120) % 6}, ValueError,
         "not available for grouped data"),
        ({"interval": "bbc", "refit": False}, ValueError, "no search on all data"),
        # ncv takes any strategy (tests/strategies/test_rounds_intervals.py); BBC-CV a fixed set.
        ({"interval": "bbc", "halving": parcv.Halving()}, ValueError,
         r"BBC-CV \(interval='bbc'\) does not combine with strategy 'halving'"),
    ],
)  # fmt: skip
def test_an_interval_that_cannot_be_had_is_refused_before_any_fit(reg_data, options, error,
                                                                  match):  # fmt: skip
    X, y = reg_data
    options = {"outer": 3, "scoring": "neg_mean_squared_error", **options}
    with pytest.raises(error, match=match):
        parcv.nested_cv(Ridge(), GRID, X, y, backend="serial", **options)


def test_cross_validate_says_bbc_is_for_nested_cv(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match=r"got 'bbc'.*interval='bbc' is for nested_cv"):
        parcv.cross_validate(Ridge(), X, y, scoring="neg_mean_squared_error", interval="bbc")


def test_a_partial_view_lists_only_the_nested_cv_s_own_outer_folds(reg_data):
    from parcv.engine.backends import SerialBackend
    from parcv.engine.runner import run_plan
    from parcv.plan.build import build_plan
    from parcv.plan.data import check_dataset
    from parcv.results.partial import make_partial_result

    X, y = reg_data
    data = check_dataset(X, y)
    plan = build_plan(Ridge(), GRID, data, inner=3, outer=3, scoring="neg_mean_squared_error",
                      **NCV)  # fmt: skip
    assert plan.nested_outers == (0, 1, 2) and len(plan.refit_outers) == 3 + 2 * 3 * 4 // 2
    records = run_plan(plan, data, SerialBackend())
    partial = make_partial_result("nested_cv", plan, records, [], len(records))
    assert sorted(partial.outer_test_scores) == [0, 1, 2]
