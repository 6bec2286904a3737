"""Code identity: which code a value reaches, and what identifies that code.

A unit's numbers depend on code as much as on values: the estimator's class,
a scoring function, a transformer's ``func``, the helpers and module constants
they read. :mod:`parcv.plan.tokens` walks a value once; where it meets code it
asks this module where the code comes from and what identifies it:

- the standard library (and builtins): its qualified name;
- an installed distribution (scikit-learn, numpy, xgboost, parcv...): the
  distribution's name and version, with those of the distributions it requires
  at run time (an upgrade of numpy changes what scikit-learn computes). An
  editable install (``pip install -e``) adds a digest of its source files, so
  that editing it counts as an upgrade;
- the user's own code (a script, a module beside it, a notebook, ``__main__``):
  its code, and the user code and module-level values it reaches (globals it
  reads: helpers, constants, classes; a class's bases and methods),
  transitively. Each function, class and module constant reached is one
  :class:`CodeEntry` with a digest of its *own* content, in which the others
  it reaches are named, not inlined: cycles need no special care, and a
  changed entry says exactly what changed ("constant SCALE in helpers.py").

Compiled code outside any distribution (a C extension built in place) has no
code to read and no version: it is refused, by name, with the way out. The
code a function reaches is what its bytecode names (its globals and the
attributes of the modules it reads); code reached only through ``getattr`` with
a computed name, ``globals()`` or ``eval`` is not seen.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.metadata
import json
import sys
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "CodeEntry",
    "CodeRef",
    "Environment",
    "ModuleGlobal",
    "Origin",
    "class_parts",
    "describe_changes",
    "distribution_entries",
    "distribution_version",
    "function_parts",
    "is_named",
    "module_of",
    "origin_of",
]

STDLIB, INSTALLED, EDITABLE, USER = "stdlib", "installed", "editable", "user"


@dataclass(frozen=True, slots=True, eq=False)
class CodeRef:
    """A function, class, module or other callable met inside a value: identified as code."""

    obj: Any


@dataclass(frozen=True, slots=True, eq=False)
class ModuleGlobal:
    """A module-level value that user code reads by name (a constant, an instance...)."""

    module: str
    name: str
    value: Any


@dataclass(frozen=True, slots=True)
class Origin:
    """Where code comes from: ``"stdlib"``, ``"installed"``, ``"editable"`` or ``"user"``."""

    kind: str
    distributions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, order=True)
class CodeEntry:
    """One part of the code a unit runs: a distribution, or one piece of user code.

    Parameters
    ----------
    name : str
        A distribution's name (``"scikit-learn"``), or a user object's
        ``module.qualname`` (an anonymous function or class met directly in a
        value adds ``#k``, its rank there).
    kind : str
        ``"distribution"``, ``"editable"`` (an editable install), ``"class"``,
        ``"function"``, ``"method"``, ``"constant"`` (a module-level value) or
        ``"module"``.
    digest : str
        A distribution's version (an editable install's with ``+files.`` and a
        digest of its files); a digest of user code's own content.
    where : str, default=""
        The file of user code, or an editable install's directory: shown, not compared.
    shown : str, default=""
        The name a message shows: user code's qualified name within its module
        (default: ``name`` without its rank).

    Examples
    --------
    >>> CodeEntry("scikit-learn", "distribution", "1.9.1").text()
    'scikit-learn 1.9.1'
    >>> CodeEntry("models.MyModel", "class", "ab12", "models.py", "MyModel").text()
    'class MyModel in models.py'
    """

    name: str
    kind: str
    digest: str
    where: str = field(default="", compare=False)
    shown: str = field(default="", compare=False)

    def text(self) -> str:
        """The entry as a message names it."""
        if self.kind == "distribution":
            return f"{self.name} {self.digest}"
        if self.kind == "editable":
            return f"{self.name} {self.digest.partition('+')[0]} (editable install in {self.where})"
        return f"{self.kind} {self.shown or self.name.partition('#')[0]} in {self.where or '?'}"


class Environment:
    """The code a unit runs, as a set of :class:`CodeEntry`; ``digest`` identifies it.

    Examples
    --------
    >>> a = Environment([CodeEntry("numpy", "distribution", "2.1.0")])
    >>> b = Environment([CodeEntry("numpy", "distribution", "2.2.0")])
    >>> a.digest == b.digest, Environment.from_json(a.to_json()).digest == a.digest
    (False, True)
    >>> describe_changes(a, b)
    ('numpy 2.1.0 → 2.2.0',)
    """

    __slots__ = ("_digest", "entries")

    def __init__(self, entries: Iterable[CodeEntry] = ()) -> None:
        self.entries: frozenset[CodeEntry] = frozenset(entries)
        self._digest: bytes | None = None

    @property
    def digest(self) -> bytes:
        """16 bytes: equal for equal entries (``where`` aside), different otherwise."""
        if self._digest is None:
            h = hashlib.blake2b(digest_size=16)
            for entry in sorted(self.entries):
                for part in (entry.name, entry.kind, entry.digest):
                    raw = part.encode("utf-8", "surrogatepass")
                    h.update(len(raw).to_bytes(8, "little") + raw)
            self._digest = h.digest()
        return self._digest

    def __or__(self, other: Environment) -> Environment:
        return Environment(self.entries | other.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def to_json(self) -> str:
        """The entries as JSON text (what a store keeps)."""
        rows = [[e.name, e.kind, e.digest, e.where, e.shown] for e in sorted(self.entries)]
        return json.dumps(rows, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Environment:
        """Read what :meth:`to_json` wrote."""
        return cls(CodeEntry(*row) for row in json.loads(text))


def describe_changes(old: Environment, new: Environment) -> tuple[str, ...]:
    """Say what differs between two environments, one cause per changed name.

    Distributions by version (``scikit-learn 1.9.1 → 1.9.2``); user code by
    kind, name and file (``class MyModel in models.py changed``).

    Examples
    --------
    >>> old = Environment([CodeEntry("m.f", "function", "01", "m.py", "f")])
    >>> new = Environment([CodeEntry("m.f", "function", "02", "m.py", "f"),
    ...                    CodeEntry("m.g", "function", "03", "m.py", "g")])
    >>> describe_changes(old, new)
    ('function f in m.py changed', 'function g in m.py is reached now')
    """
    before = _by_shown(old.entries - new.entries)
    after = _by_shown(new.entries - old.entries)
    lines = []
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key, []), after.get(key, [])
        lines.append(_change_text(was, now, old.entries, new.entries))
    return tuple(lines)


def _by_shown(entries: Iterable[CodeEntry]) -> dict[tuple[str, str], list[CodeEntry]]:
    out: dict[tuple[str, str], list[CodeEntry]] = {}
    for entry in entries:
        out.setdefault((entry.name.partition("#")[0], entry.kind), []).append(entry)
    return out


def _change_text(
    was: list[CodeEntry], now: list[CodeEntry], old: frozenset[CodeEntry], new: frozenset[CodeEntry]
) -> str:
    entry = (now or was)[0]
    name = entry.name.partition("#")[0]
    present_before = was or any(e.name.partition("#")[0] == name for e in old)
    present_now = now or any(e.name.partition("#")[0] == name for e in new)
    if entry.kind == "distribution":
        if was and now:
            return f"{entry.name} {was[0].digest} → {now[0].digest}"
        return f"{entry.text()} ({'no longer used' if was else 'used now'})"
    if entry.kind == "editable":
        versions = [e.digest.partition("+")[0] for e in (*was[:1], *now[:1])]
        if len(versions) == 2 and versions[0] != versions[1]:
            return f"{entry.name} {versions[0]} → {versions[1]} (editable install in {entry.where})"
        return f"{entry.text()}: its files changed"
    if present_before and present_now:
        return f"{entry.text()} changed"
    return f"{entry.text()} {'is no longer reached' if present_before else 'is reached now'}"


# Where code comes from ---------------------------------------------------------------------

_ORIGINS: dict[str, Origin] = {}


def origin_of(module: str) -> Origin:
    """Whether a module is standard library, installed (and from which distributions) or user code.

    Examples
    --------
    >>> origin_of("json").kind, origin_of("sklearn.linear_model").distributions
    ('stdlib', ('scikit-learn',))
    """
    found = _ORIGINS.get(module)
    if found is None:
        found = _ORIGINS[module] = _origin(module)
    return found


def _origin(module: str) -> Origin:
    top = module.partition(".")[0]
    if module == "__main__" or not top:
        return Origin(USER)
    if top in sys.builtin_module_names or top in sys.stdlib_module_names:
        return Origin(STDLIB)
    dists = _top_level_distributions().get(top)
    if not dists:
        return Origin(USER)
    names = tuple(sorted(set(dists)))
    file = _module_file(module) or _module_file(top)
    if file is not None and not _in_site_packages(file):
        return Origin(EDITABLE, names)
    return Origin(INSTALLED, names)


@lru_cache(maxsize=1)
def _top_level_distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _module_file(module: str) -> str | None:
    file = getattr(sys.modules.get(module), "__file__", None)
    return file if isinstance(file, str) else None


def _in_site_packages(file: str) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in Path(file).parts)


def module_of(obj: Any) -> str | None:
    """The module that defines ``obj``; for a ufunc without ``__module__``, the one holding it.

    None when no loaded module is known to hold it.

    Examples
    --------
    >>> import scipy.special
    >>> module_of(scipy.special.expit)
    'scipy.special'
    """
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    owner = getattr(obj, "__self__", None)
    if (
        isinstance(obj, types.BuiltinFunctionType)
        and owner is not None
        and not isinstance(owner, types.ModuleType)
    ):
        return type(owner).__module__
    module = getattr(obj, "__module__", None)
    if isinstance(module, str):
        return module
    if isinstance(obj, types.FunctionType):
        return str(obj.__globals__.get("__name__", "__main__"))
    return _holding_module(obj)


def _holding_module(obj: Any) -> str | None:
    """A loaded module that holds the object: under its name (public modules first), else
    under any name in the user's own modules."""
    modules = [(m, mod) for m, mod in list(sys.modules.items()) if mod is not None]
    name = getattr(obj, "__name__", None)
    found = [m for m, mod in modules
             if isinstance(name, str) and getattr(mod, name, None) is obj]  # fmt: skip
    found.sort(key=lambda m: (any(p.startswith("_") for p in m.split(".")), m.count("."), m))
    if found:
        return found[0]
    for m, mod in modules:
        if origin_of(m).kind == USER and any(v is obj for v in list(vars(mod).values())):
            return m
    return None


