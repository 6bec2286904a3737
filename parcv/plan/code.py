"""Code identity: which code a value reaches, and what identifies that code.

A unit's numbers depend on code as much as on values: the estimator's class,
a scoring function, a transformer's ``func``, the helpers and module constants
they read. :mod:`parcv.plan.tokens` walks a value once; where it meets code it
asks this module where the code comes from and what identifies it:

- the standard library (and builtins): its qualified name;
- an installed distribution (scikit-learn, numpy, xgboost, parcv...): the
  distribution's name and version, with those of the distributions it requires
  at run time (an upgrade of numpy changes what scikit-learn computes);
- the user's own code (a script, a module beside it, a package installed with
  ``pip install -e``): soundly, every module that holds reached code whole, by
  its normalised source (:func:`module_source`: comments, docstrings and layout
  do not count) over the modules it imports, transitively, read afresh on
  every run; with the values its globals hold at run time where code can read
  them. Inside that, and for code with no file to read (a notebook,
  ``__main__`` of ``python -c``), each function, class and module constant
  reached is one :class:`CodeEntry` with a digest of its *own* content, in
  which the others it reaches are named, not inlined: cycles need no special
  care, and a changed entry says exactly what changed ("constant SCALE in
  helpers.py").

The module layer is the over-approximation that makes identity sound: a
method that a library's base class calls (``transform`` from
``fit_transform``), a function a decorator hides or a value a closure holds is
inside a module the unit reaches even where no analysis of references finds
it. The per-definition layer adds what a file does not show (the code loaded
in this process, captured values) and the messages. Compiled code outside any
distribution (a C extension built in place) is identified by its file's bytes
where a module holds it; with no file, it is refused, by name, with the way
out.
"""

from __future__ import annotations

import ast
import builtins
import csv
import hashlib
import importlib.metadata
import inspect
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
    "held_parts",
    "is_named",
    "ModuleSource",
    "code_names",
    "module_exists",
    "module_of",
    "module_source",
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
        if self.kind == "module":
            return f"module {self.where or self.name}"
        if self.kind == "held":
            return f"what {self.shown or self.name} holds at run time in {self.where or '?'}"
        if self.kind == "unidentified":
            return f"{self.shown or self.name} in {self.where or '?'}"
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
    # A changed file is said once: by the definitions in it that changed, where any did.
    finer = {e.where for e in (old.entries ^ new.entries) if e.kind not in _WHOLE}
    lines = []
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key, []), after.get(key, [])
        entry = (now or was)[0]
        if entry.kind == "module" and was and now and entry.where in finer:
            continue
        lines.append(_change_text(was, now, old.entries, new.entries))
    return tuple(lines)


_WHOLE = frozenset({"module", "distribution", "editable", "unidentified", "held"})


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
    if entry.kind == "unidentified":
        return f"{entry.text()} cannot be identified exactly: its units are never reused"
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
    file = _module_file(module) or _module_file(top)
    if top == "parcv":  # its numbers are keyed by NUMBERS_VERSION, even in a developer's install
        return Origin(INSTALLED, tuple(sorted(set(dists or ()))))
    if not dists:
        if file is not None and _in_site_packages(file):
            return Origin(INSTALLED)  # a library's module under a name of its own (_cyutility)
        if file is not None and _in_stdlib(file):
            return Origin(STDLIB)
        return Origin(USER)
    names = tuple(sorted(set(dists)))
    if file is not None and not _in_site_packages(file):
        return Origin(EDITABLE, names)
    return Origin(INSTALLED, names)


@lru_cache(maxsize=1)
def _top_level_distributions() -> Mapping[str, list[str]]:
    """Each importable top-level name, and the installed distributions with files under it.

    A distribution counts for the names its ``top_level.txt`` declares and for those its
    installed files (``RECORD``) hold: each file's first folder, or a module file's own
    name, extension modules included. An egg's install without ``top_level.txt`` counts
    its file list as the standard library reads it. That is, on every Python,
    :func:`importlib.metadata.packages_distributions` of Python 3.12 and later, with both
    of its ways joined: Python 3.10's reads ``top_level.txt`` alone, which the wheels of
    scikit-learn, numpy, scipy and pandas do not have, and 3.11's counts ``.py`` files
    only. There an upgrade of those libraries, or of one whose top-level module is
    compiled, would change no key. Each ``RECORD`` is read as the text it is, not as a
    path object per file: a third of a second less before a run's first unit.
    """
    out: dict[str, list[str]] = {}
    for dist in importlib.metadata.distributions():
        tops = set((dist.read_text("top_level.txt") or "").split())
        record = dist.read_text("RECORD")
        if record is not None:
            paths = [row[0] for row in csv.reader(record.splitlines()) if row]
        else:  # an egg's install: its own names, else its files as the standard library reads
            paths = [] if tops else [str(f) for f in dist.files or ()]
        tops.update(_top_names(paths))
        name = dist.metadata["Name"]
        for top in tops:
            out.setdefault(top, []).append(name)
    return out


