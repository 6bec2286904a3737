"""Tokens: the one exact identity of every value parcv hashes.

Every digest parcv keeps or compares (a unit's content key, the plan
fingerprint, the choice digest, the digest of the outer folds, a candidate's id
and the shared-prefix ids) is a :func:`token` of the values that determine it.
A token is exact: two values that differ never share one, and equal values give
equal tokens in every process.

- arrays by dtype, shape and every byte (object arrays element by element);
  sparse matrices by format, shape and their arrays; pandas objects with their
  index, columns, names and dtypes;
- estimators by class, full parameters (recursively) and any other attribute
  they hold (fitted state, ``set_output`` and metadata-request settings);
- functions by module, qualified name, code, defaults, closure values and
  attributes; a function pickled by value (a lambda, a local function or one of
  ``__main__``) also by the globals its code names; ``functools.partial`` by
  function, arguments and keywords; classes that cannot be imported by name by
  their bases and namespace;
- anything else as pickle sees it (``__reduce_ex__``), walked with these same
  rules, so the parts of a scorer, a splitter or a random state are exact too.

A value that cannot be identified exactly (a lock, an open file, a generator:
what pickle refuses too, so no worker could receive it either) raises
:class:`TokenError` naming where it sits; parcv refuses such a sweep before any
fit rather than guess. A class of your own can say what identifies it with a
``__parcv_token__(self)`` method returning tokenizable values, or with
:func:`register_token`.

This is dask's ``tokenize``/``normalize_token`` design (one function, a
registry per type) written for parcv rather than imported: a content key is
kept in a store for years, so its encoding must not change with a dask release
(dask's tokens are not stable across versions), a function's token must cover
its code (pickle names an importable function only by reference), and a value
that cannot be tokened must be refused, never given a random token.
"""

from __future__ import annotations

import functools
import hashlib
import struct
import sys
import types
from collections import OrderedDict
from collections.abc import Callable
from enum import Enum
from typing import Any

import numpy as np

__all__ = [
    "TOKEN_SIZE",
    "TokenError",
    "estimator_token",
    "register_token",
    "token",
    "token_hex",
    "token_of",
    "token_of_entries",
]

TOKEN_SIZE = 16  # bytes: 128 bits, collisions are out of reach for any store

Normalizer = Callable[[Any], Any]


class TokenError(TypeError):
    """A value that cannot be identified exactly; the message says where it sits.

    Examples
    --------
    >>> import threading
    >>> try:
    ...     token({"lock": threading.Lock()})
    ... except TokenError as err:
    ...     print(str(err).split(":")[0])
    cannot identify the part ['lock'] of the value exactly
    """


_REGISTRY: dict[type, Normalizer] = {}
# Types of libraries parcv does not import up front, registered when first met.
_LAZY: dict[str, Callable[[], None]] = {}


def register_token(*classes: type) -> Callable[[Normalizer], Normalizer]:
    """Register how instances of ``classes`` are identified (as dask's ``normalize_token``).

    The function takes an instance and returns values that are themselves
    tokenizable (numbers, strings, bytes, arrays, tuples, dicts, ...); two
    instances must return equal values exactly when they behave the same.
    Subclasses use their nearest registered base. The type's qualified name is
    part of the token, so two types returning the same values still differ.

    Parameters
    ----------
    *classes : type
        The types the function identifies.

    Returns
    -------
    callable
        A decorator that registers the function and returns it unchanged.

    Examples
    --------
    >>> class Grid:
    ...     def __init__(self, step):
    ...         self.step = step
    >>> @register_token(Grid)
    ... def _grid(value):
    ...     return value.step
    >>> token(Grid(1.0)) == token(Grid(1.0)), token(Grid(1.0)) == token(Grid(2.0))
    (True, False)
    """

    def decorate(function: Normalizer) -> Normalizer:
        for cls in classes:
            _REGISTRY[cls] = function
        return function

    return decorate


def token(*values: Any) -> bytes:
    """Return the 16-byte digest that identifies ``values`` exactly.

    Parameters
    ----------
    *values : object
        What to identify, in order.

    Returns
    -------
    bytes
        Equal for equal values in any process; different for values that differ.

    Raises
    ------
    TokenError
        If a part of a value cannot be identified exactly (see the module docstring).

    Examples
    --------
    >>> a = np.ones(1200); b = a.copy(); b[600] = 1e6
    >>> token(a) == token(b), token(a) == token(a.copy())
    (False, True)
    >>> def power(k):
    ...     return lambda z: z ** k
    >>> token(power(1.0)) == token(power(3.0)), token(power(3.0)) == token(power(3.0))
    (False, True)
    >>> token({"a": 1, "b": 2}) == token({"b": 2, "a": 1})
    True
    """
    h = hashlib.blake2b(digest_size=TOKEN_SIZE)
    walk = _Walk(h)
    walk.atom(b"(", str(len(values)).encode())
    for i, value in enumerate(values):
        walk.value(value, () if len(values) == 1 else (i,))
    return h.digest()


