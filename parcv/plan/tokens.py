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
- code by where it comes from (:mod:`parcv.plan.code`): a function, class or
  module of an installed distribution by its qualified name and the
  distribution's version (with those of the distributions it requires); one of
  the standard library by its name; the user's own code (scripts, their
  modules, editable installs, notebooks, ``__main__``) by the whole modules it
  lives in and those they import, the values their globals hold now, and its
  own code and what it reaches (globals it reads, bases, methods),
  transitively. A lambda or closure is also identified by its captured values
  and defaults; ``functools.partial`` by function, arguments and keywords;
  a ufunc by its importable name and its distribution's version;
- anything else as pickle sees it (``__reduce_ex__``), walked with these same
  rules, so the parts of a scorer, a splitter or a random state are exact too.

A value that cannot be identified exactly (a lock, an open file, a generator:
what pickle refuses too, so no worker could receive it either), and compiled
code that belongs to no installed distribution (no code to read, no version),
raise :class:`TokenError` naming where it sits; parcv refuses such a sweep
before any fit rather than guess. A class of your own can say what identifies it with a
``__parcv_token__(self)`` method returning tokenizable values, or with
:func:`register_token`.

:func:`identify` returns the two parts of a token apart: a digest of the
values, in which code is only named, and the :class:`~parcv.plan.code.Environment`
of the code they reach. A store keeps both, so that a run can say which code
change made a unit's record stale ("scikit-learn 1.9.1 → 1.9.2").

