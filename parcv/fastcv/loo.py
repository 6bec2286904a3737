"""Exact fast leave-one-out and k-fold predictions for linear smoothers.

A linear smoother fitted on ``(X, y)`` predicts ``yhat = H y`` at ``X``
with a hat matrix ``H`` that does not depend on ``y``.  If the smoother is
the minimiser of a penalised least-squares objective whose penalty does not
depend on the training set (ridge, kernel ridge, a Gaussian posterior mean
with fixed hyperparameters), refitting without a block ``T`` predicts

``yhat_T = (I - H_TT)^-1 (yhat_T - H_TT y_T)``

exactly: appending the held-out points with targets equal to their
held-out predictions leaves the minimiser unchanged.  For ``T = {i}`` this
is ``(yhat_i - H_ii y_i) / (1 - H_ii)``.  One fit on all data therefore
replaces one refit per fold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import cho_factor, cho_solve
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.metrics.pairwise import pairwise_kernels

from parcv.criteria.bayes import BayesianLinearRegression, _check_variance
from parcv.criteria.gp import GaussianProcessLOO, _default_kernel

__all__ = [
    "SupportsHatMatrix",
    "compute_hat_matrix",
    "fast_cv_predictions",
    "supports_fast_cv",
]

Matrix = NDArray[np.float64]
HatFunction = Callable[[Matrix], Matrix]
# Below this, 1 - leverage is rounding noise and the held-out prediction is undefined.
_SINGULAR = 1e-12


@runtime_checkable
class SupportsHatMatrix(Protocol):
    """Estimator that exposes its hat matrix.

    Implement ``hat_matrix(X)`` returning ``H`` of shape
    ``(n_samples, n_samples)`` such that fitting on ``(X, y)`` and
    predicting at ``X`` gives ``H @ y`` for every ``y``.  The fast formulas
    are exact only if the fit minimises a penalised squared error whose
    penalty does not depend on the training samples.

    Examples
    --------
    >>> class ShrunkMean:
    ...     def hat_matrix(self, X):
    ...         return np.full((len(X), len(X)), 1.0 / (len(X) + 1.0))
    >>> isinstance(ShrunkMean(), SupportsHatMatrix)
    True
    """

    def hat_matrix(self, X: Matrix) -> Matrix:
        """Return the hat matrix of a fit on ``X``."""


def _projection(Z: Matrix, penalty: Matrix) -> Matrix:
    """Return ``Z (Z^T Z + diag(penalty))^-1 Z^T`` (dual form when wide)."""
    n_samples, n_columns = Z.shape
    if n_columns <= n_samples or np.any(penalty == 0):
        gram = Z.T @ Z
        gram[np.diag_indices_from(gram)] += penalty
        return np.asarray(Z @ cho_solve(cho_factor(gram), Z.T), dtype=float)
    # Z D^-1 Z^T (Z D^-1 Z^T + I)^-1 equals the primal form (push-through).
    scaled = (Z / penalty) @ Z.T
    return _kernel_smoother(scaled, scaled, 1.0)


def _kernel_smoother(K_signal: Matrix, K_noisy: Matrix, alpha: float) -> Matrix:
    """Return ``K_signal (K_noisy + alpha I)^-1`` for symmetric inputs."""
    covariance = K_noisy.copy()
    covariance[np.diag_indices_from(covariance)] += alpha
    return np.asarray(cho_solve(cho_factor(covariance), K_signal).T, dtype=float)


def _ridge_hat(estimator: Any, X: Matrix) -> Matrix:
    """Hat matrix of ``Ridge``; the intercept is an unpenalised column."""
    if not estimator.fit_intercept:
        return _projection(X, np.full(X.shape[1], float(estimator.alpha)))
    # Centring X is equivalent to an unpenalised column of ones.
    centred = X - X.mean(axis=0)
    return _projection(centred, np.full(X.shape[1], float(estimator.alpha))) + 1.0 / len(X)


def _kernel_ridge_hat(estimator: Any, X: Matrix) -> Matrix:
    """Hat matrix ``K (K + alpha I)^-1`` of ``KernelRidge``."""
    if callable(estimator.kernel):
        params = estimator.kernel_params or {}
    else:
        params = {"gamma": estimator.gamma, "degree": estimator.degree, "coef0": estimator.coef0}
    K = pairwise_kernels(X, metric=estimator.kernel, filter_params=True, **params)
    return _kernel_smoother(K, K, float(estimator.alpha))


def _gp_kernel(estimator: Any) -> Any:
    """Return the kernel a GP fit starts from, resolving ``kernel=None``."""
    if estimator.kernel is not None:
        return estimator.kernel
    if isinstance(estimator, GaussianProcessLOO):
        return _default_kernel()
    return ConstantKernel() * RBF()


def _gp_hat(estimator: Any, X: Matrix) -> Matrix:
    """Hat matrix ``k(X, X) (k(X) + alpha I)^-1`` of a GP with a fixed kernel."""
    kernel = _gp_kernel(estimator)
    # k(X) carries WhiteKernel noise on its diagonal, k(X, X) does not.
    return _kernel_smoother(kernel(X, X), kernel(X), float(estimator.alpha))


def _bayes_hat(estimator: Any, X: Matrix) -> Matrix:
    """Hat matrix of Bayesian linear regression: ridge with ``sigma2 / tau2``."""
    design = estimator.design_matrix(X)
    penalty = _check_variance(estimator.sigma2, "sigma2") / _check_variance(estimator.tau2, "tau2")
    return _projection(design, np.full(design.shape[1], penalty))


def _gp_problem(estimator: Any) -> str:
    """Return why a GP is not a fixed linear smoother, or ''."""
    if getattr(estimator, "normalize_y", False):
        return "normalize_y=True"
    if estimator.optimizer is not None and _gp_kernel(estimator).n_dims > 0:
        return "kernel hyperparameters optimised in fit; set optimizer=None"
    return ""


def _kernel_ridge_problem(estimator: Any) -> str:
    """Return why a KernelRidge cannot be refitted by slicing X, or ''."""
    return "kernel='precomputed'" if estimator.kernel == "precomputed" else ""


_ADAPTERS: tuple[tuple[type, Callable[[Any, Matrix], Matrix], Callable[[Any], str]], ...] = (
    (Ridge, _ridge_hat, lambda e: "positive=True" if e.positive else ""),
    (KernelRidge, _kernel_ridge_hat, _kernel_ridge_problem),
    (GaussianProcessRegressor, _gp_hat, _gp_problem),
    (GaussianProcessLOO, _gp_hat, _gp_problem),
    (BayesianLinearRegression, _bayes_hat, lambda e: "optimize=True" if e.optimize else ""),
)


def _find_adapter(estimator: Any) -> tuple[HatFunction | None, str]:
    """Return the hat-matrix function of ``estimator``, or None and the reason."""
    if isinstance(estimator, SupportsHatMatrix):
        return estimator.hat_matrix, ""
    for cls, function, find_problem in _ADAPTERS:
        if isinstance(estimator, cls):
            problem = find_problem(estimator)
            if not problem and np.ndim(getattr(estimator, "alpha", 0.0)) != 0:
                problem = "an array alpha"
            if problem:
                return None, f"{cls.__name__} with {problem}"
            return partial(function, estimator), ""
    return None, f"{type(estimator).__name__} is not a known linear smoother"


def supports_fast_cv(estimator: Any) -> bool:
    """Return whether :func:`fast_cv_predictions` can handle an estimator.

    Supported are ``Ridge`` (``positive=False``), ``KernelRidge`` (not
    precomputed), ``GaussianProcessRegressor`` and ``GaussianProcessLOO``
    with fixed kernel hyperparameters (``optimizer=None``) and no target
    normalisation, ``BayesianLinearRegression(optimize=False)`` (all with a
    scalar ``alpha``), and any :class:`SupportsHatMatrix`.  Results are the exact
    refits; iterative ``Ridge`` solvers (``sag``, ``lsqr``, ...) match them only to
    their ``tol``.

    Parameters
    ----------
    estimator : estimator object
        Unfitted or fitted estimator; only its parameters are used.

    Returns
    -------
    bool
        True if held-out predictions can be computed from one fit.

    Examples
    --------
    >>> from sklearn.linear_model import Lasso
    >>> supports_fast_cv(Ridge(alpha=1.0)), supports_fast_cv(Lasso())
    (True, False)
    """
    return _find_adapter(estimator)[0] is not None


def compute_hat_matrix(estimator: Any, X: ArrayLike) -> Matrix:
    """Compute the hat matrix of a supported estimator fitted on ``X``.

    Parameters
    ----------
    estimator : estimator object
        Estimator for which :func:`supports_fast_cv` is True.
    X : array-like of shape (n_samples, n_features)
        Training inputs.

    Returns
    -------
    ndarray of shape (n_samples, n_samples)
        ``H`` with ``clone(estimator).fit(X, y).predict(X) == H @ y``.

    Raises
    ------
    TypeError
        If the estimator is not a linear smoother.
    ValueError
        If its configuration is not a linear smoother or ``X`` is not 2-D.

    Examples
    --------
    >>> H = compute_hat_matrix(Ridge(alpha=1.0), [[0.0], [1.0], [2.0]])
    >>> bool(np.allclose(H.sum(axis=1), 1.0))
    True
    """
    function, reason = _find_adapter(estimator)
    if function is None:
        error = TypeError if reason.endswith("linear smoother") else ValueError
        raise error(
            f"estimator must be a linear smoother with fixed hyperparameters; got "
            f"{estimator!r} ({reason}). Check supports_fast_cv(estimator) first and "
            "refit per fold otherwise, or implement SupportsHatMatrix."
        )
    X_array = np.asarray(X, dtype=float)
    if X_array.ndim != 2:
        raise ValueError(
            f"X must be 2-D of shape (n_samples, n_features); got shape {X_array.shape!r}. "
            "Reshape a single feature with X.reshape(-1, 1)."
        )
    try:
        H = np.asarray(function(X_array), dtype=float)
    except np.linalg.LinAlgError as err:
        raise ValueError(
            f"estimator must give a positive definite system on X; got {estimator!r}, whose "
            "hat matrix is undefined there. Increase alpha (or add noise to the kernel)."
        ) from err
    if H.shape != (len(X_array), len(X_array)):
        raise ValueError(
            f"hat_matrix must return shape {(len(X_array),) * 2!r}; got {H.shape!r}. "
            "Return one row and one column per training sample."
        )
    return H


def _check_index(idx: NDArray[Any], name: str, number: int, n_samples: int) -> None:
    """Raise unless ``idx`` is a 1-D integer array within ``range(n_samples)``."""
    if idx.ndim != 1 or (idx.size > 0 and idx.dtype.kind not in "iu"):
        raise TypeError(
            f"folds[{number}] {name} indices must be a 1-D integer array; got {idx!r}. "
            "Pass (train_idx, test_idx) pairs such as list(KFold(5).split(X))."
        )
    if idx.size > 0 and (idx.min() < 0 or idx.max() >= n_samples):
        raise ValueError(
            f"folds[{number}] {name} indices must lie in range({n_samples}); got {idx!r}. "
            "Build the folds on the same X."
        )


def _check_folds(folds: Sequence[tuple[ArrayLike, ArrayLike]], n_samples: int) -> list[Any]:
    """Return the test index arrays if the folds partition the samples, else raise."""
    tests, counts = [], np.zeros(n_samples, dtype=int)
    for number, (train, test) in enumerate(folds):
        train_idx, test_idx = np.asarray(train), np.asarray(test)
        _check_index(train_idx, "train", number, n_samples)
        _check_index(test_idx, "test", number, n_samples)
        if not np.array_equal(np.sort(train_idx), np.setdiff1d(np.arange(n_samples), test_idx)):
            raise ValueError(
                f"folds[{number}] train indices must be every sample not in its test "
                f"indices; got train={train_idx!r}, test={test_idx!r}. Fast CV needs "
                "each train set to be the complement of its test set."
            )
        np.add.at(counts, test_idx, 1)
        tests.append(test_idx)
    if not tests or np.any(counts != 1) or any(t.size == 0 for t in tests):
        raise ValueError(
            f"folds must partition range({n_samples}) into non-empty test sets; "
            f"test counts per sample range over {sorted(set(counts.tolist()))!r}. "
            "Use e.g. list(KFold(5).split(X)) or list(LeaveOneOut().split(X))."
        )
    return tests


def _check_not_interpolated(singular_values: NDArray[Any], test_idx: NDArray[Any]) -> None:
    """Raise if ``I - H_TT`` is numerically singular."""
    if np.min(np.abs(singular_values)) < _SINGULAR:
        raise ValueError(
            f"folds test indices {test_idx!r} are interpolated (I - H_TT is singular), so "
            "their held-out predictions are undefined. Increase the regularisation."
        )


def _loo_predictions(H: Matrix, y: Matrix, fitted: Matrix) -> Matrix:
    """Return ``(yhat_i - H_ii y_i) / (1 - H_ii)`` for every sample."""
    leverage = np.diag(H).reshape((-1,) + (1,) * (y.ndim - 1))
    gap = 1.0 - leverage
    _check_not_interpolated(gap, np.flatnonzero(np.abs(gap) < _SINGULAR))
    return np.asarray((fitted - leverage * y) / gap, dtype=float)


def fast_cv_predictions(
    estimator: Any,
    X: ArrayLike,
    y: ArrayLike,
    folds: Sequence[tuple[ArrayLike, ArrayLike]],
) -> Matrix:
    """Compute held-out predictions of a linear smoother from one fit.

    Parameters
    ----------
    estimator : estimator object
        Estimator for which :func:`supports_fast_cv` is True.
    X : array-like of shape (n_samples, n_features)
        Inputs.
    y : array-like of shape (n_samples,) or (n_samples, n_targets)
        Targets.
    folds : sequence of (train_idx, test_idx) pairs
        Integer index arrays; the test sets must partition the samples and
        each train set must be the complement of its test set.  Leave-one-out
        is ``n_samples`` singleton test sets.

    Returns
    -------
    ndarray of the shape of ``y``
        Entry ``i`` is the prediction for sample ``i`` of the estimator
        refitted on the train set of the fold whose test set holds ``i``.

    Raises
    ------
    TypeError
        If the estimator is unsupported or the folds are not index arrays.
    ValueError
        If the folds do not partition the samples, shapes mismatch, or a
        held-out block is fitted exactly (``I - H_TT`` singular).

    See Also
    --------
    supports_fast_cv : Whether an estimator can be used here.

    Examples
    --------
    >>> from sklearn.model_selection import LeaveOneOut
    >>> X, y = np.arange(6.0).reshape(-1, 1), np.array([0.0, 1, 1, 3, 4, 6])
    >>> folds = list(LeaveOneOut().split(X))
    >>> fast = fast_cv_predictions(Ridge(alpha=0.5), X, y, folds)
    >>> slow = [Ridge(alpha=0.5).fit(X[tr], y[tr]).predict(X[te])[0] for tr, te in folds]
    >>> bool(np.allclose(fast, slow, rtol=1e-12))
    True
    """
    H = compute_hat_matrix(estimator, X)
    y_array = np.asarray(y, dtype=float)
    if y_array.ndim not in (1, 2) or len(y_array) != len(H):
        raise ValueError(
            f"y must have shape ({len(H)},) or ({len(H)}, n_targets); got shape "
            f"{y_array.shape!r}. Pass one target row per sample of X."
        )
    tests = _check_folds(folds, len(H))
    fitted = H @ y_array
    if all(test_idx.size == 1 for test_idx in tests):
        return _loo_predictions(H, y_array, fitted)
    predictions = np.empty_like(y_array)
    for test_idx in tests:
        block = H[np.ix_(test_idx, test_idx)]
        residual_operator = np.eye(len(test_idx)) - block
        _check_not_interpolated(np.linalg.svd(residual_operator, compute_uv=False), test_idx)
        rhs = fitted[test_idx] - block @ y_array[test_idx]
        predictions[test_idx] = np.linalg.solve(residual_operator, rhs)
    return predictions
