"""Gaussian process regression with closed-form leave-one-out objectives.

For a training covariance ``K`` (kernel plus noise) and ``a = K^-1 y``: the log marginal
likelihood ``-1/2 y^T a - 1/2 log|K| - n/2 log 2 pi`` with gradient
``1/2 tr((a a^T - K^-1) dK/dtheta)``; the leave-one-out moments ``mu_i = y_i - a_i / [K^-1]_ii``,
``sigma_i^2 = 1 / [K^-1]_ii`` without refitting; and the LOO log predictive probability
``sum_i log N(y_i | mu_i, sigma_i^2)`` with the gradient of Rasmussen & Williams (2006, eq. 5.13).
Gradients are with respect to ``kernel.theta``, the log-hyperparameters of a scikit-learn kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = [
    "GaussianProcessLOO",
    "LOOPrediction",
    "ObjectiveValue",
    "compute_gp_objective",
]

_LOG_2PI = math.log(2.0 * math.pi)
_OPTIMIZERS = ("fmin_l_bfgs_b", None)
Factor = tuple[NDArray[np.float64], bool]


@dataclass(frozen=True, slots=True)
class ObjectiveValue:
    """Value of a hyperparameter objective and its gradient.

    Attributes
    ----------
    value : float
        Objective to maximise.
    gradient : ndarray of shape (n_hyperparameters,)
        Derivative with respect to the log-transformed hyperparameters.
    """

    value: float
    gradient: NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class LOOPrediction:
    """Leave-one-out predictive distribution of every training target.

    Attributes
    ----------
    mean : ndarray of shape (n_samples,)
        ``mu_i``, the prediction for ``y_i`` from all other samples.
    variance : ndarray of shape (n_samples,)
        ``sigma_i^2``, the predictive variance of ``y_i`` (noise included).
    log_predictive : ndarray of shape (n_samples,)
        ``log N(y_i | mu_i, sigma_i^2)``.
    """

    mean: NDArray[np.float64]
    variance: NDArray[np.float64]
    log_predictive: NDArray[np.float64]


def _check_inputs(
    K: ArrayLike, y: ArrayLike, K_gradient: ArrayLike | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return float arrays ``K (n, n)``, ``y (n,)`` and ``K_gradient (n, n, m)``."""
    K_array = np.asarray(K, dtype=float)
    y_array = np.asarray(y, dtype=float)
    n = y_array.shape[0] if y_array.ndim == 1 else -1
    grad = np.zeros((n, n, 0)) if K_gradient is None else np.asarray(K_gradient, float)
    if K_array.shape != (n, n) or grad.ndim != 3 or grad.shape[:2] != (n, n):
        raise ValueError(
            "K must have shape (n_samples, n_samples), y (n_samples,) and K_gradient (n_samples, "
            f"n_samples, n_hyperparameters); got {K_array.shape!r}, {y_array.shape!r} and "
            f"{grad.shape!r}. Pass kernel(X, eval_gradient=True) with the noise added to K."
        )
    return K_array, y_array, grad


def _lml(factor: Factor, y: NDArray[np.float64], grad: NDArray[np.float64]) -> ObjectiveValue:
    """Return the log marginal likelihood and its gradient."""
    a = cho_solve(factor, y)
    log_det = 2.0 * float(np.sum(np.log(np.diag(factor[0]))))
    value = -0.5 * (float(y @ a) + log_det + y.shape[0] * _LOG_2PI)
    if grad.shape[2] == 0:
        return ObjectiveValue(value, np.zeros(0))
    inner = np.outer(a, a) - cho_solve(factor, np.eye(y.shape[0]))
    return ObjectiveValue(value, 0.5 * np.einsum("ij,ijk->k", inner, grad))