This is dask's ``tokenize``/``normalize_token`` design (one function, a
registry per type) written for parcv rather than imported: a content key is
kept in a store for years, so its encoding must not change with a dask release
(dask's tokens are not stable across versions), a function's token must cover
its code (pickle names an importable function only by reference), and a value
that cannot be tokened must be refused, never given a random token.
"""

from __future__ import annotations

import dis
import functools
import hashlib
import os
import struct
import sys
import types
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from parcv.plan.code import (
    EDITABLE,
    INSTALLED,
    STDLIB,
    USER,
    CodeEntry,
    CodeRef,
    Environment,
    ModuleGlobal,
    ModuleSource,
    Origin,
    class_parts,
    code_names,
    distribution_entries,
    function_parts,
    held_parts,
    is_named,
    kind_word,
    module_exists,
    module_file_digest,
    module_of,
    module_source,
    origin_of,
    where_of,
)

__all__ = [
    "TOKEN_SIZE",
    "Template",
    "Identity",
    "TokenError",
    "Tokenizer",
    "estimator_token",
    "fixed_number_type",
    "identify",
    "identify_of",
    "register_token",
    "token",
    "token_hex",
    "token_of",
    "token_of_entries",
    "values_hex",
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
# Numpy number types identified by _numpy_scalar: the atoms before a value's bytes.
_SCALAR_PREFIX: dict[type, bytes] = {}
# Types of libraries parcv does not import up front, registered when first met.
_LAZY: dict[str, Callable[[], None]] = {}


def register_token(*classes: type) -> Callable[[Normalizer], Normalizer]:
    """Register how instances of ``classes`` are identified (as dask's ``normalize_token``).

    The function takes an instance and returns values that are themselves
    tokenizable (numbers, strings, bytes, arrays, tuples, dicts, ...); two
    instances must return equal values exactly when they behave the same.
    Subclasses use their nearest registered base. The type's qualified name is
    part of the token, so two types returning the same values still differ;
    the type's code is not (what the function returns is all that counts).

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
        _SCALAR_PREFIX.clear()  # a numpy scalar type may be identified otherwise now
        return function

    return decorate


@dataclass(frozen=True, slots=True)
class Identity:
    """A token in two parts: the values, with code only named, and the code they reach.

    Parameters
    ----------
    values : bytes
        Digest of the values; a function, class or module in them is written
        as its qualified name only.
    environment : Environment
        The code the values reach (:mod:`parcv.plan.code`): distributions by
        version, user code by digest.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> found = identify(Ridge(alpha=2.0))
    >>> found.token == token(Ridge(alpha=2.0)), "scikit-learn" in found.names()
    (True, True)
    >>> identify(1.5).token == identify(1.5).values  # no code: the values' digest
    True
    """

    values: bytes
    environment: Environment

    @property
    def token(self) -> bytes:
        """The whole token: the values' digest, with the code's when there is code."""
        if not self.environment:
            return self.values
        return _blake(self.values + self.environment.digest, digest_size=TOKEN_SIZE).digest()

    def names(self) -> list[str]:
        """The names of the code entries, sorted."""
        return sorted(e.name for e in self.environment.entries)


_blake = hashlib.blake2b
_EMPTY = Environment()


@dataclass(frozen=True, slots=True, eq=False)
class _About:
    """What the tokenizer knows of one piece of code: its name, origin and what it is."""

    obj: Any
    label: str
    module: str
    origin: Origin
    named: bool
    kind: str  # class, function, method, constant, module, wrapper; "" for compiled user code

    def entry(self, digest: str, rank: int | None = None) -> CodeEntry:
        name = self.label if rank is None else f"{self.label}#{rank}"
        kind = "function" if self.kind == "wrapper" else self.kind
        shown = self.label.removeprefix(f"{self.module}.")
        return CodeEntry(name, kind, digest, where_of(self.module), shown)


# A module global: its entry, the code its value reaches, itself if an own definition.
_Global = tuple[CodeEntry | None, tuple[Any, ...], tuple[Any, ...]]


class Tokenizer:
    """Token values with one memo of the code they reach.

    Within one tokenizer, code is taken not to change: a function's digest is
    computed once, however many values reach it (the candidates of one plan).
    :func:`token` uses a new one per call.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> tokenizer = Tokenizer()
    >>> tokenizer.token(Ridge(alpha=1.0)) == token(Ridge(alpha=1.0))
    True
    """

    def __init__(self) -> None:
        self._about: dict[int, _About] = {}
        self._own: dict[int, tuple[frozenset[CodeEntry], tuple[Any, ...]]] = {}
        self._code: dict[int, tuple[str, tuple[Any, ...]]] = {}
        self._globals: dict[tuple[str, str], ModuleGlobal] = {}
        self._envs: dict[tuple[Any, ...], Environment] = {}
        self._dists: dict[Origin, frozenset[CodeEntry]] = {}
        self._sources: dict[str, ModuleSource | None] = {}
        self._valued: dict[tuple[str, str], _Global] = {}

    def identify(self, *values: Any) -> Identity:
        """Return the :class:`Identity` of ``values`` (see :func:`identify`)."""
        h = _blake(digest_size=TOKEN_SIZE)
        walk = _Walk(h, self, top=True)
        walk.atom(b"(", str(len(values)).encode())
        for i, value in enumerate(values):
            walk.value(value, () if len(values) == 1 else (i,))
        return Identity(h.digest(), self._environment(walk))

    def token(self, *values: Any) -> bytes:
        """Return :func:`token` of ``values``."""
        return self.identify(*values).token

    def values_token(self, *values: Any) -> bytes:
        """Return ``identify(*values).values`` without reading the code they reach (faster)."""
        h = _blake(digest_size=TOKEN_SIZE)
        walk = _Walk(h, self, top=True)
        walk.atom(b"(", str(len(values)).encode())
        for i, value in enumerate(values):
            walk.value(value, () if len(values) == 1 else (i,))
        return h.digest()

    def identify_estimator(self, cls: type, params: dict[str, Any],
                           extra: dict[str, Any]) -> Identity:  # fmt: skip
        """:meth:`identify` of an estimator from its class, parameters and other attributes."""
        h = _blake(digest_size=TOKEN_SIZE)
        walk = _Walk(h, self, top=True)
        walk.atom(b"(", b"1")
        walk.atom(b"T", _type_name(cls).encode())
        walk.code(cls, ())
        walk.value((params, extra), ())
        return Identity(h.digest(), self._environment(walk))

    def estimator_template(self, cls: type, params: dict[str, Any], extra: dict[str, Any],
                           names: frozenset[str]) -> Template:  # fmt: skip
        """:meth:`identify_estimator` of ``cls``, with the parameters ``names`` left open.

        See :class:`Template`: the entries that stay are walked once here.
        """
        recorder = _Recorder()
        walk = _Walk(recorder, self, top=True)
        walk.atom(b"(", b"1")
        walk.atom(b"T", _type_name(cls).encode())
        walk.code(cls, ())
        walk.value(({**params, **{name: _Slot(name) for name in names}}, extra), ())
        return Template(self, recorder.finished(), self._environment(walk))

    def values_template(self, names: frozenset[str]) -> Template:
        """:meth:`values_token` of one dict, with the entries ``names`` open (all of them)."""
        recorder = _Recorder()
        walk = _Walk(recorder, self, top=True)
        walk.atom(b"(", b"1")
        walk.value({name: _Slot(name) for name in names}, ())
        return Template(self, recorder.finished(), self._environment(walk))

    # Code ----------------------------------------------------------------------------

    def about(self, obj: Any, path: tuple[Any, ...]) -> _About:
        """Name, origin and kind of a piece of code (refused here if it cannot be identified)."""
        found = self._about.get(id(obj))
        if found is None:
            found = self._about[id(obj)] = _describe(obj, path)
        return found

    def canonical(self, obj: Any) -> Any:
        """One instance per module-level name, so that every reader shares its entry."""
        if isinstance(obj, ModuleGlobal):
            return self._globals.setdefault((obj.module, obj.name), obj)
        return obj

    def parts(self, about: _About, *, whole: bool = False) -> Any:
        """What identifies a piece of user code (its own content; other code named in it).

        ``whole``: an anonymous function's captured values and defaults too (they are
        walked with the value holding it only where it is met in a value).
        """
        obj = about.obj
        if about.kind == "constant":
            return {"value": obj.value}
        if about.kind == "module":  # one with a file is read whole by the module pass
            # No file to read (a notebook's configuration object, types.ModuleType): what it
            # holds now, every attribute, since what reads it may name any of them. One that
            # cannot be identified is left to the module pass, which makes the units of code
            # that can read it new on every run.
            return {"attributes": {k: v for k, v in vars(obj).items()
                                   if not _dunder(k) and self._identifiable(v)}}  # fmt: skip
        if about.kind == "class":
            return class_parts(obj)
        if about.kind == "wrapper":
            return {"wrapper": CodeRef(type(obj)), "wrapped": obj.__wrapped__}
        return function_parts(obj, named=about.named or whole)

    def _identifiable(self, value: Any) -> bool:
        try:
            self._walk_code(value)
        except TokenError:
            return False
        return True

    def code_digest(self, about: _About) -> tuple[str, tuple[Any, ...]]:
        """Digest of a piece of user code's own content, and the code it names.

        A module-level value that cannot be identified as a value (a lock, a thread
        pool) is identified by the source of the module that makes it: a worker
        importing the module makes its own from that source. Without a source
        file (a notebook) it is refused.
        """
        found = self._code.get(id(about.obj))
        if found is None:
            try:
                found = self._walk_code(self.parts(about))
            except TokenError as err:
                made = _made_by_source(about)
                if made is None:
                    raise TokenError(
                        f"{err} It sits in the {about.kind} {about.label} "
                        f"({where_of(about.module)}): parcv identifies the user's own code by "
                        "its code and the module-level values it reads."
                    ) from None
                found = self._walk_code(made)
            self._code[id(about.obj)] = found
        return found

    def _walk_code(self, parts: Any) -> tuple[str, tuple[Any, ...]]:
        h = _blake(digest_size=TOKEN_SIZE)
        walk = _Walk(h, self, top=False)
        walk.value(parts, ())
        return h.hexdigest(), tuple(walk.refs)

    def _own_entries(self, obj: Any) -> tuple[frozenset[CodeEntry], tuple[Any, ...]]:
        found = self._own.get(id(obj))
        if found is None:
            about = self._about[id(obj)]
            if about.origin.kind == STDLIB:
                found = (frozenset(), ())  # named by the walk: nothing to read
            elif about.origin.kind == USER and not about.named:
                found = (frozenset(), ())  # inside the code that holds it: reached only
            elif about.kind == "module" and self.source_digest(obj.__name__):
                found = (frozenset(), ())  # a file: the module layer reads it whole
            elif about.origin.kind in (INSTALLED, EDITABLE):
                found = (self._distributions(about.origin), ())
            else:
                digest, refs = self.code_digest(about)
                found = (frozenset({about.entry(digest)}), refs)
            self._own[id(obj)] = found
        return found

    def _distributions(self, origin: Origin) -> frozenset[CodeEntry]:
        found = self._dists.get(origin)
        if found is None:
            found = self._dists[origin] = distribution_entries(origin)
        return found

    def _reach(self, refs: list[Any] | tuple[Any, ...]) -> tuple[set[CodeEntry], list[Any]]:
        """Every entry the code in ``refs`` reaches, transitively (cycles are simply met twice),
        and the pieces of code reached."""
        out: set[CodeEntry] = set()
        reached: list[Any] = []
        seen: set[int] = set()
        via: dict[int, Any] = {}  # what reached each piece of code first, for messages
        todo = list(refs)
        while todo:
            obj = todo.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            try:
                entries, more = self._own_entries(obj)
            except TokenError as err:
                chain = []
                at = via.get(id(obj))
                while at is not None:
                    about = self._about[id(at)]
                    chain.append(f"{about.kind} {about.label}")
                    at = via.get(id(at))
                origin = f" (reached from {', from '.join(chain)})" if chain else ""
                raise TokenError(f"{str(err).removesuffix('.')}{origin}.") from None
            out |= entries
            reached.append(obj)
            for other in more:
                via.setdefault(id(other), obj)
            todo.extend(more)
        return out, reached

    def _environment(self, walk: _Walk) -> Environment:
        if not walk.refs and not walk.anonymous:
            return _EMPTY
        key = (tuple(sorted({id(r) for r in walk.refs})), tuple(id(a) for a in walk.anonymous))
        env = self._envs.get(key)
        if env is None:
            entries, reached = self._reach(walk.refs)
            for rank, obj in enumerate(walk.anonymous):
                about = self._about[id(obj)]
                digest, refs = self.code_digest(about)
                entries.add(about.entry(digest, rank))
                more, also = self._reach(refs)
                entries |= more
                reached += [obj, *also]
            entries |= self._modules(reached)
            env = self._envs[key] = Environment(entries)
        return env

    # The sound layer: whole modules, their imports and the globals code can read -----------

    def _modules(self, reached: list[Any]) -> set[CodeEntry]:
        """The entries of every module the reached code lives in, over their import closure.

        Each module of the user's own (an editable install's too) by its normalised source
        (:func:`~parcv.plan.code.module_source`); each module it imports, transitively, the
        same way, or by distribution version when installed; and the values its globals
        hold now where code can read them (a run-time assignment, a factory's closure). The
        code those values reach joins in turn, until nothing new is met.
        """
        out: set[CodeEntry] = set()
        closure: dict[str, ModuleSource | None] = {}
        names: set[str] = set()
        seen: set[int] = set()
        done: set[tuple[str, str]] = set()  # globals read in this pass
        homes: set[str] = set()  # the modules reached code lives in
        pending = list(reached)
        while pending:
            modules = []
            for obj in pending:
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                found = _homes(obj)
                modules += found
                homes.update(found)
                code_of = getattr(obj, "__code__", None)
                if isinstance(code_of, types.CodeType):
                    names |= code_names(code_of)
            out |= self._import_closure(modules, closure)
            dynamic = any(src is not None and src.dynamic for src in closure.values())
            importing = any(src is not None and src.imports_dynamically
                            for src in closure.values())  # fmt: skip
            if importing:
                loaded = [m for m in list(sys.modules) if m not in closure
                          and origin_of(m).kind in (USER, EDITABLE)]  # fmt: skip
                out |= self._import_closure(loaded, closure)
            for src in closure.values():
                if src is not None:
                    names |= src.names
            pending, located = [], []
            for module in sorted(closure):
                if closure[module] is None and module not in homes and not (dynamic or importing):
                    # A module without a file that no reached code lives in (a namespace
                    # package, a parent of one imported): no code of its own reads its
                    # globals, and code that reads them holds the module itself, a value
                    # whose every attribute is walked (Tokenizer.parts).
                    continue
                entries, refs, own = self._module_globals(module, None if dynamic else names,
                                                          done)  # fmt: skip
                out |= entries
                pending += refs
                located += own
            if pending:
                more, also = self._reach(pending)
                out |= more
                pending += also
            pending += located  # their homes and names count; their code is in the source
        return out

    def _source(self, name: str) -> ModuleSource | None:
        """A module's source, read once per tokenizer (once per run)."""
        if name not in self._sources:
            self._sources[name] = module_source(name)
        return self._sources[name]

    def source_digest(self, name: str) -> str:
        """Digest of a module's normalised source, read once per tokenizer; "" without one."""
        found = self._source(name)
        return found.digest if found is not None else ""

    def _import_closure(self, modules: list[str],
                        closure: dict[str, ModuleSource | None]) -> set[CodeEntry]:  # fmt: skip
        out: set[CodeEntry] = set()
        todo = list(modules)
        while todo:
            name = todo.pop()
            if name in closure:
                continue
            origin = origin_of(name)
            if origin.kind == STDLIB:
                continue
            if origin.kind in (INSTALLED, EDITABLE):
                out |= self._distributions(origin)
                if origin.kind == INSTALLED:
                    continue
            if name not in sys.modules and not module_exists(name):
                continue  # ``from package import name``: a name, not a module
            src = closure[name] = self._source(name)
            if src is not None:
                out.add(CodeEntry(name, "module", src.digest, src.where, name))
                todo += [m for m in src.imports if m not in closure]
        return out

    def _module_globals(
        self, module: str, names: set[str] | None, done: set[tuple[str, str]]
    ) -> tuple[set[CodeEntry], list[Any], list[Any]]:
        """The values a module's globals hold now, where code can read them (``None``: all).

        Returns their entries, the code they reach and the module's own definitions among
        them. Those in ``done`` are left out (and the others added to it).
        """
        loaded = sys.modules.get(module)
        if loaded is None:
            return set(), [], []
        space = dict(vars(loaded))
        wanted = space.keys() if names is None else names & space.keys()
        out: set[CodeEntry] = set()
        refs: list[Any] = []
        own: list[Any] = []
        for name in sorted(wanted):
            if _dunder(name) or (module, name) in done:
                continue
            done.add((module, name))
            found = self._valued.get((module, name))
            if found is None:
                found = self._valued[(module, name)] = self._global_entry(loaded, name, space[name])
            entry, more, located = found
            if entry is not None:
                out.add(entry)
            refs += more
            own += located
        return out, refs, own

    def _global_entry(self, module: types.ModuleType, name: str, value: Any) -> _Global:
        """A global's entry, the code its value reaches, and itself if it is an own definition."""
        label = f"{module.__name__}.{name}"
        where = where_of(module.__name__)
        file = getattr(module, "__file__", None)
        if isinstance(value, (types.FunctionType, type)) and is_named(value) and (
                module_of(value) == module.__name__):  # fmt: skip
            try:
                about = self.about(value, ())
            except TokenError:
                return None, (), ()
            if about.origin.kind not in (USER, EDITABLE):
                return None, (), ()
            held = held_parts(value, file) if self.source_digest(module.__name__) else None
            if held is None:  # no file shows its code: identified definition by definition
                return None, (value,), ()
            # Its code is the module's source; what it holds at run time (defaults, what a
            # closure captured, a class's namespace, a method patched in) is not.
            digest, refs = self._walk_code(held)
            return CodeEntry(label, "held", digest, where, name), refs, (value,)
        try:
            digest, refs = self._walk_code({"value": value})
        except TokenError:
            if self.source_digest(module.__name__):
                return None, (), ()  # made by the module's source, which its entry identifies
            # Nothing identifies it: never reused (a new digest each run), and said so.
            unique = os.urandom(TOKEN_SIZE).hex()
            return CodeEntry(label, "unidentified", unique, where, name), (), ()
        return CodeEntry(label, "constant", digest, where, name), refs, ()


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _homes(obj: Any) -> list[str]:
    """The modules a piece of code lives in: a class's, every base's too."""
    if isinstance(obj, ModuleGlobal):
        return [obj.module]
    if isinstance(obj, types.ModuleType):
        return [obj.__name__]
    if isinstance(obj, type):
        return [m for m in (module_of(c) for c in obj.__mro__) if m and m != "builtins"]
    module = module_of(obj)
    return [module] if module else []


def _describe(obj: Any, path: tuple[Any, ...]) -> _About:
    if isinstance(obj, ModuleGlobal):
        return _About(obj, f"{obj.module}.{obj.name}", obj.module, Origin(USER), True, "constant")
    module = module_of(obj)
    if module is None:
        raise TokenError(
            f"cannot identify {_path_text(path)} exactly: the {type(obj).__name__} {obj!r} names "
            "no module it comes from, so neither its code nor a version identifies it. Pass a "
            "Python function instead, or register what identifies it with parcv.register_token."
        )
    origin = origin_of(module)
    if isinstance(obj, types.ModuleType):
        return _About(obj, module, module, origin, True, "module")
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    label = f"{module}.{qualname or type(obj).__qualname__}"
    if origin.kind != USER:
        return _About(obj, label, module, origin, True, "")
    named = is_named(obj)
    if isinstance(obj, types.FunctionType):
        return _About(obj, label, module, origin, named, kind_word(obj))
    if isinstance(obj, type) and obj.__flags__ & _HEAPTYPE:
        return _About(obj, label, module, origin, named, "class")
    if getattr(obj, "__wrapped__", None) is not None:
        return _About(obj, label, module, origin, named, "wrapper")
    raise TokenError(
        f"cannot identify {_path_text(path)} exactly: {label} is compiled code (a "
        f"{type(obj).__name__}) in the module {module!r}, which belongs to no installed "
        "distribution, so neither its code nor a version identifies it. Install its package "
        "(pip install . or pip install -e .) so that its version identifies it, or pass a "
        "Python function instead."
    )


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python, not a compiled type


def _made_by_source(about: _About) -> Any:
    """A module constant by its type and its module's source, or None without a source."""
    module = sys.modules.get(about.module)
    if about.kind != "constant" or module is None:
        return None
    source = module_file_digest(module)
    if not source:
        return None
    return {"made by the source": source, "type": _type_name(type(about.obj.value))}


def identify(*values: Any) -> Identity:
    """Return the :class:`Identity` of ``values``: their digest and the code they reach.

    ``identify(*values).token == token(*values)``.

    Examples
    --------
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> found = identify(FunctionTransformer(np.log1p))
    >>> "numpy" in found.names(), "scikit-learn" in found.names()
    (True, True)
    """
    return Tokenizer().identify(*values)


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
    return Tokenizer().identify(*values).token


def identify_of(what: str, *values: Any, tokenizer: Tokenizer | None = None) -> Identity:
    """Return :func:`identify` of ``values``; a :class:`TokenError` says they are ``what``.

    Examples
    --------
    >>> identify_of("the scoring", "r2").token == token("r2")
    True
    """
    try:
        return (tokenizer or Tokenizer()).identify(*values)
    except TokenError as err:
        raise TokenError(
            f"{what}: {err} Nothing was run: parcv refuses such a sweep before any fit."
        ) from None


def token_of(what: str, *values: Any, tokenizer: Tokenizer | None = None) -> bytes:
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
    return identify_of(what, *values, tokenizer=tokenizer).token


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


def values_hex(*values: Any) -> str:
    """Return the values part of :func:`identify` as 32 hex digits: code only named.

    For labels that need not change with the code (a candidate's id); keys
    use :func:`token`.

    Examples
    --------
    >>> values_hex({"alpha": 1.0}) == token_hex({"alpha": 1.0})  # no code: the same
    True
    """
    if len(values) == 1 and type(values[0]) is dict:  # a candidate's parameters
        params = values[0]
        names = frozenset(params)
        template = _NAMES_TEMPLATES.get(names)
        if template is None and all(type(k) is str for k in params):
            if len(_NAMES_TEMPLATES) > 1024:
                _NAMES_TEMPLATES.clear()
            template = _NAMES_TEMPLATES[names] = Tokenizer().values_template(names)
        found = None if template is None else template.identify(params)
        if found is not None:
            return found.values.hex()
    return Tokenizer().values_token(*values).hex()


# values_hex's templates per set of names: bytes only (a dict of open entries names no code).
_NAMES_TEMPLATES: dict[frozenset[str], Template] = {}


def token_hex(*values: Any) -> str:
    """Return :func:`token` as 32 hex digits.

    Examples
    --------
    >>> len(token_hex("any", 1.0))
    32
    """
    return token(*values).hex()


def estimator_token(
    cls: type, params: dict[str, Any], extra: dict[str, Any], *, tokenizer: Tokenizer | None = None
) -> bytes:
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
    return (tokenizer or Tokenizer()).identify_estimator(cls, params, extra).token


class Template:
    """The identity of values with some entries left open for plain values (candidates).

    :meth:`Tokenizer.identify_estimator` of ``{**params, **values}`` walks the
    class, every parameter and the other attributes for each candidate; a
    template walks them once, leaving the candidate's entries open, and writes
    each candidate's values into the recorded atoms. A value whose atoms do not
    depend on where it sits (``None``, a ``bool``, ``int``, ``float``, ``str`` or
    ``bytes``, or a numpy number of a type already met, see ``_numpy_scalar``)
    reaches no code and holds nothing that a cycle or an anonymous function's
    rank could refer to, so the bytes hashed are the walk's, bit for bit, and the
    code reached is the template's. :meth:`identify` answers None for any other
    value: the caller walks that candidate whole. :meth:`Tokenizer.values_template`
    does the same for :meth:`Tokenizer.values_token` of a candidate's parameters
    (its id, :func:`values_hex`).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> tokenizer = Tokenizer()
    >>> params = Ridge().get_params(deep=False)
    >>> template = tokenizer.estimator_template(Ridge, params, {}, frozenset({"alpha"}))
    >>> whole = tokenizer.identify_estimator(Ridge, {**params, "alpha": 2.0}, {})
    >>> template.identify({"alpha": 2.0}) == whole
    True
    >>> template.identify({"alpha": [2.0]}) is None
    True
    """

    def __init__(self, tokenizer: Tokenizer, parts: tuple[bytes | _Slot, ...],
                 environment: Environment) -> None:  # fmt: skip
        self._tokenizer = tokenizer
        self._parts = parts
        self._environment = environment

    def identify(self, values: dict[str, Any]) -> Identity | None:
        """The identity with ``values`` in the open entries; None if one is not plain."""
        h = _blake(digest_size=TOKEN_SIZE)
        walk = _Walk(h, self._tokenizer, top=True)
        for part in self._parts:
            if isinstance(part, bytes):
                h.update(part)
                continue
            value = values[part.name]
            t = type(value)
            if t not in _CONTEXT_FREE and t not in _SCALAR_PREFIX:
                return None
            walk.value(value, (part.name,))  # a plain value: the path names no error
        return Identity(h.digest(), self._environment)


_CONTEXT_FREE = frozenset({type(None), bool, int, float, str, bytes})


class _Slot:
    """An open entry of a template: the walk writes no atom for it, the recorder marks it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Recorder:
    """Stands for the hash in a template's walk: keeps the bytes fed between open entries."""

    def __init__(self) -> None:
        self.parts: list[bytes | _Slot] = []
        self.pending: list[bytes] = []

    def update(self, data: bytes | memoryview) -> None:
        self.pending.append(bytes(data))

    def slot(self, slot: _Slot) -> None:
        self.parts += [b"".join(self.pending), slot]
        self.pending = []

    def finished(self) -> tuple[bytes | _Slot, ...]:
        return (*self.parts, b"".join(self.pending))


def _path_text(path: tuple[Any, ...]) -> str:
    return (
        "the part " + "".join(f"[{p!r}]" for p in path) + " of the value" if path else "the value"
    )


class _Walk:
    """Feed one value into a hash as tagged, length-prefixed atoms, depth first.

    Code met on the way is written as its name; the walk collects it: installed
    and named user code in ``refs`` (resolved by the tokenizer afterwards),
    anonymous user code (a lambda, a local class) in ``anonymous`` at the top
    of a value, or inline inside the code of another piece of user code.
    """

    def __init__(self, h: Any, session: Tokenizer, *, top: bool) -> None:
        self.h = h
        self.session = session
        self.top = top
        self.stack: dict[int, int] = {}  # ids of the containers being walked -> depth
        self.refs: list[Any] = []
        self.anonymous: list[Any] = []
        self.ranks: dict[int, int] = {}

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
            prefix = _SCALAR_PREFIX.get(t)
            if prefix is None:
                self.nested(value, path)
            else:  # a numpy number: the atoms its normal form writes, at once (see _numpy_scalar)
                self.h.update(prefix)
                self.atom(b"y", value.tobytes())

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
            for item in sorted(self.digest(v) for v in value):
                self.atom(b"t", item)
        elif t is CodeRef:
            self.code(value.obj, path)
        elif t is _Slot:
            self.h.slot(value)
        else:
            self.atom(b"T", _type_name(t).encode())
            form, coded = _normal_form(value, path)
            if coded:  # identified by its class and state: the class's code counts
                self.code(t, path)
            self.value(form, path)

    def code(self, obj: Any, path: tuple[Any, ...]) -> None:
        """Name a piece of code, and collect it (or walk it, inside other user code)."""
        obj = self.session.canonical(obj)
        about = self.session.about(obj, path)
        self.atom(b"C", about.label.encode("utf-8", "surrogatepass"))
        if about.origin.kind == STDLIB:
            return
        if about.origin.kind != USER or about.named:
            self.refs.append(obj)
        elif self.top:  # anonymous code in a value: its own entry, by its rank here
            rank = self.ranks.get(id(obj))
            if rank is None:
                rank = self.ranks[id(obj)] = len(self.anonymous)
                self.anonymous.append(obj)
            self.atom(b"#", str(rank).encode())
        else:  # anonymous code inside other user code: part of that code, all it holds too
            self.refs.append(obj)  # reached: its module and the names it reads count
            mark = -1 - id(obj)  # apart from the value holding it, which is on the stack too
            depth = self.stack.get(mark)
            if depth is not None:
                self.atom(b"@", str(depth).encode())
                return
            self.stack[mark] = len(self.stack)
            try:
                self.value(self.session.parts(about, whole=True), path)
            finally:
                del self.stack[mark]

    def digest(self, value: Any) -> bytes:
        """A value's own digest, to order it among others (a set's items, a dict's keys).

        The code it reaches is collected with this walk's; anonymous code is part of it.
        """
        h = _blake(digest_size=TOKEN_SIZE)
        walk = _Walk(h, self.session, top=False)
        walk.value(value, ())
        self.refs += walk.refs
        return h.digest()

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
        keyed = sorted(((self.digest(k), k) for k in value), key=lambda pair: pair[0])
        for digest, k in keyed:
            self.atom(b"t", digest)
            self.value(value[k], (*path, k))


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _normal_form(value: Any, path: tuple[Any, ...]) -> tuple[Any, bool]:
    """What identifies a value that is not a plain Python number, string or container.

    A registered type, or one with ``__parcv_token__``, by what it says; an
    estimator by its attributes, anything else by what pickle keeps of it, and
    both by their class's code (the second item: True).
    """
    normalizer = _normalizer_of(type(value))
    if normalizer is not None:
        return normalizer(value), False
    own = getattr(type(value), "__parcv_token__", None)
    if own is not None:
        return own(value), False
    if hasattr(value, "get_params") and not isinstance(value, type):
        return _estimator(value), True
    return _reduced(value, path), True


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
        if callable(value):  # code: a function-like object of a library, or a wrapper
            return CodeRef(value)
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
    t = type(value)
    if t not in _SCALAR_PREFIX and fixed_number_type(t) and _normalizer_of(t) is _numpy_scalar:
        # _Walk.value writes the same atoms for the next ones: 10,000s of drawn candidates.
        _SCALAR_PREFIX[t] = b"".join(
            _atom_bytes(tag, payload)
            for tag, payload in (
                (b"T", _type_name(t).encode()),
                (b"(", b"3"),
                (b"s", value.dtype.str.encode()),
                (b"(", b"0"),
            )
        )
    return _array(np.asarray(value))


def fixed_number_type(t: type) -> bool:
    """A numpy number or bool of one dtype for every value and no padding bytes."""
    return issubclass(t, (np.number, np.bool_)) and not issubclass(
        t, (np.timedelta64, np.longdouble, np.clongdouble)
    )


def _atom_bytes(tag: bytes, payload: bytes) -> bytes:
    """What :meth:`_Walk.atom` feeds the hash."""
    return tag + struct.pack("<Q", len(payload)) + payload


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


@register_token(types.MappingProxyType)
def _mapping_proxy(value: types.MappingProxyType[Any, Any]) -> Any:
    return dict(value)


@register_token(Enum)
def _enum(value: Enum) -> Any:
    return value.name


# Code --------------------------------------------------------------------------------------


@register_token(types.ModuleType)
def _module(value: types.ModuleType) -> Any:
    return CodeRef(value)


@register_token(type)  # classes
def _class(cls: type) -> Any:
    return CodeRef(cls)


@register_token(types.FunctionType)
def _function(function: types.FunctionType) -> Any:
    if is_named(function):  # all of it is code: identified where it is defined
        return CodeRef(function)
    # A lambda or closure: what it captured and its defaults are values; its code is code.
    closure = tuple(c.cell_contents if _filled(c) else "<empty cell>"
                    for c in function.__closure__ or ())  # fmt: skip
    defaults = (function.__defaults__, function.__kwdefaults__)
    return (function.__module__, function.__qualname__, CodeRef(function), *defaults, closure,
            dict(vars(function)))  # fmt: skip


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


@register_token(types.CodeType)
def _code(code: types.CodeType) -> Any:
    # Its instructions with the values they load, not its bytes and constant table: a
    # docstring is a constant no instruction loads (documentation), and adding one renumbers
    # the others. Line numbers and the file name are left out too: moving a function
    # changes no number.
    instructions = tuple((i.opname, i.argval) for i in dis.get_instructions(code))
    return (instructions, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            code.co_name)  # fmt: skip


@register_token(types.BuiltinFunctionType)
def _builtin_function(function: Any) -> Any:
    owner = function.__self__
    bound = None if owner is None or isinstance(owner, types.ModuleType) else owner
    return (CodeRef(function), bound)


@register_token(
    types.WrapperDescriptorType, types.MethodDescriptorType, types.ClassMethodDescriptorType,
    types.GetSetDescriptorType, types.MemberDescriptorType,
)  # fmt: skip
def _descriptor(value: Any) -> Any:
    """A slot of a class (``object.__init__``, a ``__slots__`` member): its class and name."""
    return (CodeRef(value.__objclass__), value.__name__)


@register_token(types.MethodWrapperType)
def _method_wrapper(value: Any) -> Any:
    return (CodeRef(type(value.__self__)), value.__name__, value.__self__)


@register_token(types.MethodType)
def _method(method: types.MethodType) -> Any:
    return (method.__func__, method.__self__)


@register_token(staticmethod, classmethod)
def _wrapped_method(value: Any) -> Any:
    return value.__func__


@register_token(property)
def _property(value: property) -> Any:
    return (value.fget, value.fset, value.fdel)


@register_token(functools.cached_property)
def _cached_property(value: functools.cached_property[Any]) -> Any:
    return (value.func, value.attrname)


@register_token(functools.partial)
def _partial(value: functools.partial[Any]) -> Any:
    return (value.func, value.args, value.keywords, dict(vars(value)))


@register_token(np.ufunc)
def _ufunc(value: np.ufunc) -> Any:
    # By its importable name (numpy.log, scipy.special.expit) and its distribution's version.
    return CodeRef(value)


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
        if isinstance(index, pd.MultiIndex):  # no single array: its levels and their codes
            return (names, list(index.levels), [np.asarray(c) for c in index.codes])
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
