"""search(bbc=True): BBC-CV of the selected candidate from the search's own out-of-fold losses,
equal to a plain loop over scikit-learn with the same folds and bootstrap draws."""

from __future__ import annotations

import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, ParameterGrid

import parcv
from tests.intervals_reference import bbc_reference, zero_one_loss

GRID = {"C": [0.001, 0.01, 0.1, 1.0, 10.0]}


def test_bbc_equals_the_reference_loop(clf_data, backend):
    X, y = clf_data
    model = LogisticRegression(max_iter=300)
    result = parcv.search(model, GRID, X, y, cv=KFold(5, shuffle=True, random_state=0),
                          scoring="accuracy", bbc=True, backend=backend)  # fmt: skip
    candidates = [clone(model).set_params(**p) for p in ParameterGrid(GRID)]
    reference = bbc_reference(candidates, X, y, per_sample=zero_one_loss,
                              greater_is_better=False, n_folds=5, random_state=0)  # fmt: skip
    for name in ("estimate", "lower", "upper", "se"):
        assert getattr(result.bbc, name) == getattr(reference, name), name
    # The raw CV error of the winner, next to it: its own out-of-fold error rate.
    assert result.bbc.details["raw"] == pytest.approx(1.0 - result.best_score_, abs=1e-12)
    assert result.bbc.n_fits == 5 * len(GRID["C"])  # the search's own fits, none more


def test_nested_cv_reports_bbc_next_to_the_nested_estimate(clf_data):
    from parcv.report.text import RunInfo, render_report

    X, y = clf_data
    result = parcv.nested_cv(LogisticRegression(max_iter=300), GRID, X, y, outer=3, inner=4,
                             bbc=True, backend="serial")  # fmt: skip
    assert result.final.bbc is not None
    text = render_report(result, RunInfo("bbc"))
    assert "BBC-CV" in text and "(selection on all data)" in text


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"bbc": True, "scoring": "roc_auc"}, ValueError, "per-sample loss; got 'roc_auc'"),
        ({"bbc": True, "cv": parcv.ThreeWayHoldOut(0.6, 0.2, 0.2)}, ValueError, "partition"),
        ({"bbc": True, "racing": parcv.Racing(), "cv": 8}, ValueError, "bbc=True and racing"),
        ({"bbc": "yes"}, TypeError, "bbc must be True or False"),
    ],
)
def test_bbc_that_cannot_be_had_is_refused_before_any_fit(clf_data, options, error, match):
    X, y = clf_data
    with pytest.raises(error, match=match):
        parcv.search(LogisticRegression(), GRID, X, y, backend="serial", **options)