def _top_names(paths: Iterable[str]) -> set[str]:
    """The importable top-level names of installed files (paths relative to site-packages).

    Examples
    --------
    >>> sorted(_top_names(["pkg/__init__.py", "_speedup.cpython-311-x86_64-linux-gnu.so",
    ...                    "pkg-1.0.dist-info/RECORD", "__pycache__/mod.cpython-311.pyc",
    ...                    "../../bin/tool", "mod.py"]))
    ['_speedup', 'mod', 'pkg']
    """
    tops = set()
    for path in paths:
        top, sep, rest = path.partition("/")
        name = top if sep and rest else inspect.getmodulename(path)
        if name and name.isidentifier() and name != "__pycache__":
            tops.add(name)
    return tops


def _module_file(module: str) -> str | None:
    file = getattr(sys.modules.get(module), "__file__", None)
    return file if isinstance(file, str) else None


@cache
def _stdlib_dirs() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple({str(Path(paths[k]).resolve()) for k in ("stdlib", "platstdlib") if k in paths})


def _in_stdlib(file: str) -> bool:
    resolved = str(Path(file).resolve())
    return any(resolved.startswith(d + "/") for d in _stdlib_dirs())


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
    # What a module's namespace holds, read from its dict: ``getattr`` would run a module's
    # ``__getattr__`` (a lazy import, a deprecation shim) for every loaded module, milliseconds
    # each and side effects besides, to find what its namespace does not hold.
    modules = [(m, mod) for m, mod in list(sys.modules.items())
               if isinstance(mod, types.ModuleType)]  # fmt: skip
    name = getattr(obj, "__name__", None)
    found = [m for m, mod in modules
             if isinstance(name, str) and vars(mod).get(name) is obj]  # fmt: skip
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


def distribution_entries(origin: Origin) -> frozenset[CodeEntry]:
    """The entries of installed code: its distributions and those they require, by version.

    An editable install's own entry is kind ``"editable"``: its version, with the
    directory it lives in. Its files are not in this entry: they are the user's own
    code (:func:`module_source`), read afresh on every run.

    Examples
    --------
    >>> entries = distribution_entries(origin_of("sklearn"))
    >>> sorted(e.name for e in entries if e.name in ("scikit-learn", "numpy"))
    ['numpy', 'scikit-learn']
    """
    entries = set()
    editable = origin.distributions if origin.kind == EDITABLE else ()
    for name in _closure(origin.distributions):
        if name in editable:
            entries.add(CodeEntry(name, "editable", distribution_version(name),
                                  _distribution_root(name)))  # fmt: skip
        else:
            entries.add(CodeEntry(name, "distribution", distribution_version(name)))
    return frozenset(entries)


def _distribution_root(name: str) -> str:
    """Where an editable distribution's code lives, as messages show it."""
    for top, dists in _top_level_distributions().items():
        if name in dists:
            file = _module_file(top)
            if file:
                path = Path(file)
                return str(path.parent if path.name == "__init__.py" else path)
    return ""


# Modules: the user's own code, whole -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModuleSource:
    """What a module's file says, read afresh: the over-approximation of its code.

    Parameters
    ----------
    name : str
        The module's name.
    where : str
        Its file, as messages show it.
    digest : str
        Digest of its normalised source: the syntax tree without docstrings, so
        comments, docstrings and formatting never count. An extension module
        (``.so``, ``.pyd``) by its bytes.
    imports : tuple of str
        Every module its code imports, anywhere in it (absolute names; a package's
        parents included).
    names : frozenset of str
        Every name read inside its functions, classes and lambdas: the module
        globals (its own, or another module's through an attribute) its code can
        read at run time.
    dynamic : bool
        Whether its code reads names it computes (``getattr`` with a computed
        name on anything but ``self``, ``eval``, ``exec``, ``globals()``,
        ``vars()``, ``sys.modules``, a module ``__getattr__``): then every global
        of every module counts.
    imports_dynamically : bool
        Whether it imports modules by computed name (``importlib``, ``__import__``):
        then every loaded module of the user's own counts.
    """

    name: str
    where: str
    digest: str
    imports: tuple[str, ...]
    names: frozenset[str]
    dynamic: bool
    imports_dynamically: bool


