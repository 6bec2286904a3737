"""The driver benchmark's estimator: fits and scores in a few microseconds, fixed numbers.

So a sweep of it measures what parcv's driver costs per unit, not the fits. Imported by
name (``null_estimator``) by the benchmark, by ``parcv run`` of its spec and by every
worker, so it pickles by reference.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

__all__ = ["NullEstimator"]


class NullEstimator(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Fit nothing; score ``-log10(alpha) ** 2 + sin(1000 alpha + X[0, 0]) / 100``.

    Parameters
    ----------
    alpha : float, default=1.0
        The candidate parameter. The score is a fixed number of ``alpha`` and of
        the first test row, so it differs from fold to fold as real scores do (two
        candidates' differences vary over the folds, so the report's paired tests
        are defined) and selection is deterministic: an alpha near 1 wins.

    Examples
    --------
    >>> est = NullEstimator(alpha=10.0).fit(np.zeros((4, 1)), np.zeros(4))
    >>> round(est.score(np.ones((4, 1)), np.zeros(4)), 6)
    -1.009663
    """

    def __init__(self, alpha: float = 1.0, fit_seconds: float = 0.0) -> None:
        self.alpha = alpha
        self.fit_seconds = fit_seconds

    def fit(self, X: Any, y: Any = None) -> NullEstimator:
        """Remember nothing but that it was fitted (after ``fit_seconds`` of busy work)."""
        end = time.perf_counter() + self.fit_seconds
        while time.perf_counter() < end:
            pass
        self.fitted_ = True
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Zeros, one per row."""
        return np.zeros(len(X))

    def score(self, X: Any, y: Any = None, sample_weight: Any = None) -> float:
        """A fixed number of ``alpha`` and the first row of ``X``."""
        return -(math.log10(self.alpha) ** 2) + math.sin(1e3 * self.alpha + float(X[0][0])) / 100
