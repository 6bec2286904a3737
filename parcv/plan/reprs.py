"""Readable, process-independent reprs for messages and stored plan descriptions.

Never hashed or compared to decide identity: a repr elides (numpy past 1,000 entries)
and names a closure without its captured values. Identity is :mod:`parcv.plan.tokens`.
"""

from __future__ import annotations

import functools
import types
from typing import Any

__all__ = ["stable_repr"]


def stable_repr(value: Any) -> str:
    """Return a repr that is the same in every process: functions by qualified name, not address.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> stable_repr({"model": Ridge(alpha=2.0), "f": len})
    "{'model': Ridge({'alpha': 2.0, 'copy_X': True, 'fit_intercept': True, 'max_iter': None, \
'positive': False, 'random_state': None, 'solver': 'auto', 'tol': 0.0001}), 'f': builtins.len}"
    """
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, functools.partial):
        return f"partial({stable_repr(value.func)}, {value.args!r}, {value.keywords!r})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {stable_repr(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(stable_repr(v) for v in value) + "]"
    if hasattr(value, "get_params") and not isinstance(value, type):
        params = sorted(value.get_params(deep=False).items())
        return f"{type(value).__qualname__}({stable_repr(dict(params))})"
    if hasattr(value, "_score_func"):  # a scikit-learn scorer
        kwargs = stable_repr(getattr(value, "_kwargs", {}))
        method = getattr(value, "_response_method", "")
        func = stable_repr(value._score_func)
        return f"{type(value).__name__}({func}, {value._sign}, {kwargs}, {method!r})"
    return repr(value)