def module_source(name: str) -> ModuleSource | None:
    """Read a module of the user's own from its file (afresh); None if it has no file.

    Not imported here: a module that its code imports inside a function and that
    has not run yet is found on ``sys.path`` and read without running it.

    Examples
    --------
    >>> found = module_source("parcv.plan.code")
    >>> found.where.endswith("code.py"), "module_source" in found.names
    (True, True)
    """
    file = _file_of(name)
    if file is None:
        return None
    try:
        raw = Path(file).read_bytes()
    except OSError:
        return None
    where = where_of(name) if name in sys.modules else file
    parsed = _parsed(raw, file.endswith(_COMPILED), _package_of(name, file))
    return ModuleSource(name, where, *parsed)


_COMPILED = (".so", ".pyd")


def _file_of(name: str) -> str | None:
    """The file a module runs from: the loaded module's, else where an import would find it."""
    module = sys.modules.get(name)
    if module is not None:
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith((".py", *_COMPILED)) and Path(file).is_file():
            return file
        return None
    spec = _find_spec(name)
    origin = getattr(spec, "origin", None)
    if isinstance(origin, str) and origin.endswith((".py", *_COMPILED)) and Path(origin).is_file():
        return origin
    return None


def _find_spec(name: str) -> Any:
    """Where ``import name`` would find a module, without running any of it."""
    from importlib.machinery import PathFinder

    parent, _, _ = name.rpartition(".")
    if not parent:
        return PathFinder.find_spec(name)
    loaded = sys.modules.get(parent)
    path = getattr(loaded, "__path__", None)
    if path is None:
        spec = _find_spec(parent)
        path = getattr(spec, "submodule_search_locations", None)
    return PathFinder.find_spec(name, list(path)) if path else None


def _package_of(name: str, file: str) -> str:
    return name if Path(file).name.startswith("__init__.") else name.rpartition(".")[0]


# Parsing is keyed by the file's bytes (and what relative imports resolve against): a
# digest of the same bytes is the same digest in any run, so this cache never serves an
# edited file, however long the process lives.
_PARSED: dict[tuple[bytes, str], tuple[str, tuple[str, ...], frozenset[str], bool, bool]] = {}


def _parsed(raw: bytes, compiled: bool,
            package: str) -> tuple[str, tuple[str, ...], frozenset[str], bool, bool]:  # fmt: skip
    key = (hashlib.blake2b(raw, digest_size=16).digest(), package if not compiled else "")
    found = _PARSED.get(key)
    if found is None:
        if compiled:
            found = (key[0].hex(), (), frozenset(), False, False)
        else:
            found = _read_tree(raw, package)
        _PARSED[key] = found
    return found


def _read_tree(raw: bytes, package: str) -> tuple[str, tuple[str, ...], frozenset[str], bool, bool]:
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):  # not Python we can read: by its bytes, all of it dynamic
        return hashlib.blake2b(raw, digest_size=16).hexdigest(), (), frozenset(), True, True
    reader = _TreeReader(package)
    reader.visit(tree)
    for node in reader.documented:  # docstrings are documentation, not code
        node.body = node.body[1:] or [ast.Pass()]
    text = ast.dump(tree, include_attributes=False)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return (digest, tuple(sorted(reader.imports)), frozenset(reader.names), reader.dynamic,
            reader.imports_dynamically)  # fmt: skip


_COMPUTED_NAMES = frozenset({"eval", "exec", "globals", "__getattr__"})
_ATTRIBUTE_CALLS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


