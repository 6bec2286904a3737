"""W3's estimator: fits that sleep while holding a per-process lock.

Sleeping needs no core, so 16 workers on a 2-core machine behave like 16 busy
cores; the lock makes threads inside one process take turns, as GIL-bound fits
would. This module is imported by name (``sleepy``) by the benchmark and by
every worker, so the estimator pickles by reference and each process has its
own lock.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["SleepyEstimator"]

# One lock per process: a module global is created once on import in each process.
_LOCK = threading.Lock()


class SleepyEstimator(BaseEstimator):
    """Sleep ``fit_sleep`` seconds per fit (holding the process lock) and score deterministically.

    Parameters
    ----------
    c : float, default=0.0
        Offset added to the fitted mean; the candidate parameter. The score is
        ``-mean((y - mean(y_train) - c) ** 2)``, so candidates are ranked
        deterministically and every tool must select the same ones.
    fit_sleep : float, default=0.05
        Seconds slept inside ``fit`` while holding the per-process lock.
    score_sleep : float, default=0.0
        Seconds slept inside ``score`` while holding the lock.
    """

    def __init__(self, c: float = 0.0, fit_sleep: float = 0.05, score_sleep: float = 0.0) -> None:
        self.c = c
        self.fit_sleep = fit_sleep
        self.score_sleep = score_sleep

    def fit(self, X: np.ndarray, y: np.ndarray) -> SleepyEstimator:
        """Sleep while holding the lock, then remember the mean of ``y``."""
        with _LOCK:
            time.sleep(self.fit_sleep)
        self.center_ = float(np.mean(y))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predict the fitted mean plus ``c`` for every row."""
        return np.full(len(X), self.center_ + self.c)

    def score(self, X: np.ndarray, y: np.ndarray) -> float:
        """Return minus the mean squared error of :meth:`predict`."""
        if self.score_sleep > 0:
            with _LOCK:
                time.sleep(self.score_sleep)
        return -float(np.mean((np.asarray(y) - self.predict(X)) ** 2))
