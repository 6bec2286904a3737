"""Information criteria and generalisation bounds for fitted estimators (smaller is better).

With ``M_p`` parameters and ``N`` samples: AIC ``= -2 log L + 2 M_p``, BIC ``= -2 log L + M_p
log N``, Mallows' Cp ``= (N + M_p) / (N - M_p) * MSE_train``, and the VC bound ``error_train +
sqrt((d_VC (log(2N / d_VC) + 1) - log(eta / 4)) / N)`` on the misclassification rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline

__all__ = [
    "CriteriaResult",
    "compute_aic",
    "compute_bic",
    "compute_criteria",
    "compute_mallows_cp",
    "compute_vc_bound",
    "count_params",
]

_CRITERIA = ("aic", "bic", "cp", "vc")
_TASKS = ("regression", "classification")


@dataclass(frozen=True, slots=True)
class CriteriaResult:
    """Criteria of one fitted estimator on one data set.

    Attributes
    ----------
    task : {"regression", "classification"}
        Likelihood used: Gaussian noise or the predicted class probabilities.
    n_samples, n_params : int
        Number of samples ``N`` and of free parameters ``M_p``.
    log_likelihood : float
        Maximised log-likelihood ``log L`` of the training data.
    training_error : float
        Training mean squared error (regression) or misclassification rate (classification).
    aic, bic, cp, vc : float or None
        The requested criteria; ``None`` for those not requested.

    Examples
    --------
    >>> CriteriaResult("regression", 10, 2, -5.0, 0.5, aic=14.0).to_dict()["aic"]
    14.0
    """

    task: str
    n_samples: int
    n_params: int
    log_likelihood: float
    training_error: float
    aic: float | None = None
    bic: float | None = None
    cp: float | None = None
    vc: float | None = None

    def to_dict(self) -> dict[str, float | int | str | None]:
        """Return the fields as a plain dictionary.

        Returns
        -------
        dict
            Field name to value; criteria not requested map to ``None``.
        """
        return asdict(self)


def _invalid(
    name: str, expected: str, value: object, fix: str, error: type[Exception] = ValueError
) -> Exception:
    """Build an error naming the parameter, the expectation, the value and the fix."""
    return error(f"{name} must be {expected}; got {value!r}. {fix}")


def _check_count(value: object, name: str, minimum: int) -> int:
    """Return ``value`` as an int >= ``minimum`` or raise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _invalid(name, "an int", value, f"Pass a whole number such as {minimum}.", TypeError)
    if value < minimum:
        raise _invalid(name, f"an int >= {minimum}", value, f"Pass at least {minimum}.")
    return int(value)


def compute_aic(log_likelihood: float, n_params: int) -> float:
    """Compute Akaike's information criterion ``-2 log L + 2 M_p``.

    Parameters
    ----------
    log_likelihood : float
        Maximised log-likelihood ``log L`` of the training data.
    n_params : int
        Number of free parameters ``M_p``.

    Returns
    -------
    float
        The AIC; smaller is better.

    Raises
    ------
    TypeError, ValueError
        If ``n_params`` is not an int >= 0.

    Examples
    --------
    >>> compute_aic(-10.0, 3)
    26.0
    """
    return -2.0 * float(log_likelihood) + 2.0 * _check_count(n_params, "n_params", 0)


def compute_bic(log_likelihood: float, n_params: int, n_samples: int) -> float:
    """Compute the Bayesian information criterion ``-2 log L + M_p log N``.

    Parameters
    ----------
    log_likelihood : float
        Maximised log-likelihood ``log L`` of the training data.
    n_params : int
        Number of free parameters ``M_p``.
    n_samples : int
        Number of training samples ``N``.

    Returns
    -------
    float
        The BIC; smaller is better.

    Raises
    ------
    TypeError, ValueError
        If ``n_params`` is not an int >= 0 or ``n_samples`` not an int >= 1.

    Examples
    --------
    >>> round(compute_bic(-10.0, 3, 100), 4)
    33.8155
    """
    n_params = _check_count(n_params, "n_params", 0)
    n_samples = _check_count(n_samples, "n_samples", 1)
    return -2.0 * float(log_likelihood) + n_params * math.log(n_samples)


def compute_mallows_cp(training_mse: float, n_params: int, n_samples: int) -> float:
    """Compute Mallows' Cp ``(N + M_p) / (N - M_p) * training_mse``.

    Parameters
    ----------
    training_mse : float
        Mean squared error of the fitted model on its training data.
    n_params : int
        Number of free parameters ``M_p``; must be below ``n_samples``.
    n_samples : int
        Number of training samples ``N``.

    Returns
    -------
    float
        Estimate of the expected squared test error; smaller is better.

    Raises
    ------
    TypeError, ValueError
        If a count is not an int, ``training_mse < 0`` or ``n_params >= n_samples``.

    Examples
    --------
    >>> compute_mallows_cp(2.0, 2, 8)
    3.3333333333333335
    """
    n_params = _check_count(n_params, "n_params", 0)
    n_samples = _check_count(n_samples, "n_samples", 1)
    if not training_mse >= 0.0:
        raise _invalid("training_mse", "a float >= 0", training_mse, "Pass the training MSE.")
    if n_params >= n_samples:
        fix = "Use more samples or a smaller model."
        raise _invalid("n_params", f"below n_samples={n_samples} for Cp", n_params, fix)
    return (n_samples + n_params) / (n_samples - n_params) * float(training_mse)