def is_named(obj: Any) -> bool:
    """Whether ``obj`` is what its module and qualified name lead to (``__main__`` included)."""
    module = sys.modules.get(module_of(obj) or "")
    qualname = getattr(obj, "__qualname__", None)
    if module is None or not isinstance(qualname, str) or "<" in qualname:
        return False
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found is obj


# Distributions ---------------------------------------------------------------------------


def distribution_version(name: str) -> str:
    """The installed version of a distribution (what keys units of its code).

    Examples
    --------
    >>> import sklearn
    >>> distribution_version("scikit-learn") == sklearn.__version__
    True
    """
    return _installed_version(name)


@cache
def _installed_version(name: str) -> str:
    return importlib.metadata.version(name)


@cache
def _requirements(name: str) -> tuple[str, ...]:
    """The installed distributions ``name`` requires at run time (no extras), by name."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in importlib.metadata.requires(name) or ():
        try:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            out.append(importlib.metadata.distribution(req.name).metadata["Name"])
        except (InvalidRequirement, importlib.metadata.PackageNotFoundError, ValueError):
            continue  # not installed (an optional requirement), or unreadable metadata
    return tuple(sorted(set(out)))


@cache
def _closure(names: tuple[str, ...]) -> tuple[str, ...]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_requirements(name))
    return tuple(sorted(seen))


def distribution_entries(origin: Origin, module: str) -> frozenset[CodeEntry]:
    """The entries of installed code: its distributions and those they require, by version.

    An editable install's own entry adds a digest of its source files.

    Examples
    --------
    >>> entries = distribution_entries(origin_of("sklearn"), "sklearn")
    >>> sorted(e.name for e in entries if e.name in ("scikit-learn", "numpy"))
    ['numpy', 'scikit-learn']
    """
    entries = set()
    for name in _closure(origin.distributions):
        entries.add(CodeEntry(name, "distribution", distribution_version(name)))
    if origin.kind == EDITABLE:
        top = module.partition(".")[0]
        root = _package_root(top)
        for name in origin.distributions:
            entries.discard(CodeEntry(name, "distribution", distribution_version(name)))
            digest = f"{distribution_version(name)}+files.{_files_digest(root)}"
            entries.add(CodeEntry(name, "editable", digest, str(root)))
    return frozenset(entries)


def _package_root(top: str) -> Path:
    file = _module_file(top) or ""
    path = Path(file)
    return path.parent if path.name == "__init__.py" else path


_SOURCE_SUFFIXES = (".py", ".so", ".pyd")


def _files_digest(root: Path) -> str:
    """Digest of an editable install's source and extension files (read once per process)."""
    return _files_digest_cached(str(root))


