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


class Faulty(BaseEstimator, RegressorMixin):
    """Ridge whose fit, for ``alpha == on_alpha``, brings its process down.

    ``fault``: "segv" (null pointer read), "abort" (``os.abort()``), "oom"
    (allocates past an address-space limit set for the fit: a MemoryError),
    "sigkill" (as the OOM killer does), "hang" (sleeps 600 s) or "none".
    """

    def __init__(self, alpha=1.0, fault="none", on_alpha=1.0):
        self.alpha = alpha
        self.fault = fault
        self.on_alpha = on_alpha

    def fit(self, X, y):
        if self.alpha == self.on_alpha:
            _bring_down(self.fault)
        self.model_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


def _bring_down(fault):
    import ctypes
    import os
    import resource
    import signal
    import time

    if fault == "segv":
        ctypes.string_at(0)
    elif fault == "abort":
        os.abort()
    elif fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "hang":
        time.sleep(600)
    elif fault == "oom":
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (2**31, hard))
        try:
            bytearray(2**32)
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
