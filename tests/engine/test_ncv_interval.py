"""cross_validate(interval="ncv"): the nested CV interval's fits as units of the graph, equal to
a plain loop over scikit-learn on every backend, stored and resumed like any other unit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GroupKFold

import parcv
from tests.intervals_reference import ncv_reference, squared_error, zero_one_loss

OPTIONS = dict(interval="ncv", confidence=0.9, ncv_repetitions=3, ncv_random_state=7)


def _same(ours, theirs):
    for name in ("estimate", "lower", "upper", "se", "n_fits"):
        assert getattr(ours, name) == getattr(theirs, name), name


def test_ncv_interval_equals_the_reference_loop(reg_data, backend):
    X, y = reg_data
    result = parcv.cross_validate(Ridge(), X, y, cv=5, scoring="neg_mean_squared_error",
                                  backend=backend, **OPTIONS)  # fmt: skip
    reference = ncv_reference(Ridge(), X, y, loss=squared_error, confidence=0.9, n_folds=5,
                              n_repetitions=3, random_state=7)  # fmt: skip
    _same(result.interval, reference)
    assert result.interval.method == "ncv"
    # The naive interval is the usual one of the run's own CV, on the loss scale.
    losses = -result.scores["test_score"]
    assert result.naive_interval.estimate == pytest.approx(losses.mean(), rel=1e-12)
    assert len([r for r in result.records if r.unit.kind == "ncv"]) == 3 * 5 * 6 // 2


def test_ncv_interval_of_a_classifier_uses_the_0_1_loss(clf_data):
    X, y = clf_data
    model = LogisticRegression(max_iter=500)
    result = parcv.cross_validate(model, X, y, cv=4, backend="serial", **OPTIONS)
    reference = ncv_reference(model, X, y, loss=zero_one_loss, confidence=0.9, n_folds=4,
                              n_repetitions=3, random_state=7)  # fmt: skip
    _same(result.interval, reference)
    assert "nested CV 90% interval" in result.to_text()


def test_ncv_units_are_stored_and_a_resume_reruns_none(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    options = dict(cv=5, scoring="neg_mean_absolute_error", backend="serial", store=store)
    first = parcv.cross_validate(Ridge(), X, y, **options, **OPTIONS)
    again = parcv.cross_validate(Ridge(), X, y, resume=True, **options, **OPTIONS)
    assert [r.started for r in again.records] == [r.started for r in first.records]
    loaded = parcv.load(store)
    _same(loaded.interval, first.interval)
    _same(loaded.naive_interval, first.naive_interval)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"interval": "bootstrap"}, "interval must be None or 'ncv'"),
        ({"interval": "ncv"}, "needs a metric with a per-sample loss; got 'r2'"),
        ({"interval": "ncv", "scoring": "neg_mean_squared_error", "cv": 2}, "3 to 20 folds"),
        ({"interval": "ncv", "scoring": "neg_mean_squared_error", "confidence": 1.5},
         "confidence must be a float in"),
        ({"interval": "ncv", "scoring": "neg_mean_squared_error", "ncv_repetitions": 0},
         "ncv_repetitions must be an int >= 1"),
        ({"interval": "ncv", "scoring": "neg_mean_squared_error", "cv": GroupKFold(5),
          "groups": np.arange(120) % 6}, "not available for grouped data"),
    ],
)  # fmt: skip
def test_an_interval_that_cannot_be_had_is_refused_before_any_fit(reg_data, options, match):
    X, y = reg_data
    options = {"cv": 5, **options}
    with pytest.raises(ValueError, match=match):
        parcv.cross_validate(Ridge(), X, y, backend="serial", **options)


def test_one_naive_interval_the_runs_own_cv_and_repr_shows_both(reg_data):
    # A user saw r.naive_interval 3420 [3230, 3610] and r.interval.naive 3415 [3111, 3719]
    # in one result: the first from the run's folds, the second from the interval's own
    # first random fold assignment. There is one naive interval: the run's own CV's.
    X, y = reg_data
    result = parcv.cross_validate(Ridge(), X, y, cv=5, scoring="neg_mean_squared_error",
                                  backend="serial", **OPTIONS)  # fmt: skip
    naive, summary = result.naive_interval, result.summaries["score"]
    assert result.interval.naive == naive
    # mean ± z se of the fold losses, with the se printed on the score line.
    assert naive.estimate == pytest.approx(-summary.mean, rel=1e-12)
    assert naive.se == pytest.approx(summary.se, rel=1e-12)
    text = repr(result)
    for words in ("mean squared error", "loss scale", "bias-corrected", "nested CV 90%",
                  f"{result.interval.estimate:.6g}", f"{naive.estimate:.6g}",
                  f"[{naive.lower:.6g}, {naive.upper:.6g}]"):  # fmt: skip
        assert words in text, (words, text)
    assert text.index("nested CV") < text.index("naive")