def compute_vc_bound(
    training_error: float, vc_dimension: int, n_samples: int, *, eta: float = 0.05
) -> float:
    """Compute the VC bound ``training_error + epsilon`` on the test misclassification rate.

    With probability at least ``1 - eta`` over training sets the test error is at most the result,
    where ``epsilon = sqrt((d_VC (log(2N / d_VC) + 1) - log(eta / 4)) / N)``.

    Parameters
    ----------
    training_error : float
        Misclassification rate on the training data, in [0, 1].
    vc_dimension : int
        VC dimension ``d_VC`` of the model class (``M_p`` for linear classifiers).
    n_samples : int
        Number of training samples ``N``.
    eta : float, default=0.05
        Allowed failure probability, in (0, 1).

    Returns
    -------
    float
        Upper bound on the test misclassification rate; smaller is better.

    Raises
    ------
    TypeError, ValueError
        If a count is not an int >= 1 or a rate is out of range.

    Examples
    --------
    >>> round(compute_vc_bound(0.1, 3, 1000), 4)
    0.264
    """
    vc_dimension = _check_count(vc_dimension, "vc_dimension", 1)
    n_samples = _check_count(n_samples, "n_samples", 1)
    if not 0.0 <= training_error <= 1.0:
        fix = "Pass the training misclassification rate."
        raise _invalid("training_error", "a rate in [0, 1]", training_error, fix)
    if not 0.0 < eta < 1.0:
        raise _invalid("eta", "a probability in (0, 1)", eta, "Use e.g. eta=0.05.")
    capacity = vc_dimension * (math.log(2.0 * n_samples / vc_dimension) + 1.0)
    return float(training_error) + math.sqrt((capacity - math.log(eta / 4.0)) / n_samples)


def count_params(estimator: Any) -> int:
    """Count the free parameters of a fitted linear model or pipeline ending in one.

    The count is the number of non-zero ``coef_`` entries (``|c| > machine epsilon``, the rule
    of ``LassoLarsIC``) plus ``intercept_.size`` when ``fit_intercept`` is true.  A pipeline
    counts its final step, so ``PolynomialFeatures(d)`` then ``LinearRegression()`` gives
    ``d + 1`` on one feature.  The noise variance is not counted, as in statsmodels' ``OLS.aic``.

    Parameters
    ----------
    estimator : estimator object
        Fitted estimator with ``coef_``, or a :class:`~sklearn.pipeline.Pipeline` ending in one.

    Returns
    -------
    int
        Number of free parameters ``M_p``.

    Raises
    ------
    ValueError
        If the estimator has no ``coef_``; pass ``n_params=`` to :func:`compute_criteria`.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.arange(12.0).reshape(6, 2) ** 2
    >>> count_params(LinearRegression().fit(X, X @ [1.0, -1.0] + 1.0))
    3
    """
    model = estimator[-1] if isinstance(estimator, Pipeline) else estimator
    coef = getattr(model, "coef_", None)
    if coef is None:
        expected = "a fitted linear model (with coef_) or a pipeline ending in one"
        fix = "Pass the count explicitly, e.g. compute_criteria(estimator, X, y, n_params=10)."
        raise _invalid("estimator", f"{expected} to infer n_params", estimator, fix)
    abs_coef = np.abs(np.asarray(coef, dtype=float))
    n_params = int(np.count_nonzero(abs_coef > np.finfo(float).eps))
    if getattr(model, "fit_intercept", False):
        n_params += int(np.size(getattr(model, "intercept_", 0.0)))
    return n_params


def _regression_fit(
    estimator: Any, X: ArrayLike, y: NDArray[np.float64], noise_variance: float | None
) -> tuple[float, float]:
    """Return the Gaussian log-likelihood and the mean squared error."""
    residuals = y - np.asarray(estimator.predict(X), dtype=float).reshape(y.shape)
    mse = float(np.mean(residuals**2))
    variance = mse if noise_variance is None else float(noise_variance)
    if not variance > 0.0:
        fix = "The fit interpolates the data; pass a positive noise_variance."
        raise _invalid("noise_variance", "a float > 0", variance, fix)
    log_likelihood = -0.5 * y.shape[0] * (math.log(2.0 * math.pi * variance) + mse / variance)
    return log_likelihood, mse


