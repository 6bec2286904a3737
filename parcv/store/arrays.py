"""Arrays kept in a store as plain little-endian bytes, never as pickles.

An array is a row of five values (:data:`ARRAY_COLUMNS`): its dtype and
shape, and its data in one of two forms:

* **raw** -- the array's own bytes, little-endian (floats: probabilities,
  decision values, regression predictions);
* **codes** -- for integer, boolean and text arrays with at most 65,536
  distinct values (class labels): one ``uint8``/``uint16`` code per element
  into the sorted distinct values, which are kept as bytes (numbers) or as
  JSON (text, objects). Ten thousand labels of two classes take ten thousand
  bytes, not eighty thousand.

Both forms give back the array bit for bit, with its dtype (an object array
gives back its items as JSON gives them: ``str``, ``int``, ``float``, ``bool``).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["ARRAY_COLUMNS", "decode_array", "encode_array"]

# dtype, shape (JSON), data (bytes), codes (dtype of the codes or NULL: raw), uniques (bytes
# of the distinct numbers, or the JSON list of distinct text or objects).
ARRAY_COLUMNS = "dtype, shape, data, codes, uniques"

_MAX_CODES = 1 << 16


def _little(array: NDArray[Any]) -> NDArray[Any]:
    return array.astype(array.dtype.newbyteorder("<"), copy=False)


def _json_item(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def encode_array(array: Any) -> tuple[str, str, bytes, str | None, bytes | str | None]:
    """Encode an array as the values of :data:`ARRAY_COLUMNS`.

    Parameters
    ----------
    array : array-like

    Returns
    -------
    tuple
        ``(dtype, shape, data, codes, uniques)``.

    Raises
    ------
    TypeError
        An object array whose items cannot be sorted or written as JSON.

    Examples
    --------
    >>> row = encode_array(np.array(["b", "a", "b"]))
    >>> row[:2], row[3:]
    (('<U1', '[3]'), ('|u1', '["a", "b"]'))
    >>> (decode_array(*row) == np.array(["b", "a", "b"])).all()
    np.True_
    """
    a = np.asarray(array)
    shape = json.dumps(list(a.shape))
    if a.dtype.kind in "biuUSO" and a.size:
        try:
            uniques, inverse = np.unique(a.ravel(), return_inverse=True)
        except TypeError as err:
            raise TypeError(
                f"predictions of dtype object must hold sortable labels (str or numbers); "
                f"got items {a.ravel()[:5].tolist()!r} ({err})."
            ) from err
        width = np.uint8 if uniques.size <= 256 else np.uint16
        if uniques.size <= _MAX_CODES and np.dtype(width).itemsize < a.dtype.itemsize + (
            a.dtype.kind in "USO"
        ):
            codes = inverse.astype(width).tobytes()
            kept: bytes | str
            if a.dtype.kind in "biu":
                kept = _little(uniques).tobytes()
                dtype = _little(a).dtype.str
            else:
                kept = json.dumps([_json_item(v) for v in uniques.tolist()])
                dtype = a.dtype.str
            return dtype, shape, codes, np.dtype(width).str, kept
    if a.dtype.kind == "O":
        return a.dtype.str, shape, b"", None, json.dumps([_json_item(v) for v in a.ravel()])
    little = _little(a)
    return little.dtype.str, shape, little.tobytes(), None, None


def decode_array(
    dtype: str, shape: str, data: bytes, codes: str | None, uniques: bytes | str | None
) -> NDArray[Any]:
    """Rebuild an array from the values :func:`encode_array` made.

    Examples
    --------
    >>> x = np.array([[0.25, 0.75], [1.0, 0.0]])
    >>> np.array_equal(decode_array(*encode_array(x)), x)
    True
    >>> decode_array(*encode_array(np.array([3, 1, 3]))).tolist()
    [3, 1, 3]
    """
    kind = np.dtype(dtype).kind
    dims = tuple(json.loads(shape))
    if codes is None:
        if kind == "O":
            out = np.empty(len(json.loads(str(uniques))), dtype=object)
            out[:] = json.loads(str(uniques))
            return out.reshape(dims)
        return np.frombuffer(data, dtype=dtype).reshape(dims).copy()
    index = np.frombuffer(data, dtype=codes)
    if kind in "biu":
        values = np.frombuffer(uniques, dtype=dtype)  # type: ignore[arg-type]
    elif kind == "O":
        listed = json.loads(str(uniques))
        values = np.empty(len(listed), dtype=object)
        values[:] = listed
    else:
        values = np.asarray(json.loads(str(uniques)), dtype=dtype)
    decoded: NDArray[Any] = values[index].reshape(dims)
    return decoded
