"""Small estimators shared by the tests."""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler


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


class SparseWeightedRidge(BaseEstimator, RegressorMixin):
    """Ridge weighted by the row sums of a sparse fit parameter, which must match X's rows."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y, weights=None):
        if weights is not None and weights.shape[0] != X.shape[0]:
            raise ValueError(f"weights has {weights.shape[0]} rows for {X.shape[0]} samples")
        row_sums = None if weights is None else np.asarray(weights.sum(axis=1)).ravel()
        self.model_ = Ridge(alpha=self.alpha).fit(X, y, sample_weight=row_sums)
        return self

    def predict(self, X):
        return self.model_.predict(X)


class LoggedPCA(TransformerMixin, BaseEstimator):
    """PCA that appends a line per fit to a file: fits counted by the estimator, not by parcv.

    Each line is ``n_components n_rows``.
    """

    def __init__(self, n_components=2, log=None):
        self.n_components = n_components
        self.log = log

    def fit(self, X, y=None):
        if self.log is not None:
            with open(self.log, "a") as out:
                out.write(f"{self.n_components} {len(X)}\n")
        self.pca_ = PCA(n_components=self.n_components, svd_solver="full").fit(X)
        return self

    def transform(self, X):
        return self.pca_.transform(X)


class WarnsOnFit(TransformerMixin, BaseEstimator):
    """StandardScaler that warns once per fit, and raises when ``fail`` is set."""

    def __init__(self, fail=False):
        self.fail = fail

    def fit(self, X, y=None):
        warnings.warn("fitted a scaler that warns", UserWarning, stacklevel=2)
        if self.fail:
            raise ValueError("this scaler was told to fail")
        self.scaler_ = StandardScaler().fit(X)
        return self

    def transform(self, X):
        return self.scaler_.transform(X)


# Every fit of FitLogged appends one line here: tests count fits from this file, not from
# parcv's own counters. The test process names it once, in the environment, so every worker
# process it starts (local pool, Dask) appends to the same file and two test sessions on one
# machine never share it.
FIT_LOG = Path(
    os.environ.setdefault(
        "PARCV_TEST_FIT_LOG",
        str(Path(tempfile.gettempdir()) / f"parcv-test-fit-log-{os.getuid()}-{os.getpid()}.txt"),
    )
)


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


class FaultyStep(TransformerMixin, BaseEstimator):
    """A pass-through step whose fit raises (``fault="raise"``) or hangs (``fault="hang"``).

    Before a model the shortcut table grows (a forest, by a warm start; the table
    names exact classes, so the fault cannot live in a subclass of the model), it
    makes an iteration path's first fit fail.
    """

    def __init__(self, fault=None):
        self.fault = fault

    def fit(self, X, y=None):
        if self.fault == "hang":
            time.sleep(3600)
        if self.fault == "raise":
            raise ValueError("fault='raise' is not allowed here")
        return self

    def transform(self, X):
        return X


class FoldShift(BaseEstimator, RegressorMixin):
    """Score ``X[0, 0] - alpha``: every pair of candidates differs by the same on each fold.

    Fits in microseconds; no paired test is defined between two of its candidates, so
    a summary takes the path that marks such pairs.
    """

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def predict(self, X):
        return np.zeros(len(X))

    def score(self, X, y=None, sample_weight=None):
        return float(X[0][0]) - self.alpha
