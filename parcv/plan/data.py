"""The data of one run, checked once at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Dataset", "check_dataset"]


@dataclass(frozen=True, slots=True)
class Dataset:
    """X, y, groups and per-sample fit parameters of one run.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features, as given (arrays, DataFrames and sparse matrices are kept).
    y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Targets.
    groups : ndarray of shape (n_samples,) or None
        Group labels for group splitters.
    fit_params : dict
        Extra ``fit`` arguments; arrays of length n_samples are split with
        the rows, anything else is passed as is.
    """

    X: Any = field(repr=False)
    y: Any = field(repr=False)
    groups: Any = field(default=None, repr=False)
    fit_params: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return len(self.y)


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    if shape is not None:
        if len(shape) == 0:
            raise ValueError(
                f"X must be 2-D array-like of shape (n_samples, n_features); got a scalar {X!r}."
            )
        return int(shape[0])
    try:
        return len(X)
    except TypeError as err:
        raise TypeError(
            f"X must be array-like of shape (n_samples, n_features); got {type(X).__name__}."
        ) from err


def _check_y(y: Any) -> np.ndarray:
    if y is None:
        raise ValueError("y is None; parcv needs targets. Pass y of shape (n_samples,).")
    y_arr = np.asarray(y)
    if y_arr.ndim == 0:
        raise ValueError(f"y must be array-like of shape (n_samples,); got a scalar {y!r}.")
    if y_arr.dtype.kind in "fc" and not np.isfinite(y_arr).all():
        bad = np.flatnonzero(~np.isfinite(y_arr.reshape(len(y_arr), -1)).all(axis=1))
        raise ValueError(
            f"y contains NaN or infinity at {bad.size} row(s), first at index {int(bad[0])} "
            f"(value {y_arr[bad[0]]!r}). Drop or impute those rows before cross-validation."
        )
    if y_arr.dtype == object and any(v is None for v in y_arr.ravel()):
        raise ValueError("y contains None values; drop or impute those rows.")
    return y_arr


def _check_fit_params(fit_params: Any) -> dict[str, Any]:
    """Type-check ``fit_params`` before anything converts it."""
    if fit_params is None:
        return {}
    if not isinstance(fit_params, Mapping):
        raise TypeError(
            f"fit_params must be a dict of fit() argument name -> value; got {fit_params!r}. "
            "Pass e.g. fit_params={'sample_weight': w}, or None for no extra arguments."
        )
    bad = [name for name in fit_params if not isinstance(name, str)]
    if bad:
        raise TypeError(
            f"fit_params keys must be the str names of fit() arguments; got the key "
            f"{bad[0]!r}. Write them as in fit(), e.g. {{'sample_weight': w}}."
        )
    return dict(fit_params)


def check_dataset(X: Any, y: Any, groups: Any = None, fit_params: Any = None) -> Dataset:
    """Check shapes and targets before any compute.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    groups : array-like of shape (n_samples,), default=None
    fit_params : dict, default=None

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        Empty data, length mismatch, or NaN/inf/None in ``y``.
    TypeError
        ``X`` not array-like, or ``fit_params`` not a dict of str to value.

    Examples
    --------
    >>> check_dataset([[0.0], [1.0]], [0.0, 1.0]).n_samples
    2
    """
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"X must be array-like of shape (n_samples, n_features); got {X!r}.")
    n_x = _n_rows(X)
    y_arr = _check_y(y)
    if n_x == 0 or len(y_arr) == 0:
        raise ValueError(
            f"X has {n_x} rows and y {len(y_arr)}: the data is empty. Pass at least a few samples."
        )
    if n_x != len(y_arr):
        raise ValueError(
            f"X and y have different numbers of samples: X has {n_x} rows, y has {len(y_arr)}. "
            "Pass one target per row of X."
        )
    groups_arr = None
    if groups is not None:
        groups_arr = np.asarray(groups)
        if groups_arr.shape[:1] != (n_x,):
            raise ValueError(
                f"groups must have shape ({n_x},), one label per sample; got {groups_arr.shape}."
            )
    params = _check_fit_params(fit_params)
    y_out = y if not isinstance(y, (list, tuple)) else y_arr
    return Dataset(X=X, y=y_out, groups=groups_arr, fit_params=params)
