from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

import parcv
from parcv.progress import check_progress

X = np.random.default_rng(0).normal(size=(40, 3))
Y = X[:, 0] + np.random.default_rng(1).normal(size=40)


class Fails(BaseEstimator, RegressorMixin):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        if self.alpha < 0:
            raise ValueError("negative alpha")
        self.model_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_progress_bar_counts_done_failed_and_total(capsys):
    with pytest.warns(parcv.FitFailedWarning):
        parcv.search(Fails(), {"alpha": [-1.0, 1.0]}, X, Y, cv=3, backend="serial", progress=True)
    err = capsys.readouterr().err
    assert "7/7" in err  # 6 fits + the final refit
    assert "failed=3" in err
    assert "fit/s" in err or "s/fit" in err


def test_progress_is_silent_off_a_terminal(capsys):
    assert check_progress(None) is False  # pytest's stderr is not a terminal
    parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=3, backend="serial")
    assert capsys.readouterr().err == ""


def test_progress_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match="progress must be True, False or None"):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, cv=3, backend="serial", progress="yes")
