"""Bayesian linear regression with evidence-based model selection.

The model is ``w ~ N(0, tau2 I)``, ``y | X, w ~ N(Phi w, sigma2 I)`` for a design matrix ``Phi``
of basis functions, so the evidence is ``y ~ N(0, A)`` with ``A = sigma2 I + tau2 Phi Phi^T``:
``log p(y) = -n/2 log 2 pi - 1/2 log|A| - 1/2 y^T A^-1 y``, with gradient
``1/2 tr((A^-1 y y^T A^-1 - A^-1) dA)``.  Solves use Cholesky factors, never explicit inverses.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.preprocessing import PolynomialFeatures
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = [
    "BayesianLinearRegression",
    "log_evidence",
    "log_evidence_gradient",
    "model_posterior",
]


def _check_variance(value: object, name: str) -> float:
    """Return ``value`` as a float > 0 or raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} must be a float; got {value!r}. Pass a number such as 1.0.")
    if not float(value) > 0.0:
        raise ValueError(f"{name} must be a float > 0; got {value!r}. Pass e.g. 1.0.")
    return float(value)


def _evidence_terms(
    X: NDArray[np.float64], y: NDArray[np.float64], sigma2: float, tau2: float
) -> tuple[float, NDArray[np.float64]]:
    """Return the log evidence and its gradient in (sigma2, tau2)."""
    n_samples = X.shape[0]
    gram = X @ X.T
    cov = tau2 * gram
    cov[np.diag_indices_from(cov)] += sigma2
    factor = cho_factor(cov, lower=True)
    weights = cho_solve(factor, y)
    log_det = 2.0 * float(np.sum(np.log(np.diag(factor[0]))))
    value = -0.5 * (n_samples * math.log(2.0 * math.pi) + log_det + y @ weights)
    # tr(A^-1 Phi Phi^T) = ||L^-1 Phi||_F^2, and tr(A^-1) follows from
    # sigma2 A^-1 + tau2 A^-1 Phi Phi^T = I, so A^-1 is never formed.
    whitened = solve_triangular(factor[0], X, lower=True)
    trace_gram = float(np.sum(whitened**2))
    trace_inverse = (n_samples - tau2 * trace_gram) / sigma2
    projected = X.T @ weights
    gradient = [weights @ weights - trace_inverse, projected @ projected - trace_gram]
    return float(value), 0.5 * np.array(gradient)


def _weight_space_evidence(
    factor: tuple[NDArray[np.float64], bool],
    X: NDArray[np.float64],
    y: NDArray[np.float64],
    sigma2: float,
    tau2: float,
) -> float:
    """Return the log evidence from the Cholesky factor of ``X^T X + sigma2/tau2 I``."""
    # Determinant lemma and Woodbury: O(n p^2) instead of O(n^3) in sample space.
    n_samples, n_basis = X.shape
    log_det = n_samples * math.log(sigma2) + n_basis * math.log(tau2 / sigma2)
    log_det += 2.0 * float(np.sum(np.log(np.diag(factor[0]))))
    projected = X.T @ y
    quadratic = float(y @ y - projected @ cho_solve(factor, projected)) / sigma2
    return float(-0.5 * (n_samples * math.log(2.0 * math.pi) + log_det + quadratic))


def _check_design(
    X: ArrayLike, y: ArrayLike, sigma2: float, tau2: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, float]:
    """Return ``X`` (2-D), ``y`` (1-D) and both variances, validated."""
    X_array = np.asarray(X, dtype=float)
    y_array = np.asarray(y, dtype=float)
    if X_array.ndim != 2 or y_array.ndim != 1 or len(X_array) != len(y_array):
        raise ValueError(
            "X must be 2-D of shape (n_samples, n_features) and y 1-D of shape (n_samples,); "
            f"got shapes {X_array.shape!r} and {y_array.shape!r}. Reshape the inputs, e.g. "
            "X.reshape(-1, 1) for one feature."
        )
    return X_array, y_array, _check_variance(sigma2, "sigma2"), _check_variance(tau2, "tau2")


