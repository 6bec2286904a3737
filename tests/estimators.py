"""Small estimators shared by the tests."""

from __future__ import annotations

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