def token_of(what: str, *values: Any) -> bytes:
    """Return :func:`token` of ``values``; a :class:`TokenError` says they are ``what``.

    Examples
    --------
    >>> import threading
    >>> try:
    ...     token_of("parameter 'func' of candidate 0", {"lock": threading.Lock()})
    ... except TokenError as err:
    ...     print(str(err).split(":")[0])
    parameter 'func' of candidate 0
    """
    try:
        return token(*values)
    except TokenError as err:
        raise TokenError(
            f"{what}: {err} Nothing was run: parcv refuses such a sweep before any fit."
        ) from None


def token_of_entries(what: str, mapping: dict[str, Any]) -> bytes:
    """Return :func:`token` of a mapping; a :class:`TokenError` names the entry at fault.

    Examples
    --------
    >>> import threading
    >>> try:
    ...     token_of_entries("candidate 0", {"alpha": 1.0, "func": threading.Lock()})
    ... except TokenError as err:
    ...     print(str(err).split(":")[0])
    candidate 0, parameter 'func'
    """
    try:
        return token(mapping)
    except TokenError:
        for name, value in mapping.items():
            token_of(f"{what}, parameter {name!r}", value)
        raise


def token_hex(*values: Any) -> str:
    """Return :func:`token` as 32 hex digits.

    Examples
    --------
    >>> len(token_hex("any", 1.0))
    32
    """
    return token(*values).hex()


def estimator_token(cls: type, params: dict[str, Any], extra: dict[str, Any]) -> bytes:
    """Return ``token(estimator)`` from its class, parameters and other attributes.

    What ``token`` of an estimator of class ``cls`` with ``get_params(deep=False)``
    equal to ``params`` and the other attributes ``extra`` gives, without building
    it: a million candidates of one template are tokened without a million clones.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> params = Ridge().get_params(deep=False)
    >>> estimator_token(Ridge, {**params, "alpha": 2.0}, {}) == token(Ridge(alpha=2.0))
    True
    """
    h = hashlib.blake2b(digest_size=TOKEN_SIZE)
    walk = _Walk(h)
    walk.atom(b"(", b"1")
    walk.atom(b"T", _type_name(cls).encode())
    walk.value((params, extra), ())
    return h.digest()


def _path_text(path: tuple[Any, ...]) -> str:
    return (
        "the part " + "".join(f"[{p!r}]" for p in path) + " of the value" if path else "the value"
    )


class _Walk:
    """Feed one value into a hash as tagged, length-prefixed atoms, depth first."""

    def __init__(self, h: Any) -> None:
        self.h = h
        self.stack: dict[int, int] = {}  # ids of the containers being walked -> depth

    def atom(self, tag: bytes, payload: bytes | memoryview) -> None:
        self.h.update(tag + struct.pack("<Q", len(payload)))
        self.h.update(payload)

    def value(self, value: Any, path: tuple[Any, ...]) -> None:
        t = type(value)
        if value is None:
            self.atom(b"N", b"")
        elif t is bool:
            self.atom(b"b", b"1" if value else b"0")
        elif t is int:
            self.atom(b"i", str(value).encode())
        elif t is float:
            self.atom(b"f", struct.pack("<d", value))
        elif t is str:
            self.atom(b"s", value.encode("utf-8", "surrogatepass"))
        elif t is bytes:
            self.atom(b"y", value)
        elif t is memoryview:
            flat = value.c_contiguous and value.ndim == 1 and value.format == "B"
            self.atom(b"y", value if flat else value.tobytes())
        else:
            self.nested(value, path)

    def nested(self, value: Any, path: tuple[Any, ...]) -> None:
        depth = self.stack.get(id(value))
        if depth is not None:  # a cycle: refer back to the enclosing value
            self.atom(b"@", str(depth).encode())
            return
        self.stack[id(value)] = len(self.stack)
        try:
            self.dispatch(value, path)
        finally:
            del self.stack[id(value)]

    def dispatch(self, value: Any, path: tuple[Any, ...]) -> None:
        t = type(value)
        if t is tuple or t is list:
            self.sequence(b"(" if t is tuple else b"[", value, path)
        elif t is dict:
            self.mapping(value, path)
        elif t is set or t is frozenset:
            self.atom(b"{", str(len(value)).encode())
            for item in sorted(token(v) for v in value):
                self.atom(b"t", item)
        else:
            self.atom(b"T", _type_name(t).encode())
            self.value(_normal_form(value, path), path)

    def sequence(self, tag: bytes, value: Any, path: tuple[Any, ...]) -> None:
        self.atom(tag, str(len(value)).encode())
        for i, item in enumerate(value):
            self.value(item, (*path, i))

    def mapping(self, value: dict[Any, Any], path: tuple[Any, ...]) -> None:
        """A dict's order does not count (parameters, metrics); an OrderedDict's does."""
        self.atom(b"d", str(len(value)).encode())
        if all(type(k) is str for k in value):
            items = sorted(value.items())
            for k, v in items:
                self.atom(b"s", k.encode("utf-8", "surrogatepass"))
                self.value(v, (*path, k))
            return
        keyed = sorted(((token(k), k) for k in value), key=lambda pair: pair[0])
        for digest, k in keyed:
            self.atom(b"t", digest)
            self.value(value[k], (*path, k))


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _normal_form(value: Any, path: tuple[Any, ...]) -> Any:
    """What identifies a value that is not a plain Python number, string or container."""
    normalizer = _normalizer_of(type(value))
    if normalizer is not None:
        return normalizer(value)
    own = getattr(type(value), "__parcv_token__", None)
    if own is not None:
        return own(value)
    if hasattr(value, "get_params") and not isinstance(value, type):
        return _estimator(value)
    return _reduced(value, path)