class _TreeReader(ast.NodeVisitor):
    """One pass over a module's tree: its imports, the names its code reads, its docstrings."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.imports: set[str] = set()
        self.names: set[str] = set()
        self.documented: list[Any] = []
        self.depth = 0  # inside a function, class, lambda or comprehension
        self.dynamic = False
        self.imports_dynamically = False

    def _documented(self, node: Any) -> None:
        body = getattr(node, "body", None)
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):  # fmt: skip
            self.documented.append(node)

    def visit_Module(self, node: Any) -> None:
        self._documented(node)
        self.generic_visit(node)

    def _scope(self, node: Any) -> None:
        self._documented(node)
        if self.depth == 0 and getattr(node, "name", None) == "__getattr__":
            self.dynamic = True  # a module __getattr__ makes any attribute
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def _inner(self, node: Any) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _inner

    def visit_Name(self, node: Any) -> None:
        if self.depth:
            self.names.add(node.id)
        if node.id in _COMPUTED_NAMES:
            self.dynamic = True
        elif node.id in ("__import__", "importlib", "import_module"):
            self.imports_dynamically = True

    def visit_Attribute(self, node: Any) -> None:
        if self.depth:
            self.names.add(node.attr)
        if node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys":
            self.dynamic = True
        elif node.attr in ("import_module", "__import__"):
            self.imports_dynamically = True
        self.generic_visit(node)

    def visit_Call(self, node: Any) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in _ATTRIBUTE_CALLS and len(node.args) >= 2:
                target, name = node.args[0], node.args[1]
                on_self = isinstance(target, ast.Name) and target.id in ("self", "cls")
                named = isinstance(name, ast.Constant) and isinstance(name.value, str)
                if not (on_self or named):
                    self.dynamic = True
                elif named and self.depth:
                    self.names.add(name.value)
            elif func.id == "vars" and not node.args:
                self.dynamic = True
        self.generic_visit(node)

    def visit_Import(self, node: Any) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: Any) -> None:
        base = node.module or ""
        if node.level:
            parts = self.package.split(".") if self.package else []
            parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
            base = ".".join([*parts, *([base] if base else [])])
        if not base:
            return
        self._add(base)
        for alias in node.names:
            if alias.name != "*":
                self.imports.add(f"{base}.{alias.name}")  # a submodule, where it is one

    def _add(self, name: str) -> None:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            self.imports.add(".".join(parts[:i]))


def module_exists(name: str) -> bool:
    """Whether ``name`` is a module (loaded, or one an import would find)."""
    if name in sys.modules:
        return True
    try:
        return _find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


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


def held_parts(obj: Any, file: Any) -> Any:
    """What a module's own function or class holds beyond its source file.

    Its defaults, what its closure captured and its attributes; for a class, its
    bases by name, its metaclass and its namespace, with its own methods by what
    they hold (a method patched in from elsewhere stays itself, code to identify).
    None where its code is not that file's (made by ``exec``, compiled elsewhere):
    then the file does not show it.

    Examples
    --------
    >>> def f(x, k=2.0):
    ...     return x * k
    >>> held_parts(f, f.__code__.co_filename)
    ('function', (2.0,), None, (), {})
    >>> held_parts(f, "elsewhere.py") is None
    True
    """
    if isinstance(obj, types.FunctionType):
        return _held_function(obj, file)
    namespace: dict[str, Any] = {}
    for key, value in vars(obj).items():
        if key in _CLASS_SKIP:
            continue
        inner = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        state = None
        if isinstance(inner, types.FunctionType) and inner.__module__ == obj.__module__ and (
                inner.__qualname__ == f"{obj.__qualname__}.{key}"):  # fmt: skip
            state = _held_function(inner, file)
        namespace[key] = value if state is None else (type(value).__name__, state)
    meta = type(obj)
    bases = [f"{b.__module__}.{b.__qualname__}" for b in obj.__bases__]
    return ("class", bases, None if meta is type else CodeRef(meta), namespace)


def _held_function(function: types.FunctionType, file: Any) -> Any:
    if function.__code__.co_filename != file:
        return None
    cells = tuple(_cell(c) for c in function.__closure__ or ())
    return ("function", function.__defaults__, function.__kwdefaults__, cells,
            dict(vars(function)))  # fmt: skip


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return "<empty cell>"


def code_names(code: types.CodeType) -> frozenset[str]:
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
    names = code_names(function.__code__)
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
    """Digest of a user module's normalised source (see :class:`ModuleSource`); "" without one."""
    found = module_source(module.__name__)
    return found.digest if found is not None else ""


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