def _loo(factor: Factor, y: NDArray[np.float64], grad: NDArray[np.float64]) -> ObjectiveValue:
    """Return the LOO log predictive probability and its gradient (R&W 5.13)."""
    K_inv = cho_solve(factor, np.eye(y.shape[0]))
    a = K_inv @ y
    d = np.diag(K_inv)
    value = 0.5 * float(np.sum(np.log(d) - a**2 / d)) - 0.5 * y.shape[0] * _LOG_2PI
    gradient = np.empty(grad.shape[2])
    for j in range(grad.shape[2]):
        Z = K_inv @ grad[:, :, j]
        z_k_inv_diag = np.sum(Z * K_inv, axis=1)  # diag(Z K^-1); K^-1 symmetric
        terms = a * (Z @ a) - 0.5 * (1.0 + a**2 / d) * z_k_inv_diag
        gradient[j] = float(np.sum(terms / d))
    return ObjectiveValue(value, gradient)


def _loo_moments(factor: Factor, y: NDArray[np.float64]) -> LOOPrediction:
    """Return the closed-form LOO predictive moments."""
    d = np.diag(cho_solve(factor, np.eye(y.shape[0])))
    residual = cho_solve(factor, y) / d
    log_predictive = 0.5 * (np.log(d) - residual**2 * d - _LOG_2PI)
    return LOOPrediction(y - residual, 1.0 / d, log_predictive)


def _with_factor(K: NDArray[np.float64]) -> Factor:
    """Factor ``K`` or raise a ValueError that says how to fix it."""
    try:
        return cho_factor(K, lower=True)  # type: ignore[no-any-return]
    except np.linalg.LinAlgError as err:
        raise ValueError(
            "K must be symmetric positive definite; its Cholesky factorisation failed. "
            "Add noise to the diagonal (alpha or a WhiteKernel)."
        ) from err


def compute_gp_objective(
    K: ArrayLike, y: ArrayLike, K_gradient: ArrayLike | None = None, *, objective: str = "evidence"
) -> ObjectiveValue:
    """Compute a GP hyperparameter objective and its gradient from the training covariance.

    Parameters
    ----------
    K : array-like of shape (n_samples, n_samples)
        Covariance of the training targets (kernel plus noise).
    y : array-like of shape (n_samples,)
        Training targets.
    K_gradient : array-like of shape (n_samples, n_samples, n_hyperparameters), default=None
        ``dK / dtheta`` as returned by ``kernel(X, eval_gradient=True)``; None gives an empty
        gradient.
    objective : {"evidence", "loo"}, default="evidence"
        ``"evidence"``: ``log p(y | X, theta)`` with gradient
        ``1/2 tr((a a^T - K^-1) dK/dtheta_j)``.  ``"loo"``: the closed-form LOO log predictive
        probability ``sum_i log p(y_i | X, y_-i, theta)`` with the gradient of R&W eq. 5.13.

    Returns
    -------
    ObjectiveValue
        The objective and its gradient.

    Raises
    ------
    ValueError
        If ``objective`` is unknown, shapes mismatch or ``K`` is not positive definite.

    Examples
    --------
    >>> round(compute_gp_objective([[1.0]], [0.0]).value, 6)
    -0.918939
    >>> K = [[2.0, 1.0], [1.0, 2.0]]
    >>> round(compute_gp_objective(K, [1.0, 1.0], objective="loo").value, 6)
    -2.410009
    """
    if objective not in ("evidence", "loo"):
        raise ValueError(
            f"objective must be 'evidence' or 'loo'; got {objective!r}. Pass objective='loo'."
        )
    K_array, y_array, grad = _check_inputs(K, y, K_gradient)
    function = _lml if objective == "evidence" else _loo
    return function(_with_factor(K_array), y_array, grad)


def _default_kernel() -> Any:
    """Kernel used when ``kernel=None``: amplitude times RBF plus white noise."""
    return ConstantKernel() * RBF() + WhiteKernel()