def _normalizer_of(cls: type) -> Normalizer | None:
    for base in cls.__mro__:
        found = _REGISTRY.get(base)
        if found is not None:
            return found
    load = _LAZY.pop(cls.__module__.partition(".")[0], None)
    if load is not None:
        load()
        return _normalizer_of(cls)
    return None


def _estimator(estimator: Any) -> Any:
    """Parameters, and whatever else the instance holds (fitted state, output settings)."""
    params = dict(estimator.get_params(deep=False))
    extra = {k: v for k, v in vars(estimator).items() if k not in params} if hasattr(
        estimator, "__dict__") else {}  # fmt: skip
    return (params, extra)


def _reduced(value: Any, path: tuple[Any, ...]) -> Any:
    """Identify a value as pickle would rebuild it: its reduce tuple, walked exactly."""
    try:
        reduced = value.__reduce_ex__(4)
    except Exception as err:
        raise TokenError(
            f"cannot identify {_path_text(path)} exactly: a {_type_name(type(value))} "
            f"({err}). parcv keys every unit by the exact values that determine it and "
            "will not guess. Pass a value that can be pickled, give its class a "
            "__parcv_token__(self) method returning what identifies it, or register one "
            "with parcv.register_token."
        ) from err
    if isinstance(reduced, str):  # a global pickled by name
        return ("global", getattr(value, "__module__", None), reduced)
    parts = list(reduced)
    for i in (3, 4):  # list and dict items come as iterators
        if len(parts) > i and parts[i] is not None:
            parts[i] = list(parts[i])
    return tuple(parts)


# Plain types ------------------------------------------------------------------------------


@register_token(np.ndarray)
def _array(array: np.ndarray) -> Any:
    if array.dtype.hasobject:
        return (array.dtype.str, array.shape, list(array.ravel(order="C")))
    raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8).data
    return (array.dtype.descr if array.dtype.names else array.dtype.str, array.shape, raw)


@register_token(np.ma.MaskedArray)
def _masked_array(array: np.ma.MaskedArray) -> Any:
    # The data under the mask counts too: fill_value and data can reach a fit.
    return (_array(np.asarray(array.data)), _array(np.ma.getmaskarray(array)), array.fill_value)


@register_token(np.generic)
def _numpy_scalar(value: np.generic) -> Any:
    return _array(np.asarray(value))


@register_token(np.dtype)
def _dtype(value: np.dtype) -> Any:
    return value.descr if value.names else value.str


_PLAIN: tuple[Callable[[Any], Any], ...] = (int, float, str, bytes)


@register_token(int, float, str, bytes, complex, bytearray)
def _builtin_subclass(value: Any) -> Any:
    """A complex, a bytearray, or a subclass of a plain type (an IntEnum): its plain value."""
    if isinstance(value, complex):
        return (value.real, value.imag)
    if isinstance(value, bytearray):
        return bytes(value)
    return next(plain(value) for plain in _PLAIN if isinstance(value, plain))  # type: ignore[arg-type]


@register_token(tuple, list)
def _sequence_subclass(value: Any) -> Any:
    return (list(value), dict(vars(value)) if hasattr(value, "__dict__") else None)


@register_token(dict)
def _dict_subclass(value: dict[Any, Any]) -> Any:
    ordered = isinstance(value, OrderedDict)
    return (list(value.items()) if ordered else dict(value), getattr(value, "default_factory",
                                                                     None))  # fmt: skip


@register_token(set, frozenset)
def _set_subclass(value: Any) -> Any:
    return frozenset(value)


@register_token(Enum)
def _enum(value: Enum) -> Any:
    return value.name


@register_token(types.ModuleType)
def _module(value: types.ModuleType) -> Any:
    return value.__name__