def _classification_fit(estimator: Any, X: ArrayLike, y: NDArray[Any]) -> tuple[float, float]:
    """Return the log-likelihood of the labels and the misclassification rate."""
    if not hasattr(estimator, "predict_proba"):
        fix = "Use a probabilistic classifier (e.g. SVC(probability=True)) or task='regression'."
        raise _invalid("estimator", "a classifier with predict_proba", estimator, fix, TypeError)
    classes = np.asarray(estimator.classes_)
    if not np.all(np.isin(y, classes)):
        expected = f"labels seen in fit {classes.tolist()!r}"
        unseen = np.setdiff1d(y, classes).tolist()
        raise _invalid("y", expected, unseen, "Use the labels the estimator was fitted on.")
    columns = np.searchsorted(classes, y)
    proba = np.asarray(estimator.predict_proba(X), dtype=float)
    # Clip so that a confident mistake costs a large finite amount, not -inf.
    picked = np.clip(proba[np.arange(y.shape[0]), columns], np.finfo(float).tiny, 1.0)
    error = float(np.mean(np.asarray(estimator.predict(X)) != y))
    return float(np.sum(np.log(picked))), error


def compute_criteria(
    estimator: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    criteria: str | Sequence[str] = ("aic", "bic", "cp"),
    n_params: int | None = None,
    task: str | None = None,
    noise_variance: float | None = None,
    eta: float = 0.05,
) -> CriteriaResult:
    """Compute information criteria of a fitted estimator on its training data.

    Regression uses Gaussian noise with the maximum-likelihood variance ``RSS / N`` (or
    ``noise_variance``), not counted as a parameter, as in statsmodels' ``OLS.aic``.
    Classification uses ``log L = sum_i log p(y_i | x_i)`` from ``predict_proba``.

    Parameters
    ----------
    estimator : estimator object
        Estimator already fitted on ``X, y``.
    X : array-like of shape (n_samples, n_features)
        Training inputs.
    y : array-like of shape (n_samples,)
        Training targets or labels.
    criteria : str or sequence of str, default=("aic", "bic", "cp")
        Any of ``"aic"``, ``"bic"``, ``"cp"`` (regression only) and ``"vc"`` (classification
        only, with ``d_VC = n_params``).
    n_params : int, default=None
        Number of free parameters; None infers it with :func:`count_params`.
    task : {"regression", "classification"}, default=None
        Likelihood to use; None infers it with ``sklearn.base.is_classifier``.
    noise_variance : float, default=None
        Known Gaussian noise variance to use instead of the MLE (regression only).
    eta : float, default=0.05
        Failure probability of the VC bound.

    Returns
    -------
    CriteriaResult
        The requested criteria and the quantities they were built from.

    Raises
    ------
    TypeError, ValueError
        If a classifier lacks ``predict_proba``, an argument is invalid, a criterion does not
        apply to the task, or ``n_params`` cannot be inferred.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.linspace(0.0, 1.0, 20).reshape(-1, 1)
    >>> y = 2.0 * X[:, 0] + np.sin(20.0 * X[:, 0])
    >>> result = compute_criteria(LinearRegression().fit(X, y), X, y)
    >>> result.n_params, round(result.aic - result.bic, 4)
    (2, -1.9915)
    """
    names = (criteria,) if isinstance(criteria, str) else tuple(criteria)
    if not names or any(name not in _CRITERIA for name in names):
        expected = f"a non-empty subset of {_CRITERIA}"
        raise _invalid("criteria", expected, criteria, "Pass e.g. criteria=('aic', 'bic').")
    if task is None:
        task = "classification" if is_classifier(estimator) else "regression"
    if task not in _TASKS:
        raise _invalid("task", f"one of {_TASKS} or None", task, "Use None to infer it.")
    y_array = np.asarray(y)
    if y_array.ndim != 1:
        fix = "Compute criteria for one target at a time."
        raise _invalid("y", "1-D of shape (n_samples,)", y_array.shape, fix)
    count = _check_count(count_params(estimator) if n_params is None else n_params, "n_params", 0)
    bad = {"regression": "vc", "classification": "cp"}[task]
    if bad in names:
        fix = "Use 'cp' for regression and 'vc' for classification."
        raise _invalid("criteria", f"free of {bad!r} for task={task!r}", criteria, fix)
    if task == "classification" and noise_variance is not None:
        raise _invalid("noise_variance", "None for classification", noise_variance, "Drop it.")
    if task == "regression":
        log_l, error = _regression_fit(estimator, X, y_array.astype(float), noise_variance)
    else:
        log_l, error = _classification_fit(estimator, X, y_array)
    n = int(y_array.shape[0])
    values = {
        "aic": compute_aic(log_l, count),
        "bic": compute_bic(log_l, count, n),
        "cp": compute_mallows_cp(error, count, n) if "cp" in names else None,
        "vc": compute_vc_bound(error, count, n, eta=eta) if "vc" in names else None,
    }
    return CriteriaResult(task, n, count, log_l, error, **{k: values[k] for k in names})
