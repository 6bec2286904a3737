from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import parcv
from parcv.engine.progress import check_progress
from tests.estimators import FailsOnAlpha

X = np.random.default_rng(0).normal(size=(40, 3))
Y = X[:, 0] + np.random.default_rng(1).normal(size=40)


def test_progress_bar_counts_done_failed_and_total(capsys):
    with pytest.warns(parcv.FitFailedWarning):
        parcv.search(
            FailsOnAlpha(), {"alpha": [-1.0, 1.0]}, X, Y, cv=3, backend="serial", progress=True
        )
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