@cache
def _files_digest_cached(root: str) -> str:
    path = Path(root)
    files = (
        sorted(
            p
            for p in path.rglob("*")
            if p.suffix in _SOURCE_SUFFIXES and p.is_file() and "__pycache__" not in p.parts
        )
        if path.is_dir()
        else [path]
    )
    h = hashlib.blake2b(digest_size=8)
    for file in files:
        name = str(file.relative_to(path) if path.is_dir() else file.name).encode()
        data = file.read_bytes()
        h.update(len(name).to_bytes(8, "little") + name + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


# What identifies user code ---------------------------------------------------------------

# Not code: documentation, where the class is, and caches Python fills in as it runs
# (``__slotnames__`` once an instance is copied or pickled, ABC's registry).
_CLASS_SKIP = frozenset({
    "__dict__", "__weakref__", "__module__", "__doc__", "__qualname__", "_abc_impl",
    "__firstlineno__", "__static_attributes__", "__slotnames__",
})  # fmt: skip


def class_parts(cls: type) -> dict[str, Any]:
    """What identifies a user class: its bases, metaclass and namespace (methods, attributes).

    Examples
    --------
    >>> class A:
    ...     k = 1
    >>> sorted(class_parts(A)["namespace"])
    ['k']
    """
    namespace = {k: v for k, v in vars(cls).items() if k not in _CLASS_SKIP}
    meta = type(cls)
    return {"bases": cls.__bases__, "metaclass": None if meta is type else CodeRef(meta),
            "namespace": namespace}  # fmt: skip


def function_parts(function: types.FunctionType, *, named: bool) -> dict[str, Any]:
    """What identifies a user function's code: its code object and the globals it reads.

    A function its module names (``named``) is identified by all it holds:
    defaults, closure and attributes are in its source too. Those of an
    anonymous one (a lambda, a closure) are values, walked with the value
    holding it.

    Examples
    --------
    >>> SCALE = 2.0
    >>> def f(x):
    ...     return x * SCALE
    >>> sorted(function_parts(f, named=False)["globals"])
    ['SCALE']
    """
    parts: dict[str, Any] = {"code": function.__code__, "globals": global_bindings(function)}
    if named:
        parts.update(
            defaults=function.__defaults__,
            kwdefaults=function.__kwdefaults__,
            closure=tuple(_cell(c) for c in function.__closure__ or ()),
            attributes=dict(vars(function)),
        )
    return parts


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return "<empty cell>"


def _code_names(code: types.CodeType) -> frozenset[str]:
    names: set[str] = set()
    codes = [code]
    while codes:
        current = codes.pop()
        names.update(current.co_names)
        codes += [c for c in current.co_consts if isinstance(c, types.CodeType)]
    return frozenset(names)


def global_bindings(function: types.FunctionType) -> dict[str, Any]:
    """The module-level names a function's code reads, each as what identifies its value.

    Code (functions, classes) as a :class:`CodeRef`; other values as a
    :class:`ModuleGlobal`; a user module by the attributes of it the code
    names, an installed or standard one by reference.
    """
    names = _code_names(function.__code__)
    scope = function.__globals__
    module = str(scope.get("__name__", function.__module__))
    out: dict[str, Any] = {}
    for name in sorted(names):
        if name in scope:
            out[name] = _binding(module, name, scope[name], names, frozenset())
        elif not hasattr(builtins, name):
            imported = _imported(name, scope)
            if imported is not None:  # `import helpers` inside the function
                out[name] = _module_binding(imported, names, frozenset())
    return out


def _imported(name: str, scope: Mapping[str, Any]) -> types.ModuleType | None:
    package = scope.get("__package__") or ""
    for candidate in (name, f"{package}.{name}" if package else ""):
        module = sys.modules.get(candidate) if candidate else None
        if isinstance(module, types.ModuleType):
            return module
    return None


def _binding(module: str, name: str, value: Any, names: frozenset[str],
             seen: frozenset[str]) -> Any:  # fmt: skip
    if isinstance(value, types.ModuleType):
        return _module_binding(value, names, seen)
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return CodeRef(value)
    return CodeRef(ModuleGlobal(module, name, value))


def _module_binding(module: types.ModuleType, names: frozenset[str], seen: frozenset[str]) -> Any:
    origin = origin_of(module.__name__)
    if origin.kind == STDLIB:
        return ("module", module.__name__)
    if origin.kind != USER or module.__name__ in seen:
        return CodeRef(module)
    attributes = vars(module)
    inner = seen | {module.__name__}
    return ("module", module.__name__, {
        a: _binding(module.__name__, a, attributes[a], names, inner)
        for a in sorted(names) if a in attributes
    })  # fmt: skip


def module_file_digest(module: types.ModuleType) -> str:
    """Digest of a user module's file, which identifies the module as a value."""
    file = _module_file(module.__name__)
    if file is None or not Path(file).is_file():
        return ""
    return hashlib.blake2b(Path(file).read_bytes(), digest_size=16).hexdigest()


def where_of(module: str) -> str:
    """The file a user module comes from, as messages show it (``models.py``)."""
    if module == "__main__":
        file = _module_file(module)
        return Path(file).name if file else "__main__"
    file = _module_file(module)
    if file is None:
        return module
    parts = module.split(".")
    path = Path(file)
    if path.name == "__init__.py":
        return "/".join(parts) + "/__init__.py"
    return "/".join([*parts[:-1], path.name])


def kind_word(obj: Any) -> str:
    """How a message names a piece of user code: class, method, function, constant or module."""
    if isinstance(obj, ModuleGlobal):
        return "constant"
    if isinstance(obj, type):
        return "class"
    if isinstance(obj, types.ModuleType):
        return "module"
    parts = (getattr(obj, "__qualname__", "") or "").split(".")
    return "method" if len(parts) > 1 and parts[-2] != "<locals>" else "function"
