"""Values described by plain data, built the same way in any process (for the token tests).

A description is nested tuples; two descriptions with equal ``repr`` build values that
are equal in every respect, and descriptions that differ build values that differ.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["build", "power"]


def power(k: float) -> Any:
    """A closure of one factory: every call has the same code and qualified name."""
    return lambda Z: np.sign(Z) * np.abs(Z) ** k


def _scale(factor: float, Z: Any) -> Any:
    return Z * factor


def build(description: Any) -> Any:
    """Build the value a description names."""
    if not isinstance(description, tuple):
        return description  # a plain number, string, bool or None
    kind, *rest = description
    if kind == "array":
        dtype, shape, values = rest
        return np.array(values, dtype=dtype).reshape(shape)
    if kind == "closure":
        return power(rest[0])
    if kind == "partial":
        return functools.partial(_scale, rest[0])
    if kind == "frame":
        import pandas as pd

        columns, values = rest
        return pd.DataFrame(np.array(values, dtype=float).reshape(-1, len(columns)),
                            columns=list(columns))  # fmt: skip
    if kind == "ridge":
        from sklearn.linear_model import Ridge

        return Ridge(alpha=build(rest[0]))
    if kind == "list":
        return [build(v) for v in rest[0]]
    if kind == "tuple":
        return tuple(build(v) for v in rest[0])
    if kind == "dict":
        return {k: build(v) for k, v in rest[0]}
    raise ValueError(description)
