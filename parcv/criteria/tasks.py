"""Criteria as tasks: what to compute for each fitted candidate, checked up front.

A ``criteria`` unit fits one candidate once on the outer-train part (or on
all data) and computes the requested analytic criteria (AIC, BIC, Mallows'
Cp, the VC bound; :mod:`parcv.criteria`) and/or the log evidence of a
Bayesian model (``log_evidence_`` of :class:`~parcv.bayes.BayesianLinearRegression`,
``log_marginal_likelihood_value_`` of a Gaussian process).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline

from parcv.criteria.information import compute_criteria, count_params
from parcv.errors import ParcvError, did_you_mean

__all__ = [
    "CRITERIA",
    "CriteriaRequest",
    "CriteriaUndefinedError",
    "check_criteria",
    "evaluate_criteria",
]

CRITERIA = ("aic", "bic", "cp", "vc", "evidence")
# Attributes a fitted Bayesian model exposes its log evidence under.
_EVIDENCE_ATTRIBUTES = ("log_evidence_", "log_marginal_likelihood_value_")


class CriteriaUndefinedError(ParcvError, ValueError):
    """A requested criterion is undefined for an estimator; the message says how to fix it.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> try:
    ...     check_criteria(["evidence"], Ridge())
    ... except CriteriaUndefinedError as err:
    ...     print(str(err)[:44])
    criterion 'evidence' is undefined for Ridge:
    """


@dataclass(frozen=True, slots=True)
class CriteriaRequest:
    """Which criteria to compute for every candidate, and how.

    Parameters
    ----------
    names : tuple of str
        Any of ``"aic"``, ``"bic"``, ``"cp"`` (regression), ``"vc"``
        (classification) and ``"evidence"`` (smaller is better for all but
        the evidence, a log marginal likelihood: larger is better).
    n_params : int or callable, default=None
        Free parameters ``M_p``: an int for every candidate, or
        ``callable(fitted_estimator) -> int``; None counts the non-zero
        ``coef_`` entries (:func:`parcv.criteria.count_params`).
    noise_variance : float, default=None
        Known Gaussian noise variance (regression) instead of ``RSS / N``.

    Examples
    --------
    >>> CriteriaRequest(("bic",), n_params=lambda est: est.degree + 1).names
    ('bic',)
    """

    names: tuple[str, ...]
    n_params: int | Callable[[Any], int] | None = None
    noise_variance: float | None = None

    def __post_init__(self) -> None:
        names = self.names
        if isinstance(names, str) or not names or any(n not in CRITERIA for n in names):
            unknown = [n for n in names if n not in CRITERIA] if not isinstance(names, str) else []
            did = did_you_mean(unknown[0], CRITERIA) + " " if unknown else ""
            raise ValueError(
                f"criteria must be a non-empty list of names from {list(CRITERIA)}; got "
                f"{names!r}. {did.lstrip()}Pass e.g. criteria=['aic', 'bic', 'evidence']."
            )
        if len(set(names)) != len(names):
            raise ValueError(f"criteria names a criterion twice: {names!r}. Name each once.")
        count = self.n_params
        valid_int = isinstance(count, numbers.Integral) and not isinstance(count, bool)
        if count is not None and not callable(count) and not (valid_int and int(count) >= 0):
            raise TypeError(
                f"n_params must be an int >= 0, a callable(fitted_estimator) -> int or None; "
                f"got {count!r}. Pass e.g. n_params=lambda est: est.degree + 1."
            )


def _final_step(estimator: Any) -> Any:
    return estimator[-1] if isinstance(estimator, Pipeline) else estimator


def _check_evidence(estimator: Any) -> None:
    from sklearn.gaussian_process import GaussianProcessRegressor

    from parcv.criteria.bayes import BayesianLinearRegression
    from parcv.criteria.gp import GaussianProcessLOO

    model = _final_step(estimator)
    known = (BayesianLinearRegression, GaussianProcessRegressor, GaussianProcessLOO)
    if not isinstance(model, known) and not hasattr(model, "log_marginal_likelihood"):
        raise CriteriaUndefinedError(
            f"criterion 'evidence' is undefined for {type(model).__name__}: it has no "
            "marginal likelihood (log_evidence_ or log_marginal_likelihood_value_ after "
            "fit). Use parcv.bayes.BayesianLinearRegression or a GaussianProcessRegressor, "
            "or drop 'evidence' from criteria."
        )


def check_criteria(criteria: Any, estimator: Any) -> CriteriaRequest | None:
    """Normalise ``criteria`` and check it suits the estimator before any fit.

    Parameters
    ----------
    criteria : None, sequence of str or CriteriaRequest
    estimator : estimator object

    Returns
    -------
    CriteriaRequest or None

    Raises
    ------
    ValueError, TypeError
        Unknown names, ``"cp"`` for a classifier, ``"vc"`` for a regressor,
        or ``"evidence"`` for an estimator without a marginal likelihood.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> check_criteria(["aic", "bic"], LinearRegression()).names
    ('aic', 'bic')
    """
    if criteria is None:
        return None
    if isinstance(criteria, CriteriaRequest):
        request = criteria
    elif isinstance(criteria, Sequence) and not isinstance(criteria, str):
        request = CriteriaRequest(tuple(criteria))
    else:
        raise TypeError(
            f"criteria must be a list of names from {list(CRITERIA)} or a "
            f"CriteriaRequest; got {criteria!r}. Pass e.g. criteria=['bic']."
        )
    wrong = "cp" if is_classifier(estimator) else "vc"
    if wrong in request.names:
        task = "a classifier" if wrong == "cp" else "a regressor"
        raise CriteriaUndefinedError(
            f"criterion {wrong!r} is undefined for {task} ({type(estimator).__name__}): "
            "use 'cp' for regression and 'vc' for classification."
        )
    if "evidence" in request.names:
        _check_evidence(estimator)
    return request


def _resolve_count(request: CriteriaRequest, estimator: Any) -> int:
    if request.n_params is None:
        return count_params(estimator)
    if callable(request.n_params):
        return int(request.n_params(estimator))
    return int(request.n_params)


def _evidence(estimator: Any) -> float:
    model = _final_step(estimator)
    for name in _EVIDENCE_ATTRIBUTES:
        if hasattr(model, name):
            return float(getattr(model, name))
    raise CriteriaUndefinedError(
        f"criterion 'evidence' is undefined for {type(model).__name__}: after fit it has none "
        f"of {list(_EVIDENCE_ATTRIBUTES)}. Drop 'evidence' from criteria."
    )


def evaluate_criteria(estimator: Any, X: Any, y: Any, request: CriteriaRequest) -> dict[str, float]:
    """Compute the requested criteria of an estimator fitted on ``(X, y)``.

    Parameters
    ----------
    estimator : estimator object
        Fitted on ``X, y``.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    request : CriteriaRequest

    Returns
    -------
    dict of str to float
        Each requested criterion, plus ``n_params``, ``log_likelihood`` and
        ``training_error`` when an analytic criterion was asked for (and
        ``n_params`` whenever it can be counted).

    Raises
    ------
    CriteriaUndefinedError
        The criterion is undefined for this estimator; the message says how
        to pass ``n_params`` or which criterion to drop.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.linspace(0.0, 1.0, 10).reshape(-1, 1)
    >>> y = X[:, 0] + np.sin(9.0 * X[:, 0])
    >>> values = evaluate_criteria(LinearRegression().fit(X, y), X, y, CriteriaRequest(("bic",)))
    >>> sorted(values)
    ['bic', 'log_likelihood', 'n_params', 'training_error']
    """
    values: dict[str, float] = {}
    classical = tuple(n for n in request.names if n != "evidence")
    try:
        count = _resolve_count(request, estimator)
    except (ValueError, TypeError) as err:
        if classical:
            raise CriteriaUndefinedError(
                f"criteria {list(classical)} need the number of free parameters of "
                f"{type(_final_step(estimator)).__name__}: {err} In search/nested_cv pass "
                f"criteria=CriteriaRequest({classical!r}, n_params=<int or "
                "callable(fitted estimator) -> int>) from parcv.criteria.tasks."
            ) from err
        count = None
    if count is not None:
        values["n_params"] = float(count)
    if classical:
        try:
            result = compute_criteria(
                estimator, X, y, criteria=classical, n_params=count,
                noise_variance=request.noise_variance,
            )  # fmt: skip
        except (ValueError, TypeError) as err:
            raise CriteriaUndefinedError(
                f"criteria {list(classical)} are undefined here: {err}"
            ) from err
        values.update(log_likelihood=result.log_likelihood, training_error=result.training_error)
        values.update({name: float(getattr(result, name)) for name in classical})
    if "evidence" in request.names:
        values["evidence"] = _evidence(estimator)
    return values