@register_token(type)  # classes
def _class(cls: type) -> Any:
    if _importable(cls):
        return (cls.__module__, cls.__qualname__)
    skip = {"__dict__", "__weakref__", "__module__", "__doc__", "__qualname__"}
    namespace = {k: v for k, v in vars(cls).items() if k not in skip}
    return (cls.__module__, cls.__qualname__, cls.__bases__, namespace)


def _importable(obj: Any) -> bool:
    """Whether ``obj`` is what its module and qualified name lead to (pickled by reference)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    qualname = getattr(obj, "__qualname__", "")
    if module is None or module.__name__ == "__main__" or "<" in qualname:
        return False
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found is obj


@register_token(types.FunctionType)
def _function(function: types.FunctionType) -> Any:
    closure = tuple(c.cell_contents if _filled(c) else "<empty cell>"
                    for c in function.__closure__ or ())  # fmt: skip
    named = _globals_named(function) if _by_value(function) else None
    return (function.__module__, function.__qualname__, function.__code__,
            function.__defaults__, function.__kwdefaults__, closure, dict(vars(function)),
            named)  # fmt: skip


def _by_value(function: types.FunctionType) -> bool:
    """Whether cloudpickle ships the function's code to workers (it names the others)."""
    module = function.__module__
    return module == "__main__" or module not in sys.modules or "<" in function.__qualname__


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _globals_named(function: types.FunctionType) -> dict[str, Any]:
    """The globals a by-value function's code names, as cloudpickle ships them to workers."""
    names: set[str] = set()
    codes = [function.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    scope = function.__globals__
    return {name: scope[name] for name in names if name in scope}


@register_token(types.CodeType)
def _code(code: types.CodeType) -> Any:
    # Line numbers and the file name are left out: moving a function changes no number.
    return (code.co_code, code.co_consts, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, code.co_argcount, code.co_posonlyargcount,
            code.co_kwonlyargcount, code.co_flags, code.co_name)  # fmt: skip


@register_token(types.BuiltinFunctionType)
def _builtin_function(function: Any) -> Any:
    owner = function.__self__
    bound = None if owner is None or isinstance(owner, types.ModuleType) else owner
    return (getattr(function, "__module__", None), function.__qualname__, bound)


@register_token(types.MethodType)
def _method(method: types.MethodType) -> Any:
    return (method.__func__, method.__self__)


@register_token(functools.partial)
def _partial(value: functools.partial[Any]) -> Any:
    return (value.func, value.args, value.keywords, dict(vars(value)))


@register_token(np.ufunc)
def _ufunc(value: np.ufunc) -> Any:
    if getattr(np, value.__name__, None) is not value:
        raise TokenError(
            f"cannot identify the ufunc {value.__name__!r} exactly: it is not numpy's own. "
            "Pass a Python function instead."
        )
    return value.__name__


# Libraries imported only when one of their values is met ----------------------------------


def _register_pandas() -> None:
    import pandas as pd

    @register_token(pd.DataFrame)
    def _frame(frame: pd.DataFrame) -> Any:
        columns = [_series_values(frame.iloc[:, j]) for j in range(frame.shape[1])]
        return (frame.columns, frame.index, [str(d) for d in frame.dtypes], columns)

    @register_token(pd.Series)
    def _series(series: pd.Series) -> Any:
        return (series.name, str(series.dtype), series.index, _series_values(series))

    @register_token(pd.Index)
    def _index(index: pd.Index) -> Any:
        names = list(index.names)
        if isinstance(index, pd.RangeIndex):
            return (names, index.start, index.stop, index.step)
        return (names, str(index.dtype), _series_values(index))

    def _series_values(values: Any) -> Any:
        array = values.array if hasattr(values, "array") else values
        if isinstance(array, pd.Categorical):
            return (array.categories, array.codes, array.ordered)
        if isinstance(array, np.ndarray):
            return array
        if isinstance(getattr(array, "_ndarray", None), np.ndarray):
            return array._ndarray
        return np.asarray(array, dtype=object)


def _register_scipy() -> None:
    from scipy import sparse

    @register_token(sparse.spmatrix, *((sparse.sparray,) if hasattr(sparse, "sparray") else ()))
    def _sparse(matrix: Any) -> Any:
        fmt = matrix.format
        if fmt in ("csr", "csc", "bsr"):
            parts: tuple[Any, ...] = (matrix.data, matrix.indices, matrix.indptr)
        elif fmt == "coo":
            parts = (matrix.data, *matrix.coords)
        elif fmt == "dia":
            parts = (matrix.data, matrix.offsets)
        else:  # dok, lil: through coordinates
            return _sparse(matrix.tocoo())
        return (fmt, matrix.shape, matrix.dtype.str, parts)


_LAZY["pandas"] = _register_pandas
_LAZY["scipy"] = _register_scipy