def log_evidence(X: ArrayLike, y: ArrayLike, sigma2: float, tau2: float) -> float:
    """Compute the log evidence of Bayesian linear regression.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_basis)
        Design matrix ``Phi`` (inputs already expanded in basis functions).
    y : array-like of shape (n_samples,)
        Targets.
    sigma2 : float
        Noise variance, > 0.
    tau2 : float
        Prior variance of each weight, > 0.

    Returns
    -------
    float
        ``log N(y | 0, sigma2 I + tau2 Phi Phi^T)``.

    Raises
    ------
    TypeError, ValueError
        If a variance is not a positive number or the shapes do not match.

    See Also
    --------
    log_evidence_gradient : Its derivative in ``(sigma2, tau2)``.

    Examples
    --------
    >>> round(log_evidence([[1.0], [0.0]], [0.0, 0.0], 1.0, 1.0), 6)
    -2.184451
    """
    return _evidence_terms(*_check_design(X, y, sigma2, tau2))[0]


def log_evidence_gradient(
    X: ArrayLike, y: ArrayLike, sigma2: float, tau2: float
) -> NDArray[np.float64]:
    """Compute the gradient of the log evidence in ``(sigma2, tau2)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_basis)
        Design matrix ``Phi``.
    y : array-like of shape (n_samples,)
        Targets.
    sigma2 : float
        Noise variance, > 0.
    tau2 : float
        Prior variance of each weight, > 0.

    Returns
    -------
    ndarray of shape (2,)
        ``[d/d sigma2, d/d tau2]`` of :func:`log_evidence`: ``1/2 tr(A^-1 y y^T A^-1 - A^-1)``
        and the same traced with ``Phi Phi^T``.

    Raises
    ------
    TypeError, ValueError
        If a variance is not a positive number or the shapes do not match.

    Examples
    --------
    >>> log_evidence_gradient([[1.0], [0.0]], [0.0, 0.0], 1.0, 1.0)
    array([-0.75, -0.25])
    """
    return _evidence_terms(*_check_design(X, y, sigma2, tau2))[1]


