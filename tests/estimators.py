"""Small estimators shared by the tests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge


class FailsOnAlpha(BaseEstimator, RegressorMixin):
    """Ridge that raises for a negative alpha: a candidate that fails in every fold."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        if self.alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {self.alpha}")
        self.model_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


# Every fit of FitLogged appends one line here: tests count fits from this file, not from
# parcv's own counters. A fixed path, so worker processes started before the test see it.
FIT_LOG = Path(tempfile.gettempdir()) / f"parcv-test-fit-log-{os.getuid()}.txt"


class FitLogged(BaseEstimator, RegressorMixin):
    """Ridge that appends ``alpha fit_intercept n_rows`` to :data:`FIT_LOG` on each fit."""

    def __init__(self, alpha=1.0, fit_intercept=True):
        self.alpha = alpha
        self.fit_intercept = fit_intercept

    def fit(self, X, y):
        with FIT_LOG.open("a") as log:
            log.write(f"{self.alpha!r} {self.fit_intercept!r} {len(X)}\n")
        self.model_ = Ridge(alpha=self.alpha, fit_intercept=self.fit_intercept).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


def logged_fits() -> list[str]:
    """The lines of :data:`FIT_LOG` (one per fit since it was last cleared)."""
    return FIT_LOG.read_text().splitlines() if FIT_LOG.exists() else []
