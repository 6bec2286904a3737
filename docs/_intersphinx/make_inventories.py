"""Write the intersphinx inventories of the projects parcv's documentation links to.

The machines that build the documentation have no internet, so intersphinx cannot fetch
``objects.inv`` from scikit-learn.org, numpy.org or dask.org. This script builds an
equivalent inventory offline by introspecting the installed packages, with the URL
patterns those sites use, and writes it in Sphinx's format (version 2: a four-line header,
then zlib-compressed ``name domain:role priority uri dispname`` lines)::

    python docs/_intersphinx/make_inventories.py

Rerun it after upgrading one of these packages and commit the ``*.inv`` files. An object
missing from an inventory only loses its link (the build does not fail); an object listed
under a wrong URL gives a dead link, so the patterns below follow each site's layout:

- scikit-learn: ``modules/generated/sklearn.svm.SVC.html#sklearn.svm.SVC`` for classes,
  functions and their methods; ``api/sklearn.svm.html`` for modules.
- numpy: ``reference/generated/numpy.mean.html#numpy.mean``, and
  ``reference/random/generated/numpy.random.Generator.normal.html`` for the random API.
- dask: ``api.html#dask.compute`` (the core functions), ``generated/dask.array.Array.html``.
- distributed: ``api.html#distributed.Client``.
- python: ``library/pathlib.html#pathlib.Path``, ``library/exceptions.html#ValueError``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (name, role, uri relative to the site's root[, title]). The uri may end in "#$": Sphinx's
# shorthand for "#" + name. Labels and glossary terms (std:label, std:term) carry a title:
# numpydoc writes ``bool`` as :ref:`python:bltin-boolean-values` and ``array_like`` as
# :term:`numpy:array_like`, and scikit-learn's inherited docstrings cite its own labels.
Entry = tuple[str, ...]


def _term_anchor(term: str) -> str:
    """The id Sphinx gives a glossary term (``term-cv-splitter``, ``term-random_state``)."""
    return re.sub(r"[^\w-]+", "-", f"term-{term}").strip("-")


def _public(module: object) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return [n for n in names if not n.startswith("_")]


def _role(obj: object) -> str | None:
    if inspect.isclass(obj):
        return "py:exception" if issubclass(obj, BaseException) else "py:class"
    if callable(obj):
        return "py:function"
    return None


def _members(cls: type) -> Iterator[tuple[str, str]]:
    """The public methods, properties and attributes a class defines (with inherited ones)."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        try:
            value = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(value, property):
            yield name, "py:property"
        elif callable(value) or isinstance(value, (staticmethod, classmethod)):
            yield name, "py:method"


def sklearn_entries() -> Iterator[Entry]:
    import sklearn
    from sklearn.experimental import (  # noqa: F401 - they add the halving searches
        enable_halving_search_cv,
        enable_iterative_imputer,
    )

    for module_name in sklearn.__all__:
        full = f"sklearn.{module_name}"
        try:
            module = importlib.import_module(full)
        except ImportError:
            # A top-level function such as sklearn.clone.
            obj = getattr(sklearn, module_name, None)
            role = _role(obj)
            if role:
                yield full, role, f"modules/generated/{full}.html#$"
            continue
        if not inspect.ismodule(module):
            continue
        yield full, "py:module", f"api/{full}.html"
        for name in _public(module):
            obj = getattr(module, name, None)
            role = _role(obj)
            if role is None:
                continue
            qual = f"{full}.{name}"
            page = f"modules/generated/{qual}.html"
            yield qual, role, f"{page}#$"
            if inspect.isclass(obj):
                for member, member_role in _members(obj):
                    yield f"{qual}.{member}", member_role, f"{page}#$"
    for name in ("clone", "get_config", "set_config", "config_context", "show_versions"):
        yield f"sklearn.{name}", "py:function", f"modules/generated/sklearn.{name}.html#$"
    routing = "metadata_routing.html#metadata-routing"
    yield "metadata_routing", "std:label", routing, "Metadata routing"
    yield "cross_validation", "std:label", "modules/cross_validation.html#$", "Cross-validation"
    yield "grid_search", "std:label", "modules/grid_search.html#$", "Tuning the hyper-parameters"
    yield "cv splitter", "std:term", "glossary.html#term-CV-splitter", "CV splitter"
    for term in ("estimator", "meta-estimator", "scorer", "hyperparameter",
                 "predict", "fit", "random_state", "n_jobs", "warm_start", "partial_fit",
                 "early stopping", "pipeline", "transformer", "classifier", "regressor",
                 "decision_function", "predict_proba", "groups", "sample_weight"):  # fmt: skip
        yield term, "std:term", f"glossary.html#{_term_anchor(term)}", term