def model_posterior(
    log_evidences: ArrayLike, prior: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Compute posterior model probabilities ``p(H | D)`` from log evidences.

    Parameters
    ----------
    log_evidences : array-like of shape (n_models,)
        Log evidence ``log p(D | H)`` of each model.
    prior : array-like of shape (n_models,), default=None
        Non-negative prior weights ``p(H)``, normalised to sum to one; uniform if None.

    Returns
    -------
    ndarray of shape (n_models,)
        ``p(H | D) = p(D | H) p(H) / sum_H' p(D | H') p(H')``, computed with ``logsumexp``.

    Raises
    ------
    ValueError
        If the inputs are empty, contain NaN or mismatch, or the prior is invalid.

    Examples
    --------
    >>> model_posterior([-1000.0, -1000.0 + np.log(3.0)])
    array([0.25, 0.75])
    """
    log_ev = np.asarray(log_evidences, dtype=float)
    if log_ev.ndim != 1 or log_ev.size == 0 or np.isnan(log_ev).any():
        raise ValueError(
            f"log_evidences must be a non-empty 1-D array without NaN; got {log_evidences!r}. "
            "Pass one log evidence per model."
        )
    weights = np.ones_like(log_ev) if prior is None else np.asarray(prior, float)
    if weights.shape != log_ev.shape or not np.all(weights >= 0) or weights.sum() <= 0:
        raise ValueError(
            f"prior must be {log_ev.size} non-negative weights with a positive sum; got "
            f"{prior!r}. Pass one prior probability per model."
        )
    with np.errstate(divide="ignore"):
        log_joint = log_ev + np.log(weights / weights.sum())
    if np.all(log_joint == -np.inf):
        raise ValueError(
            f"log_evidences must not all be -inf under the prior; got {log_evidences!r}. "
            "At least one model must explain the data."
        )
    return np.asarray(np.exp(log_joint - logsumexp(log_joint)), dtype=float)


class BayesianLinearRegression(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Bayesian linear regression with a Gaussian prior and Gaussian noise.

    Parameters
    ----------
    degree : int, default=None
        Polynomial basis ``[1, x, ..., x^degree]`` (all monomials up to that total degree for
        several features); None uses ``X`` itself as the design matrix.
    sigma2 : float, default=1.0
        Noise variance, or its starting value when ``optimize=True``.
    tau2 : float, default=1.0
        Prior variance of each weight, or its starting value when ``optimize=True``.
    optimize : bool, default=True
        Set ``sigma2`` and ``tau2`` by type-II maximum likelihood (maximising
        :func:`log_evidence` with L-BFGS-B over log-variances; O(n^3) per evaluation).

    Attributes
    ----------
    sigma2_, tau2_ : float
        Variances used for the posterior.
    coef_ : ndarray of shape (n_basis,)
        Posterior mean ``(Phi^T Phi + sigma2/tau2 I)^-1 Phi^T y``.
    coef_cov_ : ndarray of shape (n_basis, n_basis)
        Posterior covariance ``(Phi^T Phi / sigma2 + I / tau2)^-1``.
    log_evidence_ : float
        Log evidence at ``(sigma2_, tau2_)``.
    n_features_in_ : int
        Number of input features.

    See Also
    --------
    model_posterior : Compare fitted models through ``log_evidence_``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1.0, 1.0, size=(50, 1))
    >>> y = 1.0 - 2.0 * X[:, 0] ** 2 + rng.normal(0.0, 0.1, 50)
    >>> model = BayesianLinearRegression(degree=2).fit(X, y)
    >>> bool(np.allclose(model.coef_, [1.0, 0.0, -2.0], atol=0.1))
    True
    >>> mean, std = model.predict([[0.0]], return_std=True)
    >>> bool(abs(mean[0] - 1.0) < 0.1 and 0.05 < std[0] < 0.2)
    True
    """

    def __init__(
        self,
        degree: int | None = None,
        *,
        sigma2: float = 1.0,
        tau2: float = 1.0,
        optimize: bool = True,
    ) -> None:
        self.degree = degree
        self.sigma2 = sigma2
        self.tau2 = tau2
        self.optimize = optimize

    def design_matrix(self, X: ArrayLike) -> NDArray[np.float64]:
        """Expand inputs in the basis functions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        ndarray of shape (n_samples, n_basis)
            ``Phi``: ``X`` itself, or its polynomial features.

        Raises
        ------
        TypeError, ValueError
            If ``degree`` is not None or an int >= 0.

        Examples
        --------
        >>> BayesianLinearRegression(degree=2).design_matrix([[2.0]])
        array([[1., 2., 4.]])
        """
        X_array = np.asarray(X, dtype=float)
        if self.degree is None:
            return X_array
        if isinstance(self.degree, bool) or not isinstance(self.degree, int):
            raise TypeError(
                f"degree must be an int or None; got {self.degree!r}. Pass e.g. degree=3."
            )
        if self.degree < 0:
            raise ValueError(f"degree must be >= 0; got {self.degree!r}. Pass e.g. degree=3.")
        features = PolynomialFeatures(self.degree).fit_transform(X_array)
        return np.asarray(features, dtype=float)

    def fit(self, X: ArrayLike, y: ArrayLike) -> BayesianLinearRegression:
        """Compute the posterior over weights, optionally tuning the variances.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Training targets.

        Returns
        -------
        self : BayesianLinearRegression
            The fitted estimator.

        Raises
        ------
        TypeError, ValueError
            If a hyperparameter or the data is invalid.
        """
        X_valid, y_valid = validate_data(self, X, y, y_numeric=True)
        design = self.design_matrix(X_valid)
        target = np.asarray(y_valid, dtype=float)
        sigma2 = _check_variance(self.sigma2, "sigma2")
        tau2 = _check_variance(self.tau2, "tau2")
        if self.optimize:
            sigma2, tau2 = maximize_evidence(design, target, sigma2, tau2)
        precision = design.T @ design
        precision[np.diag_indices_from(precision)] += sigma2 / tau2
        try:
            factor = cho_factor(precision, lower=True)
        except np.linalg.LinAlgError as err:
            message = "X must give a well-conditioned design matrix; got a singular posterior "
            raise ValueError(message + "precision. Scale X to [-1, 1] or lower degree.") from err
        self.sigma2_, self.tau2_ = sigma2, tau2
        self.coef_ = cho_solve(factor, design.T @ target)
        self.coef_cov_ = sigma2 * cho_solve(factor, np.eye(design.shape[1]))
        self.log_evidence_ = _weight_space_evidence(factor, design, target, sigma2, tau2)
        return self

    def predict(
        self, X: ArrayLike, return_std: bool = False
    ) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Predict with the posterior mean, optionally with predictive std.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the standard deviation of ``y`` (weight uncertainty plus noise
            ``sigma2_``), as scikit-learn regressors do.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            Predictive mean.
        std : ndarray of shape (n_samples,)
            Predictive standard deviation; only when ``return_std=True``.
        """
        check_is_fitted(self, "coef_")
        design = self.design_matrix(validate_data(self, X, reset=False))
        mean = np.asarray(design @ self.coef_, dtype=float)
        if not return_std:
            return mean
        variance = self.sigma2_ + np.sum((design @ self.coef_cov_) * design, axis=1)
        return mean, np.sqrt(variance)


# Type-II ML searches log-variances within this many decades of mean(y**2).
_LOG_RANGE = 10.0 * math.log(10.0)


def _spectral_objective(
    X: NDArray[np.float64], y: NDArray[np.float64]
) -> Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]]:
    """Negative log evidence and gradient in log-variances, O(rank) per evaluation.

    With ``Phi = U S V^T``, ``A = sigma2 I + tau2 Phi Phi^T`` has eigenvalues
    ``sigma2 + tau2 s_i^2`` on ``U`` and ``sigma2`` elsewhere: one SVD replaces
    an ``n x n`` Cholesky factorisation per evaluation.
    """
    U, s, _ = np.linalg.svd(X, full_matrices=False)
    squares, projected = s**2, U.T @ y
    coeffs = projected**2
    residual = max(float(y @ y - coeffs.sum()), 0.0)
    n_samples, n_outside = len(y), len(y) - len(s)

    def objective(log_params: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        sigma2, tau2 = np.exp(log_params)
        eig = sigma2 + tau2 * squares
        value = -0.5 * (n_samples * math.log(2.0 * math.pi) + np.sum(np.log(eig))
                        + n_outside * math.log(sigma2) + np.sum(coeffs / eig)
                        + residual / sigma2)  # fmt: skip
        d_sigma2 = -np.sum(1.0 / eig) - n_outside / sigma2 + np.sum(coeffs / eig**2)
        d_sigma2 += residual / sigma2**2
        d_tau2 = np.sum(squares * (coeffs / eig**2 - 1.0 / eig))
        gradient = 0.5 * np.array([d_sigma2 * sigma2, d_tau2 * tau2])
        return -float(value), -gradient

    return objective


def maximize_evidence(
    X: NDArray[np.float64], y: NDArray[np.float64], sigma2: float, tau2: float
) -> tuple[float, float]:
    """Maximise the log evidence over ``(sigma2, tau2)`` by L-BFGS-B in log space.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_basis)
        Design matrix ``Phi``.
    y : ndarray of shape (n_samples,)
    sigma2, tau2 : float
        Starting values (> 0).

    Returns
    -------
    sigma2, tau2 : float
        The type-II maximum-likelihood variances.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = X @ [1.0, -1.0] + rng.normal(0.0, 0.5, 200)
    >>> sigma2, tau2 = maximize_evidence(X, y, 1.0, 1.0)
    >>> bool(0.15 < sigma2 < 0.35 and 0.3 < tau2 < 3.0)
    True
    """
    centre = math.log(max(float(np.mean(y**2)), np.finfo(float).tiny))
    bounds = [(centre - _LOG_RANGE, centre + _LOG_RANGE)] * 2
    start = np.clip(np.log([sigma2, tau2]), bounds[0][0], bounds[0][1])
    objective = _spectral_objective(X, y)
    result = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds)
    # Refine once: L-BFGS-B stops on a relative decrease, not a zero gradient.
    result = minimize(
        objective, result.x, jac=True, method="L-BFGS-B", bounds=bounds,
        options={"ftol": 0.0, "gtol": 1e-10},
    )  # fmt: skip
    optimum = np.exp(result.x)
    return float(optimum[0]), float(optimum[1])
