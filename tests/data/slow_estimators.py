"""A deterministic classifier that takes a fixed time to fit (cluster tests).

Workers and the driver import it by name: put tests/data on PYTHONPATH.
"""

from __future__ import annotations

import time

from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC


class SlowSVC(ClassifierMixin, BaseEstimator):
    """An RBF SVC whose fit also sleeps ``sleep`` seconds, so a sweep lasts a while."""

    def __init__(self, C=1.0, sleep=0.1):
        self.C = C
        self.sleep = sleep

    def fit(self, X, y):
        time.sleep(self.sleep)
        self.model_ = SVC(C=self.C).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)