def numpy_entries() -> Iterator[Entry]:
    import numpy as np
    import numpy.random

    yield "numpy", "py:module", "reference/index.html"
    for name in _public(np):
        obj = getattr(np, name, None)
        role = _role(obj)
        if role is None or inspect.ismodule(obj):
            continue
        qual = f"numpy.{name}"
        page = f"reference/generated/{qual}.html"
        yield qual, role, f"{page}#$"
        if inspect.isclass(obj) and name == "ndarray":
            for member, member_role in _members(obj):
                yield f"{qual}.{member}", member_role, f"reference/generated/{qual}.{member}.html#$"
    for name in ("nan", "inf", "pi", "e", "newaxis"):
        yield f"numpy.{name}", "py:data", "reference/constants.html#$"
    yield "numpy.typing.NDArray", "py:data", "reference/typing.html#$"
    yield "numpy.typing.ArrayLike", "py:data", "reference/typing.html#$"
    yield "array_like", "std:term", "glossary.html#term-array_like", "array_like"
    yield "numpy.random", "py:module", "reference/random/index.html"
    yield "numpy.random.default_rng", "py:function", "reference/random/generator.html#$"
    for cls in ("Generator", "RandomState", "SeedSequence"):
        qual = f"numpy.random.{cls}"
        yield qual, "py:class", f"reference/random/generated/{qual}.html#$"
        for member, member_role in _members(getattr(numpy.random, cls)):
            uri = f"reference/random/generated/{qual}.{member}.html#$"
            yield f"{qual}.{member}", member_role, uri


def dask_entries() -> Iterator[Entry]:
    import dask

    yield "dask", "py:module", "api.html"
    for name in ("compute", "persist", "visualize", "optimize", "delayed", "tokenize"):
        if hasattr(dask, name):
            yield f"dask.{name}", "py:function", "api.html#$"
    yield "dask.base.tokenize", "py:function", "api.html#$"
    yield "dask.base.normalize_token", "py:function", "api.html#$"
    yield "dask.config.set", "py:function", "configuration.html#$"
    yield "dask.config.get", "py:function", "configuration.html#$"
    import dask.array

    yield "dask.array.Array", "py:class", "generated/dask.array.Array.html#$"
    import dask.delayed

    yield "dask.delayed.Delayed", "py:class", "delayed-api.html#$"


def distributed_entries() -> Iterator[Entry]:
    import distributed

    yield "distributed", "py:module", "api.html"
    for name in _public(distributed):
        obj = getattr(distributed, name, None)
        role = _role(obj)
        if role is None or inspect.ismodule(obj):
            continue
        qual = f"distributed.{name}"
        yield qual, role, "api.html#$"
        if inspect.isclass(obj) and name in ("Client", "Future", "LocalCluster"):
            for member, member_role in _members(obj):
                yield f"{qual}.{member}", member_role, "api.html#$"


def python_entries() -> Iterator[Entry]:
    import builtins

    for name in dir(builtins):
        obj = getattr(builtins, name)
        if name.startswith("_"):
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            yield name, "py:exception", "library/exceptions.html#$"
        elif inspect.isclass(obj):
            page = "stdtypes" if name in ("dict", "list", "str", "tuple", "set") else "functions"
            yield name, "py:class", f"library/{page}.html#$"
        elif callable(obj):
            yield name, "py:function", "library/functions.html#$"
    yield "bltin-boolean-values", "std:label", "library/stdtypes.html#$", "Boolean Values"
    for term in ("sequence", "iterable", "mapping", "hashable", "file object",
                 "path-like object", "callable", "generator"):  # fmt: skip
        yield term, "std:term", f"glossary.html#{_term_anchor(term)}", term
    yield "None", "py:data", "library/constants.html#$"
    yield "True", "py:data", "library/constants.html#$"
    yield "False", "py:data", "library/constants.html#$"
    for module_name in ("pathlib", "logging", "argparse", "sqlite3", "tomllib", "dataclasses",
                        "concurrent.futures", "collections.abc", "typing", "warnings"):  # fmt: skip
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        page = f"library/{module_name}.html"
        yield module_name, "py:module", f"{page}#module-{module_name}"
        for name in _public(module):
            role = _role(getattr(module, name, None))
            if role:
                yield f"{module_name}.{name}", role, f"{page}#$"


def write_inventory(path: Path, project: str, version: str, entries: Iterable[Entry]) -> int:
    """Write ``entries`` to ``path`` in Sphinx's inventory format; return how many."""
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for name, role, uri, *title in entries:
        seen.setdefault((name, role), (uri, title[0] if title else "-"))
    lines = [
        f"{name} {role} {-1 if role == 'std:label' else 1} {uri} {title}"
        for (name, role), (uri, title) in sorted(seen.items())
    ]
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    body = zlib.compress(("\n".join(lines) + "\n").encode("utf-8"), 9)
    path.write_bytes(header.encode("utf-8") + body)
    return len(lines)


def main() -> None:
    import sys

    import dask
    import distributed
    import numpy
    import sklearn

    python_version = ".".join(map(str, sys.version_info[:2]))
    for file, project, version, entries in (
        ("sklearn.inv", "scikit-learn", sklearn.__version__, sklearn_entries()),
        ("numpy.inv", "NumPy", numpy.__version__, numpy_entries()),
        ("dask.inv", "Dask", dask.__version__, dask_entries()),
        ("distributed.inv", "Dask.distributed", distributed.__version__, distributed_entries()),
        ("python.inv", "Python", python_version, python_entries()),
    ):
        n = write_inventory(HERE / file, project, version, entries)
        print(f"{file}: {n} objects ({project} {version})")


if __name__ == "__main__":
    main()
