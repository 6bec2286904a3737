"""Exact held-out predictions of linear smoothers for a batch of candidates.

A linear smoother fitted on rows ``R`` predicts ``H y`` there.  When each
fold's train set is the complement of its test set ``T`` and the fit
minimises a penalised squared error whose penalty does not depend on the
rows, the refit without ``T`` predicts ``(I - H_TT)^-1 (yhat_T - H_TT y_T)``
(:mod:`parcv.fastloo`).  Candidates that differ only in their amount of
shrinkage share one decomposition: for ``Ridge``, one SVD of the centred
``X = U S V^T`` gives ``H = 11^T / n + U diag(s^2 / (s^2 + alpha)) U^T``
for every ``alpha`` (the intercept is unpenalised), so leave-one-out of a
whole batch of alphas costs ``O(n d^2)`` once plus ``O(n d)`` per alpha.

This is the one place where parcv is not bit-identical to scikit-learn: the
held-out predictions equal the refits' to rounding (about 1e-12 relative),
computed in a different order. The serial, local and dask backends run the
same arithmetic with one BLAS thread, so they agree with each other bit for
bit. ``fast_cv="auto"`` therefore takes this path only for leave-one-out,
where refitting costs ``n`` fits per candidate; k-fold needs ``fast_cv=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.metrics.pairwise import pairwise_kernels

from parcv.criteria.bayes import BayesianLinearRegression
from parcv.fastcv.loo import compute_hat_matrix, supports_fast_cv

__all__ = ["HeldOut", "Spectral", "batch_candidates", "held_out_predictions", "smoother_problem"]

Matrix = NDArray[np.float64]
Index = NDArray[np.intp]
# Below this, 1 - leverage is rounding noise and the held-out prediction is undefined.
_SINGULAR = 1e-12
_DIRECT_SOLVERS = ("auto", "svd", "cholesky")


@dataclass(frozen=True, slots=True)
class Spectral:
    """Hat matrices ``offset 11^T + V diag(f) V^T`` with ``f = s / (s + penalty)``.

    Parameters
    ----------
    basis : ndarray of shape (n_rows, rank)
        Orthonormal columns ``V``.
    spectrum : ndarray of shape (rank,)
        Squared singular values or kernel eigenvalues ``s``.
    offset : float
        ``1 / n_rows`` with an unpenalised intercept, else 0.

    Examples
    --------
    >>> Spectral(np.eye(2), np.array([3.0, 0.0]), 0.0).shrinkage(np.array([1.0, 0.0]))
    array([[0.75, 0.  ],
           [1.  , 0.  ]])
    """

    basis: Matrix
    spectrum: Matrix
    offset: float

    def shrinkage(self, penalties: Matrix) -> Matrix:
        """Return ``f`` of shape (n_penalties, rank) for each penalty."""
        total = self.spectrum[np.newaxis, :] + penalties[:, np.newaxis]
        out = np.zeros_like(total)
        # A direction with s = 0 and no penalty is outside the column space: f = 0.
        np.divide(self.spectrum[np.newaxis, :], total, out=out, where=total != 0)
        return out


@dataclass(frozen=True, slots=True)
class HeldOut:
    """Held-out predictions of a batch and, per candidate, why they are undefined.

    Parameters
    ----------
    predictions : ndarray of shape (n_rows, n_candidates)
    errors : tuple of str or None
        None where the candidate's predictions are defined.

    Examples
    --------
    >>> HeldOut(np.zeros((3, 1)), (None,)).errors
    (None,)
    """

    predictions: Matrix
    errors: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class _Family:
    """How one estimator class becomes a (shared) decomposition plus a penalty."""

    cls: type
    problem: Callable[[dict[str, Any]], str]
    share_key: Callable[[dict[str, Any]], Hashable]
    decompose: Callable[[dict[str, Any], Matrix], Spectral]
    penalty: Callable[[dict[str, Any]], float]


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _ridge_problem(params: dict[str, Any]) -> str:
    if params["positive"]:
        return "Ridge with positive=True (a constrained fit, not a linear smoother)"
    if params["solver"] not in _DIRECT_SOLVERS:
        return f"Ridge with solver={params['solver']!r} (iterative: matches refits only to tol)"
    if not _is_scalar(params["alpha"]) or not float(params["alpha"]) >= 0:
        return f"Ridge with alpha={params['alpha']!r} (needs one number >= 0)"
    return ""


def _svd(Z: Matrix, offset: float) -> Spectral:
    U, s, _ = np.linalg.svd(Z, full_matrices=False)
    return Spectral(U, s**2, offset)


def _ridge_decompose(params: dict[str, Any], X: Matrix) -> Spectral:
    if params["fit_intercept"]:
        # Centring equals an unpenalised column of ones: H = 11^T / n + H_centred.
        return _svd(X - X.mean(axis=0), 1.0 / len(X))
    return _svd(X, 0.0)


def _kernel_problem(params: dict[str, Any]) -> str:
    if params["kernel"] == "precomputed":
        return "KernelRidge with kernel='precomputed' (rows and columns are both samples)"
    if not _is_scalar(params["alpha"]) or not float(params["alpha"]) > 0:
        return f"KernelRidge with alpha={params['alpha']!r} (needs one number > 0)"
    return ""


def _kernel_decompose(params: dict[str, Any], X: Matrix) -> Spectral:
    if callable(params["kernel"]):
        options = params["kernel_params"] or {}
    else:
        options = {"gamma": params["gamma"], "degree": params["degree"], "coef0": params["coef0"]}
    K = pairwise_kernels(X, metric=params["kernel"], filter_params=True, **options)
    eigenvalues, eigenvectors = np.linalg.eigh(np.asarray(K, dtype=float))
    return Spectral(eigenvectors, eigenvalues, 0.0)


def _bayes_problem(params: dict[str, Any]) -> str:
    if params["optimize"]:
        return "BayesianLinearRegression with optimize=True (sigma2, tau2 re-tuned per fold)"
    for name in ("sigma2", "tau2"):
        if not _is_scalar(params[name]) or not float(params[name]) > 0:
            return f"BayesianLinearRegression with {name}={params[name]!r} (needs a number > 0)"
    return ""


def _bayes_decompose(params: dict[str, Any], X: Matrix) -> Spectral:
    design = BayesianLinearRegression(params["degree"], optimize=False).design_matrix(X)
    return _svd(design, 0.0)


_FAMILIES = (
    _Family(Ridge, _ridge_problem, lambda p: bool(p["fit_intercept"]), _ridge_decompose,
            lambda p: float(p["alpha"])),
    _Family(KernelRidge, _kernel_problem,
            lambda p: repr([p[k] for k in ("kernel", "gamma", "degree", "coef0", "kernel_params")]),
            _kernel_decompose, lambda p: float(p["alpha"])),
    _Family(BayesianLinearRegression, _bayes_problem, lambda p: p["degree"], _bayes_decompose,
            lambda p: float(p["sigma2"]) / float(p["tau2"])),
)  # fmt: skip


def _family_of(estimator: Any) -> _Family | None:
    # Exact types only: a subclass may fit differently.
    return next((f for f in _FAMILIES if type(estimator) is f.cls), None)


def _merged(base: dict[str, Any], params: dict[str, Any]) -> dict[str, Any] | None:
    """The estimator's own parameters with a candidate's on top; None if it sets nested ones."""
    if any(name not in base for name in params):
        return None
    return {**base, **params}


def smoother_problem(estimator: Any, candidate_params: Sequence[dict[str, Any]]) -> str:
    """Return why some candidate is not a linear smoother parcv knows, or ''.

    Parameters
    ----------
    estimator : estimator object
    candidate_params : sequence of dict
        Parameters of every candidate.

    Returns
    -------
    str
        Empty when every configured candidate has exact held-out predictions.

    Examples
    --------
    >>> from sklearn.linear_model import Lasso
    >>> smoother_problem(Ridge(), [{"alpha": 1.0}]), smoother_problem(Lasso(), [{}])
    ('', 'Lasso is not a linear smoother parcv knows')
    """
    family = _family_of(estimator)
    base = estimator.get_params(deep=False)
    for params in candidate_params:
        if family is not None:
            merged = _merged(base, params)
            problem = "nested parameters" if merged is None else family.problem(merged)
        else:
            configured = clone(estimator).set_params(**params)
            problem = (
                ""
                if supports_fast_cv(configured)
                else (f"{type(estimator).__name__} is not a linear smoother parcv knows")
            )
        if problem:
            return problem
    return ""


def batch_candidates(
    estimator: Any, candidate_params: Sequence[dict[str, Any]]
) -> tuple[tuple[int, ...], ...]:
    """Group candidates that share one decomposition, in candidate order.

    Parameters
    ----------
    estimator : estimator object
        Supported by :func:`smoother_problem`.
    candidate_params : sequence of dict

    Returns
    -------
    tuple of tuple of int
        Candidate indices per batch; estimators without a shared
        decomposition get one batch per candidate.

    Examples
    --------
    >>> batch_candidates(Ridge(), [{"alpha": 1.0}, {"fit_intercept": False}, {"alpha": 2.0}])
    ((0, 2), (1,))
    """
    family = _family_of(estimator)
    if family is None:
        return tuple((c,) for c in range(len(candidate_params)))
    groups: dict[Hashable, list[int]] = {}
    base = estimator.get_params(deep=False)
    for c, params in enumerate(candidate_params):
        merged = _merged(base, params)
        groups.setdefault(family.share_key(merged), []).append(c)  # type: ignore[arg-type]
    return tuple(tuple(group) for group in groups.values())


def _loo_from(fitted: Matrix, leverage: Matrix, y: Matrix) -> Matrix:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((fitted - leverage * y[:, np.newaxis]) / (1.0 - leverage))


def _solve_blocks(
    fitted: Matrix, y: Matrix, blocks: Sequence[Index], block_hat: Callable[[Index], Matrix]
) -> tuple[Matrix, bool]:
    """Held-out predictions of one candidate fold by fold; False if a block is singular."""
    out = np.empty_like(fitted)
    for test in blocks:
        block = block_hat(test)
        residual = np.eye(len(test)) - block
        if np.min(np.linalg.svd(residual, compute_uv=False)) < _SINGULAR:
            return out, False
        out[test] = np.linalg.solve(residual, fitted[test] - block @ y[test])
    return out, True


def _spectral_batch(
    spectral: Spectral, penalties: Matrix, y: Matrix, blocks: Sequence[Index] | None
) -> tuple[Matrix, Matrix]:
    """Held-out predictions (n_rows, m) and the smallest ``1 - H_ii`` per candidate."""
    V, shrink = spectral.basis, spectral.shrinkage(penalties)
    fitted = spectral.offset * np.sum(y) + V @ (shrink * (V.T @ y)).T
    leverage = spectral.offset + (V**2) @ shrink.T
    gaps = np.min(1.0 - leverage, axis=0)
    if blocks is None:
        return _loo_from(fitted, leverage, y), gaps
    out = np.empty_like(fitted)
    for j in range(len(penalties)):

        def block_hat(test: Index, j: int = j) -> Matrix:
            return np.asarray(spectral.offset + (V[test] * shrink[j]) @ V[test].T)

        out[:, j], ok = _solve_blocks(fitted[:, j], y, blocks, block_hat)
        gaps[j] = gaps[j] if ok else 0.0
    return out, gaps


def _generic_column(
    estimator: Any, X: Matrix, y: Matrix, blocks: Sequence[Index] | None
) -> tuple[Matrix, float]:
    H = compute_hat_matrix(estimator, X)
    fitted = H @ y
    leverage = np.diag(H)
    if blocks is None:
        return _loo_from(fitted[:, None], leverage[:, None], y)[:, 0], float(np.min(1 - leverage))
    column, ok = _solve_blocks(fitted, y, blocks, lambda t: H[np.ix_(t, t)])
    return column, float(np.min(1 - leverage)) if ok else 0.0


def _singular_message(gap: float) -> str:
    return (
        f"held-out predictions are undefined: a fold's test rows are interpolated "
        f"(smallest 1 - leverage {gap:.3g} < {_SINGULAR:g}). Increase the regularisation, "
        "or pass fast_cv=False to refit per fold."
    )


def held_out_predictions(
    estimator: Any,
    candidate_params: Sequence[dict[str, Any]],
    X: Matrix,
    y: Matrix,
    blocks: Sequence[Index] | None = None,
) -> HeldOut:
    """Compute every candidate's held-out predictions from one decomposition.

    Parameters
    ----------
    estimator : estimator object
        Template; each candidate is ``estimator`` with its parameters set.
    candidate_params : sequence of dict
        One batch from :func:`batch_candidates`.
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)
    blocks : sequence of index arrays, default=None
        Test positions of every fold (a partition of ``range(n_rows)``);
        None is leave-one-out.

    Returns
    -------
    HeldOut
        ``predictions[i, j]``: candidate ``j`` refitted without the fold of
        row ``i``, predicting row ``i``.

    Examples
    --------
    >>> X, y = np.arange(6.0).reshape(-1, 1), np.array([0.0, 1, 1, 3, 4, 6])
    >>> fast = held_out_predictions(Ridge(), [{"alpha": 0.5}], X, y).predictions[:, 0]
    >>> slow = [Ridge(alpha=0.5).fit(np.delete(X, i, 0), np.delete(y, i)).predict(X[i:i + 1])[0]
    ...         for i in range(6)]
    >>> bool(np.allclose(fast, slow, rtol=1e-12))
    True
    """
    family = _family_of(estimator)
    if family is not None:
        base = estimator.get_params(deep=False)
        merged = [_merged(base, p) for p in candidate_params]
        spectral = family.decompose(merged[0], X)  # type: ignore[arg-type]
        penalties = np.array([family.penalty(p) for p in merged])  # type: ignore[arg-type]
        predictions, gaps = _spectral_batch(spectral, penalties, y, blocks)
    else:
        columns = [
            _generic_column(clone(estimator).set_params(**clone(p, safe=False)), X, y, blocks)
            for p in candidate_params
        ]
        predictions = np.column_stack([c for c, _ in columns])
        gaps = np.array([g for _, g in columns])
    errors = tuple(None if g >= _SINGULAR else _singular_message(g) for g in gaps)
    return HeldOut(predictions, errors)