class GaussianProcessLOO(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Gaussian process regressor tuned by evidence or closed-form LOO.

    Parameters
    ----------
    kernel : kernel object, default=None
        scikit-learn kernel; None uses ``ConstantKernel() * RBF() + WhiteKernel()``.
    alpha : float, default=1e-10
        Value added to the diagonal of the training covariance.
    objective : {"evidence", "loo"}, default="evidence"
        Hyperparameter objective: log marginal likelihood, or LOO log predictive probability.
    optimizer : {"fmin_l_bfgs_b"} or None, default="fmin_l_bfgs_b"
        L-BFGS-B over ``kernel.theta`` within ``kernel.bounds``; None keeps them fixed.
    n_restarts : int, default=0
        Extra optimiser runs from log-uniform random starts in the bounds.
    random_state : int, RandomState instance or None, default=None
        Seeds the restart points.

    Attributes
    ----------
    kernel_ : kernel object
        Kernel with the selected hyperparameters.
    X_train_, y_train_ : ndarray
        Training data.
    alpha_ : ndarray of shape (n_samples,)
        ``K^-1 y`` at the selected hyperparameters.
    log_marginal_likelihood_value_, loo_log_predictive_value_ : float
        Both objectives at the selected hyperparameters.
    loo_ : LOOPrediction
        LOO moments, equal to refitting without each sample (hyperparameters held fixed).

    Examples
    --------
    >>> X = np.linspace(0.0, 5.0, 30).reshape(-1, 1)
    >>> y = np.sin(X[:, 0]) + np.random.default_rng(0).normal(0.0, 0.1, 30)
    >>> gp = GaussianProcessLOO(objective="loo", random_state=0).fit(X, y)
    >>> bool(np.abs(gp.predict(X) - np.sin(X[:, 0])).max() < 0.2)
    True
    """

    def __init__(
        self,
        kernel: Any = None,
        *,
        alpha: float = 1e-10,
        objective: str = "evidence",
        optimizer: str | None = "fmin_l_bfgs_b",
        n_restarts: int = 0,
        random_state: Any = None,
    ) -> None:
        self.kernel = kernel
        self.alpha = alpha
        self.objective = objective
        self.optimizer = optimizer
        self.n_restarts = n_restarts
        self.random_state = random_state

    def _check_params(self) -> None:
        """Raise if a constructor parameter is invalid."""
        restarts = self.n_restarts
        checks = [
            ("objective", self.objective in ("evidence", "loo"), "'evidence' or 'loo'", "'loo'"),
            ("optimizer", self.optimizer in _OPTIMIZERS, "'fmin_l_bfgs_b' or None", "None"),
            ("n_restarts", isinstance(restarts, int) and restarts >= 0, "an int >= 0", "5"),
            ("alpha", np.ndim(self.alpha) == 0 and self.alpha >= 0, "a float >= 0", "1e-10"),
        ]  # fmt: skip
        for name, ok, expected, example in checks:
            if not ok:
                raise ValueError(
                    f"{name} must be {expected}; got {getattr(self, name)!r}. "
                    f"Pass e.g. {name}={example}."
                )

    def _train_covariance(self, kernel: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Return ``K + alpha I`` on the training data and ``dK/dtheta``."""
        K, grad = kernel(self.X_train_, eval_gradient=True)
        K[np.diag_indices_from(K)] += self.alpha
        return K, grad

    def _evaluate(self, theta: NDArray[np.float64], objective: str) -> ObjectiveValue:
        """Return an objective at ``theta`` (raises LinAlgError)."""
        K, grad = self._train_covariance(self.kernel_.clone_with_theta(theta))
        function = _lml if objective == "evidence" else _loo
        return function(cho_factor(K, lower=True), self.y_train_, grad)

    def _negative(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """Return the negated objective for minimisation (inf where K is singular)."""
        try:
            result = self._evaluate(theta, self.objective)
        except np.linalg.LinAlgError:
            return math.inf, np.zeros_like(theta)
        return -result.value, -result.gradient

    def _optimize(self) -> NDArray[np.float64]:
        """Return the best ``theta`` over the initial and random starts."""
        bounds = self.kernel_.bounds
        rng = check_random_state(self.random_state)
        starts = [self.kernel_.theta]
        starts += [rng.uniform(bounds[:, 0], bounds[:, 1]) for _ in range(self.n_restarts)]
        runs = [
            minimize(self._negative, start, jac=True, method="L-BFGS-B", bounds=bounds)
            for start in starts
        ]
        return np.asarray(min(runs, key=lambda run: run.fun).x, dtype=float)

    def fit(self, X: ArrayLike, y: ArrayLike) -> GaussianProcessLOO:
        """Select the kernel hyperparameters and condition on the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Training targets.

        Returns
        -------
        self : GaussianProcessLOO
            The fitted estimator.

        Raises
        ------
        ValueError
            If a parameter is invalid or the covariance is singular.
        """
        self._check_params()
        self.X_train_, y_valid = validate_data(self, X, y, y_numeric=True)
        self.y_train_ = np.asarray(y_valid, dtype=float)
        self.kernel_ = clone(_default_kernel() if self.kernel is None else self.kernel)
        if self.optimizer is not None and self.kernel_.n_dims > 0:
            self.kernel_.theta = self._optimize()
        factor = _with_factor(self._train_covariance(self.kernel_)[0])
        self.L_ = factor[0]
        self.alpha_ = cho_solve(factor, self.y_train_)
        no_gradient = np.zeros((len(self.y_train_),) * 2 + (0,))
        self.log_marginal_likelihood_value_ = _lml(factor, self.y_train_, no_gradient).value
        self.loo_ = _loo_moments(factor, self.y_train_)
        self.loo_log_predictive_value_ = float(np.sum(self.loo_.log_predictive))
        return self

    def log_marginal_likelihood(self, theta: ArrayLike | None = None) -> ObjectiveValue:
        """Evaluate the log marginal likelihood on the training data.

        Parameters
        ----------
        theta : array-like of shape (n_hyperparameters,), default=None
            Log-transformed hyperparameters; None uses ``kernel_.theta``.

        Returns
        -------
        ObjectiveValue
            Value and gradient with respect to ``theta``.
        """
        check_is_fitted(self, "alpha_")
        point = self.kernel_.theta if theta is None else np.asarray(theta, float)
        return self._evaluate(point, "evidence")

    def loo_log_predictive(self, theta: ArrayLike | None = None) -> ObjectiveValue:
        """Evaluate the closed-form LOO log predictive probability.

        Parameters
        ----------
        theta : array-like of shape (n_hyperparameters,), default=None
            Log-transformed hyperparameters; None uses ``kernel_.theta``.

        Returns
        -------
        ObjectiveValue
            Value and gradient with respect to ``theta``.
        """
        check_is_fitted(self, "alpha_")
        point = self.kernel_.theta if theta is None else np.asarray(theta, float)
        return self._evaluate(point, "loo")

    def predict(
        self, X: ArrayLike, return_std: bool = False
    ) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Predict with the posterior mean, optionally with predictive std.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the standard deviation as ``GaussianProcessRegressor`` does: from
            ``kernel_.diag``, so ``WhiteKernel`` noise is included and ``alpha`` is not.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            Posterior mean.
        std : ndarray of shape (n_samples,)
            Predictive standard deviation; only when ``return_std=True``.
        """
        check_is_fitted(self, "alpha_")
        X_valid = validate_data(self, X, reset=False)
        cross = self.kernel_(X_valid, self.X_train_)
        mean = cross @ self.alpha_
        if not return_std:
            return np.asarray(mean, dtype=float)
        v = solve_triangular(self.L_, cross.T, lower=True)
        variance = self.kernel_.diag(X_valid) - np.sum(v**2, axis=0)
        return mean, np.sqrt(np.maximum(variance, 0.0))
