"""parcv's warnings point at the caller's line, however deep parcv's own stack is."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold

import parcv
from parcv.errors import warn_at_caller
from tests.estimators import FailsOnAlpha

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 3))
y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=60)


def _caught(call, category):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    found = [w for w in caught if issubclass(w.category, category)]
    assert found, [str(w.message) for w in caught]
    return found


@pytest.mark.parametrize(
    ("call", "category"),
    [
        # plan: a learning curve whose sizes repeat
        (lambda: parcv.learning_curve(Ridge(), X, y, train_sizes=[10, 10, 20], cv=3,
                                      backend="serial"), RuntimeWarning),
        # results: a candidate that fails in every fold is left out of the selection
        (lambda: parcv.search(FailsOnAlpha(), {"alpha": [-1.0, 1.0]}, X, y, cv=3,
                              backend="serial"), parcv.FitFailedWarning),
        # engine: cross_validate with some folds failing
        # engine: cross_validate with some folds failing (KFold(3): the last fold trains on
        # rows 0-39, all of class 0)
        (lambda: parcv.cross_validate(LogisticRegression(), X, np.r_[np.zeros(40), np.ones(20)],
                                      cv=KFold(3), backend="serial"), parcv.FitFailedWarning),
    ],
)  # fmt: skip
def test_warnings_point_at_the_callers_line(call, category):
    for warning in _caught(call, category):
        assert warning.filename == __file__, (warning.filename, str(warning.message))


def test_warn_at_caller_skips_only_parcvs_frames():
    def here():
        warn_at_caller("from a test", UserWarning)

    with pytest.warns(UserWarning, match="from a test") as caught:
        here()
    assert caught[0].filename == __file__
    assert caught[0].lineno == here.__code__.co_firstlineno + 1
