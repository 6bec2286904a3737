"""JSON export of result objects: numpy values to plain JSON, NaN and infinity to null."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from parcv.results.summary import ScoreSummaries

__all__ = ["Exportable", "jsonable"]


def jsonable(value: Any) -> Any:
    """Convert a value to plain JSON types, recursively.

    Parameters
    ----------
    value : object
        Dicts, sequences, numpy arrays and scalars, masked arrays (masked
        entries become None), objects with ``to_dict``; anything else
        becomes its repr.

    Returns
    -------
    object
        Built from dict, list, str, int, float, bool and None only; NaN and
        infinity become None.

    Examples
    --------
    >>> jsonable({"a": np.array([1.0, np.nan]), "b": np.int64(2)})
    {'a': [1.0, None], 'b': 2}
    """
    kind = type(value)  # the plain scalars first: they are most of a large result's entries
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, ScoreSummaries):  # a search's summaries: a list each
        return value.json_rows()
    if isinstance(value, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(value)
        if value.ndim == 1:  # cv_results_ columns: convert the data in one call
            data = jsonable(value.data)
            return [None if m else v for v, m in zip(data, mask.tolist(), strict=True)]
        return [None if m else jsonable(v) for v, m in zip(value.data, mask, strict=True)]
    if isinstance(value, np.ndarray):
        if value.ndim == 1 and value.dtype.kind == "f":  # thousands of scores: no recursion
            return [v if math.isfinite(v) else None for v in value.tolist()]
        if value.dtype.kind in "iub":
            return value.tolist()
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    return repr(value)


class Exportable:
    """Mixin: ``to_json`` from ``to_dict``."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view; subclasses implement it."""
        raise NotImplementedError

    def to_json(self, path: str | None = None, *, indent: int = 2) -> str:
        """Export as JSON (NaN and infinity become null); write to ``path`` if given."""
        text = json.dumps(jsonable(self.to_dict()), indent=indent)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        return text
